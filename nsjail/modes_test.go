package nsjail

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// inRunAndSession runs code as a run (jailRun: cold, prepared or warm as
// the test mode says) and as a call of a session started the same way,
// with the spec changed by mod, and checks each one's stdout with check.
// A property of the jail holds in both.
func inRunAndSession(t *testing.T, code string, mod func(*Spec), check func(t *testing.T, stdout string)) {
	t.Run("run", func(t *testing.T) {
		res := jailRun(t, code, mod)
		okRun(t, res)
		check(t, string(res.Stdout))
	})
	t.Run("session", func(t *testing.T) {
		s := startSession(t, mod)
		res := sessionCall(t, s, code, nil)
		assert.Equal(t, StatusOK, res.Status, "stderr: %s", trim(res.Stderr))
		check(t, string(res.Stdout))
	})
}
