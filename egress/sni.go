package egress

import (
	"errors"
	"io"
)

// TLS record and handshake framing (RFC 8446 section 5.1 and 4).
const (
	recordHandshake   = 0x16
	handshakeHello    = 0x01
	extServerName     = 0x0000
	maxRecordLen      = 16384 + 2048
	maxClientHelloLen = 64 << 10
)

var errNotTLS = errors.New("the first bytes are not a TLS handshake")
var errBadHello = errors.New("malformed TLS ClientHello")

// readClientHello reads TLS records from r until the first handshake
// message, a ClientHello, is whole. It returns every byte read (the
// caller forwards them unchanged) and the ClientHello's server name.
func readClientHello(r io.Reader) (raw []byte, sni string, hasSNI bool, err error) {
	var msg []byte
	hdr := make([]byte, 5)
	for {
		if _, err := io.ReadFull(r, hdr); err != nil {
			return raw, "", false, err
		}
		raw = append(raw, hdr...)
		if hdr[0] != recordHandshake || hdr[1] != 0x03 {
			return raw, "", false, errNotTLS
		}
		n := int(hdr[3])<<8 | int(hdr[4])
		if n == 0 || n > maxRecordLen {
			return raw, "", false, errBadHello
		}
		start := len(raw)
		raw = append(raw, make([]byte, n)...)
		if k, err := io.ReadFull(r, raw[start:]); err != nil {
			return raw[:start+k], "", false, err
		}
		msg = append(msg, raw[start:]...)
		if len(msg) >= 4 {
			want := 4 + (int(msg[1])<<16 | int(msg[2])<<8 | int(msg[3]))
			if want > maxClientHelloLen {
				return raw, "", false, errBadHello
			}
			if len(msg) >= want {
				sni, hasSNI, err = parseClientHello(msg[:want])
				return raw, sni, hasSNI, err
			}
		}
	}
}

// parseClientHello reads one handshake message that must be a
// ClientHello and returns its host_name, if it has one. Two server_name
// extensions, or a list with more than one name, are malformed.
func parseClientHello(msg []byte) (string, bool, error) {
	c := cursor{b: msg}
	if typ, ok := c.u8(); !ok || typ != handshakeHello {
		return "", false, errBadHello
	}
	body, ok := c.vec(3)
	if !ok || !c.empty() {
		return "", false, errBadHello
	}
	c = cursor{b: body}
	if !c.skip(2+32) || !c.skipVec(1) || !c.skipVec(2) || !c.skipVec(1) {
		return "", false, errBadHello
	}
	if c.empty() {
		return "", false, nil // no extensions
	}
	exts, ok := c.vec(2)
	if !ok || !c.empty() {
		return "", false, errBadHello
	}
	c = cursor{b: exts}
	var name string
	seen := false
	for !c.empty() {
		typ, ok1 := c.u16()
		data, ok2 := c.vec(2)
		if !ok1 || !ok2 {
			return "", false, errBadHello
		}
		if typ != extServerName {
			continue
		}
		if seen {
			return "", false, errBadHello
		}
		seen = true
		n, err := parseServerName(data)
		if err != nil {
			return "", false, err
		}
		name = n
	}
	return name, seen, nil
}

// parseServerName reads a server_name extension with exactly one
// host_name entry (RFC 6066 section 3).
func parseServerName(data []byte) (string, error) {
	c := cursor{b: data}
	list, ok := c.vec(2)
	if !ok || !c.empty() {
		return "", errBadHello
	}
	c = cursor{b: list}
	typ, ok1 := c.u8()
	name, ok2 := c.vec(2)
	if !ok1 || !ok2 || typ != 0 || !c.empty() || len(name) == 0 {
		return "", errBadHello
	}
	for _, b := range name {
		if b <= ' ' || b >= 0x7f {
			return "", errBadHello
		}
	}
	return string(name), nil
}

// cursor reads big-endian fields and length-prefixed vectors.
type cursor struct{ b []byte }

func (c *cursor) empty() bool { return len(c.b) == 0 }

func (c *cursor) skip(n int) bool {
	if len(c.b) < n {
		return false
	}
	c.b = c.b[n:]
	return true
}

func (c *cursor) u8() (byte, bool) {
	if len(c.b) < 1 {
		return 0, false
	}
	v := c.b[0]
	c.b = c.b[1:]
	return v, true
}

func (c *cursor) u16() (int, bool) {
	if len(c.b) < 2 {
		return 0, false
	}
	v := int(c.b[0])<<8 | int(c.b[1])
	c.b = c.b[2:]
	return v, true
}

// vec reads a vector whose length takes lenBytes bytes.
func (c *cursor) vec(lenBytes int) ([]byte, bool) {
	if len(c.b) < lenBytes {
		return nil, false
	}
	n := 0
	for i := range lenBytes {
		n = n<<8 | int(c.b[i])
	}
	c.b = c.b[lenBytes:]
	if len(c.b) < n {
		return nil, false
	}
	v := c.b[:n]
	c.b = c.b[n:]
	return v, true
}

func (c *cursor) skipVec(lenBytes int) bool {
	_, ok := c.vec(lenBytes)
	return ok
}
