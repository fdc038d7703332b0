package nsjail

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/signal"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"agentjail/internal/systest"
)

// Each test here is a program that tries to break one property of the jail
// and must fail to.

func TestHelloWorld(t *testing.T) {
	res := jailRun(t, "import sys\nprint('hello'); print('err', file=sys.stderr)", nil)
	assert.Equal(t, StatusOK, res.Status)
	assert.Equal(t, 0, res.ExitCode)
	assert.Equal(t, "hello\n", string(res.Stdout))
	assert.Equal(t, "err\n", string(res.Stderr))
	assert.Equal(t, KillNone, res.KillReason)
	// A cold python3 writes a few MiB; a warm run only its copies of the
	// zygote's pages (a few hundred KiB), but some: the count is its own.
	least := int64(1 << 20)
	if res.Start == StartWarm {
		least = 256 << 10
	}
	assert.Greater(t, res.PeakMemoryBytes, least, "python3 uses a few MiB, or a warm fork a few hundred KiB")
	assert.Less(t, res.PeakMemoryBytes, int64(64<<20))
	assert.Greater(t, res.WallTime, time.Duration(0))
	assert.NotZero(t, res.HostUID)
}

func TestExitCodeAndException(t *testing.T) {
	res := jailRun(t, "import sys; sys.exit(3)", nil)
	assert.Equal(t, StatusError, res.Status)
	assert.Equal(t, 3, res.ExitCode)

	res = jailRun(t, "x = 1\ny = x / 0\n", nil)
	assert.Equal(t, StatusError, res.Status)
	assert.Equal(t, 1, res.ExitCode)
	assert.Contains(t, string(res.Stderr), "ZeroDivisionError")
	assert.Contains(t, string(res.Stderr), `File "/code/main.py", line 2`)
}

func TestPid1AndOwnProcessesOnly(t *testing.T) {
	res := jailRun(t, `import os
pids = sorted(int(p) for p in os.listdir("/proc") if p.isdigit())
print(os.getpid(), os.getppid(), pids)
print(open("/proc/1/cmdline","rb").read().split(b"\0")[0].decode())`, nil)
	require.Equal(t, StatusOK, res.Status, string(res.Stderr))
	lines := strings.Split(strings.TrimSpace(string(res.Stdout)), "\n")
	assert.Equal(t, "2 "+programParent()+" [1, 2]", lines[0], "python3 is the child of the jail's init (or, warm, its zygote's), and they are alone")
	assert.Equal(t, initArg0, lines[1], "PID 1 is the jail's own init")
}

// The jail's init passes the signals a supervisor sends it on to the
// program (cold: its child; warm: pid 2, which its zygote forked), from
// the program's first instruction on. The program waits until the init
// is under its filter (a warm run's init loads its own after the go,
// beside the program), so that the forwarding runs under it.
func TestInitForwardsSignalsToTheProgram(t *testing.T) {
	res := jailRun(t, `import os, signal, time
got = []
for s in (signal.SIGUSR1, signal.SIGTERM):
    signal.signal(s, lambda n, f: got.append(n))
deadline = time.monotonic() + 5
filtered = lambda: "Seccomp:\t2" in open("/proc/1/status").read()
while not filtered() and time.monotonic() < deadline:
    time.sleep(0.001)
print(filtered())
for s in (signal.SIGUSR1, signal.SIGTERM):
    os.kill(1, s)
deadline = time.monotonic() + 5
while len(got) < 2 and time.monotonic() < deadline:
    time.sleep(0.01)
print(sorted(got), os.getsid(0) == os.getpid())`, nil)
	require.Equal(t, StatusOK, res.Status, string(res.Stderr))
	// A warm program leads its own session (its zygote's is not shared);
	// a cold one is in its init's.
	leads := map[bool]string{true: "True", false: "False"}[testWarm]
	assert.Equal(t, fmt.Sprintf("True\n[%d, %d] %s\n", syscall.SIGUSR1, syscall.SIGTERM, leads), string(res.Stdout),
		"PID 1 under its filter, then both signals passed on")
}

