package main

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"agentjail/daemon"
	"agentjail/egress"
)

// The "network" argument of the MCP tools (mcp_network.go): in the
// schemas, passed on to the daemon, and the result's network summary in
// the text a model reads.

func TestMCPNetworkText(t *testing.T) {
	rep := &egress.Report{Allowed: 1, Blocked: 2, BytesSent: 517, BytesReceived: 8843, Connections: []egress.Connection{
		{Host: "pypi.org", Port: 443, IP: "203.0.113.7", Verdict: egress.Allowed, Sent: 517, Received: 8843},
		{Host: "evil.example", Port: 443, Verdict: egress.Blocked, Reason: egress.ReasonNotAllowed},
		{Host: "evil.example", Port: 443, Verdict: egress.Blocked, Reason: egress.ReasonNotAllowed},
		{Host: "2001:db8::1", Port: 80, IP: "2001:db8::1", Verdict: egress.Blocked, Reason: egress.ReasonPrivateAddress},
	}}
	text := resultText(&daemon.Result{Status: "ok", Network: rep, Feedback: []string{"The network policy refused evil.example:443."}}, nil, nil)
	assert.Contains(t, text, "\nnetwork: 1 allowed, 2 blocked (517 B sent, 8.6 KiB received)\n")
	assert.Contains(t, text, "\n  blocked evil.example:443: not_allowed (the host or the port is not in the policy)\n")
	assert.Contains(t, text, "\n  blocked [2001:db8::1]:80: private_address (")
	assert.Equal(t, 1, strings.Count(text, "evil.example:443: not_allowed"), "a host refused twice is named once")
	assert.Less(t, strings.Index(text, "network:"), strings.Index(text, "feedback:"), "the network lines before the feedback")
	assert.NotContains(t, resultText(&daemon.Result{Status: "ok"}, nil, nil), "network", "a run without network access says nothing of it")

	assert.Equal(t, "", policiesText(nil), "a daemon that does not say")
	assert.Contains(t, policiesText(map[string][]string{}), "none")
	assert.Equal(t, "network policies (give run_python, run_command or session_start network {\"policy\": NAME}):\n"+
		"  empty: allows nothing\n  pypi: allows pypi.org:443, *.pythonhosted.org:443",
		policiesText(map[string][]string{"pypi": {"pypi.org:443", "*.pythonhosted.org:443"}, "empty": {}}))
}

