package nsjail

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"agentjail/cgroup"
	"agentjail/internal/systest"
)

// preparedRunner is a Runner of its own with n prepared jails for t,
// ended when the test ends.
func preparedRunner(t *testing.T, n int, tpl PreparedTemplate) *Runner {
	t.Helper()
	r := freshRunner(t)
	r.KeepPrepared(n, tpl)
	t.Cleanup(r.Close)
	waitPrepared(t, r, n)
	return r
}

func waitPrepared(t *testing.T, r *Runner, n int) {
	t.Helper()
	require.Eventually(t, func() bool { ready, _ := r.PreparedStats(); return ready >= n }, 10*time.Second, time.Millisecond,
		"prepared jails never became ready")
}

// A prepared jail serves one request: what a program leaves behind (files,
// processes, SysV IPC, the hostname it cannot change) is not in the next
// run, which gets a jail of its own with another uid.
func TestPreparedJailsServeOneRequestEach(t *testing.T) {
	r := preparedRunner(t, 1, PreparedTemplate{})
	leave := `
import os, subprocess
open('/workspace/left', 'w').write('x'); open('/tmp/left', 'w').write('x')
subprocess.Popen(['/usr/bin/python3', '-c', 'import time; time.sleep(60)'], start_new_session=True)
print(os.getpid(), len(os.listdir('/proc')))
`
	first := runIn(t, r, &Spec{Program: []byte(leave), Limits: DefaultLimits()})
	require.Equal(t, StatusOK, first.Status, "stderr: %s", first.Stderr)
	assert.True(t, first.Prepared, "the first run must take the prepared jail")
	waitPrepared(t, r, 1)
	second := runIn(t, r, &Spec{Program: []byte(`
import os
print(os.path.exists('/workspace/left'), os.path.exists('/tmp/left'), sorted(p for p in os.listdir('/proc') if p.isdigit()))
`), Limits: DefaultLimits()})
	require.Equal(t, StatusOK, second.Status, "stderr: %s", second.Stderr)
	assert.True(t, second.Prepared)
	assert.Equal(t, "False False ['1', '2']\n", string(second.Stdout), "the jail's init and the program only")
	assert.NotEqual(t, first.HostUID, second.HostUID)
}

// The request's own limits apply to a prepared jail: its scratch size
// (resized by a remount), files, stdin, environment, rlimits, report
// channel, memory limit.
func TestPreparedJailTakesTheRequestsLimits(t *testing.T) {
	r := preparedRunner(t, 1, PreparedTemplate{Limits: Limits{TmpBytes: 64 << 20}})
	ahead := aheadGroups(t, r)
	l := DefaultLimits()
	l.TmpBytes = 8 << 20
	l.OpenFiles = 40
	l.MemoryBytes = 48 << 20
	res := runIn(t, r, &Spec{Program: []byte(`
import os, resource, sys
print(sys.stdin.read(), open('in/data.txt').read(), os.environ['GREETING'], resource.getrlimit(resource.RLIMIT_NOFILE)[0])
st = os.statvfs('/tmp'); print(st.f_blocks * st.f_frsize)
os.write(3, b'report')
for d in ('/workspace', '/tmp', '/dev/shm'):
    f = os.statvfs(d).f_flag
    print(d, bool(f & os.ST_NOSUID), bool(f & os.ST_NODEV), bool(f & os.ST_NOEXEC), bool(f & os.ST_RDONLY))
open('/tmp/x.sh', 'w').write('#!/bin/sh\nexit 7\n'); os.chmod('/tmp/x.sh', 0o755)
import subprocess; print('exec', subprocess.run(['/tmp/x.sh']).returncode)
try:
    with open('/tmp/big', 'wb') as f:
        f.write(b'x' * (16 << 20))
except OSError as e:
    print('write', e.errno)
`), Stdin: []byte("stdin"), Env: map[string]string{"GREETING": "hi"}, Report: true,
		Files: []File{{Path: "in/data.txt", Content: []byte("file")}}, Limits: l})
	require.Equal(t, StatusOK, res.Status, "stderr: %s", res.Stderr)
	assert.True(t, res.Prepared)
	// The resize keeps the scratch mounts' flags (a non-bind remount sets
	// them anew): nosuid, nodev, writable, not noexec (the Runner's
	// ScratchNoexec is off; TestScratchNoexecSetting resizes with it on).
	assert.Equal(t, "stdin file hi 40\n8388608\n"+
		"/workspace True True False False\n/tmp True True False False\n/dev/shm True True False False\nexec 7\n"+
		"write 28\n", string(res.Stdout))
	assert.Equal(t, "report", string(res.Report))
	assert.Equal(t, int64(48<<20), res.MemoryLimitBytes)
	// The group made ahead had the default limits: it was replaced.
	for _, name := range ahead {
		assert.Empty(t, systest.CgroupDirs(name), "the group made ahead, %s, after the run", name)
	}

	big := runIn(t, r, &Spec{Program: []byte("b = bytearray(100 << 20)\nfor i in range(0, len(b), 4096): b[i] = 1\n"), Limits: l})
	assert.Equal(t, KillMemoryLimit, big.KillReason)
}

