//go:build linux && cgo && !agentjail_nolibseccomp

package seccomp

// Real-kernel tests. The test binary re-runs itself as a child (TestMain
// dispatches on childRoleEnv) that plays the jail's init stage: a locked
// thread calls Install, sends the listener to the parent over a socketpair
// (SCM_RIGHTS), closes it and then execs python3 or probes from Go. The
// parent runs Supervise on the listener, as nsjail's parent side does.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

const (
	childRoleEnv = "AGENTJAIL_SECCOMP_TEST_CHILD" // which child to be
	childArgvEnv = "AGENTJAIL_SECCOMP_TEST_ARGV"  // JSON argv for the "exec" role
	childNEnv    = "AGENTJAIL_SECCOMP_TEST_N"     // iterations for "roundtrip"
	childProgFd  = 3                              // the marshalled Program
	childSockFd  = 4                              // socketpair end for the listener
	pythonPath   = "/usr/bin/python3"
)

func TestMain(m *testing.M) {
	if role := os.Getenv(childRoleEnv); role != "" {
		runChild(role) // never returns
	}
	os.Exit(m.Run())
}

// runChild is the jail's init stage in miniature. Every path ends in exec
// or exit.
func runChild(role string) {
	runtime.LockOSThread()
	fail := func(format string, a ...any) {
		fmt.Fprintf(os.Stderr, "child: "+format+"\n", a...)
		os.Exit(3)
	}
	// A process killed by SIGSYS would otherwise dump core.
	if err := unix.Setrlimit(unix.RLIMIT_CORE, &unix.Rlimit{}); err != nil {
		fail("rlimit: %v", err)
	}
	b, err := io.ReadAll(os.NewFile(childProgFd, "program"))
	if err != nil {
		fail("read program: %v", err)
	}
	var p Program
	if err := p.UnmarshalBinary(b); err != nil {
		fail("%v", err)
	}
	var argv []string
	if role == "exec" {
		if err := json.Unmarshal([]byte(os.Getenv(childArgvEnv)), &argv); err != nil || len(argv) == 0 {
			fail("argv: %v", err)
		}
	}
	n, _ := strconv.Atoi(os.Getenv(childNEnv))

	// From here on: the init stage's tail, in its order.
	t0 := time.Now()
	fd, err := Install(&p)
	installNs := time.Since(t0).Nanoseconds()
	if err != nil {
		fail("%v", err)
	}
	if err := unix.Sendmsg(childSockFd, []byte{0}, unix.UnixRights(fd), nil, 0); err != nil {
		fail("sendmsg: %v", err)
	}
	unix.Close(fd)
	unix.Close(childSockFd)
	unix.Close(childProgFd)

	switch role {
	case "exec":
		err := unix.Exec(argv[0], argv, []string{"PATH=/usr/bin:/bin", "LANG=C.UTF-8"})
		fail("exec: %v", err)
	case "install":
		fmt.Println(installNs)
	case "x32":
		// getpid through the x32 ABI: notified, never run.
		r, _, e := unix.RawSyscall(x32SyscallBit|unix.SYS_GETPID, 0, 0, 0)
		fmt.Printf("x32 getpid returned %d %v\n", int(r), e)
	case "roundtrip":
		// kcmp is forbidden: each call is one notification round trip.
		t0 := time.Now()
		for i := 0; i < n; i++ {
			if _, _, e := unix.Syscall6(unix.SYS_KCMP, 0, 0, 0, 0, 0, 0); e != unix.EPERM {
				fail("kcmp: %v, want EPERM", e)
			}
		}
		fmt.Println(time.Since(t0).Nanoseconds())
	case "allowed":
		// An allowed call that the kernel's action cache cannot skip
		// (ioctl has an argument check): the filter's own cost.
		t0 := time.Now()
		for i := 0; i < n; i++ {
			unix.Syscall(unix.SYS_IOCTL, 1<<20, unix.TCGETS, 0)
		}
		fmt.Println(time.Since(t0).Nanoseconds())
	default:
		fail("unknown role %q", role)
	}
	os.Exit(0)
}

