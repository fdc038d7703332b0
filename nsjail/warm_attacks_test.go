package nsjail

// Adversarial tests of warm runs (zygote.py, zygote_linux.go). Each case is
// a program that tries to break one property of a warm run and must fail;
// the assertions are on what the kernel says (errno, /proc, cgroup files,
// the seccomp report of the run's own listener, the host's view of the
// zygote), not on what the program claims.
//
// The last tests are the holes the review of the warm code found, each
// with what it was and how it was fixed.

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"agentjail/cgroup"
	"agentjail/internal/systest"
)

// warmPrelude starts every program: raw calls that answer with an errno
// name, and done(), which prints the dict R as the line "@@<json>" with
// references taken before the program could patch anything.
const warmPrelude = `import ctypes, errno, json, os, sys
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
R = {}
_encode, _write = json.JSONEncoder(sort_keys=True).encode, os.write
def _a(x): return ctypes.c_long(x) if isinstance(x, int) else x
def ename(e): return errno.errorcode.get(e, str(e))
def sc(nr, *args):
    r = libc.syscall(_a(nr), *map(_a, args))
    return "OK:%d" % r if r != -1 else ename(ctypes.get_errno())
def t(fn, *a, **k):
    try: return ("OK:" + repr(fn(*a, **k)))[:160]
    except OSError as e: return ename(e.errno)
    except Exception as e: return type(e).__name__
def setname(n): libc.prctl(15, n.encode(), 0, 0, 0)  # PR_SET_NAME: how the test finds us
def done(): _write(1, ("\n@@" + _encode(R) + "\n").encode())
`

// warmAttackRunner is a Runner of its own whose zygote s is up.
func warmAttackRunner(t *testing.T, s ZygoteSpec) *Runner {
	t.Helper()
	systest.Require(t, systest.Root, systest.UserNS, systest.CgroupMem, systest.Python, systest.Seccomp)
	if s.Name == "" {
		s.Name = "default"
	}
	s.Etc = testEtc() // the host's /etc (numpy's BLAS is an alternatives link)
	return warmRunner(t, s)
}

// warmSpec is a warm run of code (after warmPrelude); code are the
// zygote's shared files, which every warm run's spec must carry.
func warmSpec(code string, shared []File) *Spec {
	return &Spec{ID: NewID(), Program: []byte(warmPrelude + code), CodeFiles: shared, Limits: DefaultLimits(), Start: StartWarm, Etc: testEtc()}
}

// warmRun runs s and checks that it ran warm and left nothing behind.
func warmRun(t *testing.T, r *Runner, s *Spec) (*Result, map[string]any) {
	t.Helper()
	res := runIn(t, r, s)
	require.Equal(t, StartWarm, res.Start, "the run must be warm (is the zygote up?)")
	logResult(t, res)
	return res, warmReport(t, res)
}

func logResult(t *testing.T, res *Result) {
	t.Helper()
	if t.Failed() || testing.Verbose() {
		t.Logf("status=%s start=%s exit=%d reason=%q seccomp=%v\nstdout: %s\nstderr: %s",
			res.Status, res.Start, res.ExitCode, res.KillReason, seccompCalls(res), trim(res.Stdout), trim(res.Stderr))
	}
}

// warmReport is the program's "@@<json>" line.
func warmReport(t *testing.T, res *Result) map[string]any {
	t.Helper()
	for _, l := range strings.Split(string(res.Stdout), "\n") {
		if rest, ok := strings.CutPrefix(l, "@@"); ok {
			var m map[string]any
			require.NoError(t, json.Unmarshal([]byte(rest), &m), rest)
			return m
		}
	}
	require.Failf(t, "no report line", "status %s\nstdout: %s\nstderr: %s", res.Status, trim(res.Stdout), trim(res.Stderr))
	return nil
}

// ints is a JSON list of numbers as ints.
func ints(v any) []int {
	var out []int
	for _, x := range v.([]any) {
		out = append(out, int(x.(float64)))
	}
	return out
}

// zygoteProcs is the host's view of r's zygote: its jail's pid 1, the
// python3 it started (pid 2, which only waits) and the python3 that forks
// runs (pid 2's only child: the zygote is kept off pid 2, the pid of
// every run's program).
type zygoteProcs struct {
	init, waiter, py int
}

func zygoteOf(t *testing.T, r *Runner, name string) zygoteProcs {
	t.Helper()
	r.poolMu.Lock()
	w := r.warm[name]
	r.poolMu.Unlock()
	require.NotNil(t, w)
	w.mu.Lock()
	z := w.cur
	w.mu.Unlock()
	require.NotNil(t, z, "no zygote up")
	init := z.j.proc.Pid
	// Its other children are the inits of the runs built ahead (orphans
	// of its pid namespace, bootstrap_linux.c), agentjail's init, not
	// python3; or ones that are ending.
	kids := slices.DeleteFunc(systest.Children(init), func(pid int) bool {
		b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
		return strings.TrimSpace(string(b)) != "python3"
	})
	require.Len(t, kids, 1, "the zygote's jail init has one child but the runs' inits, the waiter")
	below := systest.Children(kids[0])
	require.Len(t, below, 1, "the waiter has one child, the zygote")
	return zygoteProcs{init: init, waiter: kids[0], py: below[0]}
}

