package main

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"agentjail/internal/systest"
)

// `agentjail session` names its own commands where the daemon names its
// HTTP requests (issue 31 item 7): a session that has ended says to start
// a new one with `agentjail session start`, a full daemon says to end one
// with `agentjail session end ID`. --json prints the daemon's object as
// it came.
func TestSessionMessagesNameCommands(t *testing.T) {
	systest.Require(t, systest.Root, systest.UserNS, systest.CgroupMem, systest.Python, systest.Seccomp)
	d := startDaemon(t, t.TempDir(), "[peers]\nuids = [0]\n[admission]\nmax_sessions = 1\n")
	t.Setenv("AGENTJAIL_SOCKET", d.sock)
	code, stdout, stderr := run(t, "", "session", "start", "--memory", "64MiB")
	require.Equal(t, 0, code, stderr)
	id := strings.TrimSpace(stdout)

	code, _, stderr = run(t, "", "session", "start")
	assert.Equal(t, exitSetup, code)
	assert.Contains(t, stderr, "429 too_many_sessions")
	assert.Contains(t, stderr, "end one (agentjail session end ID) or retry later")
	assert.NotContains(t, stderr, "/v1/")

	code, _, stderr = run(t, "", "session", "run", id, "-c", "x = b'x' * (200 << 20)")
	assert.Equal(t, 137, code, stderr)
	assert.Contains(t, stderr, "start a new session (agentjail session start) to go on.")
	assert.NotContains(t, stderr, "/v1/")
	code, stdout, _ = run(t, "", "session", "run", id, "--json", "-c", "1")
	assert.Equal(t, exitSetup, code)
	assert.Contains(t, stdout, "agentjail session start", "the error object's message too")

	for _, args := range [][]string{{"session", "run", id, "-c", "1"}, {"session", "end", id}} {
		_, _, stderr = run(t, "", args...)
		assert.Contains(t, stderr, "has ended (memory_limit)", "%v", args)
		assert.Contains(t, stderr, "start a new one (agentjail session start)", "%v", args)
		assert.NotContains(t, stderr, "/v1/", "%v", args)
	}
}