// The program is an ordinary process: it can end itself with SIGKILL,
// which a namespace's init cannot (the kernel drops such a signal from
// inside), and its result says so, as no limit sent it.
func TestProgramCanKillItself(t *testing.T) {
	res := jailRun(t, "import os, signal\nprint('before', flush=True)\nos.kill(os.getpid(), signal.SIGKILL)\nprint('after')", nil)
	assert.Equal(t, StatusSignaled, res.Status)
	assert.Equal(t, KillNone, res.KillReason)
	assert.Equal(t, 137, res.ExitCode)
	assert.Equal(t, "before\n", string(res.Stdout))
}

// Orphans are reaped by the jail's init: a program whose children
// double-fork does not fill its pids limit with zombies (30 of them with
// a limit of 16 made its next fork fail, EAGAIN, when python3 was PID 1).
func TestOrphansAreReaped(t *testing.T) {
	res := jailRun(t, `import os, time
for i in range(30):
    if os.fork() == 0:
        if os.fork() == 0:
            os._exit(0)
        os._exit(0)
    os.wait()
time.sleep(0.2)
states = [open(f"/proc/{p}/stat").read().split(") ")[1][0] for p in os.listdir("/proc") if p.isdigit()]
print(len(states), states.count("Z"))
pid = os.fork()
if pid == 0: os._exit(7)
print(os.waitpid(pid, 0)[1] >> 8)`, func(s *Spec) { s.Limits.Pids = 16 })
	require.Equal(t, StatusOK, res.Status, string(res.Stderr))
	assert.Equal(t, "2 0\n7\n", string(res.Stdout), "the init and the program, no zombie; the next fork works")
	assert.Zero(t, res.PidsMaxHits)
}

// The program's exact end reaches the result through the jail's init:
// its exit status, or the signal it died of.
func TestProgramEndIsReported(t *testing.T) {
	for code, want := range map[string]struct {
		status Status
		exit   int
		sig    syscall.Signal
	}{
		"import sys; sys.exit(42)":                                {StatusError, 42, 0},
		"import os; os._exit(0)":                                  {StatusOK, 0, 0},
		"import os, signal; os.kill(os.getpid(), signal.SIGSEGV)": {StatusSignaled, 128 + 11, syscall.SIGSEGV},
		"import os, signal; os.kill(os.getpid(), signal.SIGTERM)": {StatusSignaled, 128 + 15, syscall.SIGTERM},
	} {
		res := jailRun(t, code, nil)
		assert.Equal(t, want.status, res.Status, code)
		assert.Equal(t, want.exit, res.ExitCode, code)
		assert.Equal(t, want.sig, res.Signal, code)
		assert.Equal(t, KillNone, res.KillReason, code)
	}
}

// The jail's umask is its own (022), not whatever the runner's is when
// the init stage starts (the daemon narrows its own to bind its socket).
// The cold runner is used: its init stage starts during the run, with the
// umask set here.
func TestUmaskIsTheJails(t *testing.T) {
	r := freshRunner(t)
	old := syscall.Umask(0o077)
	res, err := r.Run(t.Context(), &Spec{Program: []byte(`import os, stat
print(oct(os.umask(0)), oct(stat.S_IMODE(os.stat("/code/main.py").st_mode)))
print(*(oct(stat.S_IMODE(os.stat(d).st_mode)) for d in ("/workspace", "/tmp", "/dev/shm", "/etc/passwd")))`), Limits: DefaultLimits()})
	syscall.Umask(old)
	require.NoError(t, err)
	// /tmp and /dev/shm are sticky, as on any host (a jail has one user,
	// but a program may expect it).
	assert.Equal(t, "0o22 0o444\n0o755 0o1777 0o1777 0o444\n", string(res.Stdout), string(res.Stderr))
}

