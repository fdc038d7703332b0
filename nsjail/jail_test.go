package nsjail

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"regexp"
	"runtime"
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
	"agentjail/seccomp"
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

func TestMemoryLimitStopsAllocation(t *testing.T) {
	res := jailRun(t, `x = bytearray(200 << 20)
for i in range(0, len(x), 4096): x[i] = 1
print("survived")`, func(s *Spec) { s.Limits.MemoryBytes = 64 << 20 })
	assert.Equal(t, StatusKilled, res.Status)
	assert.Equal(t, KillMemoryLimit, res.KillReason)
	assert.Equal(t, syscall.SIGKILL, res.Signal)
	assert.NotContains(t, string(res.Stdout), "survived")
	assert.GreaterOrEqual(t, res.OOMKills, int64(1))
	assert.LessOrEqual(t, res.PeakMemoryBytes, int64(64<<20))
	assert.Greater(t, res.PeakMemoryBytes, int64(48<<20))
}

func TestWallTimeout(t *testing.T) {
	res := jailRun(t, `import time; time.sleep(30)`, func(s *Spec) { s.Limits.WallTime = time.Second })
	assert.Equal(t, StatusKilled, res.Status)
	assert.Equal(t, KillWallTimeout, res.KillReason)
	assert.InDelta(t, float64(time.Second), float64(res.WallTime), float64(100*time.Millisecond))
	assert.Less(t, res.CPUTime, 200*time.Millisecond)
}

func TestForkBombContained(t *testing.T) {
	res := jailRun(t, `import os, time
n = 0
end = time.time() + 1.5
while time.time() < end:
    try:
        if os.fork() == 0:
            time.sleep(60); os._exit(0)
        n += 1
    except OSError:
        time.sleep(0.01)
print("forked", n, flush=True)
time.sleep(60)`, func(s *Spec) {
		s.Limits.Pids = 32
		s.Limits.WallTime = 3 * time.Second
	})
	assert.Equal(t, KillWallTimeout, res.KillReason)
	assert.Contains(t, string(res.Stdout), "forked 31\n", "python3 itself and 31 children")
	assert.Greater(t, res.PidsMaxHits, int64(0))
	// The host can still fork.
	require.NoError(t, exec1("/bin/true"))
}

func exec1(path string) error {
	p, err := os.StartProcess(path, []string{path}, &os.ProcAttr{})
	if err != nil {
		return err
	}
	_, err = p.Wait()
	return err
}

func TestTmpSizeLimit(t *testing.T) {
	res := jailRun(t, `import errno
n = 0
try:
    with open("/tmp/big", "wb") as f:
        for i in range(100):
            f.write(b"x" * (1 << 20)); f.flush(); n += 1
except OSError as e:
    print(errno.errorcode[e.errno], n)`, func(s *Spec) { s.Limits.TmpBytes = 16 << 20 })
	require.Equal(t, StatusOK, res.Status, string(res.Stderr))
	assert.Regexp(t, `^ENOSPC 1[56]\n$`, string(res.Stdout))
}

func TestOrphanDoesNotHoldTheRun(t *testing.T) {
	start := time.Now()
	res := jailRun(t, `import os, signal, time
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        for s in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT): signal.signal(s, signal.SIG_IGN)
        time.sleep(3600)
    os._exit(0)
print("main exiting", flush=True)`, nil)
	assert.Equal(t, StatusOK, res.Status)
	assert.Less(t, time.Since(start), 3*time.Second)
}

func TestSetupErrors(t *testing.T) {
	r := testRunner(t)
	_, err := r.Run(t.Context(), &Spec{Program: []byte("pass"), Python: "/usr/bin/no-such-python"})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "no-such-python")

	_, err = r.Run(t.Context(), &Spec{Program: []byte("pass"), Python: "/root/.pyenv/shims/python3"})
	require.Error(t, err)

	l := DefaultLimits()
	l.MemoryBytes = 1 << 20
	_, err = r.Run(t.Context(), &Spec{Program: []byte("pass"), Limits: l})
	var fe *FieldError
	require.ErrorAs(t, err, &fe)
	assert.Equal(t, "limits.memory_bytes", fe.Field)
}

func TestSeccompErrnoModeNamesViolations(t *testing.T) {
	res := jailRun(t, `import ctypes, errno, threading
libc = ctypes.CDLL(None, use_errno=True)
def sc(f, *a):
    r = f(*a)
    return "OK" if r != -1 else errno.errorcode[ctypes.get_errno()]
print(sc(libc.unshare, 0x10000000), sc(libc.ptrace, 0, 0, 0, 0), sc(libc.ptrace, 0, 0, 0, 0))
t = threading.Thread(target=lambda: None); t.start(); t.join(); print("thread ok")`, nil)
	require.Equal(t, StatusOK, res.Status, string(res.Stderr))
	assert.Equal(t, "EPERM EPERM EPERM\nthread ok\n", string(res.Stdout))
	require.NotNil(t, res.Seccomp)
	assert.Equal(t, "unshare", res.Seccomp.Syscall, "the first violation is on top")
	assert.Equal(t, 272, res.Seccomp.Number)
	require.Len(t, res.Seccomp.Calls, 2)
	assert.Equal(t, 1, res.Seccomp.Calls[0].Count)
	assert.Equal(t, "ptrace", res.Seccomp.Calls[1].Syscall)
	assert.Equal(t, 2, res.Seccomp.Calls[1].Count)
}

