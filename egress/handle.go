package egress

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/textproto"
	"strings"
	"time"
)

// maxHeader is the most bytes a request's line and headers may take.
const maxHeader = 64 << 10

// request is a client's request as the proxy read it.
type request struct {
	req   *http.Request
	hosts []string      // the Host header lines, as sent
	br    *bufio.Reader // the client's bytes after the header block
	raw   *bufio.Reader // below br: its buffered bytes come after br's
}

func (r *Run) handle(rec *conn) {
	defer r.wg.Done()
	defer r.finish(rec)
	r.watchIdle(rec)
	_ = rec.client.SetReadDeadline(time.Now().Add(r.p.opts.IdleTimeout))
	q, err := readRequest(rec.client)
	if err != nil {
		rec.decide(Blocked, ReasonBadRequest)
		writeRefusal(rec.client, 400, "the proxy could not read an HTTP request: "+err.Error())
		return
	}
	_ = rec.client.SetReadDeadline(time.Time{})
	if q.req.Method == http.MethodConnect {
		r.connect(rec, q)
		return
	}
	r.forward(rec, q)
}

// readRequest reads the request line and headers (at most maxHeader
// bytes) and parses them.
func readRequest(c net.Conn) (*request, error) {
	br := bufio.NewReaderSize(c, 4096)
	var hdr []byte
	for {
		line, err := br.ReadSlice('\n')
		if err != nil && !errors.Is(err, bufio.ErrBufferFull) {
			return nil, err
		}
		hdr = append(hdr, line...)
		if len(hdr) > maxHeader {
			return nil, fmt.Errorf("the request's headers pass %d bytes", maxHeader)
		}
		if err == nil && (string(line) == "\r\n" || string(line) == "\n") {
			break
		}
	}
	tp := textproto.NewReader(bufio.NewReader(bytes.NewReader(hdr)))
	if _, err := tp.ReadLine(); err != nil {
		return nil, err
	}
	mh, err := tp.ReadMIMEHeader()
	if err != nil {
		return nil, err
	}
	rest := bufio.NewReader(io.MultiReader(bytes.NewReader(hdr), br))
	req, err := http.ReadRequest(rest)
	if err != nil {
		return nil, err
	}
	return &request{req: req, hosts: mh.Values("Host"), br: rest, raw: br}, nil
}

// writeRefusal answers a request the proxy will not carry out. The body
// says why, for the program's error message.
func writeRefusal(w io.Writer, code int, why string) {
	body := "agentjail proxy: " + why + "\n"
	fmt.Fprintf(w, "HTTP/1.1 %d %s\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s",
		code, http.StatusText(code), len(body), body)
}

// check matches t against the policy; it answers and records a refusal
// and says false.
func (r *Run) check(rec *conn, t Target) bool {
	rec.setTarget(t)
	if r.policy.Allows(t) {
		return true
	}
	rec.decide(Blocked, ReasonNotAllowed)
	writeRefusal(rec.client, 403, fmt.Sprintf("%s is not in this run's network policy, which allows: %s",
		t.HostPort(), strings.Join(r.policy.Entries(), ", ")))
	return false
}

// dialFor dials t for rec; it answers and records a failure and returns
// nil.
func (r *Run) dialFor(rec *conn, t Target) net.Conn {
	if r.bytes.Load() >= r.p.opts.MaxBytes {
		rec.decide(Allowed, ReasonByteLimit)
		writeRefusal(rec.client, 403, fmt.Sprintf("this run has used its %d bytes of network traffic", r.p.opts.MaxBytes))
		return nil
	}
	d := r.p.dial(r.ctx, t)
	rec.setIP(d.ip)
	if d.up == nil {
		rec.decide(d.verdict, d.reason)
		code := 502
		if d.verdict == Blocked {
			code = 403
		}
		writeRefusal(rec.client, code, fmt.Sprintf("%s: %s: %s", t.HostPort(), d.reason, d.detail))
		return nil
	}
	rec.decide(Allowed, "")
	if !rec.setUpstream(d.up) {
		return nil
	}
	return d.up
}
