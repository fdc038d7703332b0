package main

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"agentjail/internal/systest"
	"agentjail/internal/testtls"
)

// testCert writes a CA (ca.crt) and a server certificate of it for l
// (tls.crt, tls.key) into dir; it returns their paths and a pool that
// trusts the CA.
func testCert(t *testing.T, dir string, l testtls.Leaf) (testtls.Files, *x509.CertPool) {
	t.Helper()
	ca, err := testtls.NewCA("agentjail test CA")
	require.NoError(t, err)
	c, err := ca.Issue(l)
	require.NoError(t, err)
	f, err := ca.WriteFiles(dir, c)
	require.NoError(t, err)
	return f, ca.Pool
}

// localCert is testCert for 127.0.0.1.
func localCert(t *testing.T, dir string) (testtls.Files, *x509.CertPool) {
	return testCert(t, dir, testtls.Leaf{Serial: 2, Name: "127.0.0.1", IPs: []net.IP{net.IPv4(127, 0, 0, 1)}})
}

// remoteDaemon starts a daemon with a TLS listener on a free loopback
// port, its certificate from localCert and one token; config is added to
// the [peers] and [remote] it writes (more [remote] keys, or other tables
// after them). It returns the listener's address, the certificate files
// and a file holding the token, for --token-file.
func remoteDaemon(t *testing.T, dir, config string) (*daemonProc, string, testtls.Files, string) {
	t.Helper()
	files, _ := localCert(t, dir)
	tokens := filepath.Join(dir, "tokens")
	require.NoError(t, os.WriteFile(tokens, []byte("ci 0123456789abcdef0123456789abcdef\n"), 0o600))
	tokFile := filepath.Join(dir, "my.token")
	require.NoError(t, os.WriteFile(tokFile, []byte("0123456789abcdef0123456789abcdef\n"), 0o600))
	addr := freePort(t)
	d := startDaemon(t, dir, fmt.Sprintf("[peers]\nuids = [0]\n[remote]\nlisten = %q\ntls_cert = %q\ntls_key = %q\ntokens_file = %q\n%s",
		addr, files.Cert, files.Key, tokens, config))
	return d, addr, files, tokFile
}

func freePort(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	return l.Addr().String()
}

// TestServeRemote: `agentjail serve` with [remote] answers runs through
// TLS to a token, refuses them without, names its node, drains on
// POST /v1/drain and stops on SIGTERM.
func TestServeRemote(t *testing.T) {
	systest.Require(t, systest.Root, systest.UserNS, systest.CgroupMem, systest.Python, systest.Seccomp)
	dir := t.TempDir()
	files, pool := localCert(t, dir)
	tokens := filepath.Join(dir, "tokens")
	require.NoError(t, os.WriteFile(tokens, []byte("ci 0123456789abcdef0123456789abcdef\n"), 0o600))
	addr := freePort(t)
	d := startDaemon(t, dir, fmt.Sprintf("[peers]\nuids = [0]\n[admission]\nmax_concurrent = 2\n[remote]\nlisten = %q\ntls_cert = %q\ntls_key = %q\ntokens_file = %q\nnode = \"node-t\"\n",
		addr, files.Cert, files.Key, tokens))
	r := &remoteServe{t: t, addr: addr, ca: files.CA,
		c: &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}, Timeout: 30 * time.Second}}
	r.answersByToken()

	// agentjail run --url: the same result as through the socket.
	tokFile := filepath.Join(dir, "my.token")
	require.NoError(t, os.WriteFile(tokFile, []byte("0123456789abcdef0123456789abcdef\n"), 0o600))
	wrong := filepath.Join(dir, "wrong.token")
	require.NoError(t, os.WriteFile(wrong, []byte("not-the-token-0123456789abcdef\n"), 0o600))
	r.runsByURL(tokFile, wrong)
	r.sessionsByURL(tokFile, wrong)
	r.drainsAndStops(d)
}

// remoteServe is a daemon of TestServeRemote: its [remote] listener's
// address, the file for --ca, and an HTTPS client that trusts it.
type remoteServe struct {
	t        *testing.T
	addr, ca string
	c        *http.Client
}

