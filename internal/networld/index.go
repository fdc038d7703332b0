package networld

import (
	"archive/zip"
	"bytes"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"net"
	"net/http"
	"time"

	"agentjail/internal/testtls"
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
	ca, err := testtls.NewCA("agentjail networld test CA")
	if err != nil {
		return nil, server, nil, err
	}
	server, err = ca.Issue(testtls.Leaf{Serial: 2, Name: IndexName,
		DNSNames: []string{IndexName, EchoName, OtherName},
		IPs:      []net.IP{net.ParseIP(IndexAddr), net.ParseIP(EchoAddr)}})
	if err != nil {
		return nil, server, nil, err
	}
	return ca.PEM(), server, ca.Pool, nil
}
