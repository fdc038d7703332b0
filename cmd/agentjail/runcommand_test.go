package main

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"agentjail/internal/systest"
)

func TestRunCommand(t *testing.T) {
	systest.Require(t, systest.Root, systest.UserNS, systest.CgroupMem, systest.Python)
	code, stdout, stderr := run(t, "in", "run", "--stdin", "-", "--command", "--", "bash", "-c", "cat; echo; ls -d /workspace; exit 4")
	assert.Equal(t, 4, code, stderr)
	assert.Equal(t, "in\n/workspace\n", stdout)
	assert.Contains(t, stderr, "agentjail: exit 4 · wall ")

	code, _, stderr = run(t, "", "run", "--command", "--", "no-such-program-here")
	assert.Equal(t, 127, code)
	assert.Contains(t, stderr, "the program 'no-such-program-here' is not installed in environment 'default'")

	code, _, stderr = run(t, "", "run", "--timeout", "300ms", "--command", "--", "sleep", "10")
	assert.Equal(t, 137, code)
	assert.Contains(t, stderr, "killed (wall_timeout)")
}

func TestRunCommandUsage(t *testing.T) {
	for _, args := range [][]string{
		{"run", "--command"},
		{"run", "--command", "-c", "pass", "--", "ls"},
		{"run", "--command", "--tests", "t.json", "--", "ls"},
	} {
		code, stdout, stderr := run(t, "", args...)
		assert.Equal(t, exitUsage, code, "%q: %s", args, stderr)
		assert.Empty(t, stdout)
		assert.Contains(t, stderr, "--", "%q", args)
	}
}

func TestSessionRunCommand(t *testing.T) {
	systest.Require(t, systest.Root, systest.UserNS, systest.CgroupMem, systest.Python, systest.Seccomp)
	d := startDaemon(t, t.TempDir(), "[peers]\nuids = [0]\n")
	t.Setenv("AGENTJAIL_SOCKET", d.sock)
	code, stdout, stderr := run(t, "", "session", "start")
	require.Equal(t, 0, code, stderr)
	id := strings.TrimSpace(stdout)

	code, _, stderr = run(t, "", "session", "run", id, "-c", "open('made.txt', 'w').write('by python')")
	require.Equal(t, 0, code, stderr)
	code, stdout, stderr = run(t, "", "session", "run", id, "--command", "--", "bash", "-c", "cat made.txt; exit 6")
	assert.Equal(t, 6, code, stderr)
	assert.Equal(t, "by python", stdout)
	assert.Contains(t, stderr, "session call 2, alive")
	code, _, _ = run(t, "", "session", "end", id)
	assert.Equal(t, 0, code)
}