// requireKernel skips unless this kernel can run the filter.
func requireKernel(t testing.TB) {
	t.Helper()
	b, err := os.ReadFile("/proc/sys/kernel/seccomp/actions_avail")
	if err != nil {
		t.Skipf("seccomp not available: %v", err)
	}
	for _, a := range []string{"user_notif", "kill_process", "errno"} {
		if !strings.Contains(string(b), a) {
			t.Skipf("kernel lacks seccomp action %s", a)
		}
	}
}

func requirePython(t testing.TB) {
	t.Helper()
	requireKernel(t)
	if _, err := os.Stat(pythonPath); err != nil {
		t.Skipf("%s: %v", pythonPath, err)
	}
}

type child struct {
	cmd      *exec.Cmd
	listener int
	stdout   bytes.Buffer
	stderr   bytes.Buffer
}

// startChild starts the test binary in a role, with the default program,
// and returns once it has sent its listener.
func startChild(t testing.TB, role string, stdin io.Reader, env ...string) *child {
	t.Helper()
	prog := defaultProgram(t)
	b, err := prog.MarshalBinary()
	require.NoError(t, err)
	progFile := filepath.Join(t.TempDir(), "program.bpf")
	require.NoError(t, os.WriteFile(progFile, b, 0o600))
	pf, err := os.Open(progFile)
	require.NoError(t, err)
	defer pf.Close()

	pair, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	require.NoError(t, err)
	parentEnd := os.NewFile(uintptr(pair[0]), "parent")
	childEnd := os.NewFile(uintptr(pair[1]), "child")
	defer parentEnd.Close()

	c := &child{}
	c.cmd = exec.Command(os.Args[0], "-test.run=^$")
	c.cmd.Env = append([]string{childRoleEnv + "=" + role}, env...)
	c.cmd.ExtraFiles = []*os.File{pf, childEnd}
	c.cmd.Stdin, c.cmd.Stdout, c.cmd.Stderr = stdin, &c.stdout, &c.stderr
	require.NoError(t, c.cmd.Start())
	childEnd.Close()

	// The child closes its end after sending, or dies: either way this
	// returns.
	oob := make([]byte, unix.CmsgSpace(4))
	_, oobn, _, _, err := unix.Recvmsg(pair[0], make([]byte, 1), oob, 0)
	require.NoError(t, err)
	if oobn == 0 {
		c.cmd.Wait()
		t.Fatalf("child sent no listener; stderr: %s", c.stderr.String())
	}
	msgs, err := unix.ParseSocketControlMessage(oob[:oobn])
	require.NoError(t, err)
	require.Len(t, msgs, 1)
	fds, err := unix.ParseUnixRights(&msgs[0])
	require.NoError(t, err)
	require.Len(t, fds, 1)
	c.listener = fds[0]
	return c
}

// supervise runs Supervise in the background; wait returns its error.
func supervise(ctx context.Context, c *child, mode Mode, col *Collector, on func(Violation)) (wait func() error) {
	done := make(chan error, 1)
	go func() { done <- Supervise(ctx, c.listener, mode, col, on) }()
	return func() error {
		select {
		case err := <-done:
			return err
		case <-time.After(10 * time.Second):
			return fmt.Errorf("Supervise did not return 10 s after the child was reaped")
		}
	}
}

