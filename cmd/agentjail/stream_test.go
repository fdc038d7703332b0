package main

import (
	"bufio"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"agentjail/internal/systest"
)

// liveLine runs the command (the real binary) and returns its first
// line of stdout, how long before the command exited that line came, and
// the rest of its stdout and its stderr.
func liveLine(t *testing.T, args ...string) (first string, early time.Duration, rest, stderr string) {
	t.Helper()
	cmd := exec.Command("/proc/self/exe", args...)
	cmd.Env = append(os.Environ(), "AGENTJAIL_TEST_MAIN=1")
	var e strings.Builder
	cmd.Stderr = &e
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	br := bufio.NewReader(out)
	first, err = br.ReadString('\n')
	require.NoError(t, err, e.String())
	came := time.Now()
	var r strings.Builder
	_, _ = br.WriteTo(&r)
	require.NoError(t, cmd.Wait(), e.String())
	return first, time.Since(came), r.String(), e.String()
}

// Through a daemon, `agentjail run` and `agentjail session run` print
// the output as it comes: a line printed before a 2 s sleep is on the
// command's stdout well before it exits, and not printed twice.
func TestCLIPrintsLive(t *testing.T) {
	systest.Require(t, systest.Root, systest.UserNS, systest.CgroupMem, systest.Python, systest.Seccomp)
	d := startDaemon(t, t.TempDir(), "[peers]\nuids = [0]\n")
	code := "import sys, time\nprint('first', flush=True)\ntime.sleep(2)\nprint('second')\nprint('err', file=sys.stderr)"

	first, early, rest, stderr := liveLine(t, "run", "--socket", d.sock, "-c", code)
	assert.Equal(t, "first\n", first)
	assert.Equal(t, "second\n", rest)
	assert.Contains(t, stderr, "err\n")
	assert.Regexp(t, `agentjail: exit 0`, stderr)
	assert.Greater(t, early, time.Second, "the line came only at the end")

	t.Setenv("AGENTJAIL_SOCKET", d.sock)
	c, id, stderr0 := run(t, "", "session", "start")
	require.Equal(t, 0, c, stderr0)
	id = strings.TrimSpace(id)
	defer run(t, "", "session", "end", id)
	first, early, rest, stderr = liveLine(t, "session", "run", id, "-c", code+"\n6 * 7")
	assert.Equal(t, "first\n", first)
	assert.Equal(t, "second\n42\n", rest, "the rest of the output, then the value")
	assert.Contains(t, stderr, "err\n")
	assert.Greater(t, early, time.Second, "the line came only at the end")
}
