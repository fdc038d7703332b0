package egresstest

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"agentjail/internal/networld"
	"agentjail/internal/systest"
	"agentjail/nsjail"
)

//go:embed testdata/proxylib.py
var proxylib string

// The modes every case runs in.
var modes = []string{"warm", "cold", "session"}

// netReport is the result's "network" object (contract section 8).
type netReport struct {
	Allowed       int       `json:"allowed"`
	Blocked       int       `json:"blocked"`
	BytesSent     int64     `json:"bytes_sent"`
	BytesReceived int64     `json:"bytes_received"`
	Connections   []netConn `json:"connections"`
	Truncated     bool      `json:"truncated"`
}

type netConn struct {
	Host     string  `json:"host"`
	Port     int     `json:"port"`
	IP       string  `json:"ip"`
	Verdict  string  `json:"verdict"`
	Reason   string  `json:"reason"`
	Sent     int64   `json:"sent"`
	Received int64   `json:"received"`
	Ms       float64 `json:"ms"`
}

func (c netConn) String() string {
	return fmt.Sprintf("%s:%d ip=%s %s %s sent=%d received=%d", c.Host, c.Port, c.IP, c.Verdict, c.Reason, c.Sent, c.Received)
}

// result is what the tests read of a run's result.
type result struct {
	ID         string     `json:"id"`
	Status     string     `json:"status"`
	KillReason string     `json:"kill_reason"`
	ExitCode   int        `json:"exit_code"`
	Stdout     string     `json:"stdout"`
	Stderr     string     `json:"stderr"`
	Feedback   []string   `json:"feedback"`
	Start      string     `json:"start"`
	Network    *netReport `json:"network"`
	Value      any        `json:"value"`
}

// outs are the "OUT {json}" lines of proxylib.py.
func (r result) outs(t *testing.T) []map[string]any {
	t.Helper()
	var outs []map[string]any
	for _, l := range strings.Split(r.Stdout, "\n") {
		if j, ok := strings.CutPrefix(l, "OUT "); ok {
			var m map[string]any
			require.NoError(t, json.Unmarshal([]byte(j), &m), l)
			outs = append(outs, m)
		}
	}
	return outs
}

// fixture is one world and the daemons the tests run in it.
type fixture struct {
	w    *networld.World
	d    *networld.Daemon
	caPE string
}

// policies of the main daemon. "world" allows the index and the echo
// server by name; "trap" allows, by name and address, every place the
// proxy must refuse by address: only its address check stands between
// a program and those servers.
const policies = `[network.policies.world]
allow = ["index.test:443", "index.test:80", "echo.test:80", "echo.test:443"]
[network.policies.trap]
allow = ["169.254.169.254:80", "metadata.test:80", "metadata6.test:80", "[fd00:ec2::254]:80",
  "mapped.test:80", "[::ffff:169.254.169.254]:80", "rebind.test:80",
  "localhost:8081", "127.0.0.1:8081", "[::1]:8081", "0.0.0.0:8081",
  "self.test:8081", "203.0.113.1:8081", "[2001:db8::1]:8081", "203.0.113.1:9464", "self.test:9464",
  "127.0.0.1:8765", "localhost:8765",
  "private.test:8080", "10.0.0.5:8080", "10.0.0.0/8:80", "169.254.0.0/16:80"]
`

// networkLimits are the main daemon's caps: small enough to hit in a test.
const networkLimits = `inline_allow = true
private_allow = []
max_connections = 64
max_bytes = 16777216
connect_timeout_ms = 3000
idle_timeout_ms = 2000
`

func newFixture(t *testing.T) *fixture {
	t.Helper()
	systest.Require(t, systest.Root, systest.UserNS, systest.CgroupMem, systest.Seccomp, systest.Python, systest.NetNS)
	// On cgroup v2 the daemon makes its jails below its own cgroup, which
	// must hold no process: this moves the test into a leaf first.
	_, err := nsjail.NewRunner()
	require.NoError(t, err)
	bin := networld.Binary(t)
	w := networld.New(t)
	f := &fixture{w: w}
	ca, err := os.ReadFile(w.CAFile)
	require.NoError(t, err)
	f.caPE = string(ca)
	f.d = w.NewDaemon(t, bin, networld.DaemonConfig(networld.UIDBase(), networkLimits, policies))
	return f
}

// request is one run: code (after proxylib), its network, and the CA.
type request struct {
	code    string
	network map[string]any
	wallMs  int
	env     map[string]string
}

func (f *fixture) body(rq request) map[string]any {
	b := map[string]any{
		"code":  proxylib + "\n" + rq.code,
		"files": []map[string]string{{"path": "ca.pem", "content": f.caPE}},
	}
	if rq.network != nil {
		b["network"] = rq.network
	}
	if rq.env != nil {
		b["env"] = rq.env
	}
	wall := rq.wallMs
	if wall == 0 {
		wall = 60000
	}
	b["limits"] = map[string]any{"wall_time_ms": wall, "cpu_time_ms": wall}
	return b
}

// run runs rq in mode (warm, cold, or a call of a new session) on d.
func (f *fixture) run(t *testing.T, d *networld.Daemon, mode string, rq request) result {
	t.Helper()
	if mode != "session" {
		var res result
		b := f.body(rq)
		b["start"] = mode
		code, raw, err := d.Call("POST", "/v1/run", b, &res)
		require.NoError(t, err)
		require.Equal(t, 200, code, "POST /v1/run: %s", raw)
		return res
	}
	s := f.session(t, d, rq.network, rq.env)
	defer s.end(t)
	return s.call(t, rq.code, rq.wallMs)
}

