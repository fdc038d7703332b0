package nsjail

import (
	"os/exec"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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

// A program that starts a thread ends as python3 ends it, in every start
// mode: the thread is joined before the atexit handlers run. And only what
// the program imported is loaded: a warm run's zygote imports no threading
// of its own (its fork hook costs each run).
func TestThreadsEndAsInPython(t *testing.T) {
	code := `import sys
print("threading" in sys.modules)
import atexit, threading, time
atexit.register(lambda: print("atexit"))
def late():
    time.sleep(0.2)
    print("thread done")
threading.Thread(target=late).start()
print("main done")
`
	want, err := exec.Command("/usr/bin/python3", "-I", "-c", code).Output()
	require.NoError(t, err)
	require.Equal(t, "False\nmain done\nthread done\natexit\n", string(want))
	res := jailRun(t, code, nil)
	require.Equal(t, StatusOK, res.Status, string(res.Stderr))
	assert.Equal(t, string(want), string(res.Stdout))
}
