package main

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestMCPRunCommand(t *testing.T) {
	config, base := mcpConfig(t)
	cs, cmd, log := connectMCP(t, "--config", config)

	res, out, text := callTool(t, cs, "run_command", map[string]any{"command": "cat in.txt | tr a-z A-Z; echo err >&2; exit 3",
		"files": []map[string]string{{"path": "in.txt", "content": "hello"}}})
	assert.False(t, res.IsError, text)
	assert.Regexp(t, `^agentjail: exit 3 · wall `, text)
	assert.Contains(t, text, "--- stdout ---\nHELLO")
	assert.Equal(t, "error", out["status"])
	assert.Equal(t, float64(3), out["exit_code"])
	assert.Equal(t, "err\n", out["stderr"])

	res, out, text = callTool(t, cs, "run_command", map[string]any{"command": "no-such-program-here --version"})
	assert.False(t, res.IsError, text)
	assert.Equal(t, float64(127), out["exit_code"])
	assert.Contains(t, text, "no-such-program-here")

	res, _, text = callTool(t, cs, "run_command", map[string]any{"command": 5})
	assert.True(t, res.IsError, text)
	require.NoError(t, cs.Close())
	exited(t, cmd, time.Second)
	noLeftovers(t, base, log.String())
}

// TestMCPSessionCommand: session_run's command runs a shell command line
// in the session's jail, beside the files its code wrote, and leaves the
// interpreter's variables as they were.
func TestMCPSessionCommand(t *testing.T) {
	config, base := mcpConfig(t)
	cs, cmd, log := connectMCP(t, "--config", config)
	res, out, text := callTool(t, cs, "session_start", nil)
	require.False(t, res.IsError, text)
	id := out["id"].(string)

	res, _, text = callTool(t, cs, "session_run", map[string]any{"session_id": id, "code": "x = 41\nopen('made.txt', 'w').write('from python\\n')"})
	require.False(t, res.IsError, text)
	res, out, text = callTool(t, cs, "session_run", map[string]any{"session_id": id, "command": "cat made.txt | tr a-z A-Z; echo err >&2; exit 4"})
	assert.False(t, res.IsError, text)
	assert.Equal(t, "error", out["status"], text)
	assert.Equal(t, float64(4), out["exit_code"])
	assert.Equal(t, "FROM PYTHON\n", out["stdout"])
	assert.Equal(t, "err\n", out["stderr"])
	assert.Contains(t, text, "--- stdout ---\nFROM PYTHON")
	assert.Contains(t, text, "· session "+id+": call 2, alive")

	res, out, text = callTool(t, cs, "session_run", map[string]any{"session_id": id, "command": "no-such-program-here"})
	assert.False(t, res.IsError, text)
	assert.Equal(t, float64(127), out["exit_code"])
	assert.Contains(t, text, "no-such-program-here")

	_, out, text = callTool(t, cs, "session_run", map[string]any{"session_id": id, "code": "x + 1"})
	assert.Equal(t, "42", out["value"], "the interpreter's state outlives the commands: %s", text)

	for _, bad := range []map[string]any{
		{"session_id": id},
		{"session_id": id, "code": "1", "command": "ls"},
		{"session_id": id, "command": ""},
		{"session_id": id, "command": []string{"ls"}},
	} {
		res, _, text = callTool(t, cs, "session_run", bad)
		assert.True(t, res.IsError, "%v: %s", bad, text)
		assert.Contains(t, text, "command", "%v: the error names what to fix", bad)
	}
	require.NoError(t, cs.Close())
	exited(t, cmd, 5*time.Second)
	noLeftovers(t, base, log.String())
}