func TestIdentityAndCapabilities(t *testing.T) {
	res := jailRun(t, `import os
st = dict(l.split(":\t", 1) for l in open("/proc/self/status").read().splitlines() if ":\t" in l)
print(os.getuid(), os.geteuid(), os.getgid(), os.getegid(), os.getgroups())
for k in ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb", "NoNewPrivs", "Seccomp"): print(k, st[k].strip())
print(open("/proc/self/uid_map").read().split(), open("/proc/self/gid_map").read().split(), open("/proc/self/setgroups").read().strip())
print(open("/proc/self/cgroup").read().strip().splitlines()[-1])`, nil)
	require.Equal(t, StatusOK, res.Status, string(res.Stderr))
	out := string(res.Stdout)
	assert.Contains(t, out, "1000 1000 1000 1000 []\n")
	for _, k := range []string{"CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"} {
		assert.Contains(t, out, k+" 0000000000000000\n")
	}
	assert.Contains(t, out, "NoNewPrivs 1\n")
	// The shared test Runner leaves Runner.Seccomp nil: nil must mean the
	// default filter, never none.
	require.Nil(t, testRunner(t).Seccomp)
	assert.Contains(t, out, "Seccomp 2\n")
	uid := fmt.Sprint(res.HostUID)
	if res.Start == StartWarm {
		// A warm run's map is read in its zygote's namespace's terms:
		// where the zygote maps the run's host uid (zygoteIDMap).
		uid = fmt.Sprint(zygoteInside + res.HostUID - testRunner(t).UIDs.Base)
	}
	assert.Contains(t, out, fmt.Sprintf("['1000', '%s', '1'] ['1000', '%s', '1'] deny", uid, uid))
	assert.NotEqual(t, uint32(0), res.HostUID)
	assert.NotEqual(t, uint32(os.Getuid()), res.HostUID)
	assert.Regexp(t, `:/$`, strings.TrimSpace(out[strings.LastIndex(strings.TrimSpace(out), "\n")+1:]), "the jail sees its own cgroup as /")
}

func TestHostSecretsInvisible(t *testing.T) {
	res := jailRun(t, `import os
for p in ("/etc/shadow", "/root", "/home", "/var", "/sys", "/boot", "/run", "/root/.pyenv", "/etc/hostname_host"):
    try:
        os.listdir(p) if os.path.isdir(p) else open(p, "rb").read(1)
        print(p, "OK")
    except OSError as e:
        print(p, e.__class__.__name__)
print(sorted(os.listdir("/")))`, nil)
	require.Equal(t, StatusOK, res.Status, string(res.Stderr))
	out := string(res.Stdout)
	assert.NotContains(t, out, " OK\n")
	for _, p := range []string{"/etc/shadow", "/root", "/home", "/var", "/sys"} {
		assert.Contains(t, out, p+" FileNotFoundError\n")
	}
	assert.Contains(t, out, "['bin', 'code', 'dev', 'etc', 'lib', 'lib64', 'proc', 'sbin', 'tmp', 'usr', 'workspace']")
}

func TestWritesOnlyToWorkspaceAndTmp(t *testing.T) {
	res := jailRun(t, `import os, sysconfig
for p in ("/x", "/etc/x", "/usr/x", "/code/x", sysconfig.get_paths()["stdlib"] + "/os.py", "/proc/x", "/dev/x", "/proc/sys/kernel/hostname"):
    try:
        open(p, "a").write("x"); print(p, "OK")
    except OSError as e:
        print(p, e.__class__.__name__)
for p in ("/workspace/a", "/tmp/a", "/dev/shm/a", "/dev/null"):
    open(p, "w").write("x"); print(p, "written")
open("/dev/stdout", "w").write("reopened stdout\n")
print(os.getcwd())`, nil)
	require.Equal(t, StatusOK, res.Status, string(res.Stderr))
	out := string(res.Stdout)
	assert.NotContains(t, out, " OK\n")
	assert.Contains(t, out, "/workspace/a written\n/tmp/a written\n/dev/shm/a written\n/dev/null written\nreopened stdout\n/workspace\n")
}

func TestMountsAreNosuidAndReadOnly(t *testing.T) {
	res := jailRun(t, `for l in open("/proc/self/mountinfo"):
    f = l.split()
    print(f[4], f[5])`, nil)
	require.Equal(t, StatusOK, res.Status, string(res.Stderr))
	for _, l := range strings.Split(strings.TrimSpace(string(res.Stdout)), "\n") {
		f := strings.Fields(l)
		require.Len(t, f, 2)
		opts := "," + f[1] + ","
		assert.Contains(t, opts, ",nosuid,", "mount %s", f[0])
		if strings.Contains(opts, ",rw,") {
			assert.Contains(t, []string{"/workspace", "/tmp", "/dev/shm"}, f[0], "only scratch may be writable")
			assert.Contains(t, opts, ",nodev,")
		}
	}
}

