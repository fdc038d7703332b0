package daemon

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"agentjail/egress"
	"agentjail/internal/systest"
	"agentjail/nsjail"
)

// egressOptions are testOptions with [network]: a policy "up" that
// allows upstream (host:port) and private_allow 127.0.0.1.
func egressOptions(t *testing.T, upstream string, inline bool) Options {
	t.Helper()
	cfg := defaultNetwork()
	cfg.InlineAllow = inline
	cfg.Resolver = "127.0.0.1:1"
	cfg.PrivateAllow = []string{"127.0.0.1"}
	cfg.Policies = map[string]NetworkPolicyConfig{"up": {Allow: []string{upstream}}, "other": {Allow: []string{"pypi.org:443"}}}
	e, err := NewEgress(cfg)
	require.NoError(t, err)
	o := testOptions()
	o.Policy.Network = e
	return o
}

func TestNetworkRequestErrors(t *testing.T) {
	ran := false
	j := &fakeJailer{run: func(ctx context.Context, s *nsjail.Spec) (*nsjail.Result, error) { ran = true; return okResult(s), nil }}
	_, _, c := startServer(t, egressOptions(t, "127.0.0.1:80", false), j)
	for body, want := range map[string]string{
		`{"code":"1","network":{"policy":"nope"}}`:                        `network.policy: unknown policy "nope"; this daemon has: other, up`,
		`{"code":"1","network":{"allow":["pypi.org:443"]}}`:               "network.allow: this daemon takes no allow list of a request's own (network.inline_allow is false): name a policy instead; it has: other, up",
		`{"code":"1","network":{}}`:                                       `network: is empty: write "network": {"policy": "NAME"}`,
		`{"code":"1","network":{"policy":"up","allow":["pypi.org:443"]}}`: "network: give policy or allow, not both",
		`{"code":"1","network":{"polcy":"up"}}`:                           "polcy",
	} {
		resp, b := post(t, c, body)
		assert.Equal(t, http.StatusBadRequest, resp.StatusCode, body)
		assert.Contains(t, decodeErr(t, b).Error.Message, want, body)
	}
	_, _, c = startServer(t, egressOptions(t, "127.0.0.1:80", true), j)
	resp, b := post(t, c, `{"code":"1","network":{"allow":["pypi.org:443","pypi.org"]}}`)
	assert.Equal(t, http.StatusBadRequest, resp.StatusCode)
	assert.Contains(t, decodeErr(t, b).Error.Message, `network.allow: allow entry "pypi.org" has no port (write host:port); valid entries look like "pypi.org:443"`)
	// A daemon without [network] policies says so.
	_, _, c = startServer(t, testOptions(), j)
	resp, b = post(t, c, `{"code":"1","network":{"policy":"up"}}`)
	assert.Equal(t, http.StatusBadRequest, resp.StatusCode)
	assert.Contains(t, decodeErr(t, b).Error.Message, "this daemon has: none (the daemon's configuration has no [network.policies.NAME])")
	assert.False(t, ran)
}

// Without "network" a run is as before: no hook, no proxy variables,
// "network": null. With it, the proxy's variables and the hook.
func TestNetworkDefaultUnchanged(t *testing.T) {
	var got *nsjail.Spec
	j := &fakeJailer{run: func(ctx context.Context, s *nsjail.Spec) (*nsjail.Result, error) { got = s; return okResult(s), nil }}
	_, _, c := startServer(t, egressOptions(t, "127.0.0.1:80", false), j)
	resp, b := post(t, c, `{"code":"1","env":{"A":"1"}}`)
	require.Equal(t, http.StatusOK, resp.StatusCode, string(b))
	assert.Nil(t, got.Network)
	assert.Equal(t, map[string]string{"A": "1"}, got.Env)
	assert.Contains(t, string(b), `"network":null`)

	resp, b = post(t, c, `{"code":"1","env":{"A":"1","HTTP_PROXY":"http://elsewhere:1","NO_PROXY":"*"},"network":{"policy":"up"}}`)
	require.Equal(t, http.StatusOK, resp.StatusCode, string(b))
	assert.NotNil(t, got.Network)
	for _, k := range []string{"HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy"} {
		assert.Equal(t, "http://127.0.0.1:3128", got.Env[k], k)
	}
	assert.Equal(t, "", got.Env["NO_PROXY"])
	assert.Equal(t, "1", got.Env["A"])
	// The hook never ran (a fake jail): an empty report, not null.
	assert.Contains(t, string(b), `"network":{"allowed":0,"blocked":0,"bytes_sent":0,"bytes_received":0,"connections":[],"truncated":false}`)
}

