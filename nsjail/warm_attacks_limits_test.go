package nsjail

// Adversarial tests of warm runs, continued: no privilege, the cgroup, the
// signal budget, files charged once, pids, shared memory.

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"agentjail/internal/systest"
)

// The zygote's filter opens setns, unshare and seccomp, and it holds
// CAP_SETUID, CAP_SETGID and CAP_SYS_ADMIN; none of that reaches a warm run:
// every namespace and mount call, setns into each of its own namespaces, an
// fd of its parent (the zygote's) user namespace, a nested filter,
// setuid(0) and raising a capability fail, its capability
// sets are empty, no_new_privs is set and it is filtered. The seccomp
// report names the calls the zygote's filter allows: the run's own filter
// (and listener) answered them.
func TestWarmAttackNoPrivilege(t *testing.T) {
	r := warmAttackRunner(t, ZygoteSpec{Ahead: 1})
	res, m := warmRun(t, r, warmSpec(`
st = {}
for l in open("/proc/self/status"):
    k, _, v = l.partition(":")
    if k in ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb", "NoNewPrivs", "Seccomp", "Seccomp_filters"):
        st[k] = v.strip()
R["status"] = st
flags = {"user": 0x10000000, "mnt": 0x20000, "net": 0x40000000, "pid": 0x20000000, "ipc": 0x08000000,
         "uts": 0x04000000, "cgroup": 0x02000000, "time": 0x80}
R["unshare"] = {k: sc(272, v) for k, v in flags.items()}
R["clone_newuser"] = sc(56, 0x10000000 | 17, 0, 0, 0, 0)
R["mount"] = sc(165, b"none", b"/tmp", b"tmpfs", 0, 0)
R["mount_bind"] = sc(165, b"/tmp", b"/workspace", 0, 4096, 0)
R["umount2"] = sc(166, b"/proc", 2)
R["pivot_root"] = sc(155, b"/tmp", b"/tmp")
R["chroot"] = sc(161, b"/tmp")
R["fsopen"] = sc(430, b"tmpfs", 0)
R["open_tree"] = sc(428, -100, b"/tmp", 1)
setns = {}
for n in sorted(os.listdir("/proc/self/ns")):
    fd = os.open("/proc/self/ns/" + n, os.O_RDONLY)
    setns[n] = sc(308, fd, 0)
    os.close(fd)
R["setns"] = setns
fcntl_ioctl = libc.ioctl
fd = os.open("/proc/self/ns/user", os.O_RDONLY)
r = fcntl_ioctl(fd, 0xb702, 0)  # NS_GET_PARENT: the zygote's user namespace
R["ns_get_parent"] = ename(ctypes.get_errno()) if r < 0 else "OK:%d" % r
os.close(fd)
allow = (ctypes.c_uint64 * 1)(0x7fff000000000006)  # BPF_RET|BPF_K SECCOMP_RET_ALLOW
class Fprog(ctypes.Structure): _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]
prog = Fprog(1, ctypes.addressof(allow))
R["seccomp_listener"] = sc(317, 1, 8, ctypes.byref(prog))
R["seccomp_plain"] = sc(317, 1, 0, ctypes.byref(prog))
R["prctl_seccomp"] = sc(157, 22, 2, ctypes.byref(prog), 0, 0)
R["setuid0"] = sc(105, 0)
R["setresuid"] = sc(117, 100000, 100000, 100000)
class Hdr(ctypes.Structure): _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]
data = (ctypes.c_uint32 * 6)(1 << 21, 1 << 21, 0, 0, 0, 0)
R["capset"] = sc(126, ctypes.byref(Hdr(0x20080522, 0)), ctypes.byref(data))
R["ambient"] = sc(157, 47, 2, 7, 0, 0)
done()
`, nil))
	assert.Equal(t, StatusOK, res.Status)
	st := m["status"].(map[string]any)
	for _, k := range []string{"CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"} {
		assert.Equal(t, "0000000000000000", st[k], k)
	}
	assert.Equal(t, "1", st["NoNewPrivs"])
	assert.Equal(t, "2", st["Seccomp"])
	assert.Equal(t, "2", st["Seccomp_filters"], "the zygote's filter and the run's own")
	for k, v := range m["unshare"].(map[string]any) {
		assert.Equal(t, "EPERM", v, "unshare(%s)", k)
	}
	for k, v := range m["setns"].(map[string]any) {
		assert.Equal(t, "EPERM", v, "setns into its own %s namespace", k)
	}
	assert.Equal(t, "EPERM", m["ns_get_parent"], "an fd of the zygote's user namespace")
	for _, k := range []string{"clone_newuser", "mount", "mount_bind", "umount2", "pivot_root", "chroot", "fsopen", "open_tree",
		"seccomp_listener", "seccomp_plain", "prctl_seccomp", "capset", "ambient"} {
		assert.Equal(t, "EPERM", m[k], k)
	}
	// uid 0 and the zygote's uids are not mapped in the run's namespace.
	assert.Contains(t, []string{"EINVAL", "EPERM"}, m["setuid0"])
	assert.Contains(t, []string{"EINVAL", "EPERM"}, m["setresuid"])
	calls := seccompCalls(res)
	for _, c := range []string{"unshare", "mount", "umount2", "pivot_root", "seccomp", "setns", "clone", "chroot"} {
		assert.Positive(t, calls[c], "%s was not reported by the run's own listener", c)
	}
}

