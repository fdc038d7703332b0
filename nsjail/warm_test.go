package nsjail

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"golang.org/x/sys/unix"

	"agentjail/internal/systest"
	"agentjail/seccomp"
)

// warmRunner is a Runner of its own with a zygote of the default runtime
// (no entry: a run's program file runs as __main__), up and with its runs
// forked ahead. Its jails attach their /etc, as the daemon's do.
func warmRunner(t *testing.T, s ZygoteSpec) *Runner {
	t.Helper()
	r := freshRunner(t)
	r.ShareEtc = true
	r.Log = slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))
	r.KeepWarm(s)
	t.Cleanup(r.Close)
	require.Eventually(t, func() bool {
		up, ahead, _, _ := r.WarmStats()
		return up == 1 && ahead >= s.Ahead
	}, 30*time.Second, 10*time.Millisecond, "the zygote and its runs ahead")
	return r
}

func TestWarmRunBasics(t *testing.T) {
	r := warmRunner(t, ZygoteSpec{Name: "default", Ahead: 1})
	for i := range 3 {
		res, err := r.Run(context.Background(), &Spec{Program: []byte(`import os, sys
print(os.getpid(), os.getppid(), os.getuid(), sorted(int(p) for p in os.listdir("/proc") if p.isdigit()), sys.argv)
print(open("/proc/self/uid_map").read().split())
`), Limits: DefaultLimits(), Start: StartWarm})
		require.NoError(t, err, "run %d", i)
		t.Logf("run %d: %s %s %v %v", i, res.Stdout, res.Stderr, res.WallTime, res.CPUTime)
		assert.Equal(t, StatusOK, res.Status, string(res.Stderr))
		assert.Equal(t, StartWarm, res.Start)
	}
}

// testWriter writes a Runner's log into the test's.
type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) { w.t.Log(string(p)); return len(p), nil }

// A rough look at what a warm run costs beside a cold one (scripts/bench
// measures it properly).
func TestWarmCostLog(t *testing.T) {
	r := warmRunner(t, ZygoteSpec{Name: "default", Ahead: 1})
	for _, start := range []StartMode{StartCold, StartWarm, StartCold, StartWarm} {
		var wall, cpu time.Duration
		t0 := time.Now()
		for range 20 {
			res, err := r.Run(context.Background(), &Spec{Program: []byte("pass"), Limits: DefaultLimits(), Start: start})
			require.NoError(t, err)
			require.Equal(t, StatusOK, res.Status, string(res.Stderr))
			wall += res.WallTime
			cpu += res.CPUTime
		}
		t.Logf("%s: %v per run, wall %v, cpu %v", start, time.Since(t0)/20, wall/20, cpu/20)
	}
}

// currentZygote is environment name's zygote now (nil while none is up).
func currentZygote(r *Runner, name string) *zygote {
	r.poolMu.Lock()
	w := r.warm[name]
	r.poolMu.Unlock()
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.cur
}

// zygoteProcesses are the pids of a zygote's jail: its init and what runs
// under it (the zygote, and the runs it forked, in nested namespaces).
func zygoteProcesses(z *zygote) []int {
	pids := []int{z.j.proc.Pid}
	for i := 0; i < len(pids); i++ {
		pids = append(pids, systest.Children(pids[i])...)
	}
	return pids
}

// awaitEnded waits up to 10 s until none of procs runs.
func awaitEnded(t *testing.T, procs []int, what string) {
	t.Helper()
	require.Eventually(t, func() bool {
		return !slices.ContainsFunc(procs, systest.Running)
	}, 10*time.Second, 10*time.Millisecond, what)
}

func warmPass(t *testing.T, r *Runner) *Result {
	t.Helper()
	res, err := r.Run(context.Background(), &Spec{Program: []byte("print('ok')"), Limits: DefaultLimits(), Start: StartWarm})
	require.NoError(t, err)
	require.Equal(t, StatusOK, res.Status, string(res.Stderr))
	require.Equal(t, "ok\n", string(res.Stdout))
	return res
}

