package main

import (
	"encoding/json"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestMCPStdoutIsProtocolOnly: with the daemon inside logging at debug,
// a run, a session, a refused call and an unknown tool, every line on
// stdout is a JSON-RPC message, and the logs are on stderr.
func TestMCPStdoutIsProtocolOnly(t *testing.T) {
	config, base := mcpConfig(t)
	f, err := os.OpenFile(config, os.O_APPEND|os.O_WRONLY, 0)
	require.NoError(t, err)
	_, err = f.WriteString("[log]\nlevel = \"debug\"\n")
	require.NoError(t, err)
	require.NoError(t, f.Close())

	m := startRawMCP(t, "--config", config) // its first line was the initialize answer
	var lines []string
	call := func(id int, tool string, args map[string]any) {
		m.send(t, callLine(id, tool, args))
		lines = append(lines, m.recv(t))
	}
	call(2, "run_python", map[string]any{"code": "import sys; print('out'); print('err', file=sys.stderr)"})
	id := m.startedSession(t, 3)
	call(4, "session_run", map[string]any{"session_id": id, "code": "1 + 1"})
	call(5, "run_python", map[string]any{"code": "pass", "limits": map[string]any{"memory_bytes": 1 << 20}})
	call(6, "run_ruby", map[string]any{})
	require.NoError(t, m.in.Close())
	rest, err := io.ReadAll(m.out)
	require.NoError(t, err)
	assert.Equal(t, 0, m.wait(t, 5*time.Second))
	if s := strings.TrimSuffix(string(rest), "\n"); s != "" {
		lines = append(lines, strings.Split(s, "\n")...)
	}
	for _, l := range lines {
		var msg struct {
			JSONRPC string `json:"jsonrpc"`
		}
		assert.NoError(t, json.Unmarshal([]byte(l), &msg), "a line on stdout that is not JSON-RPC: %q", l)
		assert.Equal(t, "2.0", msg.JSONRPC, "a line on stdout that is not JSON-RPC: %q", l)
	}
	logs := m.log.String()
	assert.Contains(t, logs, "level=DEBUG", "the debug logs went to stderr")
	assert.Contains(t, logs, "msg=run ", "each run's log line went to stderr")
	noLeftovers(t, base, logs)
}
