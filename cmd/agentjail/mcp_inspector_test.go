package main

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"agentjail/internal/systest"
)

// TestMCPInspectorCLI drives `agentjail mcp` with the MCP inspector's
// command line (@modelcontextprotocol/inspector-cli, the version
// clients/mcp-test/package-lock.json pins), as a host does: it reads the
// configuration block README.md shows (mcpServers), with its command and
// socket pointed at this test's binary and daemon, starts the server over
// stdio, lists the tools and calls them. The inspector's own package
// (@modelcontextprotocol/inspector 0.17 and later) needs node 22; its CLI
// alone runs on node 20. The MCP conformance suite
// (@modelcontextprotocol/conformance) tests servers over HTTP by URL only,
// not a stdio server, so it has no place here.
func TestMCPInspectorCLI(t *testing.T) {
	if _, err := exec.LookPath("node"); err != nil && (os.Geteuid() == 0 || os.Getenv("CI") != "") {
		t.Fatalf("node is needed here (root or CI): scripts/deps installs Debian's nodejs and npm: %v", err)
	}
	systest.Require(t, systest.Node, systest.Root, systest.UserNS, systest.CgroupMem, systest.Python, systest.Seccomp)
	base := 3_200_000_000 + uint32(rand.IntN(1000))*100_000
	d := startDaemon(t, t.TempDir(), fmt.Sprintf("[peers]\nuids = [0]\n[admission]\nmax_concurrent = 2\n[jail]\nuid_base = %d\nuid_count = 100000\n", base))
	hosts := readmeHostConfig(t, d.sock)
	dir := nodeModules(t)

	inspect := func(args ...string) (string, error) {
		cli := filepath.Join(dir, "node_modules", "@modelcontextprotocol", "inspector-cli", "build")
		cmd := exec.Command("node", append([]string{filepath.Join(cli, "cli.js"), "--cli", "--config", hosts, "--server", "agentjail"}, args...)...)
		// It finds its own package.json from the working directory.
		cmd.Dir = cli
		var stdout, stderr strings.Builder
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		t.Logf("inspector %q:\nstdout:\n%s\nstderr:\n%s", args, stdout.String(), stderr.String())
		return stdout.String(), err
	}

	out, err := inspect("--method", "tools/list")
	require.NoError(t, err)
	var list struct {
		Tools []struct {
			Name, Description string
			InputSchema       struct{ Type string } `json:"inputSchema"`
		}
	}
	require.NoError(t, json.Unmarshal([]byte(out), &list), "tools/list answers JSON")
	var names []string
	for _, tool := range list.Tools {
		names = append(names, tool.Name)
		assert.NotEmpty(t, tool.Description, tool.Name)
		assert.Equal(t, "object", tool.InputSchema.Type, tool.Name)
	}
	assert.ElementsMatch(t, []string{"run_python", "run_command", "session_start", "session_run", "session_end", "list_environments"}, names)

	var res struct {
		IsError bool `json:"isError"`
		Content []struct {
			Type, Text string
		}
		StructuredContent map[string]any `json:"structuredContent"`
	}
	out, err = inspect("--method", "tools/call", "--tool-name", "run_python", "--tool-arg", "code=import sys; print(6*7); sys.exit(3)")
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal([]byte(out), &res))
	assert.False(t, res.IsError)
	assert.Equal(t, "42\n", res.StructuredContent["stdout"])
	assert.Equal(t, float64(3), res.StructuredContent["exit_code"])
	require.NotEmpty(t, res.Content)
	assert.Regexp(t, `^agentjail: exit 3 · wall `, res.Content[0].Text)

	res.StructuredContent = nil
	out, err = inspect("--method", "tools/call", "--tool-name", "run_command", "--tool-arg", "command=echo hi | tr a-z A-Z")
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal([]byte(out), &res))
	assert.Equal(t, "HI\n", res.StructuredContent["stdout"])

	out, err = inspect("--method", "tools/call", "--tool-name", "run_ruby", "--tool-arg", "code=1")
	assert.Error(t, err, "an unknown tool fails the inspector's call: %s", out)

	// Each inspector call was one connection: every server it started has
	// gone, and ended its jails.
	require.Eventually(t, func() bool {
		_, b, err := remoteDo(t.Context(), d.sock, "GET", "/v1/health", nil)
		return err == nil && strings.Contains(string(b), `"running":0`)
	}, 5*time.Second, 20*time.Millisecond)
	noLeftoversOf(t, base, d.log.String())
}

// readmeHostConfig writes README.md's MCP host configuration block, with
// its agentjail and socket paths replaced by this test binary and sock,
// and returns the file's path. The block must be the mcpServers object
// hosts read, starting `agentjail mcp --socket`.
func readmeHostConfig(t *testing.T, sock string) string {
	t.Helper()
	readme, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	require.NoError(t, err)
	_, section, ok := strings.Cut(string(readme), "\n## Agents (MCP)\n")
	require.True(t, ok, "README.md has a section Agents (MCP)")
	m := regexp.MustCompile("(?s)```json\n(.*?)```").FindStringSubmatch(section)
	require.NotNil(t, m, "the section shows a JSON block")
	var block struct {
		MCPServers map[string]struct {
			Command string            `json:"command"`
			Args    []string          `json:"args"`
			Env     map[string]string `json:"env,omitempty"`
		} `json:"mcpServers"`
	}
	require.NoError(t, json.Unmarshal([]byte(m[1]), &block), "README.md's block is JSON:\n%s", m[1])
	server, ok := block.MCPServers["agentjail"]
	require.True(t, ok, "the block names a server agentjail: %s", m[1])
	assert.Equal(t, "agentjail", filepath.Base(server.Command))
	require.GreaterOrEqual(t, len(server.Args), 3)
	assert.Equal(t, []string{"mcp", "--socket"}, server.Args[:2])

	exe, err := os.Executable()
	require.NoError(t, err)
	server.Command = exe
	server.Args[2] = sock
	server.Env = map[string]string{"AGENTJAIL_TEST_MAIN": "1"}
	block.MCPServers["agentjail"] = server
	b, err := json.Marshal(block)
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "mcp.json")
	require.NoError(t, os.WriteFile(path, b, 0o644))
	return path
}