// A zygote killed from outside is replaced; its environment's warm
// requests run cold meanwhile (counted), and nothing of it is left: no
// process, no cgroup, no uid.
func TestZygoteKilledIsReplaced(t *testing.T) {
	r := warmRunner(t, ZygoteSpec{Name: "default", Ahead: 2})
	assert.Equal(t, StartWarm, warmPass(t, r).Start)
	z := currentZygote(r, "default")
	require.NotNil(t, z)
	procs := zygoteProcesses(z)
	require.GreaterOrEqual(t, len(procs), 3, "its init, the zygote, the runs' inits built ahead: %v", procs)
	group, uid := z.j.cg.Name(), z.j.uid
	require.NoError(t, syscall.Kill(zygoteOf(t, r, "default").py, syscall.SIGKILL)) // the zygote itself (below its jail's init and pid 2)
	<-z.done

	// Until its replacement is up (after a back-off of a second), warm
	// requests run cold.
	res := warmPass(t, r)
	assert.Equal(t, StartCold, res.Start)
	_, _, restarts, fallbacks := r.WarmStats()
	assert.Equal(t, int64(1), restarts)
	assert.GreaterOrEqual(t, fallbacks, int64(1))
	for _, p := range procs {
		assert.False(t, systest.Running(p), "process %d of the dead zygote's jail", p)
	}
	assert.Empty(t, systest.CgroupDirs(group), "the dead zygote's cgroup")
	assert.False(t, uidUsed(r, uid), "the dead zygote's uid is free")

	require.Eventually(t, func() bool { up, ahead, _, _ := r.WarmStats(); return up == 1 && ahead == 2 }, 10*time.Second, 10*time.Millisecond)
	assert.Equal(t, StartWarm, warmPass(t, r).Start)
}

// A zygote that cannot start (no such python): warm requests run cold,
// and it is tried again later.
func TestWarmFallsBackToCold(t *testing.T) {
	r := freshRunner(t)
	events := make(chan string, 16)
	r.KeepWarm(ZygoteSpec{Name: "broken", Python: "/usr/bin/no-such-python3", OnEvent: func(e string, err error) { events <- e }})
	t.Cleanup(r.Close)
	assert.Equal(t, "failed", <-events)
	res, err := r.Run(context.Background(), &Spec{Program: []byte("print('ok')"), Limits: DefaultLimits(), Start: StartWarm})
	require.NoError(t, err)
	assert.Equal(t, StartCold, res.Start)
	assert.Equal(t, "ok\n", string(res.Stdout))
}

// After MaxForks runs a zygote is retired and replaced by a fresh one
// (new address-space layout, new hash seed): the old one serves on until
// the new one is up, so that no run starts cold, then ends once its last
// run has.
func TestZygoteRetiredAfterMaxForks(t *testing.T) {
	r := warmRunner(t, ZygoteSpec{Name: "default", Ahead: 1, MaxForks: 3})
	first := currentZygote(r, "default")
	require.NotNil(t, first)
	procs := zygoteProcesses(first)
	// The retired zygote serves on until its replacement is up: every run
	// is warm, and the runs go on until one came from the replacement.
	seeds := map[string]bool{}
	deadline := time.Now().Add(30 * time.Second)
	for runs := 0; len(seeds) < 2 || runs < 8; runs++ {
		require.True(t, time.Now().Before(deadline), "no run from a second zygote in 30 s")
		res, err := r.Run(context.Background(), &Spec{Program: []byte(`print(hash("agentjail"))`), Limits: DefaultLimits(), Start: StartWarm})
		require.NoError(t, err)
		require.Equal(t, StatusOK, res.Status, string(res.Stderr))
		require.Equal(t, StartWarm, res.Start, "run %d: a retired zygote serves until its replacement is up", runs)
		seeds[string(res.Stdout)] = true
	}
	_, _, restarts, fallbacks := r.WarmStats()
	assert.GreaterOrEqual(t, restarts, int64(1), "retired at least once")
	assert.Zero(t, fallbacks)
	awaitEnded(t, procs, "the retired zygote ended")
}

// Close ends every zygote and every run forked ahead, and leaves no
// process, cgroup or mount.
func TestWarmCloseLeavesNothing(t *testing.T) {
	mounts := systest.MountCount()
	r := freshRunner(t)
	r.KeepWarm(ZygoteSpec{Name: "default", Ahead: 2})
	require.Eventually(t, func() bool { up, ahead, _, _ := r.WarmStats(); return up == 1 && ahead == 2 }, 30*time.Second, 10*time.Millisecond)
	warmPass(t, r)
	z := currentZygote(r, "default")
	procs := zygoteProcesses(z)
	var groups []string
	r.poolMu.Lock()
	w := r.warm["default"]
	r.poolMu.Unlock()
	w.pool.mu.Lock()
	for _, pj := range w.pool.ready {
		if pj.j.cg != nil {
			groups = append(groups, pj.j.cg.Name())
		}
	}
	w.pool.mu.Unlock()
	groups = append(groups, z.j.cg.Name())
	r.Close()
	for _, p := range procs {
		assert.False(t, systest.Running(p), "process %d", p)
	}
	for _, g := range groups {
		assert.Empty(t, systest.CgroupDirs(g), "cgroup %s", g)
	}
	assert.Equal(t, mounts, systest.MountCount())
	up, ahead, _, _ := r.WarmStats()
	assert.Equal(t, [2]int{0, 0}, [2]int{up, ahead})
}

