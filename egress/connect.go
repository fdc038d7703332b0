package egress

import (
	"bufio"
	"bytes"
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
	r.relay(rec, io.MultiReader(bytes.NewReader(first), q.br), up)
}

// inspect reads the client's first bytes after the 200. On port 443, or
// when they start a TLS handshake, they must be a ClientHello whose
// server name is the CONNECT host (for an IP literal: no server name, or
// that IP). It returns the bytes it read, to be sent on; false when the
// tunnel must close.
func (r *Run) inspect(rec *conn, t Target, br *bufio.Reader) ([]byte, bool) {
	b, err := br.Peek(1)
	if err != nil {
		return nil, false // closed before it sent anything
	}
	if t.Port != 443 && b[0] != recordHandshake {
		return nil, true
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