// ---------------------------------------------------------------------------
// Cgroup.

// A warm run's processes (its program, a child, a double-forked setsid
// daemon) are all in the run's own cgroup, none in the zygote's; what the
// program allocates, and the zygote's pages it dirties (copy-on-write), are
// charged to the run's memory cgroup, not the zygote's; nothing of it is
// left once the run ends.
func TestWarmAttackStaysInItsCgroup(t *testing.T) {
	r := warmAttackRunner(t, ZygoteSpec{Ahead: 0})
	z := zygoteOf(t, r, "default")
	zmem, zpids := cgroupDir(t, r, z.py, "memory"), cgroupDir(t, r, z.py, "pids")
	before := memUsage(t, zmem)
	s := warmSpec(`import gc, signal, time
signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGUSR1])
gc.unfreeze(); gc.collect()
for m in list(sys.modules.values()):
    try: m.__dict__["_ajtouch"] = 1
    except Exception: pass
big = bytearray(64 << 20)
for i in range(0, len(big), 4096): big[i] = 1
if os.fork() == 0:
    setname("ajcg-kid"); time.sleep(60); os._exit(0)
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        setname("ajcg-daemon"); time.sleep(60)
    os._exit(0)
os.wait()
setname("ajcg-ready")
signal.sigwait([signal.SIGUSR1])
done()
`, nil)
	wait := startJail(t, r, s)
	ready := awaitNamed(t, "ajcg-ready")
	awaitNamed(t, "ajcg-kid")
	awaitNamed(t, "ajcg-daemon")
	procs := procsNamed("ajcg-")
	require.Len(t, procs, 3)
	var runMem string
	for pid, name := range procs {
		mem, pids := cgroupDir(t, r, pid, "memory"), cgroupDir(t, r, pid, "pids")
		assert.True(t, strings.HasSuffix(mem, "/"+s.ID), "%s (%d) is in memory cgroup %s, not the run's", name, pid, mem)
		assert.True(t, strings.HasSuffix(pids, "/"+s.ID), "%s (%d) is in pids cgroup %s, not the run's", name, pid, pids)
		assert.NotEqual(t, zmem, mem)
		assert.NotEqual(t, zpids, pids)
		runMem = mem
	}
	// Every task of the zygote's group is the zygote's jail: its pid 1
	// and the zygote (no run is forked ahead here).
	tasks, err := os.ReadFile(filepath.Join(zpids, "cgroup.procs"))
	require.NoError(t, err)
	assert.ElementsMatch(t, []string{strconv.Itoa(z.init), strconv.Itoa(z.waiter), strconv.Itoa(z.py)}, strings.Fields(string(tasks)))
	used, zgrew := memUsage(t, runMem), memUsage(t, zmem)-before
	t.Logf("run's memory cgroup: %d MiB; the zygote's grew by %d KiB", used>>20, zgrew>>10)
	assert.GreaterOrEqual(t, used, int64(64<<20), "the program's memory is charged to the run")
	assert.Less(t, zgrew, int64(16<<20), "the program's memory is charged to the zygote")
	require.NoError(t, syscall.Kill(ready, syscall.SIGUSR1))
	res := wait()
	assert.Equal(t, StatusOK, res.Status)
	assert.Equal(t, StartWarm, res.Start)
	assert.GreaterOrEqual(t, res.PeakMemoryBytes, int64(64<<20))
	systest.NoLeftovers(t, res.HostUID, s.ID, systest.MountCount())
	assert.Empty(t, procsNamed("ajcg-"))
}

// ---------------------------------------------------------------------------
// Holes found in review, each fixed, each test the proof.