// startTime is field 22 of /proc/pid/stat: with the pid, it names one
// process for good.
func startTime(t *testing.T, pid int) string {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	require.NoError(t, err, "process %d is gone", pid)
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	return f[22-3]
}

// cgroupPath is pid's cgroup (v1 controller name, "" for v2) as the host sees it.
func cgroupPath(t *testing.T, pid int, controller string) string {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
	require.NoError(t, err)
	for _, l := range strings.Split(string(b), "\n") {
		f := strings.SplitN(l, ":", 3)
		if len(f) == 3 && slices.Contains(strings.Split(f[1], ","), controller) {
			return f[2]
		}
	}
	t.Fatalf("process %d has no %s cgroup: %s", pid, controller, b)
	return ""
}

// cgroupDir is the host directory of pid's cgroup of controller: its v1
// hierarchy's, or on cgroup v2 its one group.
func cgroupDir(t *testing.T, r *Runner, pid int, controller string) string {
	t.Helper()
	if r.Cgroups.Version() == cgroup.V1 {
		return filepath.Join("/sys/fs/cgroup", controller, cgroupPath(t, pid, controller))
	}
	return filepath.Join("/sys/fs/cgroup", cgroupPath(t, pid, ""))
}

// memUsage is the charge of the memory cgroup in dir (cgroupDir).
func memUsage(t *testing.T, dir string) int64 {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "memory.usage_in_bytes"))
	if os.IsNotExist(err) {
		b, err = os.ReadFile(filepath.Join(dir, "memory.current"))
	}
	require.NoError(t, err)
	n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	require.NoError(t, err)
	return n
}

// procsNamed are the host pids whose comm starts with prefix.
func procsNamed(prefix string) map[int]string {
	out := map[int]string{}
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/comm")
		if c := strings.TrimSpace(string(b)); err == nil && strings.HasPrefix(c, prefix) {
			out[pid] = c
		}
	}
	return out
}

// awaitNamed waits until a process named exactly name exists and returns it.
func awaitNamed(t *testing.T, name string) int {
	t.Helper()
	var pid int
	require.Eventually(t, func() bool {
		for p, c := range procsNamed(name) {
			if c == name {
				pid = p
				return true
			}
		}
		return false
	}, 30*time.Second, 5*time.Millisecond, "no process named %q", name)
	return pid
}

// hasNumpy: Debian's python3-numpy, a module with native state to preload.
func hasNumpy() bool {
	_, err := os.Stat("/usr/lib/python3/dist-packages/numpy")
	return err == nil
}

// preloaded tells whether r's zygote of environment env imported module.
func preloaded(t *testing.T, r *Runner, env, module string) bool {
	t.Helper()
	info, ok := r.WarmInfo(env)
	require.True(t, ok)
	e, ok := info.Preload[module]
	if ok && e != "" {
		t.Logf("the zygote could not import %s: %s", module, e)
	}
	return ok && e == ""
}

// ---------------------------------------------------------------------------
// The zygote cannot be reached from a warm run.

