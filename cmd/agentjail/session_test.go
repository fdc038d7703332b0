package main

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"agentjail/daemon"
	"agentjail/internal/systest"
)

// TestSessionCommands: `agentjail session` through a daemon, as people
// and scripts use it: start prints the id, run prints as `agentjail run`
// does and then the value, show and list describe, end ends; refusals
// are exit 125, misplaced flags exit 2.
func TestSessionCommands(t *testing.T) {
	systest.Require(t, systest.Root, systest.UserNS, systest.CgroupMem, systest.Python, systest.Seccomp)
	d := startDaemon(t, t.TempDir(), "[peers]\nuids = [0]\n")
	t.Setenv("AGENTJAIL_SOCKET", d.sock)

	code, stdout, stderr := run(t, "", "session", "start", "--memory", "128MiB", "--idle-timeout", "1m", "--env", "WHO=cli")
	require.Equal(t, 0, code, stderr)
	id := strings.TrimSpace(stdout)
	assert.Regexp(t, `^s-[0-9A-Z]{26}\.[A-Za-z0-9.-]+$`, id)
	assert.Contains(t, stderr, "memory 128.0 MiB")

	code, stdout, stderr = run(t, "", "session", "run", id, "-c", "import os\nx = 41\nprint(os.environ['WHO'])\nx + 1")
	assert.Equal(t, 0, code, stderr)
	assert.Equal(t, "cli\n42\n", stdout, "the output, then the value")
	assert.Regexp(t, `agentjail: exit 0 · wall `+dur+` .* · session call 1, alive`, stderr)

	code, stdout, _ = run(t, "", "session", "run", id, "--json", "-c", "x")
	assert.Equal(t, 0, code)
	var a callAnswer
	require.NoError(t, json.Unmarshal([]byte(stdout), &a), stdout)
	assert.Equal(t, "41", *a.Value)
	assert.Equal(t, daemon.SessionState{ID: id, Calls: 2, Alive: true}, a.Session)

	code, _, stderr = run(t, "", "session", "run", id, "-c", "x / 0")
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, "ZeroDivisionError")
	code, _, stderr = run(t, "", "session", "run", id, "--timeout", "200ms", "-c", "import time\ntime.sleep(10)")
	assert.Equal(t, 130, code, "interrupted: SIGINT")
	assert.Contains(t, stderr, "killed (wall_timeout)")
	assert.Contains(t, stderr, "session call 4, alive")

	code, _, stderr = run(t, "", "session", "run", id, "--memory", "1GiB", "-c", "1")
	assert.Equal(t, exitUsage, code)
	assert.Contains(t, stderr, "--memory: a limit of the whole session")

	code, stdout, _ = run(t, "", "session", "show", id)
	assert.Equal(t, 0, code)
	assert.Regexp(t, `^`+id+` · alive · default \((warm|cold)\) · 4 calls · memory .* of 128.0 MiB`, stdout)
	code, stdout, _ = run(t, "", "session", "list", "--json")
	assert.Equal(t, 0, code)
	assert.Contains(t, stdout, `"id":"`+id+`"`)

	code, _, _ = run(t, "", "session", "end", id)
	assert.Equal(t, 0, code)
	code, _, stderr = run(t, "", "session", "run", id, "-c", "x")
	assert.Equal(t, exitSetup, code)
	assert.Contains(t, stderr, "410 session_ended")
	assert.Contains(t, stderr, "deleted")
	code, _, stderr = run(t, "", "session", "end", id)
	assert.Equal(t, 0, code, "ending an ended session is what end asks for")
	assert.Contains(t, stderr, "has ended (deleted)")
	code, _, _ = run(t, "", "session", "show", "s-01ARZ3NDEKTSV4RRFFQ69G5FAV")
	assert.Equal(t, exitSetup, code)

	t.Setenv("AGENTJAIL_SOCKET", "")
	for _, args := range [][]string{{"session"}, {"session", "nope"}, {"session", "list"}, {"session", "show"}, {"session", "run", "-c", "1"}} {
		code, _, _ = run(t, "", args...)
		assert.Equal(t, exitUsage, code, "%v", args)
	}
}

// TestSessionsDieWithTheDaemon: kill -9 of a daemon with live sessions
// (warm and cold): their processes die with it, and the next instance's
// start-up sweep removes their cgroups.
func TestSessionsDieWithTheDaemon(t *testing.T) {
	systest.Require(t, systest.Root, systest.UserNS, systest.CgroupMem, systest.Python, systest.Seccomp)
	dir := t.TempDir()
	const cfg = "[peers]\nuids = [0]\n[admission]\nmax_concurrent = 2\n"
	d := startDaemon(t, dir, cfg)
	t.Setenv("AGENTJAIL_SOCKET", d.sock)
	var ids []string
	for _, start := range []string{"warm", "cold"} {
		code, stdout, stderr := run(t, "", "session", "start", "--start", start)
		require.Equal(t, 0, code, stderr)
		id := strings.TrimSpace(stdout)
		code, _, stderr = run(t, "", "session", "run", id, "-c", "import subprocess\np = subprocess.Popen(['sleep', '3600'])")
		require.Equal(t, 0, code, stderr)
		ids = append(ids, id)
	}
	groups := jailGroups(t)
	for _, id := range ids {
		require.NotEmpty(t, groups[id], "session %s has processes", id)
	}
	require.NoError(t, d.cmd.Process.Kill())
	<-d.done
	// The sessions were idle, their CPU cut to 1% (cgroup.IdlePeriodUS):
	// before Linux 6.18 a killed task exits within that, so its exit's
	// CPU takes 100 times as long (seconds under the VM suite's emulation).
	require.Eventually(t, func() bool {
		g := jailGroups(t)
		return len(g[ids[0]]) == 0 && len(g[ids[1]]) == 0
	}, 15*time.Second, 10*time.Millisecond, "session processes outlived the daemon: %v", jailGroups(t))
	d2 := startDaemon(t, dir, cfg)
	for _, id := range ids {
		assert.NotContains(t, jailGroups(t), id, "the restart removed the session's cgroup")
		assert.Contains(t, d2.log.String(), id)
	}
}