// probeScript runs each probe in a forked child (so that a probe that
// succeeds unfiltered, e.g. unshare, cannot change the next one) and prints
// "label result"; a child killed by a signal prints "killed:N".
const probeScript = `
import asyncio, ctypes, errno, mmap, multiprocessing, os, socket, struct, subprocess, sys, tempfile, threading
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
M = 0xffffffffffffffff
def sc(nr, *args):
    a = [ctypes.c_ulong(x & M) if isinstance(x, int) else x for x in args]
    r = libc.syscall(ctypes.c_long(nr), *a)
    return "OK:%d" % r if r != -1 else errno.errorcode[ctypes.get_errno()]
def t(f, *a):
    try:
        f(*a); return "OK"
    except OSError as e:
        return errno.errorcode.get(e.errno, str(e.errno))
def forked(label, fn):
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        try: res = str(fn())
        except BaseException as e: res = type(e).__name__
        os.write(w, res.encode()); os._exit(0)
    os.close(w)
    out = os.read(r, 4096).decode(); os.close(r)
    _, st = os.waitpid(pid, 0)
    print(label, out if os.WIFEXITED(st) else "killed:%d" % os.WTERMSIG(st), flush=True)
def child_safe(res):
    # a clone/clone3 that succeeds returns 0 in the new process: end it.
    if res == "OK:0": os._exit(0)
    return res
tmp = tempfile.mkdtemp()
buf = ctypes.create_string_buffer(256)

def thread():
    th = threading.Thread(target=lambda: None); th.start(); th.join(); return "OK"
def fork():
    p = os.fork()
    if p == 0: os._exit(7)
    return os.waitstatus_to_exitcode(os.waitpid(p, 0)[1])
def sockets():
    a, b = socket.socketpair(); a.send(b"x"); assert b.recv(1) == b"x"
    s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen()
    c = socket.create_connection(s.getsockname()); d, _ = s.accept(); c.sendall(b"y"); assert d.recv(1) == b"y"
    u = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM); u.close()
    return "OK"
def pool():
    with multiprocessing.get_context("fork").Pool(2) as p: return p.map(abs, [-1, -2])
async def aio():
    p = await asyncio.create_subprocess_exec("/bin/sh", "-c", "exit 4"); return await p.wait()
def int80_getpid():
    m = mmap.mmap(-1, 4096, prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)
    m.write(bytes([0xb8, 20, 0, 0, 0, 0xcd, 0x80, 0xc3]))  # mov eax, 20 (i386 getpid); int 0x80; ret
    f = ctypes.CFUNCTYPE(ctypes.c_int)(ctypes.addressof(ctypes.c_char.from_buffer(m)))
    r = f()
    return "OK" if r == os.getpid() else errno.errorcode.get(-r, str(r))
ro = os.open("/usr/lib/os-release" if os.path.exists("/usr/lib/os-release") else sys.executable, os.O_RDONLY)
def msync_sync(flags):
    m = mmap.mmap(-1, 8192); a = ctypes.addressof(ctypes.c_char.from_buffer(m)) + 4096
    del m  # unmapped again: a real msync fails with ENOMEM
    return sc(26, a, 4096, flags)
allow_all = ctypes.create_string_buffer(struct.pack("HBBI", 6, 0, 0, 0x7fff0000))  # ret ALLOW
fprog = struct.pack("HxxxxxxQ", 1, ctypes.addressof(allow_all))

forked("getpid", lambda: "OK" if sc(39) == "OK:%d" % os.getpid() else "wrong")
forked("thread", thread)
forked("fork", fork)
forked("subprocess", lambda: subprocess.run(["/bin/sh", "-c", "exit 3"]).returncode)
forked("sockets", sockets)
forked("mkfifo", lambda: t(os.mkfifo, os.path.join(tmp, "fifo")))
forked("pool", pool)
forked("asyncio", lambda: asyncio.run(aio()))
forked("tcgets", lambda: sc(16, 0, 0x5401, buf))
forked("unshare", lambda: sc(272, 0x10000000))
forked("ptrace", lambda: sc(101, 0x4206, 0x3fffffff, 0, 0))
forked("keyctl", lambda: sc(250, 0, -4, 0))
forked("vsock", lambda: t(socket.socket, 40, socket.SOCK_STREAM))
forked("netlink", lambda: t(socket.socket, socket.AF_NETLINK, socket.SOCK_RAW, 0))
forked("netlink-audit", lambda: t(socket.socket, socket.AF_NETLINK, socket.SOCK_RAW, 9))
forked("gai-addrconfig", lambda: t(socket.getaddrinfo, "localhost", 80, 0, socket.SOCK_STREAM, 0, socket.AI_ADDRCONFIG))
forked("preadv2", lambda: t(os.preadv, ro, [bytearray(8)], 0))
forked("preadv2-nowait", lambda: t(os.preadv, ro, [bytearray(8)], 0, os.RWF_NOWAIT))
forked("clone-newuser", lambda: child_safe(sc(56, 0x10000000 | 17, 0, 0, 0, 0)))
forked("clone3", lambda: child_safe(sc(435, ctypes.create_string_buffer(struct.pack("8Q", 0, 0, 0, 0, 17, 0, 0, 0)), 64)))
forked("tiocsti", lambda: sc(16, 0, 0x5412, buf))
forked("tiocsti-high", lambda: sc(16, 0, (0x123 << 32) | 0x5412, buf))
forked("mknod-chr", lambda: sc(259, -100, os.path.join(tmp, "null").encode(), 0o020000 | 0o600, os.makedev(1, 3)))
forked("seccomp-listener", lambda: sc(317, 1, 8, fprog))
forked("prctl-seccomp", lambda: sc(157, 22, 2, fprog))
forked("personality", lambda: sc(135, 0x400000))
forked("io_uring", lambda: sc(425, 8, buf))
forked("bpf", lambda: sc(321, 0, ctypes.create_string_buffer(struct.pack("IIII", 2, 4, 4, 1), 128), 128))
forked("x32-getuid", lambda: sc(0x40000000 | 102))
forked("int80-getpid", int80_getpid)
forked("fsync-badfd", lambda: sc(74, -1))
forked("fsync-ro", lambda: sc(74, ro))
forked("fdatasync-badfd", lambda: sc(75, -1))
forked("syncfs-badfd", lambda: sc(306, -1))
forked("sync_file_range-badfd", lambda: sc(277, -1, 0, 0, 2))
forked("fadvise-badfd", lambda: sc(221, -1, 0, 0, 4))
forked("msync-sync-unmapped", lambda: msync_sync(4))
forked("msync-async-unmapped", lambda: msync_sync(1))
forked("io_setup", lambda: sc(206, 4096, ctypes.byref(ctypes.c_ulong(0))))
forked("inotify_init1", lambda: sc(294, 0))
forked("mq_open", lambda: sc(240, b"agentjail-no-such-queue", 0, 0, 0))
forked("membarrier-global", lambda: sc(324, 1, 0, 0))
forked("membarrier-query", lambda: "OK" if sc(324, 0, 0, 0).startswith("OK:") else "wrong")
forked("mmap-hugetlb", lambda: sc(9, 0, 2 << 20, 3, 0x22 | 0x40000, -1, 0))
forked("memfd-hugetlb", lambda: sc(319, b"x", 4))
forked("shm-lock", lambda: sc(31, -1, 11, 0))
forked("remap_file_pages", lambda: sc(216, 0, 4096, 0, 0, 0))
print("end", flush=True)
`

