package egress

import (
	"bufio"
	"io"
	"net/netip"
	"strings"
)

// connect serves a CONNECT request: authority form only.
func (r *Run) connect(rec *conn, q *request) {
	uri := q.req.RequestURI
	t, err := parseTarget(uri, 0)
	if err != nil || strings.ContainsAny(uri, "/?#@") {
		rec.decide(Blocked, ReasonBadRequest)
		writeRefusal(rec.client, 400, "CONNECT needs host:port (like CONNECT pypi.org:443)")
		return
	}
	if !r.check(rec, t) {
		return
	}
	up := r.dialFor(rec, t)
	if up == nil {
		return
	}
	if _, err := io.WriteString(rec.client, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
		return
	}
	first, ok := r.inspect(rec, t, q.br)
	if !ok {
		return
	}
	pending := append(first, drained(q.br)...)
	r.relay(rec, append(pending, drained(q.raw)...), up)
}

// drained returns the bytes b holds already, without a read below it:
// once q.br and q.raw are drained, the client's bytes come from its
// socket alone (which relay may splice).
func drained(b *bufio.Reader) []byte {
	p := make([]byte, b.Buffered())
	_, _ = io.ReadFull(b, p)
	return p
}

// inspect reads the client's first bytes after the 200. On any port they
// must be a ClientHello whose server name is the CONNECT host (for an IP
// literal: no server name, or that IP): plain HTTP in a tunnel could name
// any host in its Host header (plain http:// goes in absolute form). It
// returns the bytes it read, to be sent on; false when the tunnel must
// close.
func (r *Run) inspect(rec *conn, t Target, br *bufio.Reader) ([]byte, bool) {
	if _, err := br.Peek(1); err != nil {
		return nil, false // closed before it sent anything
	}
	raw, sni, has, err := readClientHello(br)
	if err != nil || !sniMatches(t, sni, has) {
		rec.decide(Blocked, ReasonSNIMismatch)
		return nil, false
	}
	return raw, true
}

// sniMatches compares a ClientHello's server name with the CONNECT host.
func sniMatches(t Target, sni string, has bool) bool {
	if t.IsIP() {
		if !has {
			return true
		}
		ip, err := netip.ParseAddr(sni)
		return err == nil && ip.Unmap() == t.IP.Unmap()
	}
	if !has {
		return false
	}
	return strings.ToLower(strings.TrimSuffix(sni, ".")) == t.Host
}