func TestNetworkPoliciesListed(t *testing.T) {
	_, _, c := startServer(t, egressOptions(t, "127.0.0.1:80", false), &fakeJailer{})
	resp, err := c.Get("http://agentjail/v1/environments")
	require.NoError(t, err)
	defer resp.Body.Close()
	var body struct {
		NetworkPolicies map[string][]string `json:"network_policies"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&body))
	assert.Equal(t, map[string][]string{"up": {"127.0.0.1:80"}, "other": {"pypi.org:443"}}, body.NetworkPolicies)
}

// The wiring without a jail: a fake jailer calls the hook with a network
// namespace of its own (unshare), a client in that namespace fetches
// through 127.0.0.1:3128 and asks for a refused host; the result reports
// both, the feedback names the refused host, the metrics count them, and
// after the run the namespace has no listener left.
func TestNetworkHookServesTheNamespace(t *testing.T) {
	systest.Require(t, systest.Root, systest.Python)
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "upstream says hi") }))
	defer up.Close()
	upAddr := up.Listener.Addr().String()
	pid := strconv.Itoa(netnsSleeper(t).Process.Pid)
	client := `import urllib.request, sys
for u in sys.argv[1:]:
    try: print(urllib.request.urlopen(u, timeout=5).read().decode())
    except Exception as e: print("refused", e)
`
	j := &fakeJailer{run: func(ctx context.Context, s *nsjail.Spec) (*nsjail.Result, error) {
		f, err := os.Open("/proc/" + pid + "/ns/net")
		if err != nil {
			return nil, err
		}
		defer f.Close()
		if err := s.Network(f); err != nil {
			return nil, err
		}
		cmd := exec.Command("nsenter", "-t", pid, "-n", "/usr/bin/python3", "-c", client, "http://"+upAddr+"/", "http://refused.example:80/")
		for k, v := range s.Env {
			cmd.Env = append(cmd.Env, k+"="+v)
		}
		out, err := cmd.CombinedOutput()
		res := okResult(s)
		res.Stdout = out
		return res, err
	}}
	_, _, c := startServer(t, egressOptions(t, upAddr, false), j)
	resp, b := post(t, c, `{"code":"1","network":{"policy":"up"}}`)
	require.Equal(t, http.StatusOK, resp.StatusCode, string(b))
	var res struct {
		Stdout   string         `json:"stdout"`
		Network  *egress.Report `json:"network"`
		Feedback []string       `json:"feedback"`
	}
	require.NoError(t, json.Unmarshal(b, &res))
	assert.Contains(t, res.Stdout, "upstream says hi")
	assert.Contains(t, res.Stdout, "refused HTTP Error 403")
	require.NotNil(t, res.Network)
	assert.Equal(t, 1, res.Network.Allowed)
	assert.Equal(t, 1, res.Network.Blocked)
	assert.Equal(t, "refused.example", res.Network.Connections[1].Host)
	assert.Equal(t, egress.ReasonNotAllowed, res.Network.Connections[1].Reason)
	assert.Contains(t, res.Feedback, fmt.Sprintf("The network policy refused refused.example:80: it allows only %s.", upAddr))
	// The listener is gone with the run.
	out, err := exec.Command("nsenter", "-t", pid, "-n", "cat", "/proc/net/tcp").CombinedOutput()
	require.NoError(t, err)
	assert.Contains(t, string(out), "local_address")
	for _, l := range strings.Split(string(out), "\n") {
		f := strings.Fields(l)
		if len(f) > 3 && strings.HasSuffix(f[1], ":0C38") && f[3] != "06" { // 06: TIME_WAIT, no socket
			t.Errorf("a socket on port 3128 is left in the namespace: %s", l)
		}
	}
	m, err := c.Get("http://agentjail/metrics")
	require.NoError(t, err)
	defer m.Body.Close()
	mb, _ := io.ReadAll(m.Body)
	assert.Contains(t, string(mb), `agentjail_egress_connections_total{reason="not_allowed",verdict="blocked"} 1`)
	assert.Contains(t, string(mb), `agentjail_egress_connections_total{reason="",verdict="allowed"} 1`)
	assert.True(t, strings.Contains(string(mb), `agentjail_egress_bytes_total{direction="received"}`))
}

// A run tried again in another jail (its first jail ended before it got
// the request) calls the hook twice: the first listener is closed, the
// second serves.
func TestNetworkHookTwice(t *testing.T) {
	systest.Require(t, systest.Root)
	o := egressOptions(t, "127.0.0.1:80", false)
	nr := o.Policy.Network.newRun(o.Policy.Network.policies["up"])
	var nss []*os.File
	var pids []string
	for range 2 {
		cmd := netnsSleeper(t)
		ns := "/proc/" + strconv.Itoa(cmd.Process.Pid) + "/ns/net"
		f, err := os.Open(ns)
		require.NoError(t, err)
		defer f.Close()
		nss = append(nss, f)
		pids = append(pids, strconv.Itoa(cmd.Process.Pid))
	}
	listening := func(pid string) bool {
		out, err := exec.Command("nsenter", "-t", pid, "-n", "cat", "/proc/net/tcp").CombinedOutput()
		require.NoError(t, err)
		return strings.Contains(string(out), "0100007F:0C38 00000000:0000 0A")
	}
	require.NoError(t, nr.hook(nss[0]))
	first := nr.run
	require.NoError(t, nr.hook(nss[1]))
	assert.NotSame(t, first, nr.run)
	assert.False(t, listening(pids[0]), "the first jail's listener is left")
	assert.True(t, listening(pids[1]))
	assert.Equal(t, 0, first.Take().Allowed) // closed: a report of nothing
	rep := nr.close()
	assert.NotNil(t, rep)
	assert.False(t, listening(pids[1]))
	assert.Error(t, nr.hook(nss[0]), "after the run ended")
}

// netnsSleeper starts a sleep in a network namespace of its own, with its
// loopback up, and waits until it is there (a fixed sleep was too short
// under emulation: the "jail" was then still this process's namespace).
func netnsSleeper(t *testing.T) *exec.Cmd {
	t.Helper()
	cmd := exec.Command("unshare", "--net", "sh", "-c", "ip link set lo up && exec sleep 60")
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	own, err := os.Readlink("/proc/self/ns/net")
	require.NoError(t, err)
	pid := strconv.Itoa(cmd.Process.Pid)
	require.Eventually(t, func() bool {
		l, err := os.Readlink("/proc/" + pid + "/ns/net")
		comm, _ := os.ReadFile("/proc/" + pid + "/comm")
		return err == nil && l != own && string(comm) == "sleep\n" // lo is up by then
	}, 20*time.Second, 5*time.Millisecond, "unshare made no network namespace")
	return cmd
}
