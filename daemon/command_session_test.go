package daemon

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCommandSessionCall(t *testing.T) {
	s, _, c := sessionServer(t, nil)
	sc := startSession(t, s, c, nil)
	a := sessionRun(t, c, sc.ID, map[string]any{"code": "x = 42\nopen('made.txt', 'w').write('by python')"})
	require.Equal(t, "ok", a.Status, a.Stderr)

	// The command sees the session's workspace, its stdin and files; its
	// output and exit status are the call's.
	a = sessionRun(t, c, sc.ID, map[string]any{"command": []string{"bash", "-c", "cat made.txt; echo; cat given.txt; cat -; echo oops >&2; exit 5"},
		"files": []map[string]string{{"path": "given.txt", "content": "given\n"}}, "stdin": "in"})
	assert.Equal(t, "error", a.Status)
	assert.Equal(t, 5, a.ExitCode)
	assert.Equal(t, "by python\ngiven\nin", a.Stdout)
	assert.Equal(t, "oops\n", a.Stderr)
	assert.True(t, a.Session.Alive)

	a = sessionRun(t, c, sc.ID, map[string]any{"command": []string{"bash", "-c", "echo hi > out.txt"}, "collect": []string{"out.txt"}})
	assert.Equal(t, "ok", a.Status, a.Stderr)
	require.Len(t, a.Files, 1)
	assert.Equal(t, "hi\n", *a.Files[0].Content)

	a = sessionRun(t, c, sc.ID, map[string]any{"command": []string{"no-such-program-here"}})
	assert.Equal(t, "error", a.Status)
	assert.Equal(t, 127, a.ExitCode)
	require.NotEmpty(t, a.Feedback)
	assert.Contains(t, a.Feedback[0], "the program 'no-such-program-here' is not installed in environment 'default'")

	// The wall limit kills the command and what it started in the
	// background; the session lives on, its variables kept.
	start := time.Now()
	a = sessionRun(t, c, sc.ID, map[string]any{"command": []string{"bash", "-c", "sleep 60 & sleep 60"}, "limits": map[string]any{"wall_time_ms": 500}})
	assert.Equal(t, "killed", a.Status)
	assert.Equal(t, "wall_timeout", a.KillReason)
	assert.Less(t, time.Since(start), 5*time.Second)
	assert.True(t, a.Session.Alive, strings.Join(a.Feedback, " "))
	a = sessionRun(t, c, sc.ID, map[string]any{"command": []string{"bash", "-c", "pgrep -c sleep || true"}})
	assert.Equal(t, "0\n", a.Stdout, "the command's processes are gone")
	a = sessionRun(t, c, sc.ID, map[string]any{"code": "x"})
	assert.Equal(t, "42", val(a))

	code, b := do(t, c, http.MethodPost, "/v1/sessions/"+sc.ID+"/run", map[string]any{"command": []string{"ls"}, "code": "1"})
	assert.Equal(t, http.StatusBadRequest, code)
	_, msg, _ := apiErr(t, b)
	assert.Contains(t, msg, "give code or command, not both")
}