// KeepWarm of a name already kept (the daemon does it once matplotlib's
// font cache is built, with a new /etc) replaces its zygote without a
// cold run: the old one serves the requests of either /etc until the new
// one is up, then ends once its last run has; the new one serves both
// from then on (a request made before the switch names the old /etc).
func TestKeepWarmReplacesWithoutColdRuns(t *testing.T) {
	etc1, err := HostEtc(nil)
	require.NoError(t, err)
	etc2, err := HostEtc(nil)
	require.NoError(t, err)
	require.NotSame(t, etc1, etc2)
	r := warmRunner(t, ZygoteSpec{Name: "default", Ahead: 1, Etc: etc1})
	first := currentZygote(r, "default")
	require.NotNil(t, first)
	procs := zygoteProcesses(first)
	r.KeepWarm(ZygoteSpec{Name: "default", Ahead: 1, Etc: etc2})
	replaced := false
	deadline := time.Now().Add(30 * time.Second)
	for runs := 0; !replaced || runs < 6; runs++ {
		require.True(t, time.Now().Before(deadline), "the new zygote not up in 30 s")
		replaced = currentZygote(r, "default") != nil
		etc := []*Etc{etc1, etc2}[runs%2]
		res, err := r.Run(context.Background(), &Spec{Program: []byte("print('ok')"), Limits: DefaultLimits(), Start: StartWarm, Etc: etc})
		require.NoError(t, err)
		require.Equal(t, StatusOK, res.Status, string(res.Stderr))
		require.Equal(t, StartWarm, res.Start, "run %d (replacement up: %v): the old zygote serves until the new one is up", runs, replaced)
	}
	assert.NotSame(t, first, currentZygote(r, "default"))
	awaitEnded(t, procs, "the replaced zygote ended")
	_, _, _, fallbacks := r.WarmStats()
	assert.Zero(t, fallbacks)
}

// A KeepWarm whose runs are not the old runtime's (other read-only mounts)
// never lets the old zygote serve them: a request with the new mounts runs
// cold, or warm from the new zygote, and sees its mount either way.
func TestKeepWarmWithOtherMountsDoesNotServeFromTheOld(t *testing.T) {
	d, err := os.MkdirTemp("/var/lib", "agentjail-test-")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(d) })
	require.NoError(t, os.Chmod(d, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(d, "marker"), []byte("here"), 0o644))
	r := warmRunner(t, ZygoteSpec{Name: "default", Ahead: 1})
	r.KeepWarm(ZygoteSpec{Name: "default", Ahead: 1, ReadOnlyMounts: []string{d}})
	for i := range 4 {
		res, err := r.Run(context.Background(), &Spec{Program: []byte(`print(open("` + d + `/marker").read())`),
			ReadOnlyMounts: []string{d}, Limits: DefaultLimits(), Start: StartWarm})
		require.NoError(t, err)
		require.Equal(t, StatusOK, res.Status, "run %d (%s): %s", i, res.Start, res.Stderr)
		assert.Equal(t, "here\n", string(res.Stdout), "run %d (%s)", i, res.Start)
	}
}

