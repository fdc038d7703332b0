package egresstest

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	nw "agentjail/internal/networld"
)

// 1,000 connections: 100 held open at once, then 900 one after another.
const thousandCode = `import socket
held, ok, refused = [], 0, 0
def one():
    s = socket.create_connection(PROXY, timeout=10)
    s.sendall(b"CONNECT echo.test:80 HTTP/1.1\r\nHost: echo.test:80\r\n\r\n")
    h = b""
    while b"\r\n\r\n" not in h:
        c = s.recv(4096)
        if not c:
            break
        h += c
    return s, h.startswith(b"HTTP/1.1 200") or h.startswith(b"HTTP/1.0 200")
for i in range(1000):
    try:
        s, good = one()
    except OSError:
        s, good = None, False
    ok += good
    refused += not good
    if s is not None:
        if i < 100:
            held.append(s)
        else:
            s.close()
out(kind="many", ok=ok, refused=refused)
`

// A slow client: a tunnel that then says nothing past the idle timeout,
// and a CONNECT head that never ends.
const slowCode = `import socket, time
s = socket.create_connection(PROXY, timeout=20)
s.sendall(b"CONNECT echo.test:80 HTTP/1.1\r\nHost: echo.test:80\r\n\r\n")
head = s.recv(4096)
time.sleep(5)
try:
    s.sendall(b"GET / HTTP/1.1\r\nHost: echo.test\r\nConnection: close\r\n\r\n")
    body = s.recv(65536)
except OSError as e:
    body = repr(e).encode()
out(kind="slow", what="idle tunnel", status=int(head.split(b" ")[1]) if head else 0, body=body.decode("latin-1"))
t = socket.create_connection(PROXY, timeout=20)
t.sendall(b"CONNECT echo.te")
t0 = time.time()
try:
    got = t.recv(4096)
except OSError as e:
    got = repr(e).encode()
out(kind="slow", what="unfinished head", body=got.decode("latin-1"), waited=time.time() - t0)
`

// Past the byte cap (16 MiB in the fixture's configuration), both ways.
const bytesCode = `import socket, urllib.request
n = 0
try:
    with urllib.request.urlopen("http://echo.test/bytes?n=67108864", timeout=30) as r:
        while True:
            b = r.read(1 << 20)
            if not b:
                break
            n += len(b)
    err = ""
except Exception as e:
    err = repr(e)
out(kind="bytes", what="download", received=n, error=err)
`

// The upload, in a run of its own (the download spends the run's bytes).
const uploadCode = `import socket
s = socket.create_connection(PROXY, timeout=20)
sent = 0
chunk = b"POST http://echo.test/sink HTTP/1.1\r\nHost: echo.test\r\nContent-Length: 67108864\r\n\r\n" + b"x" * (1 << 20)
try:
    while sent < 64 << 20:
        s.sendall(chunk)
        sent += len(chunk)
    err = ""
except Exception as e:
    err = repr(e)
out(kind="bytes", what="upload", sent=sent, error=err)
`

const capBytes = 16 << 20

