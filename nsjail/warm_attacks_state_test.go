package nsjail

// Adversarial tests of warm runs, continued: what one run could leave the
// next (poisoned state, randomness, concurrent runs).

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"agentjail/internal/systest"
)

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
