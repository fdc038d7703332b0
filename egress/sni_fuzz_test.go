package egress

import (
	"bytes"
	"testing"
)

// FuzzClientHello feeds the ClientHello reader anything: it must never
// panic, never read past what it says it read, and return a server name
// only from a ClientHello.
func FuzzClientHello(f *testing.F) {
	f.Add(clientHello(f, "pypi.org"))
	f.Add(clientHello(f, ""))
	f.Add(fragment(clientHello(f, "a.example"), 5))
	f.Add([]byte("GET / HTTP/1.1\r\n\r\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		raw, sni, has, err := readClientHello(bytes.NewReader(b))
		if !bytes.HasPrefix(b, raw) {
			t.Fatalf("returned bytes that were not read")
		}
		if err != nil && (has || sni != "") {
			t.Fatalf("an error with a server name %q", sni)
		}
		if has && sni == "" {
			t.Fatal("has a server name that is empty")
		}
	})
}
