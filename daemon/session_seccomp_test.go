package daemon

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"agentjail/seccomp"
)

// In a session as in a run, cold and warm: getaddrinfo's netlink probe
// is answered quietly (no report, no feedback, no kill in kill mode), and
// a call that is refused is reported with the arguments it was refused
// for, in that call's result alone.
func TestSessionProbesAndForbiddenCalls(t *testing.T) {
	probe := "import socket\nsocket.getaddrinfo('localhost', 80, 0, socket.SOCK_STREAM, 0, socket.AI_ADDRCONFIG)[0][4][0]"
	audit := "import socket\ntry:\n    socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 9)\nexcept PermissionError:\n    pass\n'survived'"
	for _, mode := range []seccomp.Mode{seccomp.ModeErrno, seccomp.ModeKill} {
		s, _, c := sessionServer(t, func(o *Options) { o.Policy.OnForbiddenSyscall = mode })
		for _, start := range []string{"cold", "warm"} {
			t.Run(mode.String()+"/"+start, func(t *testing.T) {
				sc := startSession(t, s, c, map[string]any{"start": start})
				a := sessionRun(t, c, sc.ID, map[string]any{"code": probe})
				assert.Equal(t, "ok", a.Status, a.Stderr)
				assert.Equal(t, "'127.0.0.1'", val(a))
				assert.Nil(t, a.Seccomp, "a probe answered quietly is not reported")
				assert.Equal(t, []string{}, a.Feedback)
				assert.True(t, a.Session.Alive)

				a = sessionRun(t, c, sc.ID, map[string]any{"code": audit})
				require.NotNil(t, a.Seccomp, a.Stderr)
				assert.Equal(t, "socket", a.Seccomp.Syscall)
				assert.Equal(t, "AF_NETLINK, NETLINK_AUDIT", a.Seccomp.Detail)
				if mode == seccomp.ModeKill {
					assert.Equal(t, "killed", a.Status)
					assert.Equal(t, "seccomp", a.KillReason)
					assert.False(t, a.Session.Alive, "kill mode ends the session's jail")
					return
				}
				assert.Equal(t, "ok", a.Status, a.Stderr)
				assert.Equal(t, "'survived'", val(a))
				assert.Equal(t, []string{}, a.Feedback, "ok, no tests: no feedback, though a call was refused")

				a = sessionRun(t, c, sc.ID, map[string]any{"code": "1 / 0"})
				assert.Nil(t, a.Seccomp, "the next call reports its own calls only")
				assert.False(t, strings.Contains(strings.Join(a.Feedback, " "), "forbidden"), "%q", a.Feedback)
			})
		}
	}
}
