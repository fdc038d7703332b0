package daemon

import (
	"context"
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"agentjail/internal/testtls"
	"agentjail/nsjail"
)

const (
	tokenA = "token-of-alice-0123456789abcdef"
	tokenB = "token-of-bob-0123456789abcdef00"
)

// testPKI is a CA made in the test and a server certificate for
// 127.0.0.1 it signed, written as PEM files.
type testPKI struct {
	*testtls.CA
	files testtls.Files // ca.crt, tls.crt, tls.key in dir
	dir   string
}

func newTestPKI(t testing.TB) *testPKI {
	t.Helper()
	ca, err := testtls.NewCA("agentjail test CA")
	require.NoError(t, err)
	p := &testPKI{CA: ca, dir: t.TempDir()}
	p.issue(t, 2)
	return p
}

// issue writes a new server certificate with the serial number serial.
func (p *testPKI) issue(t testing.TB, serial int64) {
	t.Helper()
	c, err := p.Issue(testtls.Leaf{Serial: serial, Name: "node", IPs: []net.IP{net.IPv4(127, 0, 0, 1)}})
	require.NoError(t, err)
	p.files, err = p.WriteFiles(p.dir, c)
	require.NoError(t, err)
}

// kubeSecret writes files the way the kubelet does for a Secret volume:
// dir/NAME -> ..data/NAME, ..data -> ..TIMESTAMP; update swaps ..data.
func kubeSecret(t testing.TB, dir, name, content string) {
	t.Helper()
	ts := filepath.Join(dir, "..ts-"+strings.ReplaceAll(time.Now().Format("150405.000000000"), ".", "_"))
	require.NoError(t, os.MkdirAll(ts, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(ts, name), []byte(content), 0o400))
	tmp := filepath.Join(dir, "..data_tmp")
	_ = os.Remove(tmp)
	require.NoError(t, os.Symlink(filepath.Base(ts), tmp))
	require.NoError(t, os.Rename(tmp, filepath.Join(dir, "..data")))
	link := filepath.Join(dir, name)
	if _, err := os.Lstat(link); err != nil {
		require.NoError(t, os.Symlink(filepath.Join("..data", name), link))
	}
}

type remoteEnv struct {
	s      *Server
	base   string
	client *http.Client
	tokens *TokenStore
	pki    *testPKI
	addr   string
	sock   *http.Client // the server's Unix socket
}

// startRemote serves o on a socket and on a TLS listener on loopback
// whose tokens are tokenA (alice) and tokenB (bob).
func startRemote(t testing.TB, o Options, j Jailer, mod func(*Server, *RemoteOptions)) *remoteEnv {
	t.Helper()
	s, _, sock := startServer(t, o, j)
	pki := newTestPKI(t)
	tdir := t.TempDir()
	kubeSecret(t, tdir, "tokens", "alice "+tokenA+"\nbob "+tokenB+"\n")
	tokens, err := OpenTokens(filepath.Join(tdir, "tokens"), o.Logger)
	require.NoError(t, err)
	tokens.every = 0
	tc, err := remoteTLS(RemoteConfig{TLSCert: pki.files.Cert, TLSKey: pki.files.Key}, func(error) {})
	require.NoError(t, err)
	ro := RemoteOptions{TLS: tc, Tokens: tokens}
	if mod != nil {
		mod(s, &ro)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	go func() { _ = s.ServeRemote(l, ro) }()
	c := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pki.Pool}}, Timeout: 30 * time.Second}
	t.Cleanup(c.CloseIdleConnections)
	return &remoteEnv{s: s, base: "https://" + l.Addr().String(), client: c, tokens: tokens, pki: pki, addr: l.Addr().String(), sock: sock}
}

// call sends method path with body as token's; it returns the answer
// with its body read.
func (e *remoteEnv) call(t testing.TB, token, method, path, body string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(method, e.base+path, strings.NewReader(body))
	require.NoError(t, err)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := e.client.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp, string(b)
}

func fakeOK() *fakeJailer {
	return &fakeJailer{run: func(_ context.Context, s *nsjail.Spec) (*nsjail.Result, error) { return okResult(s), nil }}
}

// TestRemoteNeedsAToken: every endpoint but health answers a missing
// and a wrong token with the same 401, and a valid one as the socket does.
func TestRemoteNeedsAToken(t *testing.T) {
	o := testOptions()
	o.Node = "node-a"
	e := startRemote(t, o, fakeOK(), nil)
	endpoints := [][2]string{{"POST", "/v1/run"}, {"GET", "/v1/environments"}, {"GET", "/v1/capacity"}, {"GET", "/metrics"},
		{"POST", "/v1/sessions"}, {"GET", "/v1/sessions"}, {"GET", "/v1/sessions/s-x"}, {"POST", "/v1/sessions/s-x/run"},
		{"DELETE", "/v1/sessions/s-x"}, {"GET", "/v1/nothing"}, {"GET", "/v1/health/"}}
	var first string
	for _, ep := range endpoints {
		for _, tok := range []string{"", "wrong-token-0123456789abcdef", tokenA + "x", strings.ToUpper(tokenA)} {
			resp, body := e.call(t, tok, ep[0], ep[1], `{"code":"print(1)"}`)
			assert.Equal(t, http.StatusUnauthorized, resp.StatusCode, "%v with token %q", ep, tok)
			assert.Equal(t, `Bearer realm="agentjail"`, resp.Header.Get("WWW-Authenticate"))
			assert.Equal(t, "node-a", resp.Header.Get("Agentjail-Node"))
			if first == "" {
				first = body
			}
			assert.Equal(t, first, body, "the same answer for every refusal")
		}
	}
	assert.Contains(t, first, `"code":"unauthorized"`)
	resp, body := e.call(t, "", "GET", "/v1/health", "")
	assert.Equal(t, http.StatusOK, resp.StatusCode, body)
	resp, body = e.call(t, tokenA, "POST", "/v1/run", `{"code":"print(1)"}`)
	assert.Equal(t, http.StatusOK, resp.StatusCode, body)
	assert.Equal(t, "node-a", resp.Header.Get("Agentjail-Node"))
	assert.Equal(t, "2", resp.Header.Get("Agentjail-Free-Slots"))
	resp, body = e.call(t, tokenB, "GET", "/v1/capacity", "")
	assert.Equal(t, http.StatusOK, resp.StatusCode, body)
	assert.JSONEq(t, `{"node":"node-a","slots":2,"running":0,"queued":0,"sessions":0,"max_sessions":0,"draining":false}`, body)
}
