package egress

import (
	"bytes"
	"crypto/tls"
	"net"
	"testing"
)

// clientHello returns the bytes crypto/tls sends first for serverName
// ("" sends no server name).
func clientHello(t testing.TB, serverName string) []byte {
	t.Helper()
	a, b := net.Pipe()
	defer b.Close()
	go func() {
		c := tls.Client(a, &tls.Config{ServerName: serverName, InsecureSkipVerify: true})
		_ = c.Handshake()
		a.Close()
	}()
	raw, _, _, err := readClientHello(b)
	if err != nil {
		t.Fatalf("reading a ClientHello: %v", err)
	}
	return raw
}

func TestReadClientHello(t *testing.T) {
	raw := clientHello(t, "files.pythonhosted.org")
	got, sni, has, err := readClientHello(bytes.NewReader(raw))
	if err != nil || !has || sni != "files.pythonhosted.org" || !bytes.Equal(got, raw) {
		t.Fatalf("sni %q has %v err %v, bytes kept %v", sni, has, err, bytes.Equal(got, raw))
	}
	// Go's client sends no server name for an IP address.
	_, sni, has, err = readClientHello(bytes.NewReader(clientHello(t, "")))
	if err != nil || has {
		t.Fatalf("no server name: sni %q has %v err %v", sni, has, err)
	}
	// The same ClientHello cut into records of 7 bytes each.
	_, sni, _, err = readClientHello(bytes.NewReader(fragment(raw, 7)))
	if err != nil || sni != "files.pythonhosted.org" {
		t.Fatalf("fragmented: sni %q err %v", sni, err)
	}
	for name, b := range map[string][]byte{
		"plain HTTP":   []byte("GET / HTTP/1.1\r\n\r\n"),
		"truncated":    raw[:len(raw)-3],
		"empty record": {0x16, 3, 1, 0, 0},
		"huge record":  {0x16, 3, 1, 0xff, 0xff},
		"not a hello":  {0x16, 3, 1, 0, 4, 2, 0, 0, 0},
	} {
		if _, sni, _, err := readClientHello(bytes.NewReader(b)); err == nil {
			t.Errorf("%s: accepted with sni %q", name, sni)
		}
	}
}

// fragment re-frames a handshake record's body into records of n bytes.
func fragment(raw []byte, n int) []byte {
	body := raw[5:]
	var out []byte
	for len(body) > 0 {
		k := min(n, len(body))
		out = append(out, 0x16, 3, 1, byte(k>>8), byte(k))
		out = append(out, body[:k]...)
		body = body[k:]
	}
	return out
}

func TestSNIMatches(t *testing.T) {
	name, _ := parseTarget("pypi.org:443", 0)
	ip, _ := parseTarget("203.0.113.5:443", 0)
	for _, c := range []struct {
		t    Target
		sni  string
		has  bool
		want bool
	}{
		{name, "pypi.org", true, true},
		{name, "PyPI.org.", true, true},
		{name, "evil.com", true, false},
		{name, "", false, false},
		{ip, "", false, true},
		{ip, "203.0.113.5", true, true},
		{ip, "pypi.org", true, false},
	} {
		if got := sniMatches(c.t, c.sni, c.has); got != c.want {
			t.Errorf("sniMatches(%s, %q, %v) = %v", c.t.HostPort(), c.sni, c.has, got)
		}
	}
}

// Two server_name extensions, or two names in one, are malformed: a
// check must not read one name while the server reads the other.
func TestClientHelloTwoNames(t *testing.T) {
	ext := func(names ...string) []byte {
		var list []byte
		for _, n := range names {
			list = append(list, 0, byte(len(n)>>8), byte(len(n)))
			list = append(list, n...)
		}
		e := []byte{0, 0, byte((len(list) + 2) >> 8), byte(len(list) + 2), byte(len(list) >> 8), byte(len(list))}
		return append(e, list...)
	}
	hello := func(exts ...[]byte) []byte {
		body := append(make([]byte, 2+32), 0, 0, 2, 0x13, 0x01, 1, 0)
		var all []byte
		for _, e := range exts {
			all = append(all, e...)
		}
		body = append(body, byte(len(all)>>8), byte(len(all)))
		body = append(body, all...)
		return append([]byte{1, 0, byte(len(body) >> 8), byte(len(body))}, body...)
	}
	if sni, has, err := parseClientHello(hello(ext("a.example"))); err != nil || !has || sni != "a.example" {
		t.Fatalf("one name: %q %v %v", sni, has, err)
	}
	if _, _, err := parseClientHello(hello(ext("a.example"), ext("b.example"))); err == nil {
		t.Error("two server_name extensions accepted")
	}
	if _, _, err := parseClientHello(hello(ext("a.example", "b.example"))); err == nil {
		t.Error("two names in one extension accepted")
	}
}
