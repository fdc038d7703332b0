package egress

import (
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// countingServer accepts TCP connections and counts the bytes it gets.
func countingServer(t *testing.T) (string, *atomic.Int64) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	var n atomic.Int64
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				k, _ := io.Copy(io.Discard, c)
				n.Add(k)
				c.Close()
			}()
		}
	}()
	return l.Addr().(*net.TCPAddr).AddrPort().String()[len("127.0.0.1:"):], &n
}

// An SNI that differs from the CONNECT host closes the tunnel before a
// byte reaches the upstream.
func TestProxySNIMismatch(t *testing.T) {
	sp, got := countingServer(t)
	w := newWorld(t, nil, "tls.test:"+sp, "127.0.0.1:"+sp)
	for _, c := range []struct{ host, sni string }{{"tls.test", "other.test"}, {"tls.test", ""}, {"127.0.0.1", "tls.test"}} {
		conn, err := net.Dial("tcp", w.addr)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(conn, "CONNECT %s:%s HTTP/1.1\r\nHost: %s:%s\r\n\r\n", c.host, sp, c.host, sp)
		buf := make([]byte, len("HTTP/1.1 200 Connection established\r\n\r\n"))
		if _, err := io.ReadFull(conn, buf); err != nil || !strings.Contains(string(buf), "200") {
			t.Fatalf("%q %v", buf, err)
		}
		tc := tls.Client(conn, &tls.Config{ServerName: c.sni, InsecureSkipVerify: true})
		tc.SetDeadline(time.Now().Add(5 * time.Second))
		if err := tc.Handshake(); err == nil {
			t.Errorf("%+v: handshake succeeded", c)
		}
		conn.Close()
	}
	rep := w.run.Close()
	if rep.Blocked != 3 {
		t.Fatalf("%+v", rep)
	}
	for _, c := range rep.Connections {
		if c.Reason != ReasonSNIMismatch || c.Sent != 0 {
			t.Errorf("%+v", c)
		}
	}
	time.Sleep(50 * time.Millisecond)
	if got.Load() != 0 {
		t.Errorf("the upstream got %d bytes", got.Load())
	}
}

func TestProxyRefusesBadRequests(t *testing.T) {
	w := newWorld(t, nil)
	for text, want := range map[string]string{
		"GET http://up.test:{H}/ HTTP/1.1\r\nHost: evil.test\r\n\r\n":              "403",
		"GET http://up.test:{H}/ HTTP/1.1\r\nHost: up.test:1\r\n\r\n":              "403",
		"GET / HTTP/1.1\r\nHost: up.test:{H}\r\n\r\n":                              "400",
		"TRACE http://up.test:{H}/ HTTP/1.1\r\nHost: up.test:{H}\r\n\r\n":          "405",
		"GET https://tls.test:{S}/ HTTP/1.1\r\nHost: tls.test:{S}\r\n\r\n":         "400",
		"CONNECT /x HTTP/1.1\r\nHost: up.test\r\n\r\n":                             "400",
		"CONNECT http://up.test:{H} HTTP/1.1\r\n\r\n":                              "400",
		"CONNECT up.test HTTP/1.1\r\n\r\n":                                         "400",
		"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n":                                         "400",
		"GET http://up.test:{H}/ HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n":           "400",
		"GET http://up.test:{H}/ HTTP/1.1\r\n" + strings.Repeat("X: y\r\n", 20000): "400",
	} {
		if got := w.raw(t, text); !strings.Contains(got, " "+want+" ") {
			t.Errorf("%.60q: %q, want %s", text, got, want)
		}
	}
	// The Host header may repeat the URL's host in another spelling.
	if got := w.raw(t, "GET http://UP.test.:{H}/ HTTP/1.1\r\nHost: up.TEST:{H}\r\n\r\n"); !strings.Contains(got, " 200 ") {
		t.Errorf("same host: %q", got)
	}
	rep := w.run.Close()
	reasons := map[string]int{}
	for _, c := range rep.Connections {
		reasons[c.Verdict+"/"+c.Reason]++
	}
	if reasons["blocked/host_mismatch"] != 2 || reasons["blocked/bad_request"] != 9 || reasons["allowed/"] != 1 {
		t.Errorf("%v", reasons)
	}
}

func TestProxyConnectionLimit(t *testing.T) {
	w := newWorld(t, func(o *Options) { o.MaxConnections = 3 })
	var conns []net.Conn
	for range 5 {
		c, err := net.Dial("tcp", w.addr)
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
	}
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	b, _ := io.ReadAll(conns[4])
	if !strings.Contains(string(b), "503") || !strings.Contains(string(b), "limit of 3") {
		t.Errorf("%q", b)
	}
	time.Sleep(50 * time.Millisecond)
	rep := w.run.Take()
	if rep.Blocked != 2 || rep.Connections[0].Reason != ReasonConnectionLimit {
		t.Errorf("%+v", rep)
	}
}

