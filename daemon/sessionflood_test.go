package daemon

import (
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"agentjail/internal/systest"
)

// TestSessionControlFlood: a call's code that writes records to the
// session's control socket (fd 3) in a loop, through the daemon's own
// session program, ends its session at the first (protocol_violation):
// the daemon's CPU for the call stays small (the review's: 11.7 s of it
// for a call charged 238 ms).
func TestSessionControlFlood(t *testing.T) {
	s, _, c := sessionServer(t, nil)
	sc := startSession(t, s, c, nil)
	sessionRun(t, c, sc.ID, map[string]any{"code": "x = 1"})
	cpu0 := systest.SelfCPU()
	a := sessionRun(t, c, sc.ID, map[string]any{"code": `import os, time
end = time.monotonic() + 3
while time.monotonic() < end:
    try:
        os.write(3, b'{"t":"x"}')
    except OSError:
        pass
`})
	daemon := systest.SelfCPU() - cpu0
	t.Logf("daemon CPU %v; the call's %v ms, wall %v ms", daemon, a.CPUTimeMs, a.WallTimeMs)
	assert.Equal(t, "killed", a.Status)
	assert.Equal(t, "control_lost", a.KillReason)
	assert.Equal(t, "protocol_violation", a.Session.EndedReason)
	assert.True(t, slices.ContainsFunc(a.Feedback, func(f string) bool { return strings.Contains(f, "The session has ended (protocol_violation)") }), a.Feedback)
	assert.Less(t, daemon, 500*time.Millisecond, "the daemon's CPU for the call")
	code, _ := do(t, c, http.MethodPost, "/v1/sessions/"+sc.ID+"/run", map[string]any{"code": "x"})
	assert.NotEqual(t, http.StatusOK, code, "the session has ended")
}