func TestNoNetworkButLoopback(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	accepted := make(chan struct{}, 1)
	go func() {
		if c, err := ln.Accept(); err == nil {
			accepted <- struct{}{}
			c.Close()
		}
	}()
	port := ln.Addr().(*net.TCPAddr).Port
	res := jailRun(t, fmt.Sprintf(`import socket
def t(f):
    try: f(); return "OK"
    except OSError as e: return e.__class__.__name__
s = socket.socket(); s.settimeout(2)
print("host", t(lambda: s.connect(("127.0.0.1", %d))))
s = socket.socket(); s.settimeout(2)
print("out", t(lambda: s.connect(("1.1.1.1", 80))))
print("ifaces", t(socket.if_nameindex))
srv = socket.socket(); srv.bind(("127.0.0.1", 0)); srv.listen()
c = socket.create_connection(srv.getsockname()); print("lo", "OK")`, port), nil)
	require.Equal(t, StatusOK, res.Status, string(res.Stderr))
	out := string(res.Stdout)
	assert.Contains(t, out, "host ConnectionRefusedError\n")
	assert.Contains(t, out, "out OSError\n") // ENETUNREACH: no route at all
	// Netlink is outside the socket family allowlist (docs/security.md N07);
	// its route protocol, which glibc probes, fails quietly with
	// EAFNOSUPPORT, as on a kernel without netlink (seccomp/quiet.go).
	assert.Contains(t, out, "ifaces OSError\n")
	assert.Nil(t, res.Seccomp, "a quiet probe is not reported")
	assert.Contains(t, out, "lo OK\n")
	select {
	case <-accepted:
		t.Fatal("the jail reached the host's listener")
	default:
	}
}

func TestHostname(t *testing.T) {
	host, _ := os.Hostname()
	res := jailRun(t, `import socket, os; print(socket.gethostname(), os.uname().nodename)`, nil)
	require.Equal(t, StatusOK, res.Status, string(res.Stderr))
	assert.Equal(t, "sandbox sandbox\n", string(res.Stdout))
	assert.NotEqual(t, "sandbox", host)
	now, _ := os.Hostname()
	assert.Equal(t, host, now, "the host's name must not change")
}

// Every namespace of the program, and of each of its threads and children,
// is the jail's own: none is the host's, and no two jails share one (the
// mount, net, ipc and uts ones are made by the init stage's locked thread,
// the user and pid ones by its clone).
func TestOwnNamespaces(t *testing.T) {
	kinds := []string{"user", "pid", "mnt", "net", "ipc", "uts", "cgroup"}
	host := map[string]string{}
	for _, k := range kinds {
		l, err := os.Readlink("/proc/self/ns/" + k)
		require.NoError(t, err)
		host[k] = l
	}
	prog := `
import os, threading, subprocess, json
kinds = ['user', 'pid', 'mnt', 'net', 'ipc', 'uts', 'cgroup']
def mine(base): return {k: os.readlink(base + k) for k in kinds}
seen = [mine('/proc/self/ns/')]
t = threading.Thread(target=lambda: seen.append(mine('/proc/thread-self/ns/'))); t.start(); t.join()
child = "import os, json; print(json.dumps({k: os.readlink('/proc/self/ns/' + k) for k in %r}))" % kinds
seen.append(json.loads(subprocess.run(['/usr/bin/python3', '-c', child], capture_output=True, text=True).stdout))
print(json.dumps(seen), flush=True)
import time; time.sleep(1)  # alive while the other jail looks: numbers of freed namespaces are reused
`
	// Two jails at once: only live namespaces have distinct numbers.
	r := testRunner(t)
	mounts := systest.MountCount()
	specs := []*Spec{{ID: NewID(), Program: []byte(prog), Limits: DefaultLimits()}, {ID: NewID(), Program: []byte(prog), Limits: DefaultLimits()}}
	results := make([]*Result, 2)
	errs := make([]error, 2)
	var wg sync.WaitGroup
	for i, s := range specs {
		wg.Go(func() { results[i], errs[i] = r.Run(context.Background(), s) })
	}
	wg.Wait()
	var jails []map[string]string
	for i, res := range results {
		require.NoError(t, errs[i])
		systest.NoLeftovers(t, res.HostUID, specs[i].ID, mounts)
		require.Equal(t, StatusOK, res.Status, string(res.Stderr))
		var seen []map[string]string
		require.NoError(t, json.Unmarshal(res.Stdout, &seen), string(res.Stdout))
		require.Len(t, seen, 3)
		for _, ns := range seen[1:] {
			assert.Equal(t, seen[0], ns, "a thread or child of the program is in other namespaces")
		}
		for _, k := range kinds {
			assert.NotEqual(t, host[k], seen[0][k], "the jail shares the host's %s namespace", k)
		}
		jails = append(jails, seen[0])
	}
	for _, k := range kinds {
		assert.NotEqual(t, jails[0][k], jails[1][k], "two jails share a %s namespace", k)
	}
}

