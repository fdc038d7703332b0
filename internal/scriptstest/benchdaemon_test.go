package scriptstest

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fakeDaemon comes up (binds its socket) and then answers nothing: the
// benchmark's first request to it fails. It writes its pid beside it.
const fakeDaemon = `#!/usr/bin/python3
import os, socket, sys
open(os.path.join(os.environ["TMPDIR"], "fake.pid"), "w").write(str(os.getpid()))
s = socket.socket(socket.AF_UNIX)
s.bind(sys.argv[sys.argv.index("--socket") + 1])
s.listen()
while True:
    c, _ = s.accept()
    c.recv(65536)
    c.close()
`

// benchlib.daemon, the one way a benchmark starts a daemon, leaves no
// process and no folder behind when the daemon comes up but its first
// runs fail.
func TestBenchDaemonLeavesNothingWhenItFails(t *testing.T) {
	if _, err := os.Stat("/usr/bin/python3"); err != nil {
		t.Skip("no /usr/bin/python3")
	}
	tmp := t.TempDir()
	fake := filepath.Join(tmp, "fake")
	require.NoError(t, os.WriteFile(fake, []byte(fakeDaemon), 0o755))
	script := "import sys\nsys.path.insert(0, sys.argv[1])\nimport benchlib\n" +
		"with benchlib.daemon(sys.argv[2], 1):\n    print('came up')\n"
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "/usr/bin/python3", "-I", "-c", script, filepath.Join(repo(t), "scripts", "benchmarks"), fake)
	cmd.Env = append(os.Environ(), "TMPDIR="+tmp)
	// A file, not a pipe: a daemon left behind would hold a pipe open.
	log, err := os.Create(filepath.Join(tmp, "out.log"))
	require.NoError(t, err)
	cmd.Stdout, cmd.Stderr = log, log
	err = cmd.Run()
	require.NoError(t, log.Close())
	out, _ := os.ReadFile(log.Name())
	require.Error(t, err, "the benchmark must fail: %s", out)
	assert.NotContains(t, string(out), "came up")

	b, err := os.ReadFile(filepath.Join(tmp, "fake.pid"))
	require.NoError(t, err, "the fake daemon never ran: %s", out)
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	require.NoError(t, err)
	if syscall.Kill(pid, 0) == nil {
		_ = syscall.Kill(pid, syscall.SIGKILL)
		t.Errorf("the daemon (pid %d) still runs after the benchmark failed", pid)
	}
	left, err := filepath.Glob(filepath.Join(tmp, "agentjail-bench-*"))
	require.NoError(t, err)
	assert.Empty(t, left, "the daemon's folder is left behind")
}
