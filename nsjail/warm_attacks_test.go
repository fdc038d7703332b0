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
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
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

// zygoteUnreachableProbe is TestWarmAttackZygoteUnreachable's program: from
// inside a warm run, it tries every way to reach the zygote (ZYG_PIDS,
// ZYG_LINKS and ZYG_SOCKETS are its pids, fd links and sockets).
const zygoteUnreachableProbe = `import signal, socket, stat
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
`

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

	s := warmSpec(zygoteUnreachableProbe, nil)
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
