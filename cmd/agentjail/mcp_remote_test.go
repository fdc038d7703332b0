package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"agentjail/internal/systest"
)

// TestMCPThroughURL: `agentjail mcp --url` sends the tools' requests to a
// daemon's remote listener (TLS, a bearer token), and the sessions it
// started end when its client goes.
func TestMCPThroughURL(t *testing.T) {
	systest.Require(t, systest.Root, systest.UserNS, systest.CgroupMem, systest.Python, systest.Seccomp)
	base := 3_200_000_000 + uint32(rand.IntN(1000))*100_000
	dir := t.TempDir()
	d, addr, files, tokFile := remoteDaemon(t, dir, fmt.Sprintf("[admission]\nmax_concurrent = 2\n[jail]\nuid_base = %d\nuid_count = 100000\n", base))

	cs, cmd, log := connectMCP(t, "--url", "https://"+addr, "--ca", files.CA, "--token-file", tokFile)
	res, out, text := callTool(t, cs, "run_python", map[string]any{"code": "print(6*7)"})
	require.False(t, res.IsError, text)
	assert.Equal(t, "42\n", out["stdout"])
	res, out, text = callTool(t, cs, "session_start", nil)
	require.False(t, res.IsError, text)
	id := out["id"].(string)
	_, out, text = callTool(t, cs, "session_run", map[string]any{"session_id": id, "code": "y = 6\ny * 7"})
	assert.Equal(t, "42", out["value"], text)
	res, _, text = callTool(t, cs, "run_python", map[string]any{"code": "pass", "limits": map[string]any{"memory_bytes": 1 << 20}})
	assert.True(t, res.IsError)
	assert.Contains(t, text, "the agentjail daemon at https://"+addr+" refused", "the daemon's refusal, naming it")
	assert.Contains(t, text, "limits.memory_bytes")
	require.NoError(t, cs.Close())
	exited(t, cmd, 5*time.Second)
	// Asked as its owner: the token's user (through the socket, root's
	// session list does not have it).
	owner := remoteURL{url: "https://" + addr, tokenFile: tokFile, ca: files.CA}
	status, b, err := owner.do(context.Background(), "GET", "/v1/sessions/"+id, nil)
	require.NoError(t, err)
	assert.Equal(t, 410, status, "the session ended with the client: %s", b)
	noLeftoversOf(t, base, d.log.String(), log.String())

	// A wrong token: a tool error that says so, not a usage error.
	wrong := filepath.Join(dir, "wrong.token")
	require.NoError(t, os.WriteFile(wrong, []byte("not-the-token-0123456789abcdef\n"), 0o600))
	cs, _, _ = connectMCP(t, "--url", "https://"+addr, "--ca", files.CA, "--token-file", wrong)
	res, _, text = callTool(t, cs, "run_python", map[string]any{"code": "pass"})
	assert.True(t, res.IsError)
	assert.Contains(t, strings.ToLower(text), "401")
}