// Shared code is written ahead; a request whose code differs from it, or
// that binds other directories, gets a jail of its own.
func TestPreparedSharedCode(t *testing.T) {
	shared := []File{{Path: "lib.py", Content: []byte("WHO = 'shared'\n")}}
	r := preparedRunner(t, 1, PreparedTemplate{Code: shared})
	prog := []byte("import sys; sys.path.insert(0, '/code'); import lib; print(lib.WHO, sorted(__import__('os').listdir('/code')))")
	res := runIn(t, r, &Spec{Program: prog, CodeFiles: shared, Limits: DefaultLimits()})
	assert.True(t, res.Prepared)
	assert.Equal(t, "shared ['lib.py', 'main.py']\n", string(res.Stdout), "stderr: %s", res.Stderr)
	waitPrepared(t, r, 1)

	other := []File{{Path: "lib.py", Content: []byte("WHO = 'mine'\n")}}
	res = runIn(t, r, &Spec{Program: prog, CodeFiles: other, Limits: DefaultLimits()})
	assert.False(t, res.Prepared, "different content under the same name must not use the prepared jail")
	assert.Equal(t, "mine ['lib.py', 'main.py']\n", string(res.Stdout), "stderr: %s", res.Stderr)

	res = runIn(t, r, &Spec{Program: prog, Limits: DefaultLimits()})
	assert.False(t, res.Prepared, "a request without the shared file must not see it")
	assert.Equal(t, StatusError, res.Status)

	res = runIn(t, r, &Spec{Program: prog, CodeFiles: shared, ReadOnlyMounts: []string{"/etc/ssl"}, Limits: DefaultLimits()})
	assert.False(t, res.Prepared, "other mounts must not use the prepared jail")
	assert.Equal(t, StatusOK, res.Status, "stderr: %s", res.Stderr)
}

// A prepared jail killed while it waits is replaced without the request
// noticing, also when the request comes at once: the send may then reach
// the dying init stage, which ends before it answers.
func TestPreparedJailKilledWhileWaiting(t *testing.T) {
	r := preparedRunner(t, 1, PreparedTemplate{})
	for range 5 {
		waitPrepared(t, r, 1)
		pids := initStagesOf(t, r)
		require.Len(t, pids, 1)
		require.NoError(t, syscall.Kill(pids[0], syscall.SIGKILL))
		res := runIn(t, r, &Spec{Program: []byte("print('ok')"), Limits: DefaultLimits()})
		assert.Equal(t, "ok\n", string(res.Stdout), "stderr: %s", res.Stderr)
		assert.False(t, res.Prepared)
	}
}