func TestEnvironmentScrubbed(t *testing.T) {
	t.Setenv("AGENTJAIL_SECRET_TOKEN", "hunter2")
	res := jailRun(t, `import os; print(sorted(os.environ.items()))`, func(s *Spec) { s.Env = map[string]string{"MY_FLAG": "1"} })
	require.Equal(t, StatusOK, res.Status, string(res.Stderr))
	assert.Equal(t, "[('HOME', '/workspace'), ('LANG', 'C.UTF-8'), ('MKL_NUM_THREADS', '1'), ('MPLBACKEND', 'Agg'), "+
		"('MPLCONFIGDIR', '/tmp/matplotlib'), ('MY_FLAG', '1'), ('OMP_NUM_THREADS', '1'), ('OPENBLAS_NUM_THREADS', '1'), "+
		"('PATH', '/usr/local/bin:/usr/bin:/bin'), ('TMPDIR', '/tmp')]\n", string(res.Stdout),
		"the jail's own variables, the libraries' defaults (libraryEnv) and the request's; nothing of the caller's")
}

// Each variable of the program's os.environ is the same in libc (what a
// library reads with getenv), whether the run's environment is the warm
// zygote's own or differs from it: a variable added, one changed.
func TestEnvironmentSameInLibc(t *testing.T) {
	code := `import ctypes, os
getenv = ctypes.CDLL(None).getenv
getenv.restype = ctypes.c_char_p
print(all(getenv(k.encode()) == v.encode() for k, v in os.environ.items()), getenv(b"MY_FLAG"), getenv(b"OPENBLAS_NUM_THREADS"))`
	for name, c := range map[string]struct {
		mod  func(*Spec)
		want string
	}{
		"the zygote's": {nil, "True None b'1'\n"},
		"its own":      {func(s *Spec) { s.Env = map[string]string{"MY_FLAG": "1"}; s.Limits.CPUs = 2 }, "True b'1' b'2'\n"},
	} {
		t.Run(name, func(t *testing.T) {
			res := jailRun(t, code, c.mod)
			require.Equal(t, StatusOK, res.Status, string(res.Stderr))
			assert.Equal(t, c.want, string(res.Stdout))
		})
	}
}

func TestFdsClosed(t *testing.T) {
	res := jailRun(t, `import os
for fd in sorted(int(f) for f in os.listdir("/proc/self/fd")):
    try: print(fd, os.readlink(f"/proc/self/fd/{fd}"))
    except OSError: pass`, nil)
	require.Equal(t, StatusOK, res.Status, string(res.Stderr))
	lines := strings.Split(strings.TrimSpace(string(res.Stdout)), "\n")
	require.Len(t, lines, 3, "only stdio: %q", lines)
	assert.Equal(t, "0 /dev/null", lines[0])
	assert.Regexp(t, `^1 pipe:\[\d+\]$`, lines[1])
	assert.Regexp(t, `^2 pipe:\[\d+\]$`, lines[2])
}

// TestReportChannel: with Spec.Report the program has exactly one more fd,
// 3, a pipe whose content comes back capped at MaxReportBytes; CodeFiles
// sit read-only beside the program under /code.
func TestReportChannel(t *testing.T) {
	res := jailRun(t, `import os
def isopen(fd):
    try: return os.fstat(fd) is not None
    except OSError: return False
print([fd for fd in sorted(int(f) for f in os.listdir("/proc/self/fd")) if isopen(fd)])
print(open("/code/inputs.json").read())
try:
    open("/code/inputs.json", "w")
except OSError as e:
    print(type(e).__name__)
os.write(3, b"report:")
chunk = b"x" * 65536
for _ in range(16 * 16 + 1):
    os.write(3, chunk)
`, func(s *Spec) {
		s.Report = true
		s.CodeFiles = []File{{Path: "inputs.json", Content: []byte(`{"function": "f"}`)}}
	})
	require.Equal(t, StatusOK, res.Status, string(res.Stderr))
	assert.Equal(t, "[0, 1, 2, 3]\n{\"function\": \"f\"}\nOSError\n", string(res.Stdout))
	assert.Len(t, res.Report, MaxReportBytes)
	assert.True(t, res.ReportTruncated)
	assert.Equal(t, "report:xxx", string(res.Report[:10]))

	res = jailRun(t, `import os; os.write(3, b'{"ok": 1}')`, func(s *Spec) { s.Report = true })
	require.Equal(t, StatusOK, res.Status, string(res.Stderr))
	assert.Equal(t, `{"ok": 1}`, string(res.Report))
	assert.False(t, res.ReportTruncated)
}