// probe is one line of probeScript: what it prints in the jail, and whether
// the unfiltered run must print something else (proof that the filter, not
// the kernel, made the difference).
type probe struct {
	label  string
	jailed string
	differ bool
}

var probes = []probe{
	{"getpid", "OK", false},
	{"thread", "OK", false},
	{"fork", "7", false},
	{"subprocess", "3", false},
	{"sockets", "OK", false},
	{"mkfifo", "OK", false},
	{"pool", "[1, 2]", false},
	{"asyncio", "4", false},
	{"tcgets", "ENOTTY", false}, // reached the kernel: ioctl is allowed
	{"unshare", "EPERM", true},
	{"ptrace", "EPERM", true}, // ESRCH unfiltered
	{"keyctl", "EPERM", true},
	{"vsock", "EPERM", true},
	{"netlink", "EAFNOSUPPORT", true}, // quiet (quiet.go)
	{"netlink-audit", "EPERM", true},
	{"gai-addrconfig", "OK", false}, // its netlink probe fails quietly
	{"preadv2", "OK", false},
	{"preadv2-nowait", "ENOTSUP", true}, // quiet; reads from the page cache unfiltered
	{"clone-newuser", "EPERM", true},
	{"clone3", "ENOSYS", true},
	{"tiocsti", "EPERM", true},      // ENOTTY unfiltered
	{"tiocsti-high", "EPERM", true}, // ENOTTY unfiltered: the kernel truncates cmd
	{"mknod-chr", "EPERM", true},
	{"seccomp-listener", "EPERM", true},
	{"prctl-seccomp", "EPERM", true},
	{"personality", "EPERM", true},
	{"io_uring", "EPERM", true},
	{"bpf", "EPERM", true},
	{"x32-getuid", "EPERM", true},   // notified (Foreign); ENOSYS unfiltered on a kernel without x32
	{"int80-getpid", "EPERM", true}, // notified (Foreign); works unfiltered with IA32 emulation
	// Succeed: 0 without running (EBADF, ENOMEM unfiltered).
	{"fsync-badfd", "OK:0", true},
	{"fsync-ro", "OK:0", false}, // a disk flush unfiltered, 0 either way
	{"fdatasync-badfd", "OK:0", true},
	{"syncfs-badfd", "OK:0", true},
	{"sync_file_range-badfd", "OK:0", true},
	{"fadvise-badfd", "OK:0", true},
	{"msync-sync-unmapped", "OK:0", true},
	{"msync-async-unmapped", "ENOMEM", false}, // runs
	{"io_setup", "EPERM", true},
	{"inotify_init1", "EPERM", true},
	{"mq_open", "EPERM", true}, // ENOENT unfiltered (no O_CREAT)
	{"membarrier-global", "EPERM", true},
	{"membarrier-query", "OK", false},
	{"mmap-hugetlb", "EPERM", true},  // ENOMEM unfiltered without a huge page pool
	{"memfd-hugetlb", "EPERM", true}, // a descriptor unfiltered
	{"shm-lock", "EPERM", true},      // EINVAL unfiltered
	{"remap_file_pages", "EPERM", true},
}