// A warm run looks for its zygote and its control socket every way it can:
// /proc, every pid guess with kill, pidfd_open, ptrace, process_vm_readv,
// /proc/1 (its own init, agentjail's, not the zygote), every fd number, abstract
// and path sockets, and shared writable mappings. Nothing is there, and the
// zygote is the same process, untraced, after it.
func TestWarmAttackZygoteUnreachable(t *testing.T) {
	preload := []string{"json"}
	if hasNumpy() {
		preload = append(preload, "numpy")
	}
	r := warmAttackRunner(t, ZygoteSpec{Ahead: 1, Preload: preload})
	z := zygoteOf(t, r, "default")
	started := startTime(t, z.py)

	// The zygote's own fds, seen from the host: none of its sockets,
	// pipes or anonymous inodes (its control socket is fd 3) may be one
	// of the run's fds or sockets.
	var links, sockets []string
	ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", z.py))
	require.NoError(t, err)
	for _, e := range ents {
		l, _ := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", z.py, e.Name()))
		if strings.HasPrefix(l, "socket:") || strings.HasPrefix(l, "pipe:") || strings.HasPrefix(l, "anon_inode:") {
			links = append(links, l)
		}
		if strings.HasPrefix(l, "socket:") {
			sockets = append(sockets, strings.Trim(strings.TrimPrefix(l, "socket:"), "[]"))
		}
	}
	require.NotEmpty(t, sockets, "the zygote holds its control socket")
	// Nothing shared and writable is mapped in the zygote either.
	zmaps, err := os.ReadFile(fmt.Sprintf("/proc/%d/maps", z.py))
	require.NoError(t, err)
	for _, l := range strings.Split(string(zmaps), "\n") {
		if f := strings.Fields(l); len(f) > 1 && f[1][3] == 's' {
			assert.NotContains(t, f[1], "w", "the zygote has a shared writable mapping: %s", l)
		}
	}

	s := warmSpec(`import signal, socket, stat
zpids = [int(x) for x in os.environ["ZYG_PIDS"].split(",")]
zlinks = set(os.environ["ZYG_LINKS"].split(","))
zsocks = set(os.environ["ZYG_SOCKETS"].split(","))
R["proc_pids"] = sorted(int(p) for p in os.listdir("/proc") if p.isdigit())
hits = []
for p in os.listdir("/proc"):
    if p.isdigit():
        try: c = open("/proc/%s/cmdline" % p, "rb").read()
        except OSError: continue
        if b"zygote" in c: hits.append(p)
R["proc_zygote_cmdline"] = hits
alive = []
for p in list(range(1, 70000)) + zpids:
    try:
        os.kill(p, 0); alive.append(p)
    except ProcessLookupError: pass
    except PermissionError: alive.append(p)
R["kill_alive"] = sorted(set(alive))
R["kill_zygote"] = [t(os.kill, p, signal.SIGKILL) for p in zpids]
R["kill_all"] = t(os.kill, -1, signal.SIGKILL)
R["pidfd_zygote"] = [sc(434, p, 0) for p in zpids]
R["ptrace_zygote"] = [sc(101, 16, p, 0, 0) for p in zpids]
R["ptrace_init"] = sc(101, 0x4206, 1, 0, 0)
buf = ctypes.create_string_buffer(64)
class iovec(ctypes.Structure): _fields_ = [("base", ctypes.c_void_p), ("len", ctypes.c_size_t)]
liov, riov = iovec(ctypes.addressof(buf), 64), iovec(0x400000, 64)
R["vm_readv"] = [sc(310, p, ctypes.byref(liov), 1, ctypes.byref(riov), 1, 0) for p in zpids + [1]]
def rd(p): return open(p, "rb").read(1)
R["init_proc"] = {f: t(rd, "/proc/1/" + f) for f in ("mem", "environ", "maps", "auxv", "stack", "syscall")}
R["init_fd"] = t(os.listdir, "/proc/1/fd")
R["zygote_proc"] = [t(rd, "/proc/%d/mem" % p) for p in zpids]
fds = {}
for fd in range(1024):
    try: os.fstat(fd); fds[fd] = os.readlink("/proc/self/fd/%d" % fd)
    except OSError: pass
R["fds"] = sorted(fds)
R["fds_shared"] = sorted(l for l in fds.values() if l in zlinks)
net = open("/proc/net/unix").read().splitlines()[1:]
R["net_unix_shared"] = [l for l in net if l.split()[6] in zsocks]
conn = {}
for n in ["agentjail", "zygote", "agentjail-zygote", "agentjail_zygote", "agentjail-control"]:
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    conn[n] = t(s.connect, "\0" + n)
    s.close()
R["abstract_connect"] = conn
socks = []
for root, dirs, files in os.walk("/"):
    if root in ("/proc", "/sys", "/usr"): dirs[:] = []; continue
    for f in files + dirs:
        p = os.path.join(root, f)
        try:
            if stat.S_ISSOCK(os.lstat(p).st_mode): socks.append(p)
        except OSError: pass
R["fs_sockets"] = socks
shw, mp = [], []
for l in open("/proc/self/maps"):
    f = l.split()
    if f[1][3] == "s":
        if "w" in f[1]: shw.append(l.strip())
        lo, hi = (int(x, 16) for x in f[0].split("-"))
        mp.append(sc(10, lo, hi - lo, 3))
R["maps_shared_writable"] = shw
R["mprotect_shared_rw"] = mp
done()
`, nil)
	s.Env = map[string]string{
		"ZYG_PIDS":    fmt.Sprintf("%d,%d,%d", z.py, z.waiter, z.init),
		"ZYG_LINKS":   strings.Join(links, ","),
		"ZYG_SOCKETS": strings.Join(sockets, ","),
	}
	res, m := warmRun(t, r, s)
	assert.Equal(t, StatusOK, res.Status)

	assert.Equal(t, []int{1, 2}, ints(m["proc_pids"]), "the run's /proc shows its init and itself only")
	assert.Empty(t, m["proc_zygote_cmdline"])
	assert.Equal(t, []int{1, 2}, ints(m["kill_alive"]), "kill(pid, 0) finds no process beyond the run's own")
	// Three host pids: the zygote, its jail's pid 2 (which waits for it),
	// its jail's init.
	assert.Equal(t, []any{"ESRCH", "ESRCH", "ESRCH"}, m["kill_zygote"])
	assert.Equal(t, "ESRCH", m["kill_all"], "kill(-1) reaches no one")
	assert.Equal(t, []any{"ESRCH", "ESRCH", "ESRCH"}, m["pidfd_zygote"])
	assert.Equal(t, []any{"EPERM", "EPERM", "EPERM"}, m["ptrace_zygote"])
	assert.Equal(t, "EPERM", m["ptrace_init"])
	assert.Equal(t, []any{"EPERM", "EPERM", "EPERM", "EPERM"}, m["vm_readv"])
	for f, v := range m["init_proc"].(map[string]any) {
		assert.Contains(t, []string{"EACCES", "EPERM"}, v, "/proc/1/%s of the run's init (not dumpable)", f)
	}
	assert.Equal(t, "EACCES", m["init_fd"])
	assert.Equal(t, []any{"ENOENT", "ENOENT", "ENOENT"}, m["zygote_proc"])
	assert.Equal(t, []int{0, 1, 2}, ints(m["fds"]), "only stdio is open (no report channel asked)")
	assert.Empty(t, m["fds_shared"], "an fd of the run is one of the zygote's")
	assert.Empty(t, m["net_unix_shared"], "a unix socket of the zygote is in the run's /proc/net/unix")
	for n, v := range m["abstract_connect"].(map[string]any) {
		assert.Equal(t, "ECONNREFUSED", v, "abstract socket %q", n)
	}
	assert.Empty(t, m["fs_sockets"], "a socket file in the run's file system")
	assert.Empty(t, m["maps_shared_writable"], "a shared writable mapping (shared with the zygote and every run)")
	for _, v := range m["mprotect_shared_rw"].([]any) {
		assert.Equal(t, "EACCES", v, "a read-only shared mapping became writable")
	}
	calls := seccompCalls(res)
	assert.Positive(t, calls["ptrace"], "reported by the run's own listener")
	assert.Positive(t, calls["process_vm_readv"], "reported by the run's own listener")

	// The host's view: the same zygote, untraced, never restarted.
	assert.Equal(t, started, startTime(t, z.py), "the zygote was replaced")
	st, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", z.py))
	require.NoError(t, err)
	assert.Contains(t, string(st), "TracerPid:\t0\n")
	_, _, restarts, _ := r.WarmStats()
	assert.Zero(t, restarts)

	// Same with the report channel: fd 3 is the run's pipe, nothing more.
	s = warmSpec(`fds = {}
for fd in range(1024):
    try: fds[fd] = os.readlink("/proc/self/fd/%d" % fd)
    except OSError: pass
R["fds"] = fds
done()
`, nil)
	s.Report = true
	_, m = warmRun(t, r, s)
	fds := m["fds"].(map[string]any)
	assert.ElementsMatch(t, []string{"0", "1", "2", "3"}, slices.Collect(mapKeys(fds)))
	assert.Contains(t, fds["3"], "pipe:", "fd 3 is the report pipe")
}