// Every warm run has its own RLIMIT_SIGPENDING budget. The kernel counts
// queued signals per user namespace and user, up the chain of namespaces
// (ucounts): a warm run's (its namespace, uid 1000) -> (the zygote's
// namespace, the run's uid) -> (the host's, the ZYGOTE's uid), and the
// last level is bounded by the rlimit the zygote's bootstrap had when it
// made the zygote's namespace. Found: one warm run that queued
// RLIMIT_SIGPENDING real-time signals to itself made sigqueue and
// timer_create fail with EAGAIN in every other warm run of the
// environment (and gave two runs a covert channel). Fixed: the zygote's
// namespace is made with no bound where the daemon may raise it (and a
// jail's per-user rlimits, ids.go's userRlimits, small enough that many
// runs fit in the daemon's where it may not); each run's namespace is made
// with a jail's, its own budget, as a cold jail has.
func TestWarmRunsHaveTheirOwnSignalBudget(t *testing.T) {
	r := warmAttackRunner(t, ZygoteSpec{Ahead: 2})
	filler := `import signal, time
signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGRTMIN])
n, pid = 0, os.getpid()
while libc.sigqueue(pid, signal.SIGRTMIN, ctypes.c_void_p(0)) == 0:
    n += 1
R["queued"] = [n, ename(ctypes.get_errno())]
setname("ajsig-full")
time.sleep(60)
`
	probe := `import signal
signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGRTMIN])
R["sigqueue"] = "OK" if libc.sigqueue(os.getpid(), signal.SIGRTMIN, ctypes.c_void_p(0)) == 0 else ename(ctypes.get_errno())
tid = ctypes.c_void_p(0)
R["timer_create"] = "OK" if libc.timer_create(1, None, ctypes.byref(tid)) == 0 else ename(ctypes.get_errno())
done()
`
	for _, start := range []StartMode{StartCold, StartWarm} {
		t.Run(string(start), func(t *testing.T) {
			f := warmSpec(filler, nil)
			f.Start = start
			wait := startJail(t, r, f)
			awaitNamed(t, "ajsig-full")
			p := warmSpec(probe, nil)
			p.Start = start
			res := runIn(t, r, p)
			require.Equal(t, start, res.Start)
			m := warmReport(t, res)
			t.Logf("%s: the other run's sigqueue: %v, timer_create: %v", start, m["sigqueue"], m["timer_create"])
			assert.Equal(t, "OK", m["sigqueue"], "a concurrent %s run's queued signals took this run's budget", start)
			assert.Equal(t, "OK", m["timer_create"], "a concurrent %s run's queued signals took this run's budget", start)
			require.NoError(t, syscall.Kill(awaitNamed(t, "ajsig-full"), syscall.SIGKILL))
			wait()
		})
	}
}

// A warm run's request files are written by its init before it joins the
// run's cgroup (so that, as in a cold run, the program's peak does not
// count them), and so are charged to the zygote's memory cgroup until the
// run ends: once, not as the request's plan and its copies too (the init
// keeps no copy: the plan is one buffer, dropped once carried out). The
// daemon sizes the zygote's limit for it: jail.zygote_memory_bytes plus
// twice MaxFilesBytes for each run that may be set up at once (the plan and
// the files, while they are written), so that no run's files can fill the
// zygote's group (daemon.Config.ZygoteSpec). Measured before: 32 MiB of
// files added ~66 MiB.
func TestWarmRequestFilesChargedOnce(t *testing.T) {
	r := warmAttackRunner(t, ZygoteSpec{Ahead: 0})
	z := zygoteOf(t, r, "default")
	zmem := cgroupDir(t, r, z.py, "memory")
	before := memUsage(t, zmem)
	s := warmSpec(`import signal
signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGUSR1])
setname("ajfiles-ready")
signal.sigwait([signal.SIGUSR1])
R["size"] = os.path.getsize("/workspace/big")
done()
`, nil)
	s.Files = []File{{Path: "big", Content: []byte(strings.Repeat("x", 32<<20))}}
	wait := startJail(t, r, s)
	ready := awaitNamed(t, "ajfiles-ready")
	grew := memUsage(t, zmem) - before
	runMem := memUsage(t, cgroupDir(t, r, ready, "memory"))
	require.NoError(t, syscall.Kill(ready, syscall.SIGKILL))
	res := wait()
	t.Logf("32 MiB of files: the zygote's memory cgroup grew by %d MiB for the run; the run's own holds %d MiB", grew>>20, runMem>>20)
	assert.Equal(t, StartWarm, res.Start)
	assert.Less(t, grew, int64(32<<20+8<<20), "the run's files are charged to the zygote's memory cgroup once, not as their plan too")
}