// Close ends every prepared jail: no init stage, uid or mount is left.
func TestPreparedCloseLeavesNothing(t *testing.T) {
	r := freshRunner(t)
	mounts := systest.MountCount()
	fds := quietFdCount(t)
	r.KeepPrepared(3, PreparedTemplate{})
	waitPrepared(t, r, 3)
	// What README says a waiting jail holds of the daemon's fds: its
	// socket, pidfd and mount namespace, and on v1 a lock and a tasks file
	// per hierarchy and the files its figures are read from.
	perJail := (systest.FdCount() - fds) / 3
	t.Logf("fds per waiting jail: %d (cgroup %v)", perJail, r.Cgroups.Version())
	if r.Cgroups.Version() == cgroup.V1 {
		assert.LessOrEqual(t, perJail, 16)
	} else {
		assert.Equal(t, 3, perJail)
	}
	pids := initStagesOf(t, r)
	require.Len(t, pids, 3)
	uids := readyUIDs(r)
	groups := aheadGroups(t, r)
	r.Close()
	for _, name := range groups {
		assert.Empty(t, systest.CgroupDirs(name), "the group %s made ahead, after Close", name)
	}
	for _, pid := range pids {
		assert.False(t, unreaped(pid), "init stage %d outlived Close", pid)
	}
	for _, uid := range uids {
		assert.False(t, uidUsed(r, uid), "uid %d still taken after Close", uid)
	}
	assert.Equal(t, mounts, systest.MountCount())
	assert.Equal(t, fds, systest.FdCount(), "fds left open after Close")
	ready, _ := r.PreparedStats()
	assert.Zero(t, ready)
}

// Concurrent requests take prepared jails or start their own; each gets
// its own jail and the right answer.
func TestPreparedConcurrent(t *testing.T) {
	r := preparedRunner(t, 2, PreparedTemplate{})
	const n = 12
	outs := make(chan string, n)
	for i := range n {
		go func() {
			res, err := r.Run(context.Background(), &Spec{Program: []byte("import os; print(os.getpid(), " + strings.Repeat("1+", i) + "0)"), Limits: DefaultLimits()})
			if err != nil {
				outs <- err.Error()
				return
			}
			outs <- string(res.Stdout)
		}()
	}
	got := map[string]bool{}
	for range n {
		got[<-outs] = true
	}
	for i := range n {
		assert.True(t, got[fmt.Sprintf("2 %d\n", i)], "run %d: %v", i, got)
	}
}

// initStagesOf are the pids of the runner's prepared, waiting init stages.
func initStagesOf(t *testing.T, r *Runner) []int {
	t.Helper()
	var pids []int
	for _, pj := range readyJails(r) {
		pids = append(pids, pj.j.proc.Pid)
	}
	return pids
}

// unreaped: the process exists, running or a zombie not yet waited for.
func unreaped(pid int) bool { return syscall.Kill(pid, 0) == nil }

// A jail that cannot be prepared is reported once per streak, and
// requests start their own (here failing the same way, with the reason).
func TestPreparedErrorsAreHeardOnce(t *testing.T) {
	r := freshRunner(t)
	r.Exe, r.ExeFile = "/nonexistent/agentjail", nil
	errs := make(chan error, 10)
	r.KeepPrepared(2, PreparedTemplate{OnError: func(err error) { errs <- err }})
	defer r.Close()
	// Both starts have failed (none is in progress, a retry is a second
	// away): each could have been heard. The pool calls OnError after it
	// has let its lock go, so the first may still be on its way; the
	// second start, which ended after the first, is never heard.
	require.Eventually(t, func() bool {
		p := poolOf(r)
		p.mu.Lock()
		defer p.mu.Unlock()
		return p.starting == 0 && p.lastErr != nil
	}, 5*time.Second, time.Millisecond)
	require.Eventually(t, func() bool { return len(errs) > 0 }, 5*time.Second, time.Millisecond)
	assert.Len(t, errs, 1)
	ready, err := r.PreparedStats()
	assert.Zero(t, ready)
	assert.ErrorContains(t, err, "start init stage")
	_, err = r.Run(context.Background(), &Spec{Program: []byte("pass"), Limits: DefaultLimits()})
	assert.ErrorContains(t, err, "start init stage")
}

