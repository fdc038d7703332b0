package networld

import (
	"archive/zip"
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"time"
)

// buildWheel makes a pure-Python wheel of WheelProject: the package, and
// its METADATA, WHEEL and RECORD, as pip expects them.
func buildWheel() (name string, data []byte, err error) {
	name = fmt.Sprintf("%s-%s-py3-none-any.whl", WheelProject, WheelVersion)
	info := fmt.Sprintf("%s-%s.dist-info", WheelProject, WheelVersion)
	files := []struct{ path, body string }{
		{WheelProject + "/__init__.py", "VALUE = " + WheelValue + "\n"},
		{info + "/METADATA", fmt.Sprintf("Metadata-Version: 2.1\nName: %s\nVersion: %s\nSummary: agentjail's egress test package\n", WheelProject, WheelVersion)},
		{info + "/WHEEL", "Wheel-Version: 1.0\nGenerator: agentjail-networld\nRoot-Is-Purelib: true\nTag: py3-none-any\n"},
	}
	var record bytes.Buffer
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, f := range files {
		sum := sha256.Sum256([]byte(f.body))
		fmt.Fprintf(&record, "%s,sha256=%s,%d\n", f.path, base64.RawURLEncoding.EncodeToString(sum[:]), len(f.body))
		if err := writeZip(zw, f.path, f.body); err != nil {
			return "", nil, err
		}
	}
	fmt.Fprintf(&record, "%s/RECORD,,\n", info)
	if err := writeZip(zw, info+"/RECORD", record.String()); err != nil {
		return "", nil, err
	}
	if err := zw.Close(); err != nil {
		return "", nil, err
	}
	return name, buf.Bytes(), nil
}

func writeZip(zw *zip.Writer, path, body string) error {
	w, err := zw.CreateHeader(&zip.FileHeader{Name: path, Method: zip.Deflate, Modified: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)})
	if err != nil {
		return err
	}
	_, err = w.Write([]byte(body))
	return err
}

// indexHandler is a PEP 503 simple index with the one wheel.
func indexHandler(wheelName string, wheel []byte) http.Handler {
	sum := sha256.Sum256(wheel)
	mux := http.NewServeMux()
	mux.HandleFunc("/simple/", func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/simple/":
			fmt.Fprintf(w, "<!DOCTYPE html><html><body><a href=\"/simple/%s/\">%s</a></body></html>\n", WheelProject, WheelProject)
		case "/simple/" + WheelProject + "/":
			fmt.Fprintf(w, "<!DOCTYPE html><html><body><a href=\"/packages/%s#sha256=%s\">%s</a></body></html>\n", wheelName, hex.EncodeToString(sum[:]), wheelName)
		default:
			http.NotFound(w, r)
		}
	})
	mux.HandleFunc("/packages/"+wheelName, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/octet-stream")
		_, _ = w.Write(wheel)
	})
	return mux
}

// testCA makes a CA and a server certificate signed by it for the
// world's HTTPS names and addresses.
func testCA() (caPEM []byte, server tls.Certificate, pool *x509.CertPool, err error) {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, server, nil, err
	}
	now := time.Now()
	ca := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "agentjail networld test CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, ca, ca, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, server, nil, err
	}
	caCert, _ := x509.ParseCertificate(caDER)
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, server, nil, err
	}
	leaf := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: IndexName},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		DNSNames:    []string{IndexName, EchoName, OtherName},
		IPAddresses: []net.IP{net.ParseIP(IndexAddr), net.ParseIP(EchoAddr)},
		KeyUsage:    x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, leaf, caCert, &key.PublicKey, caKey)
	if err != nil {
		return nil, server, nil, err
	}
	pool = x509.NewCertPool()
	pool.AddCert(caCert)
	server = tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}), server, pool, nil
}