// wantReport is what the supervisor must count for probeScript, in order.
var wantReport = []CallCount{
	{"unshare", 272, 1, "", ""},
	{"ptrace", 101, 1, "", ""},
	{"keyctl", 250, 1, "", ""},
	{"socket", 41, 1, "", "AF_VSOCK"},
	{"socket", 41, 1, "", "AF_NETLINK, NETLINK_AUDIT"},
	{"clone", 56, 1, "", "CLONE_NEWUSER"},
	{"ioctl", 16, 2, "", "TIOCSTI"},
	{"mknodat", 259, 1, "", "S_IFCHR"},
	{"seccomp", 317, 1, "", ""},
	{"prctl", 157, 1, "", "PR_SET_SECCOMP"},
	{"personality", 135, 1, "", "0x400000"},
	{"io_uring_setup", 425, 1, "", ""},
	{"bpf", 321, 1, "", ""},
	{"", x32SyscallBit | 102, 1, "x32", ""},
	{"", 20, 1, "i386", ""},
	{"io_setup", 206, 1, "", ""},
	{"inotify_init1", 294, 1, "", ""},
	{"mq_open", 240, 1, "", ""},
	{"membarrier", 324, 1, "", "MEMBARRIER_CMD_GLOBAL"},
	{"mmap", 9, 1, "", "MAP_HUGETLB"},
	{"memfd_create", 319, 1, "", "MFD_HUGETLB"},
	{"shmctl", 31, 1, "", "SHM_LOCK"},
	{"remap_file_pages", 216, 1, "", ""},
}

func parseProbes(t *testing.T, out string) map[string]string {
	t.Helper()
	got := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		label, result, _ := strings.Cut(line, " ")
		got[label] = result
	}
	require.Contains(t, got, "end", "the script did not finish:\n%s", out)
	return got
}