// After failed starts the pool tries again (backing off from a second):
// once the cause is gone, jails are prepared again.
func TestPreparedRecoversAfterFailures(t *testing.T) {
	dir, err := os.MkdirTemp("", "agentjail-exe-")
	require.NoError(t, err)
	defer os.RemoveAll(dir)
	exe := filepath.Join(dir, "agentjail")
	r := freshRunner(t)
	r.Exe, r.ExeFile = exe, nil
	r.KeepPrepared(1, PreparedTemplate{})
	defer r.Close()
	require.Eventually(t, func() bool { _, err := r.PreparedStats(); return err != nil }, 5*time.Second, time.Millisecond)
	failed := time.Now()
	require.NoError(t, os.Symlink("/proc/self/exe", exe)) // the forked child's own binary: this test binary
	waitPrepared(t, r, 1)
	assert.GreaterOrEqual(t, time.Since(failed), minRetry-50*time.Millisecond, "retried before the backoff")
	_, err = r.PreparedStats()
	assert.NoError(t, err)
	res := runIn(t, r, &Spec{Program: []byte("print('back')"), Limits: DefaultLimits()})
	assert.True(t, res.Prepared)
	assert.Equal(t, "back\n", string(res.Stdout))
}

// The jail prepared first serves first: none waits for ever under a steady
// load.
func TestPreparedOldestFirst(t *testing.T) {
	r := preparedRunner(t, 2, PreparedTemplate{})
	pids := initStagesOf(t, r)
	require.Len(t, pids, 2)
	runIn(t, r, &Spec{Program: []byte("pass"), Limits: DefaultLimits()})
	assert.False(t, unreaped(pids[0]), "the older jail was not the one used")
	assert.True(t, unreaped(pids[1]))
}

// KeepPrepared again replaces the pool: the old one's waiting jails end.
func TestKeepPreparedReplacesThePool(t *testing.T) {
	r := preparedRunner(t, 2, PreparedTemplate{})
	old := initStagesOf(t, r)
	require.Len(t, old, 2)
	r.KeepPrepared(1, PreparedTemplate{})
	for _, pid := range old {
		assert.False(t, unreaped(pid), "a jail of the replaced pool still waits")
	}
	waitPrepared(t, r, 1)
	r.KeepPrepared(0, PreparedTemplate{})
	ready, _ := r.PreparedStats()
	assert.Zero(t, ready)
}

// Close waits for a run in a prepared jail to end.
func TestPreparedCloseWaitsForRuns(t *testing.T) {
	r := freshRunner(t)
	r.KeepPrepared(1, PreparedTemplate{})
	waitPrepared(t, r, 1)
	pid := initStagesOf(t, r)[0]
	done := make(chan *Result, 1)
	go func() {
		res, _ := r.Run(context.Background(), &Spec{Program: []byte("import time; time.sleep(0.5); print('done')"), Limits: DefaultLimits()})
		done <- res
	}()
	// Taken: the replacement starts only when the run has ended.
	require.Eventually(t, func() bool { ready, _ := r.PreparedStats(); return ready == 0 }, 5*time.Second, time.Millisecond)
	t0 := time.Now()
	r.Close()
	assert.Greater(t, time.Since(t0), 300*time.Millisecond, "Close returned before the run in its prepared jail ended")
	assert.False(t, unreaped(pid), "Close returned before the jail was waited for")
	res := <-done
	require.NotNil(t, res)
	assert.Equal(t, "done\n", string(res.Stdout), "the run was not cut short")
	assert.True(t, res.Prepared)
}

// The uid of a prepared run is free when its answer comes.
func TestPreparedUIDFreedBeforeAnswer(t *testing.T) {
	r := preparedRunner(t, 1, PreparedTemplate{})
	res := runIn(t, r, &Spec{Program: []byte("pass"), Limits: DefaultLimits()})
	require.True(t, res.Prepared)
	assert.False(t, uidUsed(r, res.HostUID))
}

