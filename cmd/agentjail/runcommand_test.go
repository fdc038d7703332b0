package main

import (
	"testing"

	"github.com/stretchr/testify/assert"

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