// TestEgressLimits: past the caps on connections, idle time and bytes, a
// run is capped and told, and the daemon serves the next run; nothing is
// left.
func TestEgressLimits(t *testing.T) {
	f := newFixture(t)
	base := f.baseline(t, f.d)
	f.reachable(t, "http://"+nw.EchoName+"/bytes?n=67108864", "")
	for _, mode := range modes {
		t.Run("1000_connections/"+mode, func(t *testing.T) {
			r := f.run(t, f.d, mode, request{code: thousandCode, network: map[string]any{"policy": "world"}, wallMs: 120000})
			outs := r.outs(t)
			require.Len(t, outs, 1, "stdout %s stderr %s", r.Stdout, r.Stderr)
			t.Logf("%v; network: %d allowed, %d blocked, %d listed, truncated %v", outs, r.Network.Allowed, r.Network.Blocked, len(r.Network.Connections), r.Network.Truncated)
			assert.LessOrEqual(t, outs[0]["ok"], float64(64), "max_connections is 64")
			require.NotNil(t, r.Network)
			assert.LessOrEqual(t, r.Network.Allowed, 64)
			assert.Equal(t, 1000, r.Network.Allowed+r.Network.Blocked, "every connection counted")
			assert.True(t, r.Network.Truncated || len(r.Network.Connections) == 1000, "the list is whole or says it is not")
			reasons := map[string]bool{}
			for _, c := range r.Network.Connections {
				if c.Verdict == "blocked" {
					reasons[c.Reason] = true
				}
			}
			assert.Equal(t, []string{"connection_limit"}, keys(reasons))
			after(t, f, base, "1000 connections "+mode)
		})
		t.Run("slow_client/"+mode, func(t *testing.T) {
			r := f.run(t, f.d, mode, request{code: slowCode, network: map[string]any{"policy": "world"}})
			outs := r.outs(t)
			require.Len(t, outs, 2, "stdout %s stderr %s", r.Stdout, r.Stderr)
			assert.NotContains(t, outs[0]["body"], `"server":"echo"`, "the idle tunnel was closed after idle_timeout_ms")
			w, _ := outs[1]["waited"].(float64)
			assert.Less(t, w, 15.0, "an unfinished CONNECT head is dropped, not held for ever")
			require.NotNil(t, r.Network)
			var idle bool
			for _, c := range r.Network.Connections {
				idle = idle || c.Reason == "idle_timeout"
			}
			assert.True(t, idle, "a connection reported with reason idle_timeout: %v", r.Network.Connections)
			after(t, f, base, "slow client "+mode)
		})
		t.Run("byte_cap/"+mode, func(t *testing.T) {
			r := f.run(t, f.d, mode, request{code: bytesCode, network: map[string]any{"policy": "world"}, wallMs: 120000})
			outs := r.outs(t)
			require.Len(t, outs, 1, "stdout %s stderr %s", r.Stdout, r.Stderr)
			require.NotNil(t, r.Network)
			t.Logf("%v; network: %d sent, %d received; feedback %q", outs, r.Network.BytesSent, r.Network.BytesReceived, r.Feedback)
			assert.Less(t, outs[0]["received"], float64(capBytes+1), "the download stopped at the cap")
			byteCapped(t, r)
			r = f.run(t, f.d, mode, request{code: uploadCode, network: map[string]any{"policy": "world"}, wallMs: 120000})
			outs = r.outs(t)
			require.Len(t, outs, 1, "stdout %s stderr %s", r.Stdout, r.Stderr)
			require.NotNil(t, r.Network)
			t.Logf("%v; network: %d sent, %d received", outs, r.Network.BytesSent, r.Network.BytesReceived)
			// What reaches the upstream is capped (byteCapped), and the
			// program is told: the proxy stops reading its absolute-form
			// POST and closes the connection, so its writes fail.
			assert.NotEmpty(t, outs[0]["error"], "a write failed past the cap")
			assert.Less(t, outs[0]["sent"], float64(64<<20), "the upload did not go through whole")
			byteCapped(t, r)
			after(t, f, base, "byte cap "+mode)
		})
	}
}

// byteCapped: the run's bytes, both directions together, stayed at the
// cap, and a connection says byte_limit.
func byteCapped(t *testing.T, r result) {
	t.Helper()
	assert.LessOrEqual(t, r.Network.BytesSent+r.Network.BytesReceived, int64(capBytes), "both directions together, per run")
	assert.Greater(t, r.Network.BytesSent+r.Network.BytesReceived, int64(capBytes/2), "the run got near the cap")
	var capped int
	for _, c := range r.Network.Connections {
		if c.Reason == "byte_limit" {
			capped++
		}
	}
	assert.GreaterOrEqual(t, capped, 1, "reason byte_limit reported: %v", r.Network.Connections)
}

// after: the daemon is alive, serves a plain run, and holds no more fds
// than before.
func after(t *testing.T, f *fixture, base fdSnapshot, what string) {
	t.Helper()
	healthy(t, f.d)
	r := f.run(t, f.d, "warm", request{code: "print('next')"})
	assert.Equal(t, "ok", r.Status)
	fdsSettle(t, f.d, base, what)
}

// Another jail's loopback listener is not reachable through the proxy:
// the proxy dials from the daemon's namespace, and loopback is refused.
func TestEgressOtherJailsLoopback(t *testing.T) {
	f := newFixture(t)
	a := f.session(t, f.d, nil)
	defer a.end(t)
	r := a.call(t, listenerCode)
	require.Equal(t, "ok", r.Status, "stderr %s", r.Stderr)
	r = a.call(t, "import urllib.request\nprint(urllib.request.urlopen('http://127.0.0.1:8765/', timeout=5).read().decode())")
	require.Contains(t, r.Stdout, "jail-a-secret", "the listener answers inside its own jail: stderr %s", r.Stderr)
	for _, mode := range modes {
		t.Run(mode, func(t *testing.T) {
			r := f.run(t, f.d, mode, request{code: "urlopen('http://127.0.0.1:8765/')\nurlopen('http://localhost:8765/')\nconnect('127.0.0.1', 8765)", network: map[string]any{"policy": "trap"}})
			assert.NotContains(t, r.Stdout, "jail-a-secret")
			blockedOnly(t, r, 3, "private_address")
		})
	}
}

const listenerCode = `import socket, threading
srv = socket.socket()
srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
srv.bind(("127.0.0.1", 8765))
srv.listen(16)
def serve():
    while True:
        c, _ = srv.accept()
        c.recv(4096)
        c.sendall(b"HTTP/1.0 200 OK\r\nContent-Length: 14\r\n\r\njail-a-secret\n")
        c.close()
threading.Thread(target=serve, daemon=True).start()
`