// A waiting prepared jail (it may wait as long as the daemon runs) is the
// jail's user with the three namespace capabilities of its set-up and no
// other, no inheritable or ambient one, and no supplementary group (the
// test process has one: TestMain).
func TestPreparedJailHoldsOnlyItsCapabilities(t *testing.T) {
	r := preparedRunner(t, 1, PreparedTemplate{})
	pids, uids := initStagesOf(t, r), readyUIDs(r)
	require.Len(t, pids, 1)
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pids[0]))
	require.NoError(t, err)
	st := string(b)
	const setup = "0000000000201100" // CAP_SYS_ADMIN, CAP_NET_ADMIN, CAP_SETPCAP
	assert.Regexp(t, "(?m)^CapPrm:\t"+setup+"$", st)
	assert.Regexp(t, "(?m)^CapEff:\t"+setup+"$", st)
	assert.Regexp(t, "(?m)^CapInh:\t0{16}$", st)
	assert.Regexp(t, "(?m)^CapAmb:\t0{16}$", st)
	id := fmt.Sprint(uids[0])
	assert.Regexp(t, fmt.Sprintf("(?m)^Uid:\t%s\t%s\t%s\t%s$", id, id, id, id), st)
	assert.Regexp(t, fmt.Sprintf("(?m)^Gid:\t%s\t%s\t%s\t%s$", id, id, id, id), st)
	assert.Regexp(t, "(?m)^Groups:[ \t]*$", st)
	// The init stage is C (init_linux.c): no Go runtime, so one thread.
	assert.Regexp(t, "(?m)^Threads:\t1$", st)
	// fd 3 is held for the report channel, so that nothing the init
	// stage opens itself can take the number apply dups onto.
	l, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/%d", pids[0], reportFd))
	assert.NoError(t, err)
	assert.Equal(t, os.DevNull, l, "fd %d of a waiting jail", reportFd)
}

// readyUIDs are the host uids of the runner's waiting jails.
func readyUIDs(r *Runner) []uint32 {
	var uids []uint32
	for _, pj := range readyJails(r) {
		uids = append(uids, pj.j.uid)
	}
	return uids
}

// aheadGroups are the names of the cgroups made ahead for the runner's
// waiting jails: one each on cgroup v1 (cgroupAhead), none on v2.
func aheadGroups(t *testing.T, r *Runner) []string {
	t.Helper()
	var names []string
	for _, pj := range readyJails(r) {
		if pj.j.cg != nil {
			names = append(names, pj.j.cg.Name())
			require.NotEmpty(t, systest.CgroupDirs(pj.j.cg.Name()))
		}
	}
	if r.Cgroups.Version() == cgroup.V1 {
		require.Len(t, names, len(readyJails(r)), "a group made ahead for every waiting jail")
	}
	return names
}

// readyJails are the runner's waiting jails, oldest first.
func readyJails(r *Runner) []*preparedJail {
	p := poolOf(r)
	if p == nil {
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.ready)
}

// poolOf is the Runner's pool of the unnamed template, the one these
// tests keep.
func poolOf(r *Runner) *preparedPool {
	r.poolMu.Lock()
	defer r.poolMu.Unlock()
	return r.pools[""]
}

// freshRunner is a Runner of its own (no prepared jails yet) that shares
// the test Runner's cgroups, uid range, binary and root directory.
// quietFdCount is this process's fd count once the shared runner's own
// prepared jails (not in cold mode) are all there and its earlier runs'
// mount namespaces released: otherwise their fds would come and go
// during a test that counts its own.
func quietFdCount(t *testing.T) int {
	base := testRunner(t)
	if p := poolOf(base); p != nil {
		waitPrepared(t, base, p.want)
	}
	base.teardowns.Wait()
	return systest.FdCount()
}

func freshRunner(t *testing.T) *Runner {
	base := testRunner(t)
	return &Runner{Cgroups: base.Cgroups, UIDs: base.UIDs, Exe: base.Exe, ExeFile: base.ExeFile, ZygoteLoop: base.ZygoteLoop,
		RootDir: base.RootDir}
}

