package daemon

import (
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRemoteTokenCheckTime: checking a valid, a wrong and a missing token
// takes the same time (medians over many checks, within noise).
func TestRemoteTokenCheckTime(t *testing.T) {
	dir := t.TempDir()
	var lines []string
	for i := range 50 {
		lines = append(lines, fmt.Sprintf("user%d tok-%02d-0123456789abcdefghij", i, i))
	}
	f := filepath.Join(dir, "tokens")
	require.NoError(t, os.WriteFile(f, []byte(strings.Join(lines, "\n")), 0o600))
	ts, err := OpenTokens(f, nil)
	require.NoError(t, err)
	ts.every = time.Hour
	// Interleaved, so that a change of the machine's load falls on all.
	toks := []string{"tok-00-0123456789abcdefghij", "tok-49-0123456789abcdefghij", "zzz-00-0123456789abcdefghij", "tok-00-0123456789abcdefghiX", ""}
	const n = 20001
	d := make([][]time.Duration, len(toks))
	for range n {
		for i, tok := range toks {
			t0 := time.Now()
			ts.Check(tok)
			d[i] = append(d[i], time.Since(t0))
		}
	}
	med := make([]time.Duration, len(toks))
	for i := range d {
		slices.Sort(d[i])
		med[i] = d[i][n/2]
	}
	t.Logf("medians: first %v, last %v, wrong %v, right but last byte %v, missing %v", med[0], med[1], med[2], med[3], med[4])
	assert.Less(t, slices.Max(med), slices.Min(med)*3/2, "every check takes about as long (the first token of the file as the last, a wrong one, none)")
	name, ok := ts.Check("tok-49-0123456789abcdefghij")
	assert.True(t, ok)
	assert.Equal(t, "user49", name)
	_, ok = ts.Check("")
	assert.False(t, ok)
}

// TestRemoteTokenRotation: a Kubernetes Secret's update (a swap of its
// ..data link) changes the valid tokens without a restart; a broken
// update keeps the last good ones.
func TestRemoteTokenRotation(t *testing.T) {
	dir := t.TempDir()
	kubeSecret(t, dir, "tokens", "alice "+tokenA+"\n")
	ts, err := OpenTokens(filepath.Join(dir, "tokens"), nil)
	require.NoError(t, err)
	ts.every = 0
	_, ok := ts.Check(tokenA)
	require.True(t, ok)
	// Rotation: the old and the new token for a while, then the new one.
	kubeSecret(t, dir, "tokens", "alice "+tokenA+"\nalice "+tokenB+"\n")
	nA, okA := ts.Check(tokenA)
	nB, okB := ts.Check(tokenB)
	assert.True(t, okA && okB)
	assert.Equal(t, "alice", nA)
	assert.Equal(t, "alice", nB)
	kubeSecret(t, dir, "tokens", "alice "+tokenB+"\n")
	_, okA = ts.Check(tokenA)
	_, okB = ts.Check(tokenB)
	assert.False(t, okA, "the old token is refused once it is gone from the file")
	assert.True(t, okB)
	kubeSecret(t, dir, "tokens", "")
	_, okB = ts.Check(tokenB)
	assert.True(t, okB, "an empty file keeps the last good tokens")
	// Also at once through the rate limit: the first check after a second.
	ts.every = 50 * time.Millisecond
	kubeSecret(t, dir, "tokens", "carol "+tokenA+"\n")
	time.Sleep(60 * time.Millisecond)
	n, ok := ts.Check(tokenA)
	assert.True(t, ok)
	assert.Equal(t, "carol", n)
}

func TestRemoteTokensFileErrors(t *testing.T) {
	dir := t.TempDir()
	for content, want := range map[string]string{
		"":                                     "no \"NAME TOKEN\" line",
		"# only a comment\n":                   "no \"NAME TOKEN\" line",
		"alice short\n":                        "at least 16",
		"alice " + tokenA + " x\n":             "two words",
		"a/b " + tokenA + "\n":                 "name",
		"a " + tokenA + "\nb " + tokenA + "\n": "each NAME needs its own",
	} {
		f := filepath.Join(dir, "t")
		require.NoError(t, os.WriteFile(f, []byte(content), 0o600))
		_, err := OpenTokens(f, nil)
		require.Error(t, err, content)
		assert.Contains(t, err.Error(), want)
		assert.Contains(t, err.Error(), "remote.tokens_file")
	}
	_, err := OpenTokens(filepath.Join(dir, "missing"), nil)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "remote.tokens_file")
}

