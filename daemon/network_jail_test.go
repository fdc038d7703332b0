package daemon

import (
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"agentjail/egress"
	"agentjail/internal/systest"
)

// egressProgram fetches the upstream through the proxy, asks for a host
// the policy refuses, then tries the upstream directly (no route: the
// jail's loopback is its own).
const egressProgram = `import os, socket, sys, urllib.request, urllib.error
up = sys.argv[1] if len(sys.argv) > 1 else os.environ["UP"]
print("proxy", os.environ.get("HTTP_PROXY"))
print("fetched", urllib.request.urlopen("http://" + up + "/hello", timeout=10).read().decode())
try:
    urllib.request.urlopen("http://refused.example/", timeout=10)
except urllib.error.HTTPError as e:
    print("refused", e.code)
host, port = up.split(":")
try:
    socket.create_connection((host, int(port)), timeout=2)
    print("direct connected")
except OSError as e:
    print("direct failed", e.errno)
`

// upstreamServer is an HTTP server on the daemon's loopback.
func upstreamServer(t *testing.T) string {
	t.Helper()
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "hi from "+r.Host)
	}))
	t.Cleanup(up.Close)
	return up.Listener.Addr().String()
}

// foreignSockets is how many sockets this process holds in a network
// namespace other than its own: the proxy's listeners in jails and the
// connections they accepted (SIOCGSKNS names a socket's namespace).
func foreignSockets(t *testing.T) int {
	t.Helper()
	var own unix.Stat_t
	require.NoError(t, unix.Stat("/proc/self/ns/net", &own))
	ents, err := os.ReadDir("/proc/self/fd")
	require.NoError(t, err)
	n := 0
	for _, e := range ents {
		fd, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if l, err := os.Readlink("/proc/self/fd/" + e.Name()); err != nil || !strings.HasPrefix(l, "socket:") {
			continue
		}
		ns, err := unix.IoctlRetInt(fd, unix.SIOCGSKNS)
		if err != nil {
			continue // closed meanwhile
		}
		var st unix.Stat_t
		if unix.Fstat(ns, &st) == nil && st.Ino != own.Ino {
			n++
		}
		unix.Close(ns)
	}
	return n
}

// noSocketsLeft waits until this process holds no socket in a jail's
// namespace.
func noSocketsLeft(t *testing.T) {
	t.Helper()
	deadline := time.Now().Add(3 * time.Second)
	for foreignSockets(t) > 0 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	assert.Zero(t, foreignSockets(t), "a socket of the proxy (its listener, a connection) outlived the run")
}

func checkEgressOutput(t *testing.T, stdout, up string, rep *egress.Report) {
	t.Helper()
	assert.Contains(t, stdout, "proxy http://127.0.0.1:3128\n")
	assert.Contains(t, stdout, "fetched hi from "+up+"\n")
	assert.Contains(t, stdout, "refused 403\n")
	assert.Contains(t, stdout, "direct failed", "the jail reached the daemon's loopback without the proxy")
	require.NotNil(t, rep)
	require.Len(t, rep.Connections, 2, "%+v", rep)
	assert.Equal(t, 1, rep.Allowed)
	assert.Equal(t, 1, rep.Blocked)
	ok, refused := rep.Connections[0], rep.Connections[1]
	assert.Equal(t, egress.Allowed, ok.Verdict)
	assert.Equal(t, "127.0.0.1", ok.IP)
	assert.Positive(t, ok.Received)
	assert.Equal(t, "refused.example", refused.Host)
	assert.Equal(t, egress.ReasonNotAllowed, refused.Reason)
}