// The run's init is under the program's filter (without its listener),
// and the shared /etc is read-only as a file system, not only as a
// mount: nothing that could remount a jail's copy could write it, or
// update a shared access time (the review of the warm-run redesign).
func TestWarmInitFilteredAndEtcReadOnly(t *testing.T) {
	r := warmRunner(t, ZygoteSpec{Name: "default", Ahead: 1})
	// A warm run's init takes its go (and with it its filter) while the
	// zygote forks the program: the two race, and the program may look
	// before the init has finished. Its filter is a second wall (init is
	// not dumpable, shares no fd with the program): what must hold is
	// that it comes, so the program looks until it has, for at most 5 s.
	res, err := r.Run(context.Background(), &Spec{Program: []byte(`
import time
for _ in range(500):
    st = open("/proc/1/status").read()
    if "\nSeccomp:\t2\n" in st: break
    time.sleep(0.01)
for l in st.splitlines(True):
    if l.startswith(("Seccomp:", "NoNewPrivs:", "CapEff:", "CapBnd:")): print("init", l.split()[0], l.split()[1])
for l in open("/proc/self/mountinfo"):
    f = l.split()
    if f[4] == "/etc": print("etc", f[5], l.split(" - ")[1].split()[2])
`), Limits: DefaultLimits(), Start: StartWarm})
	require.NoError(t, err)
	require.Equal(t, StatusOK, res.Status, string(res.Stderr))
	require.Equal(t, StartWarm, res.Start)
	out := string(res.Stdout)
	assert.Contains(t, out, "init Seccomp: 2\n", "the run's init is filtered")
	assert.Contains(t, out, "init NoNewPrivs: 1\n")
	assert.Contains(t, out, "init CapEff: 0000000000000000\n")
	assert.Contains(t, out, "init CapBnd: 0000000000000000\n")
	if etcTreesInUse(r) {
		assert.Regexp(t, `(?m)^etc ro,\S* ro(,|$)`, out, "the mount and its file system are read-only")
	} else {
		t.Log("no shared /etc tree on this kernel: the jail wrote its own (TestJailsWriteTheirOwnEtcWithoutTheTree)")
	}
}

// Where the shared /etc tree cannot be made (a kernel older than about
// 6.15 refuses to copy a mount that is in no mount table), each jail
// writes its own, warm and cold, with the same content.
func TestJailsWriteTheirOwnEtcWithoutTheTree(t *testing.T) {
	made := makeEtcTree
	makeEtcTree = func(*Etc) (*os.File, error) { return nil, errors.New("this test makes no tree") }
	t.Cleanup(func() { makeEtcTree = made })
	r := warmRunner(t, ZygoteSpec{Name: "default", Ahead: 1})
	for _, start := range []StartMode{StartWarm, StartCold} {
		res, err := r.Run(context.Background(), &Spec{Program: []byte(`import errno, os, pwd
print(pwd.getpwuid(os.getuid()).pw_name, os.path.exists("/etc/passwd"))
try:
    open("/etc/passwd", "a")
except OSError as e:
    print(errno.errorcode[e.errno])
`), Limits: DefaultLimits(), Start: start})
		require.NoError(t, err, start)
		require.Equal(t, StatusOK, res.Status, "%s: %s", start, res.Stderr)
		assert.Equal(t, start, res.Start)
		assert.Regexp(t, `^\S+ True\n(EROFS|EACCES)\n$`, string(res.Stdout), start)
	}
	assert.NotEmpty(t, r.etcTrees)
	assert.False(t, etcTreesInUse(r))
}

// etcTreesInUse tells whether r's jails attach a shared /etc tree: there
// is one, and no Etc went without.
func etcTreesInUse(r *Runner) bool {
	r.etcMu.Lock()
	defer r.etcMu.Unlock()
	for _, t := range r.etcTrees {
		if t == nil {
			return false
		}
	}
	return len(r.etcTrees) > 0
}

// A program forked ahead holds, while it waits for its request, nothing of
// the zygote's: no output pipe, no control socket, no other run's socket,
// no wake-up pipe, no namespace; fds 0 to 3 are /dev/null until its stdio
// comes.
func TestWarmProgramAheadHoldsNothingOfTheZygote(t *testing.T) {
	r := warmRunner(t, ZygoteSpec{Name: "default", Ahead: 3})
	for _, pj := range warmReady(t, r) {
		pid := warmOf(pj.j).progPid
		require.NotZero(t, pid)
		ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
		require.NoError(t, err)
		fds := map[string]string{}
		sockets := 0
		for _, e := range ents {
			l, _ := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", pid, e.Name()))
			fds[e.Name()] = l
			if strings.HasPrefix(l, "socket:") {
				sockets++
			}
		}
		require.Len(t, fds, 5, "stdio, /dev/null, its own socket: %v", fds)
		for _, fd := range []string{"0", "1", "2", "3"} {
			assert.Equal(t, "/dev/null", fds[fd], "fd %s: %v", fd, fds)
		}
		assert.Equal(t, 1, sockets, "its own socket, nothing of the zygote's or another run's: %v", fds)
	}
}