func uidUsed(r *Runner, uid uint32) bool {
	r.UIDs.mu.Lock()
	defer r.UIDs.mu.Unlock()
	return r.UIDs.used[uid]
}

// A panic in a prepared run (here once python3 runs) still kills, waits
// for and removes the jail, and frees its goroutine: the pool refills and
// Close returns. Before, the locked goroutine waited for ever.
func TestPreparedRunPanicEndsTheJail(t *testing.T) {
	// Not preparedRunner: its clean-up would Close, which is what hangs
	// when this test fails.
	r := freshRunner(t)
	fds := quietFdCount(t)
	r.KeepPrepared(1, PreparedTemplate{})
	waitPrepared(t, r, 1)
	pids, uids := initStagesOf(t, r), readyUIDs(r)
	require.Len(t, pids, 1)
	afterExecHook = func() { panic("injected") }
	t.Cleanup(func() { afterExecHook = nil })
	id := NewID()
	t.Cleanup(func() { _ = r.Cgroups.Remove(id) }) // only if this test failed
	func() {
		defer func() { assert.Equal(t, "injected", recover()) }()
		_, _ = r.Run(t.Context(), &Spec{ID: id, Program: []byte("import time; time.sleep(30)"), Limits: DefaultLimits()})
	}()
	afterExecHook = nil
	assert.False(t, unreaped(pids[0]), "the jail outlived the panic (or was not waited for)")
	assert.False(t, uidUsed(r, uids[0]), "the jail's uid outlived the panic")
	for _, d := range systest.CgroupDirs(id) {
		assert.NoDirExists(t, d)
	}
	waitPrepared(t, r, 1)
	closed := make(chan struct{})
	go func() { r.Close(); close(closed) }()
	select {
	case <-closed:
	case <-time.After(5 * time.Second):
		t.Fatal("Close hangs: the panicked jail's goroutine never ended")
	}
	assert.Equal(t, fds, systest.FdCount(), "fds left open by the panicked run")
}

// Failed starts back off from minRetry, doubling to maxRetry, and are
// heard once per streak; a success ends the streak.
func TestPreparedBackoff(t *testing.T) {
	heard := 0
	p := &preparedPool{starting: 20, onError: func(error) { heard++ }}
	fail := func() time.Duration {
		p.started(nil, nil, errors.New("boom"))
		p.mu.Lock()
		defer p.mu.Unlock()
		p.retry.Stop() // its fill would start jails
		p.retry = nil
		return p.backoff
	}
	var got []time.Duration
	for range 8 {
		got = append(got, fail())
	}
	s := time.Second
	assert.Equal(t, []time.Duration{s, 2 * s, 4 * s, 8 * s, 16 * s, 32 * s, time.Minute, time.Minute}, got)
	assert.Equal(t, 1, heard, "one streak, heard once")
	require.True(t, p.started(nil, &preparedJail{}, nil))
	assert.Zero(t, p.backoff)
	assert.Equal(t, s, fail(), "a new streak starts again from the bottom")
	assert.Equal(t, 2, heard)
}

