package egress

import (
	"bytes"
	"fmt"
	"net"
	"testing"
	"time"
)

// Past the byte cap, an upload in an absolute-form POST stops: the
// proxy reads no more of the body and closes the client's connection, so
// the program's writes fail (they used to go on succeeding while the
// proxy read the rest of the body to throw it away), and the report says
// byte_limit. The same for a body of known length and a chunked one.
func TestProxyUploadPastCapFailsWrites(t *testing.T) {
	const size = 256 << 20
	chunk := bytes.Repeat([]byte{'x'}, 64<<10)
	for _, tc := range []struct {
		name, header string
		piece        []byte
	}{
		{"length", fmt.Sprintf("Content-Length: %d", size), chunk},
		{"chunked", "Transfer-Encoding: chunked", append(append([]byte("10000\r\n"), chunk...), "\r\n"...)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			port := serveWith(t, func(c net.Conn) { time.Sleep(time.Minute) }) // reads everything, answers nothing
			w := newWorld(t, func(o *Options) { o.MaxBytes = 1 << 20 }, "up.test:"+port)
			c, err := net.Dial("tcp", w.addr)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			fmt.Fprintf(c, "POST http://up.test:%s/ HTTP/1.1\r\nHost: up.test:%s\r\n%s\r\n\r\n", port, port, tc.header)
			c.SetWriteDeadline(time.Now().Add(20 * time.Second))
			sent := 0
			for sent < size {
				n, err := c.Write(tc.piece)
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
		})
	}
}