func TestSeccompKillMode(t *testing.T) {
	res := jailRun(t, `import ctypes
print("before", flush=True)
ctypes.CDLL(None).ptrace(0, 0, 0, 0)
print("after", flush=True)`, func(s *Spec) { s.OnForbiddenSyscall = seccomp.ModeKill })
	assert.Equal(t, StatusKilled, res.Status)
	assert.Equal(t, KillSeccomp, res.KillReason)
	assert.Equal(t, "before\n", string(res.Stdout), "the forbidden call never returned")
	require.NotNil(t, res.Seccomp)
	assert.Equal(t, "ptrace", res.Seccomp.Syscall)
}

func TestSeccompForeignABIKills(t *testing.T) {
	// i386 getpid through int 0x80, from machine code: always a kill.
	res := jailRun(t, `import ctypes, mmap
m = mmap.mmap(-1, 4096, prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)
m.write(bytes([0xb8, 20, 0, 0, 0, 0xcd, 0x80, 0xc3]))
f = ctypes.CFUNCTYPE(ctypes.c_int)(ctypes.addressof(ctypes.c_char.from_buffer(m)))
print("before", flush=True); f(); print("after")`, nil)
	// The filter notifies a foreign-ABI call; the supervisor ends the
	// jail before it answers: the call never returns.
	assert.Equal(t, StatusKilled, res.Status)
	assert.Equal(t, KillSeccomp, res.KillReason)
	assert.Equal(t, syscall.SIGKILL, res.Signal)
	assert.Equal(t, "before\n", string(res.Stdout))
	require.NotNil(t, res.Seccomp)
	assert.Equal(t, "i386", res.Seccomp.ABI)
	assert.Equal(t, 20, res.Seccomp.Number)
}

// A program that sends itself SIGSYS dies of it, and that is not a
// seccomp kill: only the supervisor's evidence (a notification) is.
func TestSelfSentSIGSYSIsNoSeccompKill(t *testing.T) {
	res := jailRun(t, "import os, signal\nsignal.signal(signal.SIGSYS, signal.SIG_DFL)\nos.kill(os.getpid(), signal.SIGSYS)", nil)
	assert.Equal(t, StatusSignaled, res.Status)
	assert.Equal(t, syscall.SIGSYS, res.Signal)
	assert.Equal(t, KillNone, res.KillReason)
	assert.Nil(t, res.Seccomp)
}

// corpus is ordinary Python that must not notice the jail or its filter.
const corpus = `import asyncio, decimal, hashlib, json, multiprocessing, os, random, re, socket, sqlite3, ssl, subprocess, tempfile, threading, time, zlib
def sq(x): return x * x
with multiprocessing.get_context("fork").Pool(2) as p: print(p.map(sq, range(5)))
t = threading.Thread(target=lambda: None); t.start(); t.join()
print(subprocess.run(["/bin/sh", "-c", "echo sh"], capture_output=True, text=True).stdout.strip())
db = sqlite3.connect(":memory:"); db.execute("create table t(x)"); db.execute("insert into t values (1)"); print(db.execute("select x from t").fetchall())
print(json.dumps({"a": [1, 2]}), re.sub("a", "b", "aa"), decimal.Decimal("1.1") + decimal.Decimal("2.2"))
print(zlib.decompress(zlib.compress(b"x" * 100)) == b"x" * 100, hashlib.sha256(b"").hexdigest()[:8])
ssl.create_default_context(); print("ssl ok")
async def main(): await asyncio.sleep(0.01); return "asyncio ok"
print(asyncio.run(main()))
with tempfile.NamedTemporaryFile() as f: f.write(b"x"); f.flush(); print(os.path.getsize(f.name))
a, b = socket.socketpair(); a.send(b"ping"); print(b.recv(4))
print(len(os.listdir("/")) > 0, random.random() < 1, time.monotonic() > 0)`

func TestSeccompNormalPythonUnaffected(t *testing.T) {
	res := jailRun(t, corpus, nil)
	require.Equal(t, StatusOK, res.Status, string(res.Stderr))
	assert.Equal(t, "[0, 1, 4, 9, 16]\nsh\n[(1,)]\n{\"a\": [1, 2]} bb 3.3\nTrue e3b0c442\nssl ok\nasyncio ok\n1\nb'ping'\nTrue True True\n", string(res.Stdout))
	assert.Nil(t, res.Seccomp, "ordinary Python makes no forbidden call")
	// And the same output outside the jail.
	bare, err := exec.Command("/usr/bin/python3", "-I", "-c", corpus).Output()
	require.NoError(t, err)
	assert.Equal(t, string(bare), string(res.Stdout), "identical in and out of the jail")
}

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