// A run with a policy, warm and cold: the program fetches through the
// proxy, a refused host is refused and reported, and after the run no
// socket of the proxy is left.
func TestNetworkEgressRealJail(t *testing.T) {
	r := realRunner(t)
	up := upstreamServer(t)
	_, _, c := startServer(t, egressOptions(t, up, false), r)
	runJSON(t, c, map[string]any{"code": "pass"}) // the client's connection is open from now on
	for _, start := range []string{"warm", "cold"} {
		t.Run(start, func(t *testing.T) {
			res := runJSON(t, c, map[string]any{"code": egressProgram, "start": start, "env": map[string]string{"UP": up},
				"network": map[string]any{"policy": "up"}})
			assert.Equal(t, "ok", res.Status, res.Stderr)
			assert.Equal(t, start, res.Start)
			checkEgressOutput(t, res.Stdout, up, res.Network)
			assert.Contains(t, res.Feedback, "The network policy refused refused.example:80: it allows only "+up+".")
			noSocketsLeft(t)
			// Without "network": as before, no proxy.
			res = runJSON(t, c, map[string]any{"code": "import os; print(os.environ.get('HTTP_PROXY'))", "start": start})
			assert.Equal(t, "None\n", res.Stdout)
			assert.Nil(t, res.Network)
		})
	}
}

// A session with a policy: one listener for its life, each call's result
// with that call's connections, nothing left once it ends.
func TestNetworkEgressRealSession(t *testing.T) {
	up := upstreamServer(t)
	s, _, c := sessionServer(t, func(o *Options) { o.Policy.Network = egressOptions(t, up, false).Policy.Network })
	runJSON(t, c, map[string]any{"code": "pass"})
	for _, start := range []string{"warm", "cold"} {
		t.Run(start, func(t *testing.T) {
			sc := startSession(t, s, c, map[string]any{"start": start, "network": map[string]any{"policy": "up"}})
			a := sessionRun(t, c, sc.ID, map[string]any{"code": "import sys; sys.argv = ['x', '" + up + "']\n" + egressProgram})
			assert.Equal(t, "ok", a.Status, a.Stderr)
			checkEgressOutput(t, a.Stdout, up, a.Network)
			a = sessionRun(t, c, sc.ID, map[string]any{"code": "print(urllib.request.urlopen('http://" + up + "/again', timeout=10).read().decode())"})
			assert.Equal(t, "hi from "+up+"\n", a.Stdout, a.Stderr)
			require.NotNil(t, a.Network)
			assert.Equal(t, 1, a.Network.Allowed, "the second call reports its own connection only")
			assert.Equal(t, 0, a.Network.Blocked)
			code, _ := do(t, c, http.MethodDelete, "/v1/sessions/"+sc.ID, nil)
			assert.Equal(t, http.StatusNoContent, code)
			noSocketsLeft(t)
		})
	}
}

// BenchmarkNetworkRunPass runs a warm "pass" without and with a network
// policy (the listener made in the jail's namespace, served, closed) in
// turn, and reports each one's wall time and the test process's CPU (the
// daemon's side and the client's; the jail's processes do the same work
// in both): go test -run '^$' -bench NetworkRunPass -benchtime 300x ./daemon.
func BenchmarkNetworkRunPass(b *testing.B) {
	r := realRunner(b)
	cfg := defaultNetwork()
	cfg.Resolver = "127.0.0.1:1"
	cfg.Policies = map[string]NetworkPolicyConfig{"p": {Allow: []string{"pypi.org:443"}}}
	e, err := NewEgress(cfg)
	require.NoError(b, err)
	o := testOptions()
	o.Policy.Network = e
	_, _, c := startServer(b, o, r)
	bodies := [2]string{`{"code":"pass","start":"warm"}`, `{"code":"pass","start":"warm","network":{"policy":"p"}}`}
	for i := range 10 {
		post(b, c, bodies[i%2])
	}
	var cpu, wall [2]time.Duration
	n := 0
	for b.Loop() {
		for k, body := range bodies {
			c0, w0 := systest.SelfCPU(), time.Now()
			if resp, out := post(b, c, body); resp.StatusCode != http.StatusOK {
				b.Fatal(string(out))
			}
			wall[k] += time.Since(w0)
			cpu[k] += systest.SelfCPU() - c0
		}
		n++
	}
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) / float64(n) }
	b.ReportMetric(ms(cpu[0]), "none-cpu-ms/op")
	b.ReportMetric(ms(cpu[1]), "policy-cpu-ms/op")
	b.ReportMetric(ms(wall[0]), "none-wall-ms/op")
	b.ReportMetric(ms(wall[1]), "policy-wall-ms/op")
}
