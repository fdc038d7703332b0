package daemon

import (
	"crypto/tls"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"agentjail/internal/testtls"
)

// clientCert is a client certificate the test CA signed.
func (p *testPKI) clientCert(t *testing.T) tls.Certificate {
	c, err := p.Issue(testtls.Leaf{Serial: 99, Name: "client", Client: true})
	require.NoError(t, err)
	return c
}

// TestRemoteMutualTLS: with client_ca, a client without a certificate of
// that CA does not get past the handshake; one with it still needs a
// token.
func TestRemoteMutualTLS(t *testing.T) {
	e := startRemote(t, testOptions(), fakeOK(), nil)
	tc, err := remoteTLS(RemoteConfig{TLSCert: e.pki.files.Cert, TLSKey: e.pki.files.Key, ClientCA: e.pki.files.CA}, func(error) {})
	require.NoError(t, err)
	// A second server whose listener asks for client certificates.
	m := startRemote(t, testOptions(), fakeOK(), func(s *Server, ro *RemoteOptions) { ro.TLS = tc })
	// Its server certificate is e's: trust e's CA.
	m.client = &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: e.pki.Pool}}}
	_, err = m.client.Get(m.base + "/v1/health")
	require.Error(t, err, "no client certificate: no handshake")

	other := newTestPKI(t) // a certificate of another CA
	m.client = &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: e.pki.Pool, Certificates: []tls.Certificate{other.clientCert(t)}}}}
	_, err = m.client.Get(m.base + "/v1/health")
	require.Error(t, err, "a certificate of another CA: no handshake")

	m.client = &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: e.pki.Pool, Certificates: []tls.Certificate{e.pki.clientCert(t)}}}}
	resp, body := m.call(t, "", "POST", "/v1/run", `{"code":"print(1)"}`)
	assert.Equal(t, http.StatusUnauthorized, resp.StatusCode, "a certificate is not a token: %s", body)
	resp, body = m.call(t, tokenA, "POST", "/v1/run", `{"code":"print(1)"}`)
	assert.Equal(t, http.StatusOK, resp.StatusCode, body)
	assert.True(t, strings.Contains(body, `"status":"ok"`), body)

	_, err = remoteTLS(RemoteConfig{TLSCert: e.pki.files.Cert, TLSKey: e.pki.files.Key, ClientCA: e.pki.files.Key}, func(error) {})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "remote.client_ca")
}