// A warm run's program is pid 2 of its pid namespace; the zygote is not
// (it runs below its jail's pid 2, which waits for it). Found: both were
// pid 2, so a library that detects a fork by a change of os.getpid()
// never saw one and kept in every run the state the zygote made: tempfile
// gave every warm run the same temporary names, in the same order.
func TestWarmProgramPidIsNotTheZygotes(t *testing.T) {
	entry := File{Path: "agentjail_entry.py", Content: []byte(`import runpy, sys, tempfile
def zygote(): next(tempfile._get_candidate_names())  # as a library may at import
def main(): runpy.run_path(sys.argv[0], run_name="__main__")
`)}
	shared := []File{entry}
	r := warmAttackRunner(t, ZygoteSpec{Ahead: 2, Code: shared, Entry: entry.Path})
	var names []string
	for range 3 {
		_, m := warmRun(t, r, warmSpec(`import tempfile
R["pid"] = os.getpid()
R["names"] = [os.path.basename(tempfile.mktemp()) for _ in range(3)]
done()
`, shared))
		assert.Equal(t, float64(2), m["pid"])
		names = append(names, fmt.Sprint(m["names"]))
	}
	t.Logf("temporary names of three warm runs: %v", names)
	assert.NotEqual(t, names[0], names[1], "two warm runs made the same temporary names")
	assert.NotEqual(t, names[1], names[2], "two warm runs made the same temporary names")
}

// A shared writable mapping that the zygote's preloaded modules or entry
// made (mmap.mmap(-1, n) is MAP_SHARED; a library's shared-memory arena; a
// SysV segment it attached) would be inherited by every fork: run 1 writes,
// run 2 reads (measured so before the zygote refused it). The zygote
// refuses to serve, as for threads left by its imports, and says why;
// warm requests run cold.
func TestWarmZygoteRefusesSharedWritableMemory(t *testing.T) {
	err := zygoteFailure(t, `import mmap, runpy, sys
ARENA = mmap.mmap(-1, 4096)  # a library's shared arena, made at import
def main(): runpy.run_path(sys.argv[0], run_name="__main__")
`)
	assert.Contains(t, err.Error(), "left a writable shared mapping, which every run would share: /dev/zero (deleted)")
}

// A thread that the zygote's imports started would be missing in every
// fork (a fork copies only the forking thread): the zygote refuses to
// serve, whether the thread came through threading or through _thread
// alone (the zygote itself does not import threading).
func TestWarmZygoteRefusesThreads(t *testing.T) {
	for name, start := range map[string]string{
		"threading": "import threading\nthreading.Thread(target=time.sleep, args=(60,), daemon=True).start()",
		"_thread": `import _thread
started = _thread.allocate_lock()
started.acquire()
def run():
    started.release()
    time.sleep(60)
_thread.start_new_thread(run, ())
started.acquire()`,
		// Before it has run: _thread counts it only then, the kernel at once.
		"_thread, not yet running": "import _thread\n_thread.start_new_thread(time.sleep, (60,))",
		// A C library's thread that calls into python, and imports
		// threading before the zygote's thread does: threading then takes
		// it for the main thread.
		"C thread": `import ctypes, _thread
started = _thread.allocate_lock()
started.acquire()
@ctypes.CFUNCTYPE(ctypes.c_void_p, ctypes.c_void_p)
def body(_):
    import threading
    threading.current_thread()
    started.release()
    time.sleep(60)
tid = ctypes.c_ulong()
ctypes.CDLL(None).pthread_create(ctypes.byref(tid), None, body, None)
started.acquire()`,
	} {
		t.Run(name, func(t *testing.T) {
			err := zygoteFailure(t, "import runpy, sys, time\n"+start+`
def main(): runpy.run_path(sys.argv[0], run_name="__main__")
`)
			assert.Contains(t, err.Error(), "the preloaded modules started threads")
		})
	}
}

// zygoteFailure keeps warm a zygote whose entry is entry's source, and
// returns the error its failure reports; a warm request then runs cold.
func zygoteFailure(t *testing.T, entry string) error {
	t.Helper()
	f := File{Path: "agentjail_entry.py", Content: []byte(entry)}
	r := freshRunner(t)
	failed := make(chan error, 8)
	r.KeepWarm(ZygoteSpec{Name: "default", Code: []File{f}, Entry: f.Path, Etc: testEtc(),
		OnEvent: func(e string, err error) {
			if e == "failed" {
				failed <- err
			}
		}})
	t.Cleanup(r.Close)
	var err error
	select {
	case err = <-failed:
	case <-time.After(30 * time.Second):
		t.Fatal("the zygote neither failed nor refused")
	}
	res, runErr := r.Run(context.Background(), &Spec{Program: []byte("print('ok')"), Limits: DefaultLimits(), Start: StartWarm})
	require.NoError(t, runErr)
	assert.Equal(t, StartCold, res.Start)
	return err
}
