package egress

import (
	"fmt"
	"io"
	"net"
	"strings"
	"testing"
	"time"
)

// serveWith starts a loopback server that runs f on each connection and
// returns its port.
func serveWith(t *testing.T, f func(net.Conn)) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				go io.Copy(io.Discard, c)
				f(c)
			}()
		}
	}()
	return l.Addr().(*net.TCPAddr).AddrPort().String()[len("127.0.0.1:"):]
}

// tunnel opens a CONNECT tunnel to up.test:port through w's proxy and
// sends one byte (not TLS).
func tunnel(t *testing.T, w *world, port string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", w.addr)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(c, "CONNECT up.test:%s HTTP/1.1\r\n\r\n", port)
	hdr := make([]byte, len("HTTP/1.1 200 Connection established\r\n\r\n"))
	if _, err := io.ReadFull(c, hdr); err != nil || !strings.Contains(string(hdr), "200") {
		t.Fatalf("%q %v", hdr, err)
	}
	c.Write([]byte{'x'})
	return c
}

// A download spliced in the kernel stops at the byte cap, exactly.
func TestProxyByteLimitSpliced(t *testing.T) {
	port := serveWith(t, func(c net.Conn) { c.Write(make([]byte, 4<<20)) })
	w := newWorld(t, func(o *Options) { o.MaxBytes = 300000 }, "up.test:"+port)
	c := tunnel(t, w, port)
	defer c.Close()
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	n, _ := io.Copy(io.Discard, c)
	rep := w.run.Close()
	got := only(t, rep)
	if got.Reason != ReasonByteLimit || got.Received+got.Sent != 300000 || n != got.Received {
		t.Errorf("client got %d; %+v", n, got)
	}
}

// A download that trickles (a byte every 50 ms, a chunk never full) is
// not idle: the kernel's count of received bytes says so. Once it stops,
// the idle timeout ends it.
func TestProxyTrickleIsNotIdle(t *testing.T) {
	port := serveWith(t, func(c net.Conn) {
		for range 20 {
			if _, err := c.Write([]byte{'.'}); err != nil {
				return
			}
			time.Sleep(50 * time.Millisecond)
		}
		time.Sleep(time.Minute) // then silence
	})
	w := newWorld(t, func(o *Options) { o.IdleTimeout = 300 * time.Millisecond }, "up.test:"+port)
	c := tunnel(t, w, port)
	defer c.Close()
	start := time.Now()
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	n, _ := io.Copy(io.Discard, c)
	if n != 20 || time.Since(start) < time.Second {
		t.Errorf("got %d bytes in %v: the trickle was cut as idle", n, time.Since(start))
	}
	rep := w.run.Close()
	if got := only(t, rep); got.Reason != ReasonIdleTimeout || got.Received != 20 {
		t.Errorf("%+v", got)
	}
}