// warmReady are the runs of r's environment "default" that wait for a
// request, their programs forked.
func warmReady(t *testing.T, r *Runner) []*preparedJail {
	t.Helper()
	r.poolMu.Lock()
	w := r.warm["default"]
	r.poolMu.Unlock()
	w.pool.mu.Lock()
	ready := slices.Clone(w.pool.ready)
	w.pool.mu.Unlock()
	require.NotEmpty(t, ready)
	return ready
}

// A program forked ahead has emptied its capability bounding set before
// it says it is ready: joining a user namespace fills the set again, so a
// setns or unshare of one added later on that path would undo the drop
// silently (the program's other capabilities go at its go).
func TestWarmProgramAheadHasNoBoundingSet(t *testing.T) {
	r := warmRunner(t, ZygoteSpec{Name: "default", Ahead: 2})
	for _, pj := range warmReady(t, r) {
		assert.Equal(t, "0000000000000000", procStatus(t, warmOf(pj.j).progPid)["CapBnd"])
	}
}

// The shared /etc tree holds what a jail that writes its own /etc holds:
// the same entries, modes, link targets and contents, whatever the
// daemon's umask was when it made the tree (it narrows its own while it
// binds its socket; a jail reads /etc as "others").
func TestEtcTreeIsTheWrittenEtc(t *testing.T) {
	listing := func(r *Runner) string {
		t.Helper()
		res := runIn(t, r, &Spec{Program: []byte(`import hashlib, os, stat
for d, dirs, files in os.walk("/etc"):
    dirs.sort()
    for n in sorted(dirs + files):
        p = os.path.join(d, n)
        st = os.lstat(p)
        if stat.S_ISLNK(st.st_mode):
            what = os.readlink(p)
        elif stat.S_ISREG(st.st_mode):
            what = hashlib.sha256(open(p, "rb").read()).hexdigest()[:16]
        else:
            what = ""
        print(p, oct(st.st_mode), what)
`), Limits: DefaultLimits(), Etc: testEtc(), Start: StartCold})
		require.Equal(t, StatusOK, res.Status, string(res.Stderr))
		return string(res.Stdout)
	}
	shared := freshRunner(t)
	shared.ShareEtc = true
	t.Cleanup(shared.Close)
	old := unix.Umask(0o077)
	tree := shared.etcTree(testEtc())
	unix.Umask(old)
	if tree == nil {
		t.Log("no shared tree on this kernel: both jails write their own /etc")
	}
	written := freshRunner(t)
	t.Cleanup(written.Close)
	want := listing(written)
	assert.Contains(t, want, "/etc/passwd 0o100444 ")
	assert.Equal(t, want, listing(shared))
}

// The zygote holds, in its own user namespace (and so in its runs'), only
// the capabilities forking a run needs: CAP_SETUID and CAP_SETGID (the
// run's uid), CAP_SYS_ADMIN (setns into the run's namespaces); its filter
// keeps it from mounting (seccomp's TestZygotePolicyOpensOnlyWhatForkingARunNeeds).
func TestZygoteHoldsOnlyWhatForkingNeeds(t *testing.T) {
	r := warmRunner(t, ZygoteSpec{Name: "default", Ahead: 1})
	got := procStatus(t, zygoteOf(t, r, "default").py)
	want := fmt.Sprintf("%016x", uint64(1<<unix.CAP_SETUID|1<<unix.CAP_SETGID|1<<unix.CAP_SYS_ADMIN))
	// Inheritable and ambient too: they carry the three across its exec.
	for _, k := range []string{"CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"} {
		assert.Equal(t, want, got[k], k)
	}
	assert.Equal(t, "2", got["Seccomp"], "the zygote is filtered")
}

// procStatus is /proc/PID/status, each field's value by its name.
func procStatus(t *testing.T, pid int) map[string]string {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	require.NoError(t, err)
	st := map[string]string{}
	for _, l := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(l, ":"); ok {
			st[k] = strings.TrimSpace(v)
		}
	}
	return st
}

