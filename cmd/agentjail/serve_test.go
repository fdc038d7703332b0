package main

import (
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"agentjail/daemon"
	"agentjail/internal/systest"
	"agentjail/nsjail"
)

// daemonProc is `agentjail serve` as its own process: this test binary,
// re-executed with AGENTJAIL_TEST_MAIN=1 (see TestMain), so that it can be
// killed, signalled and restarted like the real one.
type daemonProc struct {
	cmd  *exec.Cmd
	sock string
	log  *systest.Buffer
	done chan error
}

func startDaemon(t *testing.T, dir, config string) *daemonProc {
	t.Helper()
	// On cgroup v2 the daemon creates its jails below its own cgroup, which
	// must hold no other process: opening the runner here first moves this
	// test process into the leaf "supervisor", and the daemon, started
	// from it, puts its jails beside it (cgroup.Open).
	_, err := nsjail.NewRunner()
	require.NoError(t, err)
	cfg := filepath.Join(dir, "config.toml")
	require.NoError(t, os.WriteFile(cfg, []byte(config), 0o644))
	d := &daemonProc{sock: filepath.Join(dir, "agentjail.sock"), log: &systest.Buffer{}, done: make(chan error, 1)}
	d.cmd = exec.Command("/proc/self/exe", "serve", "--config", cfg, "--socket", d.sock)
	d.cmd.Env = append(os.Environ(), "AGENTJAIL_TEST_MAIN=1")
	d.cmd.Stderr = d.log
	require.NoError(t, d.cmd.Start())
	go func() { d.done <- d.cmd.Wait() }()
	t.Cleanup(func() {
		if d.cmd.ProcessState == nil {
			_ = d.cmd.Process.Kill()
			<-d.done
		}
		if t.Failed() {
			t.Logf("daemon log:\n%s", d.log.String())
		}
	})
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if resp, err := d.client().Get("http://agentjail/v1/health"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return d
			}
		}
		select {
		case err := <-d.done:
			t.Fatalf("daemon exited at start-up: %v\n%s", err, d.log.String())
		case <-time.After(20 * time.Millisecond):
		}
	}
	t.Fatalf("daemon did not answer within 10 s\n%s", d.log.String())
	return nil
}

func (d *daemonProc) client() *http.Client { return daemon.HTTPClient(d.sock) }

// jailGroups lists the jail cgroups below the daemon's subtree (the daemon
// inherits this test's cgroup), runs' and sessions', with their processes.
func jailGroups(t *testing.T) map[string][]string {
	t.Helper()
	b, err := os.ReadFile("/proc/self/cgroup")
	require.NoError(t, err)
	var base string
	for _, l := range strings.Split(string(b), "\n") {
		f := strings.SplitN(l, ":", 3)
		switch {
		case len(f) == 3 && strings.Contains(","+f[1]+",", ",memory,"):
			base = filepath.Join("/sys/fs/cgroup/memory", f[2], "agentjail")
		case len(f) == 3 && f[0] == "0" && base == "" && systest.CgroupV2():
			own := f[2]
			if filepath.Base(own) == "supervisor" {
				own = filepath.Dir(own)
			}
			base = filepath.Join("/sys/fs/cgroup", own, "agentjail")
		}
	}
	require.NotEmpty(t, base, "no memory cgroup")
	groups := map[string][]string{}
	ents, _ := os.ReadDir(base)
	for _, e := range ents {
		if e.IsDir() && (strings.HasPrefix(e.Name(), "j-") || strings.HasPrefix(e.Name(), "s-")) {
			procs, _ := os.ReadFile(filepath.Join(base, e.Name(), "cgroup.procs"))
			groups[e.Name()] = strings.Fields(string(procs))
		}
	}
	return groups
}