// TestKernelPythonErrnoMode is the end-to-end proof: python3 under the
// filter starts threads, forks, runs /bin/sh, uses sockets, multiprocessing
// and asyncio without a single violation, every attack probe fails as
// docs/security.md expects, and the supervisor names each attempt with its count.
func TestKernelPythonErrnoMode(t *testing.T) {
	requirePython(t)
	argv, _ := json.Marshal([]string{pythonPath, "-I", "-u", "-c", probeScript})
	c := startChild(t, "exec", nil, childArgvEnv+"="+string(argv))
	var col Collector
	var mu sync.Mutex
	var seen []Violation
	wait := supervise(context.Background(), c, ModeErrno, &col, func(v Violation) {
		mu.Lock()
		seen = append(seen, v)
		mu.Unlock()
	})
	err := c.cmd.Wait()
	require.NoError(t, err, "stderr: %s", c.stderr.String())
	require.NoError(t, wait(), "Supervise must end by itself once the jail is reaped")

	got := parseProbes(t, c.stdout.String())
	for _, p := range probes {
		require.Equal(t, p.jailed, got[p.label], "probe %s; stdout:\n%s", p.label, c.stdout.String())
	}
	r := col.Report()
	require.NotNil(t, r)
	require.Equal(t, wantReport, r.Calls, "stdout:\n%s", c.stdout.String())
	require.Equal(t, "unshare", r.Syscall)
	require.Equal(t, 272, r.Number)

	require.Equal(t, 24, col.Total())
	require.Equal(t, 2, col.Foreign())

	mu.Lock()
	defer mu.Unlock()
	require.Len(t, seen, 24)
	var foreign []Violation
	for _, v := range seen {
		if v.Foreign {
			foreign = append(foreign, v)
		}
	}
	require.Len(t, foreign, 2)
	require.Equal(t, "x32", foreign[0].ABI())
	require.Equal(t, uint32(auditArchX86_64), foreign[0].Arch)
	require.Equal(t, x32SyscallBit|102, foreign[0].Number)
	require.Equal(t, "", foreign[0].Syscall, "an x32 number is not an x86_64 name")
	require.Equal(t, "i386", foreign[1].ABI())
	require.Equal(t, uint32(auditArchI386), foreign[1].Arch)
	require.Equal(t, 20, foreign[1].Number)
	require.Equal(t, "unshare", seen[0].Syscall)
	require.Equal(t, 272, seen[0].Number)
	require.Equal(t, uint64(0x10000000), seen[0].Args[0], "CLONE_NEWUSER; the other registers are whatever libc left there")
	require.NotEqual(t, c.cmd.Process.Pid, seen[0].Pid, "probes run in forked children")

	// The same script without the filter: each denied probe must come out
	// differently, or the probe proves nothing (docs/security.md C.2.2).
	if os.Geteuid() != 0 {
		t.Log("not root: skipping the unfiltered comparison")
		return
	}
	out, err := exec.Command(pythonPath, "-I", "-u", "-c", probeScript).Output()
	require.NoError(t, err)
	free := parseProbes(t, string(out))
	for _, p := range probes {
		if p.label == "preadv2-nowait" && free[p.label] == "ENOTSUP" {
			// The file system of /usr reads nothing without blocking
			// (the VM suite's guest has the host's / over 9p): there the
			// probe can learn nothing, with or without the filter.
			t.Logf("probe %s: RWF_NOWAIT is unsupported on this /usr even without the filter", p.label)
			continue
		}
		if p.differ {
			require.NotEqual(t, p.jailed, free[p.label], "probe %s gives the same result without the filter", p.label)
		} else {
			require.Equal(t, p.jailed, free[p.label], "probe %s", p.label)
		}
	}
	t.Logf("unfiltered: %v", free)
}