func TestMCPNetworkSchema(t *testing.T) {
	cfg := daemon.DefaultConfig()
	for name, n := range map[string]string{
		"run_python":    runPythonSchema(cfg, true).Properties["network"].Description,
		"run_command":   runCommandSchema(cfg, true).Properties["network"].Description,
		"session_start": sessionStartSchema(cfg, true).Properties["network"].Description,
	} {
		assert.Contains(t, n, `{"policy": "NAME"}`, name)
		assert.Contains(t, n, "list_environments lists the daemon's policies", name)
		assert.Contains(t, n, "no network at all (the default)", name)
	}
	s := runPythonSchema(cfg, true).Properties["network"]
	assert.ElementsMatch(t, []string{"policy", "allow"}, keys(s.Properties))
	assert.Empty(t, s.Required, "policy or allow: neither alone is required")

	// Without a daemon, the schema names the configuration's policies.
	cfg.Network.Policies = map[string]daemon.NetworkPolicyConfig{"pypi": {Allow: []string{"pypi.org:443"}}, "up": {}}
	assert.Contains(t, runPythonSchema(cfg, false).Properties["network"].Description, "this server's policies: pypi, up")
	assert.Contains(t, sessionStartSchema(daemon.DefaultConfig(), false).Properties["network"].Description, "has none")
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// TestMCPNetwork: run_python, run_command and session_start with a
// policy, jails in the server's process: the program reaches the allowed
// upstream (on the test's loopback, which private_allow opens) through
// the proxy, a refused host is refused, and the answers' text says so;
// list_environments names the policy.
func TestMCPNetwork(t *testing.T) {
	config, base := mcpConfig(t)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "hi from upstream") }))
	t.Cleanup(srv.Close)
	up := srv.Listener.Addr().String()
	f, err := os.OpenFile(config, os.O_APPEND|os.O_WRONLY, 0)
	require.NoError(t, err)
	_, err = fmt.Fprintf(f, "[network]\nresolver = \"127.0.0.1:1\"\nprivate_allow = [\"127.0.0.1\"]\n[network.policies.up]\nallow = [%q]\n", up)
	require.NoError(t, err)
	require.NoError(t, f.Close())
	cs, cmd, log := connectMCP(t, "--config", config)

	program := "import urllib.request, urllib.error\n" +
		"print(urllib.request.urlopen('http://" + up + "/', timeout=10).read().decode())\n" +
		"try:\n    urllib.request.urlopen('http://refused.example/', timeout=10)\nexcept urllib.error.HTTPError as e:\n    print('refused', e.code)\n"
	res, out, text := callTool(t, cs, "run_python", map[string]any{"code": program, "network": map[string]any{"policy": "up"}})
	require.False(t, res.IsError, text)
	assert.Contains(t, text, "hi from upstream\nrefused 403")
	assert.Contains(t, text, "\nnetwork: 1 allowed, 1 blocked (")
	assert.Contains(t, text, "\n  blocked refused.example:80: not_allowed (the host or the port is not in the policy)")
	network, _ := out["network"].(map[string]any)
	assert.Equal(t, float64(1), network["blocked"], "the structured result has the report: %v", out["network"])

	res, _, text = callTool(t, cs, "run_command", map[string]any{"command": "echo $HTTP_PROXY", "network": map[string]any{"policy": "up"}})
	require.False(t, res.IsError, text)
	assert.Contains(t, text, "http://127.0.0.1:3128")
	assert.Contains(t, text, "network: 0 allowed, 0 blocked")

	// Without it: no proxy, and nothing said of the network.
	_, out, text = callTool(t, cs, "run_python", map[string]any{"code": "import os; print(os.environ.get('HTTP_PROXY'))"})
	assert.Contains(t, text, "--- stdout ---\nNone")
	assert.NotContains(t, text, "network:")
	assert.Nil(t, out["network"])

	// The daemon's refusals, naming the argument.
	res, _, text = callTool(t, cs, "run_python", map[string]any{"code": "pass", "network": map[string]any{"policy": "nope"}})
	assert.True(t, res.IsError)
	assert.Contains(t, text, `network.policy: unknown policy "nope"; this daemon has: up`)
	res, _, text = callTool(t, cs, "run_python", map[string]any{"code": "pass", "network": map[string]any{"allow": []string{up}}})
	assert.True(t, res.IsError)
	assert.Contains(t, text, "network.inline_allow is false")
	res, _, text = callTool(t, cs, "run_python", map[string]any{"code": "pass", "network": map[string]any{"polcy": "up"}})
	assert.True(t, res.IsError, "an unknown key: %s", text)
	assert.Contains(t, text, "polcy")

	// A session: its calls have the policy.
	res, out, text = callTool(t, cs, "session_start", map[string]any{"network": map[string]any{"policy": "up"}})
	require.False(t, res.IsError, text)
	assert.Contains(t, text, "Network: policy up, for all its calls")
	id, _ := out["id"].(string)
	res, _, text = callTool(t, cs, "session_run", map[string]any{"session_id": id, "code": program})
	require.False(t, res.IsError, text)
	assert.Contains(t, text, "hi from upstream\nrefused 403")
	assert.Contains(t, text, "\nnetwork: 1 allowed, 1 blocked (")
	assert.Contains(t, text, "\n  blocked refused.example:80: not_allowed")

	res, out, text = callTool(t, cs, "list_environments", nil)
	require.False(t, res.IsError, text)
	assert.Contains(t, text, "\nnetwork policies (give run_python, run_command or session_start network {\"policy\": NAME}):\n  up: allows "+up)
	assert.Contains(t, out, "network_policies")

	require.NoError(t, cs.Close())
	exited(t, cmd, 5*time.Second)
	noLeftovers(t, base, log.String())
}
