package nsjail

// What a jail leaves the host: no leaked fds, no thread held while waiting,
// and every end seen.

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"agentjail/cgroup"
	"agentjail/internal/systest"
)

// TestHostSeesNoLeakedFds looks at the running jail from the host, as runc's
// "detect fd leak" test does: every fd of the jailed process must be on the
// allowlist (stdin, two pipes), and its cwd and root must be the jail's.
func TestHostSeesNoLeakedFds(t *testing.T) {
	// An fd of this process without close-on-exec reaches the bootstrap
	// (as root) and the init stage: close_range must end it before the
	// exec. Only a jail started after it is opened can show that: the
	// cold runner's (the shared one's may be prepared already).
	leak, err := syscall.Open(os.DevNull, syscall.O_RDONLY, 0)
	require.NoError(t, err)
	defer syscall.Close(leak)
	for name, r := range map[string]*Runner{"shared": testRunner(t), "cold": freshRunner(t)} {
		t.Run(name, func(t *testing.T) { hostSeesNoLeakedFds(t, r) })
	}
}

func hostSeesNoLeakedFds(t *testing.T, r *Runner) {
	type out struct {
		res *Result
		err error
	}
	done := make(chan out, 1)
	var running sync.WaitGroup
	t.Cleanup(running.Wait) // a failed check still waits for the jail
	id := NewID()
	running.Go(func() {
		res, err := r.Run(t.Context(), &Spec{ID: id, Program: []byte(`import os, time
open("/tmp/up", "w").close()
while os.path.exists("/tmp/up"): time.sleep(0.005)`), Limits: DefaultLimits()})
		done <- out{res, err}
	})
	// The jail's PID 1 is this process's child (CLONE_PARENT) in a pid
	// namespace of its own, and python3 its child; /tmp/up, seen
	// through its root, says that its start-up is over (python3 opens
	// files of its own while it starts: site-packages' .pth files).
	var pid int
	require.Eventually(t, func() bool {
		pid = jailProgram(id)
		_, err := os.Stat(fmt.Sprintf("/proc/%d/root/tmp/up", pid))
		return pid != 0 && err == nil
	}, 3*time.Second, 5*time.Millisecond, "jail process not found, or not past its start")
	ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	require.NoError(t, err)
	var fds []string
	for _, e := range ents {
		l, _ := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", pid, e.Name()))
		fds = append(fds, e.Name()+" "+l)
	}
	require.Len(t, fds, 3, "only stdio: %q", fds)
	assert.Equal(t, "0 /dev/null", fds[0])
	assert.Regexp(t, `^1 pipe:\[\d+\]$`, fds[1])
	assert.Regexp(t, `^2 pipe:\[\d+\]$`, fds[2])
	exe, _ := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid))
	assert.Equal(t, "/usr/bin/python3.11", exe, "the program is python3, not agentjail")
	cwd, _ := os.Readlink(fmt.Sprintf("/proc/%d/cwd", pid))
	assert.Equal(t, "/workspace", cwd)
	root, _ := os.Readlink(fmt.Sprintf("/proc/%d/root", pid))
	assert.Equal(t, "/", root, "its root is its own pivot_root")
	// The bootstrap (bootstrap_linux.c) clones pid 1 with CLONE_PARENT and
	// exits: pid 1, the jail's init, is this process's own child, whose
	// end it waits for, and leads its own session, in which its child
	// python3 runs.
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	require.NoError(t, err)
	assert.Regexp(t, `(?m)^Groups:[ \t]*$`, string(status), "no supplementary group")
	m := regexp.MustCompile(`(?m)^PPid:\t(\d+)$`).FindStringSubmatch(string(status))
	require.NotNil(t, m)
	init, _ := strconv.Atoi(m[1])
	initStatus, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", init))
	require.NoError(t, err)
	assert.Regexp(t, fmt.Sprintf(`(?m)^PPid:\t%d$`, os.Getpid()), string(initStatus))
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	require.NoError(t, err)
	f := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
	assert.Equal(t, fmt.Sprint(init), f[3], "session of %d: %s", pid, stat)
	// python3 is in the jail's cgroup in every hierarchy (on v1 the
	// init stage's exec'ing thread moved itself into each: JoinFiles).
	own, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
	require.NoError(t, err)
	if r.Cgroups.Version() == cgroup.V2 {
		assert.Regexp(t, fmt.Sprintf(`(?m)^0::.*/%s$`, id), string(own))
	} else {
		for _, c := range r.Cgroups.Controllers() {
			assert.Regexp(t, fmt.Sprintf(`(?m)^\d+:([^:]*,)?%s(,[^:]*)?:.*/%s$`, c, id), string(own), "python3 in the jail's %s cgroup", c)
		}
	}
	// Seen: the program may end (host root cannot create a file in the
	// jail's tmpfs, EOVERFLOW: its uid is not mapped there; it can remove
	// one).
	require.NoError(t, os.Remove(fmt.Sprintf("/proc/%d/root/tmp/up", pid)))
	o := <-done
	require.NoError(t, o.err)
	assert.Equal(t, StatusOK, o.res.Status)
}

