package testtls

import (
	"crypto/tls"
	"crypto/x509"
	"net"
	"os"
	"testing"
)

// TestCertificatesVerify: a server certificate for 127.0.0.1 verifies
// against the CA's pool (and not another CA's), a client one verifies for
// client use only, and the files WriteFiles writes load as a key pair and
// a CA.
func TestCertificatesVerify(t *testing.T) {
	ca, err := NewCA("test CA")
	if err != nil {
		t.Fatal(err)
	}
	other, err := NewCA("other CA")
	if err != nil {
		t.Fatal(err)
	}
	server, err := ca.Issue(Leaf{Serial: 2, Name: "node", IPs: []net.IP{net.IPv4(127, 0, 0, 1)}, DNSNames: []string{"node.test"}})
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := x509.ParseCertificate(server.Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"127.0.0.1", "node.test"} {
		if _, err := leaf.Verify(x509.VerifyOptions{Roots: ca.Pool, DNSName: name}); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: other.Pool, DNSName: "127.0.0.1"}); err == nil {
		t.Error("verified against another CA")
	}
	client, err := ca.Issue(Leaf{Serial: 3, Name: "client", Client: true})
	if err != nil {
		t.Fatal(err)
	}
	cl, err := x509.ParseCertificate(client.Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cl.Verify(x509.VerifyOptions{Roots: ca.Pool, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		t.Errorf("client certificate: %v", err)
	}
	if _, err := cl.Verify(x509.VerifyOptions{Roots: ca.Pool}); err == nil {
		t.Error("a client certificate verified for a server")
	}

	dir := t.TempDir()
	f, err := ca.WriteFiles(dir, server)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tls.LoadX509KeyPair(f.Cert, f.Key); err != nil {
		t.Error(err)
	}
	if fi, err := os.Stat(f.Key); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("key file: %v %v", fi, err)
	}
	b, err := os.ReadFile(f.CA)
	if err != nil {
		t.Fatal(err)
	}
	if !x509.NewCertPool().AppendCertsFromPEM(b) {
		t.Error("ca.crt holds no certificate")
	}
}
