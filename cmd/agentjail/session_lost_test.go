package main

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"agentjail/internal/systest"
)

// TestSessionLostAfterKill9: the daemon is killed with -9 and started
// again on the same socket, the same node; a session of the first is
// "410 session_lost", which says the daemon restarted and to start a new
// session, not the 404 of an id that never existed.
func TestSessionLostAfterKill9(t *testing.T) {
	systest.Require(t, systest.Root, systest.UserNS, systest.CgroupMem, systest.Python, systest.Seccomp)
	dir := t.TempDir()
	config := "[peers]\nuids = [0]\n"
	d := startDaemon(t, dir, config)
	t.Setenv("AGENTJAIL_SOCKET", d.sock)
	code, stdout, stderr := run(t, "", "session", "start")
	require.Equal(t, 0, code, stderr)
	id := strings.TrimSpace(stdout)
	code, _, stderr = run(t, "", "session", "run", id, "-c", "x = 42")
	require.Equal(t, 0, code, stderr)

	require.NoError(t, d.cmd.Process.Kill())
	<-d.done
	d2 := startDaemon(t, dir, config)
	require.Equal(t, d.sock, d2.sock)
	code, _, stderr = run(t, "", "session", "run", id, "-c", "x")
	assert.Equal(t, exitSetup, code)
	assert.Contains(t, stderr, "410 session_lost")
	assert.Contains(t, stderr, "session "+id+" was started by an earlier run of the agentjail daemon on this node")
	assert.Contains(t, stderr, "start a new session")
	code, _, stderr = run(t, "", "session", "show", id)
	assert.Equal(t, exitSetup, code)
	assert.Contains(t, stderr, "session_lost")
	code, _, stderr = run(t, "", "session", "end", id)
	assert.Equal(t, 0, code, "it is gone: what end asks for: %s", stderr)

	// A session of the new daemon, and an id it never made, as before.
	code, stdout, stderr = run(t, "", "session", "start")
	require.Equal(t, 0, code, stderr)
	id2 := strings.TrimSpace(stdout)
	code, _, stderr = run(t, "", "session", "run", id2, "-c", "6 * 7")
	assert.Equal(t, 0, code, stderr)
	code, _, _ = run(t, "", "session", "end", id2)
	assert.Equal(t, 0, code)
	code, _, stderr = run(t, "", "session", "show", id2[:12]+"ZZZZZZZZZZZZZZZZ"+id2[28:])
	assert.Equal(t, exitSetup, code)
	assert.Contains(t, stderr, "404 not_found")
}