// TestKernelPythonKillMode: the first forbidden call is reported before it
// is answered, the supervisor's caller kills the jail, and the program never
// runs past the call.
func TestKernelPythonKillMode(t *testing.T) {
	requirePython(t)
	script := `
import ctypes, os, threading
libc = ctypes.CDLL(None, use_errno=True)
th = threading.Thread(target=lambda: None); th.start(); th.join()
print("before", flush=True)
r = libc.syscall(101, 0x4206, 0x3fffffff, 0, 0)
print("after", r, ctypes.get_errno(), flush=True)
`
	argv, _ := json.Marshal([]string{pythonPath, "-I", "-u", "-c", script})
	c := startChild(t, "exec", nil, childArgvEnv+"="+string(argv))
	var col Collector
	kills := make(chan Violation, 4)
	wait := supervise(context.Background(), c, ModeKill, &col, func(v Violation) {
		kills <- v
		c.cmd.Process.Kill() // what nsjail does: kill the whole jail
	})
	err := c.cmd.Wait()
	var ee *exec.ExitError
	require.ErrorAs(t, err, &ee)
	ws := ee.Sys().(syscall.WaitStatus)
	require.True(t, ws.Signaled())
	require.Equal(t, syscall.SIGKILL, ws.Signal())
	require.NoError(t, wait())

	require.Equal(t, "before\n", c.stdout.String(), "the program ran past the forbidden call")
	v := <-kills
	require.Equal(t, "ptrace", v.Syscall)
	require.Equal(t, 101, v.Number)
	require.Equal(t, c.cmd.Process.Pid, v.Pid)
	require.Equal(t, &Report{Syscall: "ptrace", Number: 101, Calls: []CallCount{{"ptrace", 101, 1, "", ""}}}, col.Report())
}

// TestKernelForeignABIIsNotified: an x32 call under the filter is a
// notification, never a SIGSYS. The supervisor marks it Foreign and passes
// it on before it answers, even in ModeErrno: a callback that kills the
// child (as nsjail's does) means the call never returns. Answered, it fails
// with EPERM; with no listener, with ENOSYS. On this kernel an x32 call
// without a filter gives ENOSYS (no CONFIG_X86_X32_ABI) or runs (with it).
func TestKernelForeignABIIsNotified(t *testing.T) {
	requireKernel(t)
	if runtime.GOARCH != "amd64" {
		t.Skip("x32 is an x86_64 ABI")
	}
	_, _, e := unix.RawSyscall(x32SyscallBit|unix.SYS_GETPID, 0, 0, 0)
	t.Logf("unfiltered x32 getpid: %v (ENOSYS: kernel without x32; 0: x32 enabled)", e)

	t.Run("killed before the answer", func(t *testing.T) {
		c := startChild(t, "x32", nil)
		var col Collector
		got := make(chan Violation, 4)
		wait := supervise(context.Background(), c, ModeErrno, &col, func(v Violation) {
			got <- v
			if v.Foreign {
				c.cmd.Process.Kill()
			}
		})
		err := c.cmd.Wait()
		var ee *exec.ExitError
		require.ErrorAs(t, err, &ee, "stdout: %s stderr: %s", c.stdout.String(), c.stderr.String())
		ws := ee.Sys().(syscall.WaitStatus)
		require.True(t, ws.Signaled())
		require.Equal(t, syscall.SIGKILL, ws.Signal(), "our kill, not the filter's SIGSYS")
		require.Empty(t, c.stdout.String(), "the x32 call returned before the callback ran")
		require.NoError(t, wait())
		v := <-got
		require.True(t, v.Foreign)
		require.Equal(t, "x32", v.ABI())
		require.Equal(t, x32SyscallBit|unix.SYS_GETPID, v.Number)
		require.Equal(t, 1, col.Total())
		require.Equal(t, 1, col.Foreign())
		require.Equal(t, &Report{Syscall: "", Number: x32SyscallBit | unix.SYS_GETPID, ABI: "x32",
			Calls: []CallCount{{"", x32SyscallBit | unix.SYS_GETPID, 1, "x32", ""}}}, col.Report())
	})
	t.Run("answered EPERM", func(t *testing.T) {
		c := startChild(t, "x32", nil)
		wait := supervise(context.Background(), c, ModeErrno, new(Collector), nil)
		require.NoError(t, c.cmd.Wait(), "stderr: %s", c.stderr.String())
		require.NoError(t, wait())
		require.Equal(t, fmt.Sprintf("x32 getpid returned -1 %v\n", unix.EPERM), c.stdout.String())
	})
	t.Run("no listener: ENOSYS", func(t *testing.T) {
		c := startChild(t, "x32", nil)
		unix.Close(c.listener)
		require.NoError(t, c.cmd.Wait(), "stderr: %s", c.stderr.String())
		require.Equal(t, fmt.Sprintf("x32 getpid returned -1 %v\n", unix.ENOSYS), c.stdout.String())
	})
}

