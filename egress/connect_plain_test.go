package egress

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"testing"
	"time"
)

// A tunnel to a port that is not 443 must start with a ClientHello too:
// plain HTTP in it could name any host in its Host header, past the
// check an absolute-form request gets.
func TestProxyConnectNeedsTLS(t *testing.T) {
	sp, got := countingServer(t)
	w := newWorld(t, nil, "up.test:"+sp)
	c, err := net.Dial("tcp", w.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprintf(c, "CONNECT up.test:%s HTTP/1.1\r\n\r\n", sp)
	br := bufio.NewReader(c)
	if line, _ := br.ReadString('\n'); line != "HTTP/1.1 200 Connection established\r\n" {
		t.Fatalf("CONNECT: %q", line)
	}
	br.ReadString('\n')
	io.WriteString(c, "GET /a HTTP/1.1\r\nHost: evil.example\r\n\r\n")
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if b, _ := io.ReadAll(br); len(b) != 0 {
		t.Errorf("the tunnel answered %q", b)
	}
	if rep := only(t, w.run.Close()); rep.Verdict != Blocked || rep.Reason != ReasonSNIMismatch || rep.Sent != 0 {
		t.Errorf("%+v", rep)
	}
	time.Sleep(50 * time.Millisecond)
	if got.Load() != 0 {
		t.Errorf("the upstream got %d bytes", got.Load())
	}
}
