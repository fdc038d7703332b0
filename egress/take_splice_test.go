package egress

import (
	"io"
	"net"
	"testing"
	"time"
)

// A Take while a spliced download waits with a chunk of the budget taken
// does not give that chunk to the next period: the next call stays
// within max_bytes.
func TestProxyTakeDuringSpliceKeepsTheCap(t *testing.T) {
	release := make(chan struct{})
	slow := serveWith(t, func(c net.Conn) {
		<-release
		c.Write(make([]byte, 100))
	})
	big := serveWith(t, func(c net.Conn) { c.Write(make([]byte, 4<<20)) })
	const max = 300000
	w := newWorld(t, func(o *Options) { o.MaxBytes = max }, "up.test:"+slow, "up.test:"+big)
	a := tunnel(t, w, slow)
	defer a.Close()
	time.Sleep(100 * time.Millisecond) // its download waits, a chunk taken
	w.run.Take()
	close(release)
	a.SetReadDeadline(time.Now().Add(5 * time.Second))
	io.Copy(io.Discard, a)
	b := tunnel(t, w, big)
	defer b.Close()
	b.SetReadDeadline(time.Now().Add(10 * time.Second))
	io.Copy(io.Discard, b)
	rep := w.run.Close()
	if total := rep.BytesSent + rep.BytesReceived; total > max {
		t.Errorf("the call after Take carried %d bytes, past max_bytes %d: %+v", total, max, rep)
	}
}