// startSleeper starts a cold run that sleeps (its pid 1 a child of the
// daemon, which the tests look for), and returns once the jail's
// python3 is running, with the channel its answer arrives on.
func startSleeper(t *testing.T, d *daemonProc) (string, <-chan *daemon.Result) {
	t.Helper()
	answer := make(chan *daemon.Result, 1)
	go func() {
		resp, err := d.client().Post("http://agentjail/v1/run", "application/json",
			strings.NewReader(`{"code":"import time; print('S09 running', flush=True); time.sleep(3600)","limits":{"wall_time_ms":120000},"start":"cold"}`))
		if err != nil {
			answer <- nil
			return
		}
		defer resp.Body.Close()
		var res daemon.Result
		if json.NewDecoder(resp.Body).Decode(&res) != nil {
			answer <- nil
			return
		}
		answer <- &res
	}()
	// The sleeper's group is the one with this daemon's python3 in it
	// (other tests run daemons and jails beside this one): the jail's
	// pid 1, its init, is the daemon's child (CLONE_PARENT), and python3
	// is the init's child.
	var id string
	require.Eventually(t, func() bool {
		daemonKids := systest.Children(d.cmd.Process.Pid)
		for g, procs := range jailGroups(t) {
			for _, p := range procs {
				pid, _ := strconv.Atoi(p)
				comm, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
				if string(comm) == "python3\n" && slices.Contains(daemonKids, parentOf(pid)) {
					id = g
					return true
				}
			}
		}
		return false
	}, 10*time.Second, 10*time.Millisecond, "the jail did not start")
	return id, answer
}

// TestServeSIGTERM: SIGTERM lets the running jail use the grace period,
// then kills it with kill_reason "shutdown" and answers it; the daemon
// exits 0 and leaves no socket, cgroup or process.
func TestServeSIGTERM(t *testing.T) {
	systest.Require(t, systest.Root, systest.UserNS, systest.CgroupMem, systest.Python, systest.Seccomp)
	dir := t.TempDir()
	base := 3_000_000_000 + uint32(rand.IntN(1000))*100_000                                                                                                                                          // this test's own uids: see TestServeCrashRecovery
	d := startDaemon(t, dir, fmt.Sprintf("[peers]\nuids = [0]\n[admission]\nmax_concurrent = 2\nshutdown_grace = \"300ms\"\n[jail]\nprepared_jails = 2\nuid_base = %d\nuid_count = 100000\n", base)) // two jails prepared, whatever the CPUs
	id, answer := startSleeper(t, d)
	kids := waitChildren(t, d.cmd.Process.Pid, 2) // the running jail and the other prepared one
	t0 := time.Now()
	require.NoError(t, d.cmd.Process.Signal(syscall.SIGTERM))
	res := <-answer
	require.NotNil(t, res, "the running request is answered")
	assert.Equal(t, "killed", res.Status)
	assert.Equal(t, "shutdown", res.KillReason)
	assert.GreaterOrEqual(t, time.Since(t0), 300*time.Millisecond, "the grace period was granted")
	select {
	case err := <-d.done:
		assert.NoError(t, err, "exit status 0")
	case <-time.After(10 * time.Second):
		t.Fatal("the daemon did not exit after SIGTERM")
	}
	_, err := os.Stat(d.sock)
	assert.ErrorIs(t, err, os.ErrNotExist, "the socket is removed")
	assert.NotContains(t, jailGroups(t), id, "the jail's cgroup is removed")
	assert.Contains(t, d.log.String(), "msg=stopped")
	for _, pid := range kids {
		assert.False(t, systest.Running(pid), "process %d of the daemon outlived its stop", pid)
	}
	assert.Empty(t, systest.ProcessesInRange(base, 100_000), "processes of the jails (the zygote, its runs ahead) outlived the stop")
}