// A run that comes apart from the others, with another run waiting,
// leaves its replacement to its end (takeWarm): while it runs, the pool
// has one run fewer and builds none; after it, the pool is full again.
// (The decision itself, under a stream too: TestTakeWarmFillsNowOnlyUnderAStream.)
func TestWarmRunApartIsReplacedAfterIt(t *testing.T) {
	r := warmRunner(t, ZygoteSpec{Name: "default", Ahead: 2})
	r.poolMu.Lock()
	p := r.warm["default"].pool
	r.poolMu.Unlock()
	count := func() (ready, starting int) {
		p.mu.Lock()
		defer p.mu.Unlock()
		return len(p.ready), p.starting
	}
	done := make(chan *Result, 1)
	go func() {
		res, err := r.Run(context.Background(), &Spec{Program: []byte("import time; time.sleep(0.5)"),
			Limits: DefaultLimits(), Start: StartWarm})
		assert.NoError(t, err)
		done <- res
	}()
	require.Eventually(t, func() bool { ready, _ := count(); return ready == 1 }, 5*time.Second, time.Millisecond)
	ready, starting := count()
	assert.Equal(t, [2]int{1, 0}, [2]int{ready, starting}, "during the run: nothing built beside it")
	res := <-done
	require.Equal(t, StatusOK, res.Status, string(res.Stderr))
	assert.True(t, res.Prepared, "the run was one made ahead")
	require.Eventually(t, func() bool { ready, _ := count(); return ready == 2 }, 30*time.Second, 10*time.Millisecond,
		"replaced after the run")
}

// A warm run's init is built with the filter of its adopting tail, not
// the program's (whose plan still carries the full one), unless the
// Runner has a filter of its own.
func TestWarmInitGetsTheAdoptFilter(t *testing.T) {
	_, w := defaultWarm(t, 1)
	plan := w.pool.build.plan
	assert.True(t, bytes.Contains(plan, seccomp.AdoptProgramBytes()), "the init's build plan carries the adopt filter")
	assert.False(t, bytes.Contains(plan, seccomp.DefaultProgramBytes()), "and not the program's")
	own := []byte("a Runner's own filter")
	assert.Equal(t, own, (&Runner{Seccomp: own}).warmInitFilter())
}

// defaultWarm is warmRunner's Runner and its one warm runtime, "default".
func defaultWarm(t *testing.T, ahead int) (*Runner, *warmRuntime) {
	t.Helper()
	r := warmRunner(t, ZygoteSpec{Name: "default", Ahead: ahead})
	r.poolMu.Lock()
	defer r.poolMu.Unlock()
	return r, r.warm["default"]
}

// testJail is a jail of r, not started, with a uid of its own. The test's
// clean-up removes it and frees the uid, before r's Close (registered
// earlier), which waits for every run of a zygote.
func testJail(t *testing.T, r *Runner) *jail {
	t.Helper()
	uid, err := r.UIDs.Acquire()
	require.NoError(t, err)
	j := newJail(r, uid)
	t.Cleanup(func() { _ = j.cleanup(); r.UIDs.Release(uid) })
	return j
}

// Each init takes only its own start's plan: a warm run's init (nested in
// a zygote's namespaces, under the adopt filter) refuses a plan that
// would exec a program, and a cold jail's init refuses one that would
// adopt a program forked into it. Both say why.
func TestInitRefusesTheOtherStartsPlan(t *testing.T) {
	r, w := defaultWarm(t, 1)
	spec := &Spec{ID: NewID(), Program: []byte("print('never')"), Limits: DefaultLimits()}
	cfg := requestConfigFor(spec, codeFiles(spec))
	null, err := os.Open(os.DevNull)
	require.NoError(t, err)
	defer null.Close()
	stdio := []int{int(null.Fd()), int(null.Fd()), int(null.Fd())}

	refuses := func(t *testing.T, j *jail, plan []byte, fds []int, why string) {
		require.NoError(t, awaitBuilt(j))
		require.NoError(t, j.send(msgRequest, plan, fds))
		err := j.expect(msgReady)
		var se *StageError
		require.ErrorAs(t, err, &se)
		assert.Equal(t, "decode request", se.Stage)
		assert.Contains(t, se.Msg, why)
	}

	t.Run("warm init, exec plan", func(t *testing.T) {
		j := testJail(t, r)
		runtime.LockOSThread()
		err := w.startRun(j, w.pool.build)
		runtime.UnlockOSThread()
		require.NoError(t, err)
		refuses(t, j, requestPlan(cfg, j.tmpBytes), stdio, "a warm run's init adopts its program, it does not exec one")
	})
	t.Run("cold init, adopt plan", func(t *testing.T) {
		// A cold jail dies with the thread that started it: locked until
		// it has been waited for (the clean-up, which runs first).
		runtime.LockOSThread()
		t.Cleanup(runtime.UnlockOSThread)
		j := testJail(t, r)
		require.NoError(t, j.flow.start(j, r.build(jailBase{}, DefaultLimits().TmpBytes)))
		refuses(t, j, adoptPlan(cfg, j.tmpBytes), nil, "only a warm run's init adopts its program")
	})
}