// TestRemoteConfig: [remote] without a certificate and without
// insecure_plaintext is refused, saying which keys to set.
func TestRemoteConfig(t *testing.T) {
	for toml, want := range map[string]string{
		"[remote]\nlisten = \"127.0.0.1:8443\"\ntokens_file = \"/t\"\n":                                      "remote.tls_cert",
		"[remote]\nlisten = \"127.0.0.1:8443\"\ntls_cert = \"/c\"\ntls_key = \"/k\"\n":                       "remote.tokens_file",
		"[remote]\ntokens_file = \"/t\"\n":                                                                   "remote.listen",
		"[remote]\nlisten = \"8443\"\ntokens_file = \"/t\"\ninsecure_plaintext = true\n":                     "remote.listen",
		"[remote]\nlisten = \":8443\"\ntokens_file = \"/t\"\ninsecure_plaintext = true\nnode = \"a_b\"\n":    "remote.node",
		"[remote]\nlisten = \":8443\"\ntokens_file = \"/t\"\ninsecure_plaintext = true\ntls_cert = \"/c\"\n": "remote.insecure_plaintext",
		"[remote]\nlisten = \":8443\"\ntokens_file = \"/t\"\ntls_cert = \"/c\"\n":                            "remote.tls_key",
	} {
		f := filepath.Join(t.TempDir(), "config.toml")
		require.NoError(t, os.WriteFile(f, []byte(toml), 0o600))
		_, err := LoadConfig(f)
		require.Error(t, err, toml)
		assert.Contains(t, err.Error(), want, toml)
	}
	_, err := LoadConfig(writeTemp(t, "[remote]\nlisten = \"127.0.0.1:8443\"\ntokens_file = \"/t\"\ninsecure_plaintext = true\nnode = \"node-1\"\n"))
	require.NoError(t, err)
	c, err := LoadConfig(writeTemp(t, "[remote]\nlisten = \"127.0.0.1:8443\"\ntokens_file = \"/t\"\ntls_cert = \"/c\"\ntls_key = \"/k\"\n"))
	require.NoError(t, err)
	assert.Equal(t, "127.0.0.1:8443", c.AdvertiseAddr())
	assert.NotEmpty(t, c.NodeName())
	_, err = LoadConfig(writeTemp(t, "[remote]\nlisten = \"127.0.0.1:8443\"\ntokens_file = \"/t\"\ntls_cert = \"/c\"\ntls_key = \"/k\"\nbogus = 1\n"))
	require.Error(t, err)
}

func writeTemp(t *testing.T, s string) string {
	f := filepath.Join(t.TempDir(), "config.toml")
	require.NoError(t, os.WriteFile(f, []byte(s), 0o600))
	return f
}

// TestRemotePlainHTTPToTLSPort: plain HTTP to the TLS port never reaches
// the API.
func TestRemotePlainHTTPToTLSPort(t *testing.T) {
	e := startRemote(t, testOptions(), fakeOK(), nil)
	resp, err := http.Get("http://" + e.addr + "/v1/health")
	if err == nil {
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		assert.Equal(t, http.StatusBadRequest, resp.StatusCode, string(b))
		assert.Empty(t, resp.Header.Get("Agentjail-Node"), "not answered by the API")
	}
	// And a client that does not trust the CA does not get through.
	_, err = (&http.Client{}).Get(e.base + "/v1/health")
	require.Error(t, err)
}

// TestRemoteOversized: a header too large is 431, a body too large 413,
// and a body too large without a token is 401 (unread).
func TestRemoteOversized(t *testing.T) {
	e := startRemote(t, testOptions(), fakeOK(), nil)
	req, err := http.NewRequest("GET", e.base+"/v1/capacity", nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+tokenA)
	req.Header.Set("X-Big", strings.Repeat("a", 2*remoteMaxHeaderBytes))
	resp, err := e.client.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusRequestHeaderFieldsTooLarge, resp.StatusCode)
	big := `{"code":"` + strings.Repeat("x", 2<<20) + `"}`
	resp, body := e.call(t, tokenA, "POST", "/v1/run", big)
	assert.Equal(t, http.StatusRequestEntityTooLarge, resp.StatusCode, body)
	resp, body = e.call(t, "", "POST", "/v1/run", big)
	assert.Equal(t, http.StatusUnauthorized, resp.StatusCode, body)
}

