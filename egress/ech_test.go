package egress

import (
	"bufio"
	"crypto/ecdh"
	"crypto/rand"
	"crypto/tls"
	"encoding/binary"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// echKeys returns an ECH configuration whose public (outer) name is
// publicName, as a server's key and as a client's config list.
func echKeys(t *testing.T, publicName string) (tls.EncryptedClientHelloKey, []byte) {
	t.Helper()
	k, err := ecdh.X25519().GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	pub := k.PublicKey().Bytes()
	c := []byte{7}                               // config_id
	c = binary.BigEndian.AppendUint16(c, 0x0020) // X25519
	c = binary.BigEndian.AppendUint16(c, uint16(len(pub)))
	c = append(c, pub...)
	c = binary.BigEndian.AppendUint16(c, 4)
	c = binary.BigEndian.AppendUint16(c, 0x0001) // HKDF-SHA256
	c = binary.BigEndian.AppendUint16(c, 0x0001) // AES-128-GCM
	c = append(c, 0, byte(len(publicName)))      // maximum_name_length, public_name
	c = append(c, publicName...)
	c = binary.BigEndian.AppendUint16(c, 0)           // extensions
	cfg := binary.BigEndian.AppendUint16(nil, 0xfe0d) // ECH version
	cfg = binary.BigEndian.AppendUint16(cfg, uint16(len(c)))
	cfg = append(cfg, c...)
	list := binary.BigEndian.AppendUint16(nil, uint16(len(cfg)))
	return tls.EncryptedClientHelloKey{Config: cfg, PrivateKey: k.Bytes()}, append(list, cfg...)
}

// With ECH the outer server name is the allowed CONNECT host and the
// inner, encrypted one any other: the proxy cannot check the name the
// server acts on, so it refuses the ClientHello before the server sees
// a byte.
func TestProxyRefusesECH(t *testing.T) {
	key, list := echKeys(t, "tls.test")
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	srv.TLS = &tls.Config{EncryptedClientHelloKeys: []tls.EncryptedClientHelloKey{key}}
	srv.StartTLS()
	defer srv.Close()
	w := newWorld(t, nil, "tls.test:"+port(srv))
	c, err := net.Dial("tcp", w.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprintf(c, "CONNECT tls.test:%s HTTP/1.1\r\n\r\n", port(srv))
	br := bufio.NewReader(c)
	if line, _ := br.ReadString('\n'); line != "HTTP/1.1 200 Connection established\r\n" {
		t.Fatalf("CONNECT: %q", line)
	}
	br.ReadString('\n')
	tc := tls.Client(c, &tls.Config{ServerName: "hidden.test", InsecureSkipVerify: true,
		MinVersion: tls.VersionTLS13, EncryptedClientHelloConfigList: list})
	tc.SetDeadline(time.Now().Add(5 * time.Second))
	if err := tc.Handshake(); err == nil {
		t.Errorf("an ECH handshake went through (ECH accepted: %v)", tc.ConnectionState().ECHAccepted)
	}
	if got := only(t, w.run.Close()); got.Verdict != Blocked || got.Reason != ReasonSNIMismatch || got.Sent != 0 {
		t.Errorf("%+v", got)
	}
}
