// Package testtls makes the certificates of tests: a CA made for the test
// and certificates it signs, in memory or as PEM files. Keys are ECDSA
// P-256; certificates are valid from an hour ago for a day.
package testtls

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// CA is a certificate authority made for a test.
type CA struct {
	Cert *x509.Certificate
	Key  *ecdsa.PrivateKey
	// Pool trusts Cert alone.
	Pool *x509.CertPool
}

// Leaf says what a certificate a CA issues names and is for.
type Leaf struct {
	Serial   int64
	Name     string // the subject's common name
	DNSNames []string
	IPs      []net.IP
	Client   bool // a client certificate; else a server one
}

// NewCA makes a CA whose common name is name.
func NewCA(name string) (*CA, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("testtls: CA key: %w", err)
	}
	now := time.Now()
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, fmt.Errorf("testtls: CA certificate: %w", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("testtls: CA certificate: %w", err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return &CA{Cert: cert, Key: key, Pool: pool}, nil
}

// PEM is the CA's certificate, PEM-encoded.
func (ca *CA) PEM() []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ca.Cert.Raw})
}

// Issue makes a new key and a certificate of it that the CA signs.
func (ca *CA) Issue(l Leaf) (tls.Certificate, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("testtls: key of %q: %w", l.Name, err)
	}
	usage := x509.ExtKeyUsageServerAuth
	if l.Client {
		usage = x509.ExtKeyUsageClientAuth
	}
	now := time.Now()
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(l.Serial), Subject: pkix.Name{CommonName: l.Name},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		DNSNames: l.DNSNames, IPAddresses: l.IPs,
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{usage}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, &key.PublicKey, ca.Key)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("testtls: certificate of %q: %w", l.Name, err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, nil
}

// Files are the PEM files WriteFiles writes.
type Files struct {
	CA   string // ca.crt: the CA's certificate
	Cert string // tls.crt: the certificate
	Key  string // tls.key: its key, mode 0600
}

// WriteFiles writes the CA's certificate and c, with its key, into dir
// as PEM files. Each is written under another name and renamed, so that
// a reader sees whole files; the key comes before its certificate.
func (ca *CA) WriteFiles(dir string, c tls.Certificate) (Files, error) {
	f := Files{CA: filepath.Join(dir, "ca.crt"), Cert: filepath.Join(dir, "tls.crt"), Key: filepath.Join(dir, "tls.key")}
	key, ok := c.PrivateKey.(*ecdsa.PrivateKey)
	if !ok {
		return f, fmt.Errorf("testtls: a key of type %T, not ECDSA", c.PrivateKey)
	}
	kb, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return f, fmt.Errorf("testtls: %w", err)
	}
	if err := writeRenamed(f.CA, ca.PEM(), 0o644); err != nil {
		return f, err
	}
	if err := writeRenamed(f.Key, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb}), 0o600); err != nil {
		return f, err
	}
	return f, writeRenamed(f.Cert, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.Certificate[0]}), 0o644)
}

func writeRenamed(file string, data []byte, mode os.FileMode) error {
	if err := os.WriteFile(file+".new", data, mode); err != nil {
		return fmt.Errorf("testtls: %w", err)
	}
	if err := os.Rename(file+".new", file); err != nil {
		return fmt.Errorf("testtls: %w", err)
	}
	return nil
}