// jailProgram is the host pid of the python3 of the running jail whose
// cgroup is named id (0: none yet): of the processes in the group, the
// one whose parent is in it too (the jail's init is; a warm run's init is
// a python3 as well, whose parent is its zygote).
func jailProgram(id string) int {
	dirs := systest.CgroupDirs(id)
	if len(dirs) == 0 {
		return 0
	}
	b, _ := os.ReadFile(dirs[0] + "/cgroup.procs")
	in := map[int]bool{}
	for _, f := range strings.Fields(string(b)) {
		if pid, err := strconv.Atoi(f); err == nil {
			in[pid] = true
		}
	}
	for pid := range in {
		st, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			continue
		}
		comm, rest, _ := strings.Cut(string(st), ") ")
		f := strings.Fields(rest)
		if len(f) < 2 || !strings.HasSuffix(comm, "(python3") {
			continue
		}
		if ppid, _ := strconv.Atoi(f[1]); in[ppid] {
			return pid
		}
	}
	return 0
}

// While a jail runs, no thread of this process sits in waitid(2) for it:
// the wait for its end is parked in the runtime's poller (awaitExit). A
// thread blocked there for the whole run made the runtime's sysmon wake
// every 20 µs and hand Ps between threads: about 0.4 ms of the daemon's
// CPU per run.
func TestWaitHoldsNoThread(t *testing.T) {
	r := testRunner(t)
	done := make(chan error, 1)
	id := NewID()
	go func() {
		_, err := r.Run(t.Context(), &Spec{ID: id, Program: []byte("import time; time.sleep(0.6)"), Limits: DefaultLimits()})
		done <- err
	}()
	require.Eventually(t, func() bool { return jailProgram(id) != 0 }, 5*time.Second, time.Millisecond, "the jail's python3")
	// A thread seen in waitid in three samples in a row waits for a run:
	// other waits (a prepared jail's bootstrap, which ends at once) are
	// over within a sample.
	seen := map[int]int{}
	for range 30 {
		now := map[int]int{}
		for _, tid := range systest.ThreadsInSyscall(t, unix.SYS_WAITID) {
			now[tid] = seen[tid] + 1
			assert.Less(t, now[tid], 3, "thread %d blocked in waitid", tid)
		}
		seen = now
		time.Sleep(10 * time.Millisecond)
	}
	require.NoError(t, <-done)
}

// awaitExit returns for a child that has ended, whenever it ended: before
// the call, or while it waits; and only then. awaitExitFor does the same
// within its timeout, and says false past it.
func TestAwaitExitSeesEveryEnd(t *testing.T) {
	for i := range 200 {
		cmd := exec.Command("/bin/true")
		if i%2 == 1 {
			cmd = exec.Command("/bin/sleep", "0.02")
		}
		require.NoError(t, cmd.Start())
		if i%2 == 0 {
			require.Eventually(t, func() bool {
				b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/stat", cmd.Process.Pid))
				return bytes.Contains(b, []byte(") Z "))
			}, 5*time.Second, 100*time.Microsecond, "a zombie")
		}
		done := make(chan struct{})
		go func() {
			if i%4 < 2 {
				awaitExit(cmd.Process.Pid)
			} else {
				assert.True(t, awaitExitFor(cmd.Process.Pid, 10*time.Second), "run %d", i)
			}
			close(done)
		}()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatalf("run %d: awaitExit still waits for a child that ended", i)
		}
		// And not before: the child is a zombie by now, not yet reaped.
		b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/stat", cmd.Process.Pid))
		require.Contains(t, string(b), ") Z ", "run %d: awaitExit returned before the child ended", i)
		require.NoError(t, cmd.Wait())
	}
	cmd := exec.Command("/bin/sleep", "5")
	require.NoError(t, cmd.Start())
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	t0 := time.Now()
	assert.False(t, awaitExitFor(cmd.Process.Pid, 50*time.Millisecond), "a running child has not ended")
	assert.Less(t, time.Since(t0), 2*time.Second)
}