// call sends a request to the remote listener, with token when not empty.
func (r *remoteServe) call(method, path, token, body string) (*http.Response, string) {
	t := r.t
	req, err := http.NewRequest(method, "https://"+r.addr+path, strings.NewReader(body))
	require.NoError(t, err)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := r.c.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

// answersByToken: health names the node; a run needs the token.
func (r *remoteServe) answersByToken() {
	t := r.t
	resp, body := r.call("GET", "/v1/health", "", "")
	assert.Equal(t, http.StatusOK, resp.StatusCode, body)
	assert.Equal(t, "node-t", resp.Header.Get("Agentjail-Node"))
	resp, body = r.call("POST", "/v1/run", "", `{"code":"print(6*7)"}`)
	assert.Equal(t, http.StatusUnauthorized, resp.StatusCode, body)
	resp, body = r.call("POST", "/v1/run", "0123456789abcdef0123456789abcdef", `{"code":"print(6*7)"}`)
	require.Equal(t, http.StatusOK, resp.StatusCode, body)
	assert.Contains(t, body, `"stdout":"42\n"`)
	assert.NotEmpty(t, resp.Header.Get("Agentjail-Free-Slots"))
}

// cli runs `agentjail ARGS...` with env added to a test environment
// without AGENTJAIL_SOCKET, _TOKEN or _URL.
func cli(env []string, args ...string) (string, string, int) {
	cmd := exec.Command("/proc/self/exe", args...)
	cmd.Env = append(append(os.Environ(), "AGENTJAIL_TEST_MAIN=1", "AGENTJAIL_SOCKET=", "AGENTJAIL_TOKEN=", "AGENTJAIL_URL="), env...)
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	_ = cmd.Run()
	return out.String(), errb.String(), cmd.ProcessState.ExitCode()
}

// runsByURL: agentjail run --url with the token file tokFile; not with
// the file wrong, nor without a token.
func (r *remoteServe) runsByURL(tokFile, wrong string) {
	t := r.t
	run := func(args ...string) (string, string, int) {
		return cli(nil, append([]string{"run", "--url", "https://" + r.addr, "--ca", r.ca}, args...)...)
	}
	out, errs, code := run("--token-file", tokFile, "-c", "print(6*7)")
	assert.Equal(t, 0, code, errs)
	assert.Equal(t, "42\n", out)
	_, errs, code = run("--token-file", wrong, "-c", "print(6*7)")
	assert.Equal(t, 125, code, errs)
	assert.Contains(t, errs, "401 unauthorized")
	_, errs, code = run("-c", "print(1)")
	assert.Equal(t, 2, code, errs)
	assert.Contains(t, errs, "--token-file")
}

// sessionsByURL: agentjail session ... --url, and AGENTJAIL_URL with
// AGENTJAIL_TOKEN.
func (r *remoteServe) sessionsByURL(tokFile, wrong string) {
	t := r.t
	scli := func(env []string, args ...string) (string, string, int) {
		return cli(env, append([]string{"session"}, args...)...)
	}
	flags := []string{"--url", "https://" + r.addr, "--ca", r.ca, "--token-file", tokFile}
	out, errs, code := scli(nil, append([]string{"start", "--json"}, flags...)...)
	require.Equal(t, 0, code, errs)
	var started struct{ ID, Node string }
	require.NoError(t, json.Unmarshal([]byte(out), &started), out)
	assert.Equal(t, "node-t", started.Node)
	_, errs, code = scli(nil, append([]string{"run", started.ID, "-c", "x = 41"}, flags...)...)
	assert.Equal(t, 0, code, errs)
	byEnv := []string{"AGENTJAIL_URL=https://" + r.addr, "AGENTJAIL_TOKEN=0123456789abcdef0123456789abcdef"}
	out, errs, code = scli(byEnv, "run", started.ID, "--ca", r.ca, "-c", "print(x + 1)")
	assert.Equal(t, 0, code, errs)
	assert.Contains(t, out, "42\n")
	out, errs, code = scli(nil, append([]string{"list"}, flags...)...)
	assert.Equal(t, 0, code, errs)
	assert.Contains(t, out, started.ID)
	_, errs, code = scli(nil, "show", started.ID, "--url", "https://"+r.addr, "--ca", r.ca, "--token-file", wrong)
	assert.Equal(t, 125, code, errs)
	assert.Contains(t, errs, "401 unauthorized")
	_, errs, code = scli(nil, append([]string{"end", started.ID}, flags...)...)
	assert.Equal(t, 0, code, errs)
	_, errs, code = scli(nil, append([]string{"show", started.ID}, flags...)...)
	assert.NotEqual(t, 0, code, errs)
}

// drainsAndStops: after `agentjail drain` health says 503; SIGTERM
// stops d with exit 0 and closes the remote listener.
func (r *remoteServe) drainsAndStops(d *daemonProc) {
	t := r.t
	drain := exec.Command("/proc/self/exe", "drain", "--socket", d.sock, "--wait", "10s")
	drain.Env = append(os.Environ(), "AGENTJAIL_TEST_MAIN=1")
	dout, err := drain.CombinedOutput()
	require.NoError(t, err, string(dout))
	assert.Contains(t, string(dout), "draining; nothing runs")
	resp, body := r.call("GET", "/v1/health", "", "")
	assert.Equal(t, http.StatusServiceUnavailable, resp.StatusCode, body)

	require.NoError(t, d.cmd.Process.Signal(syscall.SIGTERM))
	select {
	case err := <-d.done:
		assert.NoError(t, err, "exit status 0")
	case <-time.After(15 * time.Second):
		t.Fatal("the daemon did not exit after SIGTERM")
	}
	_, err = net.DialTimeout("tcp", r.addr, time.Second)
	assert.Error(t, err, "the remote listener is closed")
}

// TestServeRemoteRefusesWithoutTLS: [remote] without a certificate and
// without insecure_plaintext does not start, and says which keys to set;
// nor does one whose tokens file is empty.
func TestServeRemoteRefusesWithoutTLS(t *testing.T) {
	dir := t.TempDir()
	empty := filepath.Join(dir, "tokens")
	require.NoError(t, os.WriteFile(empty, nil, 0o600))
	files, _ := localCert(t, dir)
	addr := freePort(t)
	for config, want := range map[string][]string{
		fmt.Sprintf("[remote]\nlisten = %q\ntokens_file = %q\n", addr, empty):                                                     {"remote.tls_cert", "remote.tls_key", "insecure_plaintext"},
		fmt.Sprintf("[remote]\nlisten = %q\ntokens_file = %q\ntls_cert = %q\ntls_key = %q\n", addr, empty, files.Cert, files.Key): {"remote.tokens_file", "has no"},
	} {
		cfg := filepath.Join(dir, "config.toml")
		require.NoError(t, os.WriteFile(cfg, []byte(config), 0o644))
		cmd := exec.Command("/proc/self/exe", "serve", "--config", cfg, "--socket", filepath.Join(dir, "s.sock"))
		cmd.Env = append(os.Environ(), "AGENTJAIL_TEST_MAIN=1")
		out, err := cmd.CombinedOutput()
		require.Error(t, err, string(out))
		for _, w := range want {
			assert.Contains(t, string(out), w)
		}
	}
}

// TestDrainWait: `agentjail drain --wait` while a run goes on says so and
// exits 1 when the wait is over; the run is not disturbed by the drain.
func TestDrainWait(t *testing.T) {
	systest.Require(t, systest.Root, systest.UserNS, systest.CgroupMem, systest.Python, systest.Seccomp)
	dir := t.TempDir()
	d := startDaemon(t, dir, "[peers]\nuids = [0]\n[admission]\nmax_concurrent = 2\nshutdown_grace = \"300ms\"\n")
	_, answer := startSleeper(t, d)
	drain := exec.Command("/proc/self/exe", "drain", "--socket", d.sock, "--wait", "500ms")
	drain.Env = append(os.Environ(), "AGENTJAIL_TEST_MAIN=1")
	t0 := time.Now()
	out, _ := drain.CombinedOutput()
	assert.Equal(t, 1, drain.ProcessState.ExitCode(), string(out))
	assert.Contains(t, string(out), "draining; 1 running, 0 queued")
	assert.GreaterOrEqual(t, time.Since(t0), 500*time.Millisecond)
	select {
	case res := <-answer:
		t.Fatalf("the run ended at the drain: %+v", res)
	default:
	}
	require.NoError(t, d.cmd.Process.Signal(syscall.SIGTERM))
	res := <-answer
	require.NotNil(t, res)
	assert.Equal(t, "shutdown", res.KillReason, "SIGTERM after the drain ends it at the grace")
	<-d.done
}