// TestKernelNotificationBudget: the call that takes Collector.Total past
// MaxNotifications is OverBudget and passed on before its answer, in
// ModeErrno too: a callback that kills (as nsjail's does) ends the jail
// before that call returns. Without the kill every call is still answered.
func TestKernelNotificationBudget(t *testing.T) {
	requireKernel(t)
	n := MaxNotifications + 5
	t.Run("killed at the first call past it", func(t *testing.T) {
		c := startChild(t, "roundtrip", nil, fmt.Sprintf("%s=%d", childNEnv, n))
		var col Collector
		var over []int
		wait := supervise(context.Background(), c, ModeErrno, &col, func(v Violation) {
			if v.OverBudget {
				over = append(over, col.Total())
				c.cmd.Process.Kill()
			}
		})
		err := c.cmd.Wait()
		var ee *exec.ExitError
		require.ErrorAs(t, err, &ee, "stdout: %s stderr: %s", c.stdout.String(), c.stderr.String())
		require.Equal(t, syscall.SIGKILL, ee.Sys().(syscall.WaitStatus).Signal())
		require.NoError(t, wait())
		require.Equal(t, []int{MaxNotifications + 1}, over, "one call past the budget, and it never returned")
		require.Equal(t, MaxNotifications+1, col.Total())
	})
	t.Run("not killed: every call answered", func(t *testing.T) {
		c := startChild(t, "roundtrip", nil, fmt.Sprintf("%s=%d", childNEnv, n))
		var col Collector
		over := 0
		wait := supervise(context.Background(), c, ModeErrno, &col, func(v Violation) {
			if v.OverBudget {
				over++
			}
		})
		require.NoError(t, c.cmd.Wait(), c.stderr.String())
		require.NoError(t, wait())
		require.Equal(t, n, col.Total())
		require.Equal(t, 5, over)
	})
}

// TestKernelSuperviseCancel: Supervise returns ctx.Err() when ctx ends while
// the jail still runs, closes the listener, and leaves no goroutine behind;
// the jail's next forbidden call then fails (ENOSYS: no listener).
func TestKernelSuperviseCancel(t *testing.T) {
	requirePython(t)
	before := runtime.NumGoroutine()
	script := `
import ctypes, sys, time
libc = ctypes.CDLL(None, use_errno=True)
sys.stdin.readline()
r = libc.syscall(101, 0x4206, 0x3fffffff, 0, 0)
print("ptrace", r, ctypes.get_errno(), flush=True)
`
	argv, _ := json.Marshal([]string{pythonPath, "-I", "-u", "-c", script})
	pr, pw, err := os.Pipe()
	require.NoError(t, err)
	defer pw.Close()
	c := startChild(t, "exec", pr, childArgvEnv+"="+string(argv))
	pr.Close()
	ctx, cancel := context.WithCancel(context.Background())
	listener := c.listener
	wait := supervise(ctx, c, ModeErrno, new(Collector), nil)
	time.Sleep(50 * time.Millisecond)
	cancel()
	require.ErrorIs(t, wait(), context.Canceled)
	_, err = unix.FcntlInt(uintptr(listener), unix.F_GETFD, 0)
	require.ErrorIs(t, err, unix.EBADF, "the listener must be closed")

	_, err = pw.Write([]byte("go\n"))
	require.NoError(t, err)
	require.NoError(t, c.cmd.Wait(), "stderr: %s", c.stderr.String())
	require.Equal(t, fmt.Sprintf("ptrace -1 %d\n", unix.ENOSYS), c.stdout.String())

	for deadline := time.Now().Add(2 * time.Second); runtime.NumGoroutine() > before && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	require.LessOrEqual(t, runtime.NumGoroutine(), before, "a goroutine outlived Supervise")
}
