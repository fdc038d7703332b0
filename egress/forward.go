package egress

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
)

// forwardMethods are the methods an absolute-form request may use.
var forwardMethods = map[string]bool{
	http.MethodGet: true, http.MethodHead: true, http.MethodPost: true, http.MethodPut: true,
	http.MethodPatch: true, http.MethodDelete: true, http.MethodOptions: true,
}

// forward serves an absolute-form request (GET http://host/path): checked
// as a CONNECT is, its Host header must name the same host and port. It
// goes on in origin form with "Connection: close", and only its response
// comes back.
func (r *Run) forward(rec *conn, q *request) {
	req := q.req
	switch {
	case !req.URL.IsAbs() || req.URL.Host == "":
		rec.setTarget(originTarget(req.Host))
		rec.decide(Blocked, ReasonBadRequest)
		writeRefusal(rec.client, 400, "send requests to the proxy in absolute form (GET http://host/path), or use CONNECT")
		return
	case !strings.EqualFold(req.URL.Scheme, "http"):
		rec.decide(Blocked, ReasonBadRequest)
		writeRefusal(rec.client, 400, "only http:// URLs go in absolute form; https goes through CONNECT")
		return
	case !forwardMethods[req.Method]:
		rec.decide(Blocked, ReasonBadRequest)
		writeRefusal(rec.client, 405, "method "+req.Method+" is not carried by the proxy")
		return
	}
	t, err := parseTarget(req.URL.Host, 80)
	if err != nil {
		rec.decide(Blocked, ReasonBadRequest)
		writeRefusal(rec.client, 400, fmt.Sprintf("the URL's host %q %v", req.URL.Host, err))
		return
	}
	if !r.check(rec, t) {
		return
	}
	for _, h := range q.hosts {
		if ht, err := parseTarget(h, 80); err != nil || ht.Host != t.Host || ht.Port != t.Port {
			rec.decide(Blocked, ReasonHostMismatch)
			writeRefusal(rec.client, 403, fmt.Sprintf("the Host header %q names another host than the URL (%s)", h, t.HostPort()))
			return
		}
	}
	up := r.dialFor(rec, t)
	if up == nil {
		return
	}
	stripHopByHop(req.Header)
	if _, ok := req.Header["User-Agent"]; !ok {
		req.Header["User-Agent"] = []string{""} // Write adds none
	}
	req.RequestURI, req.Close = "", true
	if req.Body != http.NoBody {
		// The body's own Close reads the rest of it to throw it away,
		// which req.Write does when a write fails: past the byte cap the
		// program's upload went on succeeding, into nothing. Without it,
		// the connection is closed with the rest unread, and the
		// program's writes fail.
		req.Body = io.NopCloser(req.Body)
	}
	sent := make(chan struct{})
	go func() {
		defer close(sent)
		if err := req.Write(&upWriter{r: r, c: rec, dst: up}); err != nil {
			rec.closeAll()
		}
	}()
	r.respond(rec, req, up)
	rec.closeAll()
	<-sent
}

// respond copies the upstream's response (after any 1xx) to the client,
// its header at most maxHeader bytes.
func (r *Run) respond(rec *conn, req *http.Request, up net.Conn) {
	hl := &headerLimit{r: &upReader{r: r, c: rec, src: up}, left: maxHeader}
	ubr := bufio.NewReader(hl)
	w := rec.client
	for wrote := false; ; wrote = true {
		resp, err := http.ReadResponse(ubr, req)
		if err != nil {
			rec.end(ReasonConnectFailed)
			if !wrote {
				writeRefusal(w, 502, "the upstream sent no valid HTTP response: "+err.Error())
			}
			return
		}
		hl.left = 1 << 62
		stripHopByHop(resp.Header)
		if resp.StatusCode >= 100 && resp.StatusCode < 200 && resp.StatusCode != 101 {
			if resp.Write(w) != nil {
				return
			}
			hl.left = maxHeader
			continue
		}
		resp.Close = true
		if n := resp.ContentLength; n > 0 && len(resp.TransferEncoding) == 0 && req.Method != http.MethodHead {
			r.sendBody(rec, resp, ubr, up, n)
			return
		}
		_ = resp.Write(w)
		resp.Body.Close()
		return
	}
}

// sendBody answers with a response of known length: its header as
// resp.Write would write it, the body's bytes already read, then the rest
// (download, with its larger buffer than resp.Write's).
func (r *Run) sendBody(rec *conn, resp *http.Response, ubr *bufio.Reader, up net.Conn, n int64) {
	resp.Header.Del("Content-Length")
	var hdr bytes.Buffer
	fmt.Fprintf(&hdr, "HTTP/%d.%d %s\r\n", resp.ProtoMajor, resp.ProtoMinor, resp.Status)
	_ = resp.Header.Write(&hdr)
	fmt.Fprintf(&hdr, "Content-Length: %d\r\nConnection: close\r\n\r\n", n)
	if _, err := rec.client.Write(hdr.Bytes()); err != nil {
		return
	}
	k := min(int64(ubr.Buffered()), n)
	if _, err := io.CopyN(rec.client, ubr, k); err != nil {
		return
	}
	_ = r.download(rec, up, n-k)
}

// headerLimit fails a read once more than left bytes have come.
type headerLimit struct {
	r    io.Reader
	left int64
}

func (h *headerLimit) Read(p []byte) (int, error) {
	if h.left <= 0 {
		return 0, fmt.Errorf("the upstream's response header passes %d bytes", maxHeader)
	}
	if int64(len(p)) > h.left {
		p = p[:h.left]
	}
	n, err := h.r.Read(p)
	h.left -= int64(n)
	return n, err
}

// stripHopByHop removes the headers that concern one connection only
// (RFC 9110 section 7.6.1) and those addressed to the proxy.
func stripHopByHop(h http.Header) {
	for _, v := range h.Values("Connection") {
		for f := range strings.SplitSeq(v, ",") {
			h.Del(strings.TrimSpace(f))
		}
	}
	for _, k := range []string{"Connection", "Proxy-Connection", "Keep-Alive", "Proxy-Authorization",
		"Proxy-Authenticate", "Te", "Upgrade"} {
		h.Del(k)
	}
}