func TestProxyByteLimit(t *testing.T) {
	w := newWorld(t, func(o *Options) { o.MaxBytes = 5000 })
	code, body := w.get(t, "http://up.test:HTTP/?bytes=20000")
	if code == 200 && len(body) == 20000 {
		t.Fatal("the whole body came through")
	}
	if code, body := w.get(t, "http://up.test:HTTP/"); code != 403 || !strings.Contains(body, "5000 bytes") {
		t.Errorf("after the cap: %d %q", code, body)
	}
	rep := w.run.Close()
	c := rep.Connections[0]
	if c.Reason != ReasonByteLimit || c.Sent+c.Received > 5000 || rep.BytesSent+rep.BytesReceived > 5000 {
		t.Errorf("%+v", rep)
	}
	if rep.Connections[1].Reason != ReasonByteLimit {
		t.Errorf("%+v", rep.Connections[1])
	}
}

func TestProxyIdleTimeout(t *testing.T) {
	sp, _ := countingServer(t)
	w := newWorld(t, func(o *Options) { o.IdleTimeout = 200 * time.Millisecond }, "up.test:"+sp)
	c, err := net.Dial("tcp", w.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprintf(c, "CONNECT up.test:%s HTTP/1.1\r\n\r\n", sp)
	start := time.Now()
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	b, _ := io.ReadAll(c) // the 200, then EOF when the proxy gives up
	if !strings.Contains(string(b), "200") || time.Since(start) > 3*time.Second {
		t.Fatalf("%q after %v", b, time.Since(start))
	}
	// A client that sends nothing at all.
	c2, _ := net.Dial("tcp", w.addr)
	defer c2.Close()
	c2.SetReadDeadline(time.Now().Add(5 * time.Second))
	io.ReadAll(c2)
	time.Sleep(20 * time.Millisecond)
	rep := w.run.Close()
	if rep.Connections[0].Reason != ReasonIdleTimeout || rep.Connections[0].Verdict != Allowed {
		t.Errorf("%+v", rep.Connections[0])
	}
	if rep.Connections[1].Verdict != Blocked || rep.Connections[1].Reason != ReasonBadRequest {
		t.Errorf("%+v", rep.Connections[1])
	}
}

// Close ends open tunnels, closes the listener and leaves no goroutine.
func TestProxyCloseLeavesNothing(t *testing.T) {
	before := runtime.NumGoroutine()
	sp, _ := countingServer(t)
	w := newWorld(t, nil, "up.test:"+sp)
	var open []net.Conn
	for range 5 {
		c, _ := net.Dial("tcp", w.addr)
		fmt.Fprintf(c, "CONNECT up.test:%s HTTP/1.1\r\n\r\n", sp)
		open = append(open, c)
	}
	half, _ := net.Dial("tcp", w.addr) // a request never finished
	io.WriteString(half, "GET http://up.test")
	time.Sleep(100 * time.Millisecond)
	done := make(chan *Report)
	go func() { done <- w.run.Close() }()
	select {
	case rep := <-done:
		if rep.Allowed != 5 || rep.Blocked != 1 {
			t.Errorf("%+v", rep)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not return")
	}
	for _, c := range append(open, half) {
		c.SetReadDeadline(time.Now().Add(2 * time.Second))
		if _, err := io.ReadAll(c); err != nil {
			t.Errorf("a client connection stayed open: %v", err)
		}
		c.Close()
	}
	if c, err := net.Dial("tcp", w.addr); err == nil {
		c.Close()
		t.Error("the listener still accepts")
	}
	w.http.Close()
	w.https.Close()
	deadline := time.Now().Add(3 * time.Second)
	for runtime.NumGoroutine() > before+2 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > before+2 {
		buf := make([]byte, 1<<16)
		t.Errorf("%d goroutines before, %d after:\n%s", before, n, buf[:runtime.Stack(buf, true)])
	}
}

// A session's calls: each Take reports that call's connections, and the
// caps start again.
func TestProxyTakePeriods(t *testing.T) {
	w := newWorld(t, func(o *Options) { o.MaxConnections = 2 })
	w.get(t, "http://up.test:HTTP/a")
	w.get(t, "http://refused.test:HTTP/")
	first := w.run.Take()
	w.get(t, "http://up.test:HTTP/b")
	second := w.run.Take()
	if first.Allowed != 1 || first.Blocked != 1 || len(first.Connections) != 2 {
		t.Errorf("first: %+v", first)
	}
	if second.Allowed != 1 || second.Blocked != 0 || len(second.Connections) != 1 {
		t.Errorf("second (the cap of 2 starts again): %+v", second)
	}
	if empty := w.run.Close(); empty.Allowed+empty.Blocked != 0 || empty.Connections == nil {
		t.Errorf("last: %+v", empty)
	}
}