func TestStdinAndFiles(t *testing.T) {
	res := jailRun(t, `import sys; print(sys.stdin.read().upper()); print(open("data/in.csv").read())`, func(s *Spec) {
		s.Stdin = []byte("hello stdin")
		s.Files = []File{{Path: "data/in.csv", Content: []byte("a,b\n1,2")}}
	})
	require.Equal(t, StatusOK, res.Status, string(res.Stderr))
	assert.Equal(t, "HELLO STDIN\na,b\n1,2\n", string(res.Stdout))
}

// python3 starts with no signal of the daemon's blocked or ignored: a
// jail started from a thread that blocks SIGUSR1, in a process that
// ignores SIGHUP (as under nohup), runs a program that has neither.
func TestJailStartsWithDefaultSignals(t *testing.T) {
	signal.Ignore(syscall.SIGHUP)
	defer signal.Reset(syscall.SIGHUP)
	r := freshRunner(t) // no prepared jails: this run's jail is started from this thread
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var usr1, old unix.Sigset_t
	usr1.Val[0] = 1 << (syscall.SIGUSR1 - 1)
	require.NoError(t, unix.PthreadSigmask(unix.SIG_BLOCK, &usr1, &old))
	defer unix.PthreadSigmask(unix.SIG_SETMASK, &old, nil)
	res := runIn(t, r, &Spec{Program: []byte(`for l in open("/proc/self/status"):
    if l.startswith(("SigBlk", "SigIgn")): print(l.split()[0], int(l.split()[1], 16))
`)})
	require.Equal(t, StatusOK, res.Status, string(res.Stderr))
	var blk, ign uint64
	_, err := fmt.Sscanf(string(res.Stdout), "SigBlk: %d\nSigIgn: %d\n", &blk, &ign)
	require.NoError(t, err, string(res.Stdout))
	assert.Zero(t, blk, "blocked signals")
	assert.Zero(t, ign&(1<<(syscall.SIGHUP-1)), "SIGHUP ignored (SigIgn %#x)", ign)
}

// A variable of maxEnvVarBytes, the most Validate takes, reaches the
// program: the kernel's own limit at exec is not below it.
func TestLargestEnvVariableIsExeced(t *testing.T) {
	v := strings.Repeat("v", maxEnvVarBytes-2)
	res := jailRun(t, `import os; print(len(os.environ["A"]))`, func(s *Spec) { s.Env = map[string]string{"A": v} })
	require.Equal(t, StatusOK, res.Status, string(res.Stderr))
	assert.Equal(t, fmt.Sprint(len(v), "\n"), string(res.Stdout))
}

// Every spec Validate passes fits the scratch file system: MaxFiles files
// flat, or half as many with a directory each (MaxFiles inodes in all).
func TestMaxFilesFit(t *testing.T) {
	for name, path := range map[string]func(int) string{
		"flat":         func(i int) string { return fmt.Sprint("f", i) },
		"one dir each": func(i int) string { return fmt.Sprint("d", i, "/f") },
	} {
		n := MaxFiles
		if name != "flat" {
			n = MaxFiles / 2
		}
		res := jailRun(t, `import os; print(sum(len(fs) for _, _, fs in os.walk(".")))`, func(s *Spec) {
			for i := range n {
				s.Files = append(s.Files, File{Path: path(i)})
			}
		})
		require.Equal(t, StatusOK, res.Status, "%s: %s", name, res.Stderr)
		assert.Equal(t, fmt.Sprint(n, "\n"), string(res.Stdout), name)
	}
}
