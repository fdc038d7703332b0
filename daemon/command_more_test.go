package daemon

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A command's output streams as it writes it, as a program's does.
func TestCommandStream(t *testing.T) {
	_, _, c := startServer(t, testOptions(), realRunner(t))
	status, _, events := postStream(t, c, "/v1/run", map[string]any{"command": []string{"bash", "-c", "for i in 1 2 3 4 5; do echo line $i; sleep 0.15; done; echo done >&2"}})
	require.Equal(t, http.StatusOK, status)
	var res Result
	stdout, stderr := output(t, events, &res)
	assert.Equal(t, "ok", res.Status, res.Stderr)
	assert.Equal(t, "line 1\nline 2\nline 3\nline 4\nline 5\n", stdout)
	assert.Equal(t, "done\n", stderr)
	assert.Greater(t, events[len(events)-1].at.Sub(events[0].at), 400*time.Millisecond, "the first line came only near the end")
}

func TestCommandCPULimit(t *testing.T) {
	_, _, c := startServer(t, testOptions(), realRunner(t))
	res := runCommand(t, c, []string{"bash", "-c", "while :; do :; done"}, `,"limits":{"cpu_time_ms":500,"wall_time_ms":10000}`)
	assert.Equal(t, "killed", res.Status)
	assert.Equal(t, "cpu_timeout", res.KillReason)
	assert.GreaterOrEqual(t, res.CPUTimeMs, 450.0)

	res = runCommand(t, c, []string{"bash", "-c", "kill -SEGV $$"}, "")
	assert.Equal(t, "signaled", res.Status)
	assert.Equal(t, "SIGSEGV", res.Signal)
}

// A session call's command past its output limit is killed with its
// process group; one killed by signal N exits 128+N, as a shell reports
// it; the session lives.
func TestCommandSessionLimits(t *testing.T) {
	s, _, c := sessionServer(t, nil)
	sc := startSession(t, s, c, nil)
	a := sessionRun(t, c, sc.ID, map[string]any{"command": []string{"bash", "-c", "yes"}, "limits": map[string]any{"output_bytes": 10000}})
	assert.Equal(t, "killed", a.Status)
	assert.Equal(t, "output_limit", a.KillReason)
	assert.True(t, a.Session.Alive)

	a = sessionRun(t, c, sc.ID, map[string]any{"command": []string{"bash", "-c", "kill -TERM $$"}})
	assert.Equal(t, "error", a.Status)
	assert.Equal(t, 128+15, a.ExitCode)
	assert.True(t, a.Session.Alive)

	a = sessionRun(t, c, sc.ID, map[string]any{"command": []string{"bash", "-c", "pgrep -c yes || true"}})
	assert.Equal(t, "0\n", a.Stdout)
	a = sessionRun(t, c, sc.ID, map[string]any{"code": "print('python still here')"})
	assert.Equal(t, "python still here\n", a.Stdout)
}