// describeProcs says what each process is, for a failure's message.
func describeProcs(pids []int) string {
	var b strings.Builder
	for _, p := range pids {
		st, _ := os.ReadFile(fmt.Sprintf("/proc/%d/status", p))
		var name, state, ppid, nspid string
		for _, l := range strings.Split(string(st), "\n") {
			k, v, _ := strings.Cut(l, ":\t")
			switch k {
			case "Name":
				name = v
			case "State":
				state = v
			case "PPid":
				ppid = v
			case "NSpid":
				nspid = v
			}
		}
		fmt.Fprintf(&b, "[%d %s %s ppid %s nspid %s] ", p, name, state, ppid, nspid)
	}
	return b.String()
}

// waitChildren waits until pid has at least n child processes, and
// returns them.
func waitChildren(t *testing.T, pid, n int) []int {
	t.Helper()
	var kids []int
	require.Eventually(t, func() bool { kids = systest.Children(pid); return len(kids) >= n }, 10*time.Second, 10*time.Millisecond,
		"the daemon never had %d children (jails running or prepared): %v", n, kids)
	return kids
}

// TestServeCrashRecovery is docs/security.md S09: kill -9 the daemon mid-job.
// The jail dies with it (parent-death signal on the locked creating
// thread), and the next instance removes the stale cgroup before it
// answers its first request.
func TestServeCrashRecovery(t *testing.T) {
	systest.Require(t, systest.Root, systest.UserNS, systest.CgroupMem, systest.Python, systest.Seccomp)
	dir := t.TempDir()
	// Two jails prepared, whatever the CPUs; warm runs forked ahead of
	// requests, under a zygote. A uid range of this test's own: every
	// process of the daemon's jails, zygotes and runs has one of them.
	base := 3_000_000_000 + uint32(rand.IntN(1000))*100_000
	cfg := fmt.Sprintf("[peers]\nuids = [0]\n[admission]\nmax_concurrent = 2\n[jail]\nprepared_jails = 2\nuid_base = %d\nuid_count = 100000\n", base)
	d := startDaemon(t, dir, cfg)
	require.Eventually(t, func() bool { return len(systest.ProcessesInRange(base, 100_000)) >= 4 }, 10*time.Second, 10*time.Millisecond,
		"the daemon's zygote and its runs ahead")
	id, answer := startSleeper(t, d)
	kids := waitChildren(t, d.cmd.Process.Pid, 2) // the running jail and the other prepared one
	require.NoError(t, d.cmd.Process.Kill())
	<-d.done
	assert.Nil(t, <-answer, "the client sees the daemon go away")
	require.Eventually(t, func() bool { return len(jailGroups(t)[id]) == 0 }, time.Second, 10*time.Millisecond,
		"S09: jail processes outlived the daemon by more than 1 s: %v", jailGroups(t)[id])
	require.Eventually(t, func() bool {
		for _, pid := range kids {
			if systest.Running(pid) {
				return false
			}
		}
		return true
	}, time.Second, 10*time.Millisecond, "S09: prepared jails outlived the daemon by more than 1 s")
	require.Eventually(t, func() bool { return len(systest.ProcessesInRange(base, 100_000)) == 0 }, time.Second, 10*time.Millisecond,
		"S09: processes of the jails (the zygote, its runs ahead) outlived the daemon by more than 1 s: %v", describeProcs(systest.ProcessesInRange(base, 100_000)))
	require.Contains(t, jailGroups(t), id, "the crash left the jail's cgroup (what the restart must clean)")

	d2 := startDaemon(t, dir, cfg) // the stale socket file is replaced
	assert.NotContains(t, jailGroups(t), id, "the restarted daemon removed the stale cgroup before serving")
	assert.Contains(t, d2.log.String(), "removed a jail left by a previous instance")
	assert.Contains(t, d2.log.String(), id)
	resp, err := d2.client().Post("http://agentjail/v1/run", "application/json", strings.NewReader(`{"code":"print('again')"}`))
	require.NoError(t, err)
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	assert.Contains(t, string(b), `"stdout":"again\n"`)
}

