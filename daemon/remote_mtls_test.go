package daemon

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// clientCert is a client certificate the test CA signed.
func (p *testPKI) clientCert(t *testing.T) tls.Certificate {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(99), Subject: pkix.Name{CommonName: "client"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}, KeyUsage: x509.KeyUsageDigitalSignature}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, p.caCert, &key.PublicKey, p.caKey)
	require.NoError(t, err)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

// TestRemoteMutualTLS: with client_ca, a client without a certificate of
// that CA does not get past the handshake; one with it still needs a
// token.
func TestRemoteMutualTLS(t *testing.T) {
	e := startRemote(t, testOptions(), fakeOK(), nil)
	caFile := filepath.Join(e.pki.dir, "ca.crt")
	require.NoError(t, os.WriteFile(caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: e.pki.caCert.Raw}), 0o644))
	tc, err := remoteTLS(RemoteConfig{TLSCert: e.pki.certFile, TLSKey: e.pki.keyFile, ClientCA: caFile}, func(error) {})
	require.NoError(t, err)
	// A second server whose listener asks for client certificates.
	m := startRemote(t, testOptions(), fakeOK(), func(s *Server, ro *RemoteOptions) { ro.TLS = tc })
	// Its server certificate is e's: trust e's CA.
	m.client = &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: e.pki.pool}}}
	_, err = m.client.Get(m.base + "/v1/health")
	require.Error(t, err, "no client certificate: no handshake")

	other := newTestPKI(t) // a certificate of another CA
	m.client = &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: e.pki.pool, Certificates: []tls.Certificate{other.clientCert(t)}}}}
	_, err = m.client.Get(m.base + "/v1/health")
	require.Error(t, err, "a certificate of another CA: no handshake")

	m.client = &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: e.pki.pool, Certificates: []tls.Certificate{e.pki.clientCert(t)}}}}
	resp, body := m.call(t, "", "POST", "/v1/run", `{"code":"print(1)"}`)
	assert.Equal(t, http.StatusUnauthorized, resp.StatusCode, "a certificate is not a token: %s", body)
	resp, body = m.call(t, tokenA, "POST", "/v1/run", `{"code":"print(1)"}`)
	assert.Equal(t, http.StatusOK, resp.StatusCode, body)
	assert.True(t, strings.Contains(body, `"status":"ok"`), body)

	_, err = remoteTLS(RemoteConfig{TLSCert: e.pki.certFile, TLSKey: e.pki.keyFile, ClientCA: e.pki.keyFile}, func(error) {})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "remote.client_ca")
}
