package egress

import (
	"errors"
	"io"
	"net"
	"os"
	"strings"
	"testing"
)

// capMeter lets left bytes through, then says errByteLimit.
type capMeter struct{ left int }

func (m *capMeter) room() int { return min(spliceChunk, max(m.left, 1)) }
func (m *capMeter) take(n int) (int, error) {
	k := min(n, m.left)
	m.left -= k
	if k < n {
		return k, errByteLimit
	}
	return n, nil
}
func (m *capMeter) put(_, _ int) {}

// tcpPair returns the two ends of a loopback TCP connection.
func tcpPair(t *testing.T) (net.Conn, net.Conn) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	a, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	b, err := l.Accept()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close(); b.Close() })
	return a, b
}

// pipeFds counts this process's open pipes.
func pipeFds(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range ents {
		if l, err := os.Readlink("/proc/self/fd/" + e.Name()); err == nil && strings.HasPrefix(l, "pipe:") {
			n++
		}
	}
	return n
}

// spliceCopy between TCP sockets moves exactly what the meter allows,
// says why it stopped, and leaves no pipe open.
func TestSpliceCopyStopsAtTheCap(t *testing.T) {
	src, srcPeer := tcpPair(t)
	dst, dstPeer := tcpPair(t)
	before := pipeFds(t)
	go func() {
		srcPeer.Write(make([]byte, 3<<20))
		srcPeer.Close()
	}()
	got := make(chan int64, 1)
	go func() {
		n, _ := io.Copy(io.Discard, dstPeer)
		got <- n
	}()
	const limit = 1<<20 + 123
	ok, err := spliceCopy(dst, src, &capMeter{left: limit})
	dst.Close()
	src.Close()
	if !ok || !errors.Is(err, errByteLimit) {
		t.Fatalf("spliceCopy: ok %v, err %v; want ok and the byte limit", ok, err)
	}
	if n := <-got; n != limit {
		t.Fatalf("%d bytes arrived, want %d", n, limit)
	}
	if after := pipeFds(t); after != before {
		t.Fatalf("%d pipes open after spliceCopy, %d before", after, before)
	}
}

// spliceCopy carries everything up to the source's end, and declines
// (moving nothing) when a side is not TCP.
func TestSpliceCopyToTheEnd(t *testing.T) {
	src, srcPeer := tcpPair(t)
	dst, dstPeer := tcpPair(t)
	const size = 5<<20 + 7
	go func() {
		srcPeer.Write(make([]byte, size))
		srcPeer.Close()
	}()
	got := make(chan int64, 1)
	go func() {
		n, _ := io.Copy(io.Discard, dstPeer)
		got <- n
	}()
	ok, err := spliceCopy(dst, src, &capMeter{left: 1 << 30})
	dst.Close()
	if !ok || err != nil {
		t.Fatalf("spliceCopy: ok %v, err %v; want ok and nil", ok, err)
	}
	if n := <-got; n != size {
		t.Fatalf("%d bytes arrived, want %d", n, size)
	}
	p1, p2 := net.Pipe()
	defer p1.Close()
	defer p2.Close()
	if ok, err := spliceCopy(p1, src, &capMeter{left: 1}); ok || err != nil {
		t.Fatalf("spliceCopy to a net.Pipe: ok %v, err %v; want it declined", ok, err)
	}
}
