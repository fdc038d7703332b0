package main

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"agentjail/internal/systest"
)

// TestMCPNodeClient runs clients/mcp-test/test.mjs: the official MCP
// TypeScript SDK (the version package-lock.json pins) as the client of
// `agentjail mcp`, over stdio. Its packages are installed with npm ci
// into the user's cache, once per package-lock.json. Where node is
// missing the test is skipped, but not as root or under CI (CI=...),
// where scripts/deps installs it: there it fails. It plots, so it needs
// matplotlib (scripts/deps --scientific). After the script, no process of
// this test's uid range and no jail cgroup may be left: the script's last
// client closed its connection mid-call, with a session alive.
func TestMCPNodeClient(t *testing.T) {
	if _, err := exec.LookPath("node"); err != nil && (os.Geteuid() == 0 || os.Getenv("CI") != "") {
		t.Fatalf("node is needed here (root or CI): scripts/deps installs Debian's nodejs and npm: %v", err)
	}
	systest.Require(t, systest.Node, systest.Scientific) // it plots with matplotlib
	config, base := mcpConfig(t)
	dir := nodeModules(t)
	exe, err := os.Executable()
	require.NoError(t, err)
	server, err := json.Marshal(map[string]any{
		"command": exe,
		"args":    []string{"mcp", "--config", config},
		"env":     map[string]string{"AGENTJAIL_TEST_MAIN": "1", "PATH": os.Getenv("PATH")},
	})
	require.NoError(t, err)
	cmd := exec.Command("node", filepath.Join(dir, "test.mjs"))
	cmd.Env = append(os.Environ(), "AGENTJAIL_MCP_SERVER="+string(server))
	out, err := cmd.CombinedOutput()
	t.Logf("node clients/mcp-test/test.mjs:\n%s", out)
	require.NoError(t, err)
	assert.True(t, strings.HasSuffix(strings.TrimSpace(string(out)), "done"))
	noLeftovers(t, base, string(out))
}

// nodeModules is a directory with clients/mcp-test's packages installed
// (npm ci) and its test.mjs: in the user's cache, named by the hash of
// package-lock.json, installed once and then reused.
func nodeModules(t *testing.T) string {
	t.Helper()
	src := filepath.Join("..", "..", "clients", "mcp-test")
	lock, err := os.ReadFile(filepath.Join(src, "package-lock.json"))
	require.NoError(t, err)
	sum := sha256.Sum256(lock)
	cache, err := os.UserCacheDir()
	require.NoError(t, err)
	dir := filepath.Join(cache, "agentjail", "mcp-test-"+hex.EncodeToString(sum[:8]))
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "@modelcontextprotocol", "sdk", "package.json")); err != nil {
		// Installed beside, then renamed: a test that runs at the same
		// time finds a whole installation or none.
		tmp, err := os.MkdirTemp(filepath.Dir(dir), filepath.Base(dir)+".tmp-")
		require.NoError(t, err)
		defer os.RemoveAll(tmp)
		for _, f := range []string{"package.json", "package-lock.json"} {
			b, err := os.ReadFile(filepath.Join(src, f))
			require.NoError(t, err)
			require.NoError(t, os.WriteFile(filepath.Join(tmp, f), b, 0o644))
		}
		npm := exec.Command("npm", "ci", "--ignore-scripts", "--no-audit", "--no-fund")
		npm.Dir = tmp
		out, err := npm.CombinedOutput()
		require.NoError(t, err, "npm ci:\n%s", out)
		if err := os.Rename(tmp, dir); err != nil && !os.IsExist(err) {
			_, statErr := os.Stat(dir)
			require.NoError(t, statErr, "installing into %s: %v", dir, err)
		}
	}
	b, err := os.ReadFile(filepath.Join(src, "test.mjs"))
	require.NoError(t, err)
	// The test itself, fresh from the tree, beside its packages (an ES
	// module finds its imports from where it lies).
	test := filepath.Join(dir, "test.mjs")
	require.NoError(t, os.WriteFile(test+".new", b, 0o644))
	require.NoError(t, os.Rename(test+".new", test))
	return dir
}