// TestRemoteSlowloris: a client that sends its header slowly is cut at
// the header timeout and never holds a run slot; others are answered
// meanwhile.
func TestRemoteSlowloris(t *testing.T) {
	e := startRemote(t, testOptions(), fakeOK(), func(s *Server, _ *RemoteOptions) { s.hs.ReadHeaderTimeout = 300 * time.Millisecond })
	c, err := tls.Dial("tcp", e.addr, &tls.Config{RootCAs: e.pki.Pool})
	require.NoError(t, err)
	defer c.Close()
	start := time.Now()
	_, err = io.WriteString(c, "POST /v1/run HTTP/1.1\r\nHost: x\r\n")
	require.NoError(t, err)
	closed := make(chan time.Duration, 1)
	go func() {
		_, _ = io.Copy(io.Discard, c)
		closed <- time.Since(start)
	}()
	for i := 0; ; i++ {
		select {
		case d := <-closed:
			t.Logf("cut after %v", d)
			assert.Less(t, d, 3*time.Second)
			assert.Zero(t, e.s.Running())
			assert.Zero(t, e.s.Queued())
			resp, body := e.call(t, tokenA, "POST", "/v1/run", `{"code":"print(1)"}`)
			assert.Equal(t, http.StatusOK, resp.StatusCode, body)
			return
		case <-time.After(50 * time.Millisecond):
			_, _ = io.WriteString(c, "X-Slow: 1\r\n")
			assert.Zero(t, e.s.Running(), "a slow header holds no slot")
			require.Less(t, i, 100, "never cut")
		}
	}
}

// TestRemoteHandshakeFlood: many connections that never finish their
// handshake hold at most MaxConns, are cut at the header timeout, and the
// daemon answers afterwards.
func TestRemoteHandshakeFlood(t *testing.T) {
	e := startRemote(t, testOptions(), fakeOK(), func(s *Server, ro *RemoteOptions) {
		s.hs.ReadHeaderTimeout = 300 * time.Millisecond
		ro.MaxConns = 8
	})
	var conns []net.Conn
	for range 40 {
		c, err := net.Dial("tcp", e.addr)
		require.NoError(t, err)
		_, _ = c.Write([]byte{0x16, 0x03, 0x01, 0x00}) // a handshake record's start, no more
		conns = append(conns, c)
	}
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	start := time.Now()
	resp, body := e.call(t, tokenA, "GET", "/v1/capacity", "")
	assert.Equal(t, http.StatusOK, resp.StatusCode, body)
	t.Logf("answered after %v behind 40 stalled handshakes", time.Since(start))
}

// TestLimitListener: no more than n connections are accepted at once.
func TestLimitListener(t *testing.T) {
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	l := newLimitListener(inner, 2)
	defer l.Close()
	accepted := make(chan net.Conn, 10)
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			accepted <- c
		}
	}()
	for range 4 {
		c, err := net.Dial("tcp", inner.Addr().String())
		require.NoError(t, err)
		defer c.Close()
	}
	a := <-accepted
	<-accepted
	select {
	case <-accepted:
		t.Fatal("a third connection was accepted while two are open")
	case <-time.After(200 * time.Millisecond):
	}
	a.Close()
	select {
	case <-accepted:
	case <-time.After(5 * time.Second):
		t.Fatal("a closed connection did not free its place")
	}
}

// TestRemoteCertificateReload: a renewed certificate is served without a
// restart.
func TestRemoteCertificateReload(t *testing.T) {
	e := startRemote(t, testOptions(), fakeOK(), nil)
	serial := func() int64 {
		c, err := tls.Dial("tcp", e.addr, &tls.Config{RootCAs: e.pki.Pool})
		require.NoError(t, err)
		defer c.Close()
		return c.ConnectionState().PeerCertificates[0].SerialNumber.Int64()
	}
	require.Equal(t, int64(2), serial())
	e.pki.issue(t, 3)
	deadline := time.Now().Add(5 * time.Second)
	for serial() != 3 {
		require.True(t, time.Now().Before(deadline), "the new certificate was not served")
		time.Sleep(100 * time.Millisecond)
	}
}

// TestHandshakeErrorsDoNotFloodTheLog: of 2500 failed handshakes three
// lines are logged; other errors all are.
func TestHandshakeErrorsDoNotFloodTheLog(t *testing.T) {
	var b strings.Builder
	h := &handshakeErrors{next: &b}
	for range 2500 {
		_, _ = h.Write([]byte("http: TLS handshake error from 127.0.0.1:1: EOF\n"))
	}
	_, _ = h.Write([]byte("http: other\n"))
	assert.Equal(t, 3, strings.Count(b.String(), "TLS handshake error"))
	assert.Contains(t, b.String(), "http: other")
}