func mapKeys[K comparable, V any](m map[K]V) func(func(K) bool) {
	return func(yield func(K) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// ---------------------------------------------------------------------------
// A warm run cannot poison the zygote for the next one.

// warmEntry is a harness-like entry module of the zygote: its globals live
// in the zygote, and its main() runs each program.
var warmEntry = File{Path: "agentjail_entry.py", Content: []byte(`import json, runpy, sys
STATE = {"runs": 0, "secret": "pristine"}
def helper(x): return "helper:" + x
def zygote(): STATE["zygote"] = True
def main():
    STATE["runs"] += 1
    runpy.run_path(sys.argv[0], run_name="__main__")
`)}

// warmObserve records what a poisoning run would change, for a run that
// compares its own view with a pristine run's.
const warmObserve = `import builtins, gc, io, json, random, resource, signal, socket, warnings, decimal, types, atexit, time
def globs(pred):  # the globals of the frames below the program's: the entry's, zygote.py's
    f, out = sys._getframe(), {}
    while f:
        if pred(f.f_globals): out[id(f.f_globals)] = f.f_globals
        f = f.f_back
    return list(out.values())
entry = globs(lambda g: g.get("__name__") == "agentjail_warm")
zyg = globs(lambda g: "_spawn" in g and "_reseed" in g)
O = {}
O["fake_module"] = "ajpoison" in sys.modules
O["sys_modules"] = sorted(k for k in sys.modules if k not in ("__main__", "<run_path>"))
O["json"] = [json.dumps.__module__, json.dumps({"a": [1, 2]}), json.loads('{"b": 2}') == {"b": 2}, json.JSONEncoder().encode({"x": 1})]
O["builtins"] = [type(builtins.print).__name__, type(builtins.len).__name__, len([1, 2, 3]), builtins.open is io.open]
O["decimal"] = [decimal.getcontext().prec, str(decimal.Decimal(1) / decimal.Decimal(3))]
O["entry"] = [[g["STATE"], g["helper"]("x"), g["main"].__code__.co_filename] for g in entry]
O["zygote_module"] = [[g["_reseed"].__code__.co_filename, g["Z_NS"], g["ZYGOTE_INSIDE"]] for g in zyg]
O["files"] = {d: sorted(os.listdir(d)) for d in ("/tmp", "/workspace", "/dev/shm", "/code")}
O["env"] = sorted(os.environ.items())
O["cwd"] = os.getcwd()
u = os.umask(0o22); os.umask(u); O["umask"] = u
O["rlimits"] = {n: resource.getrlimit(getattr(resource, n)) for n in dir(resource) if n.startswith("RLIMIT_")}
O["signals"] = {str(int(s)): repr(signal.getsignal(s)) for s in signal.valid_signals() if s not in (signal.SIGKILL, signal.SIGSTOP)}
O["sigmask"] = sorted(int(s) for s in signal.pthread_sigmask(signal.SIG_BLOCK, []))
O["recursion"] = sys.getrecursionlimit()
O["sys_path"] = sys.path
O["meta_path"] = [type(x).__name__ for x in sys.meta_path]
O["path_hooks"] = len(sys.path_hooks)
O["warnings"] = [str(f[0]) for f in warnings.filters]
O["socket_timeout"] = socket.getdefaulttimeout()
O["hooks"] = [sys.excepthook is sys.__excepthook__, sys.displayhook is sys.__displayhook__, sys.gettrace() is None, sys.getprofile() is None]
O["atexit"] = atexit._ncallbacks()
O["procs"] = sorted(int(p) for p in os.listdir("/proc") if p.isdigit())
O["random_seed0"] = random.random() == random.Random(0).random()
O["int_digits"] = sys.get_int_max_str_digits()
O["bytecode"] = sys.dont_write_bytecode
O["gc"] = [gc.isenabled(), gc.get_threshold()]
O["tz"] = list(time.tzname)
O["stdout"] = [type(sys.stdout).__name__, sys.stdout.fileno(), sys.stdout.line_buffering]
try:
    import numpy
    O["numpy"] = [numpy.sum.__module__, int(numpy.sum([1, 2])), numpy.random.random() == numpy.random.RandomState(0).random_sample()]
except ImportError:
    pass
R["obs"] = O
done()
`

// Run 1 patches everything it can reach of the interpreter it shares with
// the zygote (modules, builtins, a preloaded module, the entry's and the
// zygote's own globals, found through gc), writes everywhere it may, and
// changes every process attribute it can; it leaves a detached process. A
// later run sees exactly what a run before the attack saw.
func TestWarmAttackPoisonNextRun(t *testing.T) {
	preload := []string{"json", "decimal", "random", "warnings", "socket"}
	if hasNumpy() {
		preload = append(preload, "numpy")
	}
	shared := []File{warmEntry}
	r := warmAttackRunner(t, ZygoteSpec{Ahead: 1, Preload: preload, Code: shared, Entry: warmEntry.Path})
	z := zygoteOf(t, r, "default")
	started := startTime(t, z.py)
	mountinfo := func() int {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/mountinfo", z.py))
		require.NoError(t, err)
		return strings.Count(string(b), "\n")
	}
	zmounts := mountinfo()

	_, before := warmRun(t, r, warmSpec(warmObserve, shared))
	require.NotEmpty(t, before["obs"].(map[string]any)["entry"], "the entry module is found through gc")
	require.NotEmpty(t, before["obs"].(map[string]any)["zygote_module"], "zygote.py's module is found through gc")

	res, m := warmRun(t, r, warmSpec(`import builtins, gc, json, random, resource, signal, socket, warnings, decimal, types, atexit, time
gc.unfreeze()  # the zygote's objects, frozen out of the collector's lists
def mods(pred): return [o for o in gc.get_objects() if isinstance(o, types.ModuleType) and pred(o)]
_open = open
sys.modules["ajpoison"] = types.ModuleType("ajpoison")
json.dumps = lambda *a, **k: "POISON"
json.loads = lambda *a, **k: "POISON"
json.JSONEncoder.encode = lambda self, o: "POISON"
decimal.getcontext().prec = 3
for m in mods(lambda m: m.__name__ == "agentjail_warm"):
    m.STATE["secret"] = "POISONED"; m.STATE["runs"] = 999
    m.helper = lambda x: "POISON"; m.main = lambda: None
for m in mods(lambda m: hasattr(m, "_spawn") and hasattr(m, "_reseed")):
    m._reseed = lambda: None; m.Z_NS = 0; m.ZYGOTE_INSIDE = 0
w = {}
for d in ("/tmp", "/workspace", "/dev/shm", "/code", "/etc", "/"):
    w[d] = t(lambda: _open(d + "/poison", "w").write("x"))
w["/tmp/json.py"] = t(lambda: _open("/tmp/json.py", "w").write("raise SystemExit(99)"))
R["writes"] = w
os.environ["AJPOISON"] = "1"; os.environ["PATH"] = "/tmp"
os.chdir("/tmp"); os.umask(0)
resource.setrlimit(resource.RLIMIT_NOFILE, (32, 32))
resource.setrlimit(resource.RLIMIT_STACK, (1 << 20, resource.RLIM_INFINITY))
signal.signal(signal.SIGTERM, lambda *a: None); signal.signal(signal.SIGUSR1, signal.SIG_IGN)
signal.signal(signal.SIGINT, signal.SIG_IGN)
signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGUSR2])
random.seed(0)
sys.path.insert(0, "/tmp"); sys.meta_path.insert(0, type("F", (), {"find_spec": staticmethod(lambda *a: None)})())
sys.path_hooks.insert(0, lambda p: None)
warnings.simplefilter("error"); socket.setdefaulttimeout(0.5)
sys.excepthook = lambda *a: None; sys.displayhook = lambda *a: None
atexit.register(lambda: None)
sys.set_int_max_str_digits(640); sys.dont_write_bytecode = True
gc.disable(); gc.set_threshold(1, 1, 1)
os.environ["TZ"] = "UTC+5"; time.tzset()
sys.setrecursionlimit(200)
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        setname("ajpoison-left")
        time.sleep(60)
    os._exit(0)
os.wait()
R["took"] = [json.dumps({}), len([]), decimal.getcontext().prec, "ajpoison" in sys.modules]
R["found"] = [len(mods(lambda m: m.__name__ == "agentjail_warm")), len(mods(lambda m: hasattr(m, "_spawn") and hasattr(m, "_reseed")))]
builtins.len = lambda x: 42
builtins.print = lambda *a, **k: None
builtins.open = lambda *a, **k: None
done()
`, shared))
	assert.Equal(t, StatusOK, res.Status, "the poisoning run itself ran")
	assert.Equal(t, []any{"POISON", float64(0), float64(3), true}, m["took"], "the patches took in the poisoning run")
	assert.Equal(t, []any{float64(1), float64(1)}, m["found"], "the poisoning run found the entry's and zygote.py's modules")
	writes := m["writes"].(map[string]any)
	for _, d := range []string{"/tmp", "/workspace", "/dev/shm", "/tmp/json.py"} {
		assert.Contains(t, writes[d], "OK:", "%s is the run's scratch: writable", d)
	}
	for _, d := range []string{"/code", "/etc", "/"} {
		assert.Equal(t, "EROFS", writes[d], "%s is read-only", d)
	}
	assert.Empty(t, procsNamed("ajpoison"), "the detached process outlived its run")

	_, after := warmRun(t, r, warmSpec(warmObserve, shared))
	b, _ := json.MarshalIndent(before["obs"], "", " ")
	a, _ := json.MarshalIndent(after["obs"], "", " ")
	assert.Equal(t, string(b), string(a), "the run after the poisoning one does not see what the run before saw")
	obs := after["obs"].(map[string]any)
	assert.Equal(t, false, obs["random_seed0"], "random.seed(0) of the poisoning run carried over")
	if np, ok := obs["numpy"].([]any); ok {
		assert.Equal(t, false, np[2], "numpy's global generator is seeded as RandomState(0)")
	}

	assert.Equal(t, started, startTime(t, z.py), "the zygote was replaced")
	assert.Equal(t, zmounts, mountinfo(), "a run's mounts reached the zygote's mount namespace")
	_, _, restarts, _ := r.WarmStats()
	assert.Zero(t, restarts)
}

// ---------------------------------------------------------------------------
// Randomness.

// 1000 warm runs of a zygote that preloaded random, secrets and uuid each
// print random.random(), secrets.token_hex(16), uuid.uuid4(),
// os.urandom(16) and hash("x"): no value of the first four repeats.
// hash("x") is the same in every run of a zygote (the str hash seed is the
// zygote's: a documented, accepted sharing; only logged here). With numpy
// installed, 100 runs of a zygote that preloaded it draw distinct
// numpy.random.random() values too.
func TestWarmAttackRandomness(t *testing.T) {
	r := warmAttackRunner(t, ZygoteSpec{Ahead: 4, Preload: []string{"random", "secrets", "uuid"}})
	t0 := time.Now()
	rows := warmValues(t, r, 1000, `import os, random, secrets, uuid
print(random.random(), secrets.token_hex(16), uuid.uuid4(), os.urandom(16).hex(), hash("x"))
`)
	t.Logf("1000 warm runs in %v", time.Since(t0))
	distinct(t, rows, "random.random()", "secrets.token_hex(16)", "uuid.uuid4()", "os.urandom(16)", "")
	hashes := map[string]bool{}
	for _, row := range rows {
		hashes[row[4]] = true
	}
	t.Logf(`hash("x"): %d distinct value(s) over %d runs (the zygote's hash seed, shared by design)`, len(hashes), len(rows))

	if !hasNumpy() {
		return
	}
	r = warmAttackRunner(t, ZygoteSpec{Name: "numpy", Ahead: 4, Preload: []string{"numpy"}})
	if !preloaded(t, r, "numpy", "numpy") {
		return
	}
	rows = warmValues(t, r, 100, "import numpy\nprint(numpy.random.random(), numpy.random.randint(1 << 62))\n")
	distinct(t, rows, "numpy.random.random()", "numpy.random.randint(1 << 62)")
}

// warmValues runs code warm n times on four goroutines and returns the
// words each run printed.
func warmValues(t *testing.T, r *Runner, n int, code string) [][]string {
	t.Helper()
	var (
		mu   sync.Mutex
		rows [][]string
		errs []error
		wg   sync.WaitGroup
		next = make(chan int)
	)
	for range 4 {
		wg.Go(func() {
			for range next {
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				res, err := r.Run(ctx, &Spec{Program: []byte(code), Limits: DefaultLimits(), Start: StartWarm, Etc: testEtc()})
				cancel()
				mu.Lock()
				switch {
				case err != nil:
					errs = append(errs, err)
				case res.Start != StartWarm || res.Status != StatusOK:
					errs = append(errs, fmt.Errorf("start %s status %s: %s", res.Start, res.Status, res.Stderr))
				default:
					rows = append(rows, strings.Fields(string(res.Stdout)))
				}
				mu.Unlock()
			}
		})
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	require.Empty(t, errs)
	require.Len(t, rows, n)
	return rows
}

// distinct fails t for every value of a named column ("" skips it) that
// two rows share.
func distinct(t *testing.T, rows [][]string, names ...string) {
	t.Helper()
	for col, name := range names {
		if name == "" {
			continue
		}
		seen := map[string]int{}
		for i, row := range rows {
			require.Greater(t, len(row), col, "run %d printed %v", i, row)
			if j, dup := seen[row[col]]; dup {
				t.Errorf("%s repeated in runs %d and %d: %s", name, j, i, row[col])
			}
			seen[row[col]] = i
		}
	}
}

// ---------------------------------------------------------------------------
// Two concurrent runs.

// Two runs (warm: of one zygote; cold: two jails), at the same time (a barrier the test holds:
// each sets itself up, names itself ready and waits for SIGUSR1), look for
// each other: files in /tmp, /workspace and /dev/shm, processes, an
// abstract unix socket, a System V shared memory segment and message queue
// of one fixed key (each creates it with IPC_EXCL: both succeed only in IPC
// namespaces of their own). Neither finds anything of the other.
func TestWarmAttackConcurrentRunsIsolated(t *testing.T) {
	r := warmAttackRunner(t, ZygoteSpec{Ahead: 2})
	code := `import signal, socket, time
me, other = os.environ["AJNAME"], os.environ["AJOTHER"]
KEY, IPC_CREAT, IPC_EXCL, IPC_NOWAIT = 0x414a5741, 0o1000, 0o2000, 0o4000
signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGUSR1])
for d in ("/tmp", "/workspace", "/dev/shm"):
    open(d + "/owner-" + me, "w").write(me)
srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM); srv.bind("\0ajwarm-iso-" + me); srv.listen()
libc.shmat.restype = ctypes.c_void_p
shmid = libc.shmget(KEY, 4096, IPC_CREAT | IPC_EXCL | 0o600)
R["shmget_excl"] = "OK" if shmid >= 0 else ename(ctypes.get_errno())
addr = libc.shmat(shmid, None, 0)
ctypes.memmove(addr, me.encode(), 1)
msqid = libc.msgget(KEY, IPC_CREAT | IPC_EXCL | 0o600)
R["msgget_excl"] = "OK" if msqid >= 0 else ename(ctypes.get_errno())
class Msg(ctypes.Structure): _fields_ = [("mtype", ctypes.c_long), ("mtext", ctypes.c_char * 8)]
libc.msgsnd(msqid, ctypes.byref(Msg(1, me.encode())), 8, 0)
child = os.fork()
if child == 0:
    setname("ajiso-" + me + "-kid"); time.sleep(60); os._exit(0)
setname("ajiso-" + me + "-ready")
signal.sigwait([signal.SIGUSR1])
R["files"] = {d: sorted(os.listdir(d)) for d in ("/tmp", "/workspace", "/dev/shm")}
pids = sorted(int(p) for p in os.listdir("/proc") if p.isdigit())
R["pids"] = pids
R["comms"] = sorted(open("/proc/%d/comm" % p).read().strip() for p in pids)
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
R["connect_other"] = t(s.connect, "\0ajwarm-iso-" + other)
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
R["connect_self"] = t(s.connect, "\0ajwarm-iso-" + me)
R["unix_names"] = sorted(set(l.split()[7] for l in open("/proc/net/unix").read().splitlines()[1:] if len(l.split()) > 7))
R["shm_byte"] = ctypes.string_at(addr, 1).decode()
R["shm_lookup"] = libc.shmget(KEY, 0, 0) == shmid
m = Msg()
R["msg"] = m.mtext.decode() if libc.msgrcv(msqid, ctypes.byref(m), 8, 0, IPC_NOWAIT) >= 0 else ename(ctypes.get_errno())
R["msg_again"] = "OK" if libc.msgrcv(msqid, ctypes.byref(m), 8, 0, IPC_NOWAIT) >= 0 else ename(ctypes.get_errno())
R["sysvipc"] = [len(open("/proc/sysvipc/" + f).read().splitlines()) - 1 for f in ("shm", "msg", "sem")]
os.kill(child, 9)
done()
`
	for _, start := range []StartMode{StartCold, StartWarm} {
		t.Run(string(start), func(t *testing.T) { concurrentRunsIsolated(t, r, code, start) })
	}
}

// concurrentRunsIsolated runs code twice at once, started as start, each
// a job of its own, and checks that neither found the other.
func concurrentRunsIsolated(t *testing.T, r *Runner, code string, start StartMode) {
	waits := map[string]func() *Result{}
	specs := map[string]*Spec{}
	for me, other := range map[string]string{"A": "B", "B": "A"} {
		s := warmSpec(code, nil)
		s.Start = start
		s.Env = map[string]string{"AJNAME": me, "AJOTHER": other}
		specs[me] = s
		waits[me] = startJail(t, r, s)
	}
	// Both are set up and alive before either looks.
	pa, pb := awaitNamed(t, "ajiso-A-ready"), awaitNamed(t, "ajiso-B-ready")
	awaitNamed(t, "ajiso-A-kid")
	awaitNamed(t, "ajiso-B-kid")
	mounts := systest.MountCount()
	require.NoError(t, syscall.Kill(pa, syscall.SIGUSR1))
	require.NoError(t, syscall.Kill(pb, syscall.SIGUSR1))
	for me, other := range map[string]string{"A": "B", "B": "A"} {
		res := waits[me]()
		assert.Equal(t, start, res.Start)
		assert.Equal(t, StatusOK, res.Status)
		systest.NoLeftovers(t, res.HostUID, specs[me].ID, mounts)
		m := warmReport(t, res)
		assert.Equal(t, "OK", m["shmget_excl"], "%s: the fixed key was taken (a shared IPC namespace)", me)
		assert.Equal(t, "OK", m["msgget_excl"], "%s: the fixed key was taken (a shared IPC namespace)", me)
		for d, l := range m["files"].(map[string]any) {
			assert.Equal(t, []any{"owner-" + me}, l, "%s: %s holds another run's file", me, d)
		}
		assert.Equal(t, []int{1, 2, 3}, ints(m["pids"]), "%s: init, the program, its child", me)
		for _, c := range m["comms"].([]any) {
			assert.NotContains(t, c, "ajiso-"+other, "%s sees a process of %s", me, other)
		}
		assert.Equal(t, "ECONNREFUSED", m["connect_other"], "%s reached %s's abstract socket", me, other)
		assert.Contains(t, m["connect_self"], "OK:")
		assert.Equal(t, []any{"@ajwarm-iso-" + me}, m["unix_names"])
		assert.Equal(t, me, m["shm_byte"], "%s: the segment was written by the other run", me)
		assert.Equal(t, true, m["shm_lookup"])
		assert.Equal(t, me, m["msg"], "%s: the queue holds the other run's message", me)
		assert.Equal(t, "ENOMSG", m["msg_again"])
		assert.Equal(t, []int{1, 1, 0}, ints(m["sysvipc"]), "%s: its IPC namespace holds its own segment and queue", me)
	}
	assert.Empty(t, procsNamed("ajiso-"))
}

// ---------------------------------------------------------------------------
// No privilege reaches the program.

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
	entry := File{Path: "agentjail_entry.py", Content: []byte(`import mmap, runpy, sys
ARENA = mmap.mmap(-1, 4096)  # a library's shared arena, made at import
def main(): runpy.run_path(sys.argv[0], run_name="__main__")
`)}
	r := freshRunner(t)
	failed := make(chan error, 8)
	r.KeepWarm(ZygoteSpec{Name: "default", Code: []File{entry}, Entry: entry.Path, Etc: testEtc(),
		OnEvent: func(e string, err error) {
			if e == "failed" {
				failed <- err
			}
		}})
	t.Cleanup(r.Close)
	select {
	case err := <-failed:
		assert.Contains(t, err.Error(), "left a writable shared mapping, which every run would share: /dev/zero (deleted)")
	case <-time.After(30 * time.Second):
		t.Fatal("the zygote neither failed nor refused")
	}
	res, err := r.Run(context.Background(), &Spec{Program: []byte("print('ok')"), Limits: DefaultLimits(), Start: StartWarm})
	require.NoError(t, err)
	assert.Equal(t, StartCold, res.Start)
}