// session is a live session on a daemon.
type session struct {
	f  *fixture
	d  *networld.Daemon
	id string
}

// session starts one with network (nil: none) and the CA in its files.
func (f *fixture) session(t *testing.T, d *networld.Daemon, network map[string]any, env ...map[string]string) *session {
	t.Helper()
	create := map[string]any{"files": f.body(request{})["files"]}
	if network != nil {
		create["network"] = network
	}
	if len(env) > 0 && env[0] != nil {
		create["env"] = env[0]
	}
	var s struct {
		ID string `json:"id"`
	}
	code, raw, err := d.Call("POST", "/v1/sessions", create, &s)
	require.NoError(t, err)
	require.Equal(t, 201, code, "POST /v1/sessions: %s", raw)
	return &session{f: f, d: d, id: s.ID}
}

// call runs code (after proxylib) in the session.
func (s *session) call(t *testing.T, code string, wallMs ...int) result {
	t.Helper()
	b := s.f.body(request{code: code, wallMs: append(wallMs, 0)[0]})
	var res result
	status, raw, err := s.d.Call("POST", "/v1/sessions/"+s.id+"/run", map[string]any{"code": b["code"], "limits": b["limits"]}, &res)
	require.NoError(t, err)
	require.Equal(t, 200, status, "POST /v1/sessions/%s/run: %s", s.id, raw)
	return res
}

func (s *session) end(t *testing.T) {
	code, raw, err := s.d.Call("DELETE", "/v1/sessions/"+s.id, nil, nil)
	assert.NoError(t, err)
	assert.Equal(t, 204, code, "DELETE: %s", raw)
}

// healthy fails t unless d is alive and answers /v1/health.
func healthy(t *testing.T, d *networld.Daemon) {
	t.Helper()
	require.True(t, d.Alive(), "the daemon died:\n%s", d.Log())
	code, raw, err := d.Call("GET", "/v1/health", nil, nil)
	require.NoError(t, err)
	require.Equal(t, 200, code, "%s", raw)
}

// fdsSettle waits until d holds no IPv4 or IPv6 socket that it did not
// hold at the baseline (a run's proxy listener in the run's namespace,
// which pins that namespace, a client's or an upstream connection), and
// fails t with those it still holds after 10 s. The daemon's total fd
// count is no measure: its prepared jails come and go.
func fdsSettle(t *testing.T, d *networld.Daemon, base fdSnapshot, what string) {
	t.Helper()
	var extra []networld.InetSocket
	deadline := time.Now().Add(10 * time.Second)
	for {
		socks, err := d.InetSockets()
		require.NoError(t, err)
		extra = extra[:0]
		for _, s := range socks {
			if !base.inet[s.Inode] {
				extra = append(extra, s)
			}
		}
		if len(extra) == 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	assert.Empty(t, extra, "after %s the daemon still holds these sockets (fds %d, %d at the baseline)", what, d.FdCount(), base.n)
}

// fdSnapshot is the daemon's fds and IPv4/IPv6 sockets at the baseline.
type fdSnapshot struct {
	n    int
	inet map[string]bool
}

// baseline runs a few programs with a policy in every mode (so that the
// daemon's lazily made things exist), then counts the daemon's fds.
func (f *fixture) baseline(t *testing.T, d *networld.Daemon) fdSnapshot {
	t.Helper()
	for range 2 {
		for _, m := range modes {
			f.run(t, d, m, request{code: "pass", network: map[string]any{"policy": "world"}})
			f.run(t, d, m, request{code: "pass"})
		}
	}
	time.Sleep(300 * time.Millisecond)
	socks, err := d.InetSockets()
	require.NoError(t, err)
	snap := fdSnapshot{n: d.FdCount(), inet: map[string]bool{}}
	for _, s := range socks {
		snap.inet[s.Inode] = true
		t.Logf("the daemon's socket at the baseline: %s", s)
	}
	return snap
}

// reachable shows, before a blocked case, that url's server answers from
// D without the proxy with want in its body: the proxy is what blocks.
func (f *fixture) reachable(t *testing.T, url, want string) {
	t.Helper()
	body, err := f.w.GetIn(f.w.D, url)
	require.NoError(t, err, "%s must be reachable from the daemon's namespace without the proxy", url)
	require.Contains(t, body, want, url)
}

// blockedOnly checks a run's network report: every connection blocked,
// each for one of reasons, at least min of them.
func blockedOnly(t *testing.T, r result, min int, reasons ...string) {
	t.Helper()
	require.NotNil(t, r.Network, "a run with a policy has a network report; stdout %s stderr %s", r.Stdout, r.Stderr)
	assert.GreaterOrEqual(t, r.Network.Blocked, min, "blocked count; connections %v", r.Network.Connections)
	assert.Zero(t, r.Network.Allowed, "allowed count; connections %v", r.Network.Connections)
	for _, c := range r.Network.Connections {
		assert.Equal(t, "blocked", c.Verdict, "%s", c)
		if len(reasons) > 0 {
			assert.Contains(t, reasons, c.Reason, "%s", c)
		}
		assert.Zero(t, c.Received, "a blocked connection received nothing from upstream: %s", c)
	}
}

// noSecret fails t if a secret of the world's servers is in the run's
// output.
func noSecret(t *testing.T, r result) {
	t.Helper()
	for _, s := range []string{networld.MetadataBody, networld.PrivateBody, networld.DaemonSideBody, "# HELP"} {
		assert.NotContains(t, r.Stdout+r.Stderr, s, "the program got through to a refused server")
	}
}

func keys(m map[string]bool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
