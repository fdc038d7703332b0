package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"agentjail/internal/systest"
	"agentjail/internal/testtls"
)

// TestRemoteTLSServerName: a daemon dialled by IP whose certificate names
// only agentjail.agentjail.svc. `agentjail run --url https://IP` fails and
// says to give --tls-server-name; with it (or AGENTJAIL_TLS_SERVER_NAME)
// the run and a session's commands work; a name the certificate lacks
// fails, naming it.
func TestRemoteTLSServerName(t *testing.T) {
	systest.Require(t, systest.Root, systest.UserNS, systest.CgroupMem, systest.Python, systest.Seccomp)
	const name = "agentjail.agentjail.svc"
	const token = "0123456789abcdef0123456789abcdef"
	dir := t.TempDir()
	// A certificate that names only the Service: no IP address, as a
	// DaemonSet's one certificate names its Service and not each pod's IP.
	files, _ := testCert(t, dir, testtls.Leaf{Serial: 2, Name: name, DNSNames: []string{name}})
	tokens := filepath.Join(dir, "tokens")
	require.NoError(t, os.WriteFile(tokens, []byte("ci "+token+"\n"), 0o600))
	addr := freePort(t)
	startDaemon(t, dir, fmt.Sprintf("[peers]\nuids = [0]\n[admission]\nmax_concurrent = 2\n[remote]\nlisten = %q\ntls_cert = %q\ntls_key = %q\ntokens_file = %q\nnode = \"pod-a\"\n",
		addr, files.Cert, files.Key, tokens))
	cli := func(env []string, args ...string) (string, string, int) {
		cmd := exec.Command("/proc/self/exe", args...)
		cmd.Env = append(append(os.Environ(), "AGENTJAIL_TEST_MAIN=1", "AGENTJAIL_SOCKET=", "AGENTJAIL_URL=",
			"AGENTJAIL_TOKEN="+token, "AGENTJAIL_TLS_SERVER_NAME="), env...)
		var out, errb strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &errb
		_ = cmd.Run()
		return out.String(), errb.String(), cmd.ProcessState.ExitCode()
	}
	where := []string{"--url", "https://" + addr, "--ca", files.CA}

	_, errs, code := cli(nil, append(append([]string{"run"}, where...), "-c", "print(1)")...)
	assert.Equal(t, 125, code, errs)
	assert.Contains(t, errs, "127.0.0.1 because it doesn't contain any IP SANs")
	assert.Contains(t, errs, "give --tls-server-name NAME (or AGENTJAIL_TLS_SERVER_NAME)")

	out, errs, code := cli(nil, append(append([]string{"run"}, where...), "--tls-server-name", name, "-c", "print(6*7)")...)
	assert.Equal(t, 0, code, errs)
	assert.Equal(t, "42\n", out)

	out, errs, code = cli([]string{"AGENTJAIL_TLS_SERVER_NAME=" + name}, append(append([]string{"run"}, where...), "-c", "print(7)")...)
	assert.Equal(t, 0, code, errs)
	assert.Equal(t, "7\n", out)

	_, errs, code = cli(nil, append(append([]string{"run"}, where...), "--tls-server-name", "other.example", "-c", "print(1)")...)
	assert.Equal(t, 125, code, errs)
	assert.Contains(t, errs, `its certificate does not name "other.example" (--tls-server-name)`)

	// The session commands take it too.
	out, errs, code = cli(nil, append(append([]string{"session", "start"}, where...), "--tls-server-name", name)...)
	require.Equal(t, 0, code, errs)
	id := strings.Fields(out)[0]
	require.True(t, strings.HasSuffix(id, ".pod-a"), out)
	_, errs, code = cli(nil, append(append([]string{"session", "end", id}, where...), "--tls-server-name", name)...)
	assert.Equal(t, 0, code, errs)

	// Only with https.
	_, errs, code = cli(nil, "run", "--url", "http://"+addr, "--tls-server-name", name, "-c", "print(1)")
	assert.Equal(t, 2, code, errs)
	assert.Contains(t, errs, "only with an https:// --url")
}
