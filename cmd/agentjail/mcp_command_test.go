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
