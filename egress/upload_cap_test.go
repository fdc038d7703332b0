package egress

import (
	"fmt"
	"net"
	"testing"
	"time"
)

// Past the byte cap, an upload in an absolute-form POST stops: the
// proxy reads no more of the body and closes the client's connection, so
// the program's writes fail (they used to go on succeeding while the
// proxy read the rest of the body to throw it away), and the report says
// byte_limit.
func TestProxyUploadPastCapFailsWrites(t *testing.T) {
	port := serveWith(t, func(c net.Conn) { time.Sleep(time.Minute) }) // reads everything, answers nothing
	w := newWorld(t, func(o *Options) { o.MaxBytes = 1 << 20 }, "up.test:"+port)
	c, err := net.Dial("tcp", w.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	const size = 256 << 20
	fmt.Fprintf(c, "POST http://up.test:%s/ HTTP/1.1\r\nHost: up.test:%s\r\nContent-Length: %d\r\n\r\n", port, port, size)
	chunk := make([]byte, 64<<10)
	c.SetWriteDeadline(time.Now().Add(20 * time.Second))
	sent := 0
	for sent < size {
		n, err := c.Write(chunk)
		sent += n
		if err != nil {
			break
		}
	}
	if sent >= 64<<20 {
		t.Errorf("the client wrote %d MiB of an upload capped at 1 MiB without an error", sent>>20)
	}
	rep := w.run.Close()
	if got := only(t, rep); got.Reason != ReasonByteLimit || got.Sent > 1<<20 {
		t.Errorf("%+v", got)
	}
}