// A private destination works only where network.private_allow lists it;
// listing it opens that address and nothing else.
func TestEgressPrivateAllow(t *testing.T) {
	f := newFixture(t)
	f.reachable(t, "http://"+nw.PrivateAddr+":8080/", nw.PrivateBody)
	code := "urlopen('http://10.0.0.5:8080/')\nurlopen('http://private.test:8080/')"
	r := f.run(t, f.d, "warm", request{code: code, network: map[string]any{"policy": "trap"}})
	blockedOnly(t, r, 2, "private_address")
	noSecret(t, r)

	limits := strings.Replace(networkLimits, "private_allow = []", fmt.Sprintf("private_allow = [%q]", nw.PrivateAddr), 1)
	d := f.w.NewDaemon(t, nw.Binary(t), nw.DaemonConfigOn("9465", nw.UIDBase(), "", limits, policies))
	for _, mode := range modes {
		t.Run(mode, func(t *testing.T) {
			r := f.run(t, d, mode, request{code: code + "\nurlopen('http://169.254.169.254/')\nurlopen('http://10.0.0.5/')", network: map[string]any{"policy": "trap"}})
			assert.Equal(t, 3, strings.Count(r.Stdout, nw.PrivateBody), "private_allow opens 10.0.0.5 (ports 8080 and 80, by address and by name): %s %s", r.Stdout, r.Stderr)
			assert.NotContains(t, r.Stdout, nw.MetadataBody)
			require.NotNil(t, r.Network)
			assert.Equal(t, 3, r.Network.Allowed, "%v", r.Network.Connections) // 10.0.0.5/8:80 is in the policy
			assert.Equal(t, 1, r.Network.Blocked, "%v", r.Network.Connections)
		})
	}
}

// The leftover check sees a proxy listener: a live session with a policy
// holds one on 127.0.0.1:3128 (in the session's namespace); its end
// closes it.
func TestEgressSessionEndClosesItsListener(t *testing.T) {
	f := newFixture(t)
	base := f.baseline(t, f.d)
	s := f.session(t, f.d, map[string]any{"policy": "world"})
	r := s.call(t, "urlopen('http://echo.test/')")
	assert.Contains(t, bodies(t, r), `"server":"echo"`)
	socks, err := f.d.InetSockets()
	require.NoError(t, err)
	var listening bool
	for _, k := range socks {
		listening = listening || (k.Listen && k.Local == "127.0.0.1:3128")
	}
	assert.True(t, listening, "a live session's proxy listener: %v", socks)
	s.end(t)
	fdsSettle(t, f.d, base, "the session's end")
}

// With nothing made ahead of requests (no warm runs forked ahead, no
// prepared jails), the daemon's fd count after runs with a policy is
// what it was before them, in every mode: no listener, relay or
// namespace fd is left.
func TestEgressLeavesNoFd(t *testing.T) {
	f := newFixture(t)
	d := f.w.NewDaemon(t, nw.Binary(t), nw.DaemonConfigOn("9466", nw.UIDBase(), "warm_ahead = 0\nprepared_jails = 0", networkLimits, policies))
	code := "urlopen('http://echo.test/')\nurlopen('https://index.test/simple/')\nurlopen('http://169.254.169.254/')\nconnect('other.test', 443)"
	for _, mode := range modes {
		f.run(t, d, mode, request{code: code, network: map[string]any{"policy": "world"}})
	}
	time.Sleep(500 * time.Millisecond)
	before := d.Fds()
	for _, mode := range modes {
		for range 3 {
			r := f.run(t, d, mode, request{code: code, network: map[string]any{"policy": "world"}})
			require.NotNil(t, r.Network)
			assert.Equal(t, 2, r.Network.Allowed, "%v", r.Network.Connections)
		}
	}
	deadline := time.Now().Add(20 * time.Second) // a loaded host reaps late
	for d.FdCount() > len(before) && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	after := d.Fds()
	var extra []string
	for fd, target := range after {
		if before[fd] != target {
			extra = append(extra, fd+" -> "+target+" (also held by "+holders(target, d.Pid)+")")
		}
	}
	assert.LessOrEqual(t, len(after), len(before), "the daemon's fds after 9 runs with a policy; new or changed: %v", extra)
}

// holders lists the other processes that hold an fd to target (a pipe's
// other end): their pid and command.
func holders(target string, except int) string {
	var out []string
	procs, _ := os.ReadDir("/proc")
	for _, p := range procs {
		pid, err := strconv.Atoi(p.Name())
		if err != nil || pid == except {
			continue
		}
		fds, _ := os.ReadDir("/proc/" + p.Name() + "/fd")
		for _, fd := range fds {
			if t, _ := os.Readlink("/proc/" + p.Name() + "/fd/" + fd.Name()); t == target {
				cmd, _ := os.ReadFile("/proc/" + p.Name() + "/cmdline")
				out = append(out, fmt.Sprintf("%d %q", pid, strings.ReplaceAll(string(cmd), "\x00", " ")))
				break
			}
		}
	}
	return strings.Join(out, ", ")
}
