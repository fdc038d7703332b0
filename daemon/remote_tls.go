package daemon

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
	"sync"
	"syscall"
	"time"
)

// certReloader serves the certificate of tls_cert and tls_key, read again
// (at most once a second) when either file's size, time or inode has
// changed: a renewed certificate needs no restart. A pair that does not
// load keeps the last good one.
type certReloader struct {
	certFile, keyFile string
	onErr             func(error)

	mu      sync.Mutex
	checked time.Time
	stamp   string
	cert    *tls.Certificate
}

func newCertReloader(certFile, keyFile string, onErr func(error)) (*certReloader, error) {
	c := &certReloader{certFile: certFile, keyFile: keyFile, onErr: onErr}
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, fmt.Errorf("remote.tls_cert/remote.tls_key: %w", err)
	}
	c.cert, c.stamp, c.checked = &cert, c.fileStamp(), time.Now()
	return c, nil
}

// fileStamp identifies the two files' current versions (following links).
func (c *certReloader) fileStamp() string {
	s := ""
	for _, p := range []string{c.certFile, c.keyFile} {
		fi, err := os.Stat(p)
		if err != nil {
			return "missing"
		}
		var ino uint64
		if st, ok := fi.Sys().(*syscall.Stat_t); ok {
			ino = st.Ino
		}
		s += fmt.Sprintf("%d/%d/%d;", ino, fi.Size(), fi.ModTime().UnixNano())
	}
	return s
}

func (c *certReloader) get(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if time.Since(c.checked) < time.Second {
		return c.cert, nil
	}
	c.checked = time.Now()
	if st := c.fileStamp(); st != c.stamp && st != "missing" {
		cert, err := tls.LoadX509KeyPair(c.certFile, c.keyFile)
		if err != nil {
			c.onErr(err) // half-written: tried again in a second
			return c.cert, nil
		}
		c.cert, c.stamp = &cert, st
	}
	return c.cert, nil
}

// remoteTLS is the TLS configuration of [remote]: TLS 1.2 or later with
// Go's default suites, HTTP/1.1, the certificate re-read when it changes,
// and client certificates required when client_ca is set.
func remoteTLS(rc RemoteConfig, onErr func(error)) (*tls.Config, error) {
	cr, err := newCertReloader(rc.TLSCert, rc.TLSKey, onErr)
	if err != nil {
		return nil, err
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, GetCertificate: cr.get, NextProtos: []string{"http/1.1"}}
	if rc.ClientCA != "" {
		b, err := os.ReadFile(rc.ClientCA)
		if err != nil {
			return nil, fmt.Errorf("remote.client_ca: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(b) {
			return nil, fmt.Errorf("remote.client_ca: %s holds no PEM certificate", rc.ClientCA)
		}
		cfg.ClientCAs, cfg.ClientAuth = pool, tls.RequireAndVerifyClientCert
	}
	return cfg, nil
}