// TestRunThroughSocket: `agentjail run --socket` prints what local mode
// prints, and the daemon's refusals are exit 125 (or 2 for a bad field).
func TestRunThroughSocket(t *testing.T) {
	systest.Require(t, systest.Root, systest.UserNS, systest.CgroupMem, systest.Python, systest.Seccomp)
	d := startDaemon(t, t.TempDir(), "[peers]\nuids = [0]\n")
	prog := "import sys; print('out'); print('err', file=sys.stderr); sys.exit(3)"
	codeL, outL, errL := run(t, "", "run", "-c", prog)
	codeR, outR, errR := run(t, "", "run", "--socket", d.sock, "-c", prog)
	assert.Equal(t, 3, codeL)
	assert.Equal(t, codeL, codeR)
	assert.Equal(t, outL, outR)
	firstLine := func(s string) string { return strings.SplitN(s, "\n", 2)[0] }
	assert.Equal(t, firstLine(errL), firstLine(errR))
	assert.Regexp(t, `agentjail: exit 3 · wall `+dur, errR)

	t.Setenv("AGENTJAIL_SOCKET", d.sock)
	code, stdout, _ := run(t, "", "run", "--json", "-c", "print(1)")
	assert.Equal(t, 0, code)
	var res map[string]any
	require.NoError(t, json.Unmarshal([]byte(stdout), &res))
	assert.Equal(t, "1\n", res["stdout"])

	code, _, stderr := run(t, "", "run", "--memory", "100GiB", "-c", "pass")
	assert.Equal(t, exitUsage, code)
	assert.Contains(t, stderr, "agentjail run: --memory: 100GiB is above this daemon's maximum of 4GiB (limits.memory_bytes)\n",
		"in the flag's units, and the field it sets")
	code, _, stderr = run(t, "", "run", "--timeout", "10m", "--tmp-size", "1500MB", "-c", "pass")
	assert.Equal(t, exitUsage, code)
	assert.Contains(t, stderr, "--timeout: 10m0s is above this daemon's maximum of 5m0s (limits.wall_time_ms)")

	code, stdout, stderr = run(t, "", "run", "--socket", filepath.Join(t.TempDir(), "none.sock"), "--json", "-c", "pass")
	assert.Equal(t, exitSetup, code)
	assert.Contains(t, stderr, "none.sock")
	assert.Contains(t, stdout, `"code":"setup_failed"`)
}

// `run --socket` sends nothing to a server that is neither root's nor the
// caller's (SO_PEERCRED): here one of uid 65534 that answers every request.
func TestRunRefusesAServerOfAnotherUser(t *testing.T) {
	systest.Require(t, systest.Root, systest.Python)
	dir, err := os.MkdirTemp("", "agentjail-nobody-")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	require.NoError(t, os.Chmod(dir, 0o755))
	require.NoError(t, os.Chown(dir, 65534, 65534))
	sock := filepath.Join(dir, "s.sock")
	srv := exec.Command("setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "/usr/bin/python3", "-I", "-c", `import socket, sys
s = socket.socket(socket.AF_UNIX); s.bind(sys.argv[1]); s.listen(8); print("up", flush=True)
while True:
    c, _ = s.accept(); c.recv(65536); c.sendall(b'HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}'); c.close()`, sock)
	out, err := srv.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, srv.Start())
	t.Cleanup(func() { _ = srv.Process.Kill(); _ = srv.Wait() })
	line := make([]byte, 3)
	_, err = io.ReadFull(out, line)
	require.NoError(t, err, "the uid 65534 server did not come up")
	code, _, stderr := run(t, "", "run", "--socket", sock, "-c", "pass")
	assert.Equal(t, exitSetup, code)
	assert.Contains(t, stderr, "the server runs as uid 65534")
}

// parentOf is the parent's pid of process pid (0 when it is gone).
func parentOf(pid int) int {
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	_, rest, _ := strings.Cut(string(b), ") ")
	f := strings.Fields(rest)
	if len(f) < 2 {
		return 0
	}
	ppid, _ := strconv.Atoi(f[1])
	return ppid
}