// A warm run's replacement is built after the run when requests come
// apart, and at once under a stream of requests (another run in progress,
// or the last one ended within streamGap) or when no other jail is ready
// or starting: takeWarm's fillNow.
func TestTakeWarmFillsNowOnlyUnderAStream(t *testing.T) {
	p := &preparedPool{}
	add := func(n int) {
		for range n {
			p.ready = append(p.ready, &preparedJail{ended: make(chan bool, 1)})
		}
	}
	take := func() (*preparedJail, bool) {
		pj, now := p.takeWarm()
		require.NotNil(t, pj)
		return pj, now
	}
	end := func(pj *preparedJail) {
		pj.ended <- true
		require.True(t, p.await(pj))
	}
	add(3)
	a, now := take()
	assert.False(t, now, "the pool's first run, others ready: after the run")
	b, now := take()
	assert.True(t, now, "another run in progress: a stream")
	end(a)
	end(b)
	add(1)
	c, now := take()
	assert.True(t, now, "another ready, but the last run ended just now: a stream")
	end(c)
	add(1)
	p.lastEnd = time.Now().Add(-10 * streamGap)
	d, now := take()
	assert.False(t, now, "apart, another ready: after the run")
	end(d)
	p.lastEnd = time.Now().Add(-10 * streamGap)
	_, now = take()
	assert.True(t, now, "apart, but none ready or starting: at once")
	pj, now := p.takeWarm()
	assert.Nil(t, pj, "empty")
	assert.False(t, now)

	// A session's lease (take) is not a run: it never makes a stream.
	q := &preparedPool{}
	for range 3 {
		q.ready = append(q.ready, &preparedJail{ended: make(chan bool, 1)})
	}
	require.NotNil(t, q.take())
	q.lastEnd = time.Now().Add(-10 * streamGap)
	_, now = q.takeWarm()
	assert.False(t, now, "a session holds a jail: the next run still comes apart")
}

// A prepared jail whose msgReady is not read in time is not retried cold:
// on cgroup v1 msgGo is queued before msgReady is read, so its program
// may have run already (a request must never run twice).
func TestPreparedDeadlineIsNoRetry(t *testing.T) {
	r := preparedRunner(t, 1, PreparedTemplate{})
	afterGoHook = func(j *jail) {
		afterGoHook = nil                  // this run only: a cold retry would answer
		time.Sleep(100 * time.Millisecond) // on v1 the init stage takes msgGo and execs meanwhile
		_ = j.sync.SetDeadline(time.Unix(1, 0))
	}
	t.Cleanup(func() { afterGoHook = nil })
	res, err := r.Run(t.Context(), &Spec{Program: []byte("print('ran')"), Limits: DefaultLimits()})
	require.Error(t, err, "a result (a retry): %+v", res)
	assert.Nil(t, res)
	assert.NotErrorIs(t, err, errNotDelivered)
}

// On cgroup v1 a request with the template's limits runs in the group made
// ahead for its jail, renamed to the request's ID (the same directory, not
// a new one); v2 makes none ahead (it cannot rename one) and the request's
// group is made during its run.
func TestPreparedGroupMadeAheadServesTheRequest(t *testing.T) {
	r := preparedRunner(t, 1, PreparedTemplate{})
	ahead := aheadGroups(t, r)
	v1 := r.Cgroups.Version() == cgroup.V1
	if !v1 {
		assert.Empty(t, ahead, "a group made ahead on v2")
	}
	memDir := func(name string) string { // v1: the memory hierarchy's; v2: the one
		for _, d := range systest.CgroupDirs(name) {
			if !v1 || strings.Contains(d, "/memory/") {
				return d
			}
		}
		return ""
	}
	var before unix.Stat_t
	if v1 {
		require.NoError(t, unix.Stat(memDir(ahead[0]), &before))
	}
	id := NewID()
	done := make(chan *Result, 1)
	go func() {
		res, _ := r.Run(context.Background(), &Spec{ID: id, Program: []byte(`import os, time
open("/tmp/up", "w").close()
while os.path.exists("/tmp/up"): time.sleep(0.005)`), Limits: DefaultLimits()})
		done <- res
	}()
	var pid int
	require.Eventually(t, func() bool {
		pid = jailProgram(id)
		_, err := os.Stat(fmt.Sprintf("/proc/%d/root/tmp/up", pid))
		return pid != 0 && err == nil
	}, 5*time.Second, 5*time.Millisecond)
	var during unix.Stat_t
	err := unix.Stat(memDir(id), &during)
	_ = os.Remove(fmt.Sprintf("/proc/%d/root/tmp/up", pid))
	res := <-done
	require.NoError(t, err, "the request's group")
	if v1 {
		assert.Equal(t, before.Ino, during.Ino, "the request's group is the one made ahead")
	}
	require.NotNil(t, res)
	assert.True(t, res.Prepared)
	assert.Equal(t, StatusOK, res.Status)
}
