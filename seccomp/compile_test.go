//go:build linux && cgo && !agentjail_nolibseccomp

package seccomp

import (
	"flag"
	"fmt"
	"math/rand"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"

	libseccomp "github.com/seccomp/libseccomp-golang"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

var update = flag.Bool("update", false, "rewrite testdata/decisions.golden from the current policy")

const goldenPath = "testdata/decisions.golden"

// maxTestedNr: every number below it is evaluated (docs/security.md C.2.4).
const maxTestedNr = 1024

var (
	compileOnce sync.Once
	compiled    *Program
	compileErr  error
)

func defaultProgram(t testing.TB) *Program {
	t.Helper()
	compileOnce.Do(func() { compiled, compileErr = DefaultPolicy().Compile() })
	require.NoError(t, compileErr)
	return compiled
}

func eval(t testing.TB, prog *Program, arch uint32, nr int, args [6]uint64) uint32 {
	t.Helper()
	r, err := run(prog.Instructions, input{nr: int32(nr), arch: arch, args: args})
	require.NoError(t, err, "nr %d arch %#x args %#x", nr, arch, args)
	return r
}

func native(t testing.TB, prog *Program, name string, args ...uint64) uint32 {
	t.Helper()
	nr, ok := syscallNumber(name)
	require.True(t, ok, name)
	var a [6]uint64
	copy(a[:], args)
	return eval(t, prog, auditArchX86_64, nr, a)
}

const allOnes = ^uint64(0)

var ones = [6]uint64{allOnes, allOnes, allOnes, allOnes, allOnes, allOnes}

// argCase is a call whose decision depends on its arguments; want is
// asserted explicitly, so regenerating the golden file cannot hide a hole.
type argCase struct {
	label string
	name  string
	args  []uint64
	want  uint32
}

const (
	cloneThread         = 0x3d0f00 // CLONE_VM|FS|FILES|SIGHAND|THREAD|SYSVSEM|SETTLS|PARENT_SETTID|CHILD_CLEARTID (glibc pthread_create)
	sigchld             = 17
	sockNonblockCloexec = 0x800 | 0x80000
	enosys              = retErrno | uint32(syscall.ENOSYS)
	eafnosupport        = retErrno | uint32(syscall.EAFNOSUPPORT)
	eopnotsupp          = retErrno | uint32(syscall.EOPNOTSUPP)
)

var argCases = []argCase{
	{"clone thread flags (pthread_create)", "clone", []uint64{cloneThread}, retAllow},
	{"clone SIGCHLD (fork)", "clone", []uint64{sigchld}, retAllow},
	{"clone CLONE_VM|CLONE_VFORK|SIGCHLD (posix_spawn)", "clone", []uint64{0x100 | 0x4000 | sigchld}, retAllow},
	{"clone CLONE_NEWUSER|SIGCHLD (P06)", "clone", []uint64{0x10000000 | sigchld}, retForbid},
	{"clone CLONE_NEWNET", "clone", []uint64{0x40000000}, retForbid},
	{"clone CLONE_NEWNS", "clone", []uint64{0x20000}, retForbid},
	{"clone CLONE_NEWPID|CLONE_NEWIPC|CLONE_NEWUTS|CLONE_NEWCGROUP", "clone", []uint64{0x20000000 | 0x08000000 | 0x04000000 | 0x02000000}, retForbid},
	{"clone CLONE_NEWTIME bit", "clone", []uint64{0x80}, retForbid},
	{"clone CLONE_PARENT|SIGCHLD (a sibling: the zygote's child in a warm run)", "clone", []uint64{0x8000 | sigchld}, retForbid},
	{"clone CLONE_VM|CLONE_PARENT (the review's flood)", "clone", []uint64{0x100 | 0x8000 | sigchld}, retForbid},
	{"fcntl F_GETFL", "fcntl", []uint64{3, 3}, retAllow},
	{"fcntl F_SETLK", "fcntl", []uint64{3, 6}, retAllow},
	{"fcntl F_NOTIFY (dnotify: other jails' reads of shared files)", "fcntl", []uint64{3, 1026}, retForbid},
	{"clone thread flags with high garbage", "clone", []uint64{1<<40 | cloneThread}, retAllow},
	{"clone3 (glibc falls back to clone)", "clone3", []uint64{0, 88}, enosys},

	{"socket AF_UNIX SOCK_STREAM", "socket", []uint64{afUnix, sockStream, 0}, retAllow},
	{"socket AF_UNIX SOCK_DGRAM|NONBLOCK|CLOEXEC", "socket", []uint64{afUnix, sockDgram | sockNonblockCloexec, 0}, retAllow},
	{"socket AF_INET SOCK_STREAM 0", "socket", []uint64{afInet, sockStream, 0}, retAllow},
	{"socket AF_INET SOCK_STREAM|CLOEXEC TCP", "socket", []uint64{afInet, sockStream | 0x80000, ipprotoTCP}, retAllow},
	{"socket AF_INET SOCK_DGRAM|CLOEXEC 0 (getaddrinfo)", "socket", []uint64{afInet, sockDgram | 0x80000, 0}, retAllow},
	{"socket AF_INET6 SOCK_DGRAM UDP", "socket", []uint64{afInet6, sockDgram, ipprotoUDP}, retAllow},
	{"socket AF_INET SOCK_DGRAM ICMP (ping, N04)", "socket", []uint64{afInet, sockDgram, ipprotoICMP}, retAllow},
	{"socket AF_INET6 SOCK_DGRAM ICMPV6 (ping)", "socket", []uint64{afInet6, sockDgram, ipprotoICMPV6}, retAllow},
	{"socket AF_INET with high garbage in family", "socket", []uint64{1<<32 | afInet, sockStream, 0}, retAllow},
	{"socket AF_VSOCK (reaches the host)", "socket", []uint64{40, sockStream, 0}, retForbid},
	{"socket AF_VSOCK hidden under high bits", "socket", []uint64{1<<32 | 40, sockStream, 0}, retForbid},
	{"socket AF_NETLINK ROUTE (getaddrinfo AI_ADDRCONFIG: quiet)", "socket", []uint64{16, 3 | 0x80000, 0}, eafnosupport},
	{"socket AF_NETLINK DGRAM ROUTE (quiet)", "socket", []uint64{16, 2, 0}, eafnosupport},
	{"socket AF_NETLINK ROUTE with high garbage", "socket", []uint64{1<<32 | 16, 3, 1 << 32}, eafnosupport},
	{"socket AF_NETLINK SOCK_DIAG (N07)", "socket", []uint64{16, 3, 4}, retForbid},
	{"socket AF_NETLINK AUDIT (N07)", "socket", []uint64{16, 3, 9}, retForbid},
	{"socket AF_NETLINK KOBJECT_UEVENT (N07)", "socket", []uint64{16, 2, 15}, retForbid},
	{"socket AF_NETLINK NETFILTER (N07)", "socket", []uint64{16, 3, 12}, retForbid},
	{"socket AF_PACKET (N04)", "socket", []uint64{17, 3, 0x0300}, retForbid},
	{"socket AF_INET SOCK_RAW ICMP (N04)", "socket", []uint64{afInet, 3, 1}, retForbid},
	{"socket AF_INET6 SOCK_RAW ICMPV6 (N04)", "socket", []uint64{afInet6, 3, 58}, retForbid},
	{"socket AF_ALG", "socket", []uint64{38, 5, 0}, retForbid},
	{"socket AF_INET SOCK_DCCP DCCP (P12 autoload)", "socket", []uint64{afInet, 6, 33}, retForbid},
	{"socket AF_INET SOCK_STREAM SCTP (P12 autoload)", "socket", []uint64{afInet, sockStream, 132}, retForbid},
	{"socket AF_INET SOCK_STREAM MPTCP", "socket", []uint64{afInet, sockStream, 262}, retForbid},
	{"socket AF_APPLETALK (P12)", "socket", []uint64{5, 2, 0}, retForbid},
	{"socket AF_X25 (P12)", "socket", []uint64{9, 5, 0}, retForbid},
	{"socket AF_AX25 (P12)", "socket", []uint64{3, 2, 0}, retForbid},
	{"socket AF_RDS (P12)", "socket", []uint64{21, 5, 0}, retForbid},
	{"socket AF_TIPC (P12)", "socket", []uint64{30, 4, 0}, retForbid},
	{"socket PF_KEY (P12)", "socket", []uint64{15, 3, 2}, retForbid},
	{"socketpair AF_UNIX", "socketpair", []uint64{afUnix, sockStream, 0}, retAllow},
	{"socketpair AF_INET", "socketpair", []uint64{afInet, sockStream, 0}, retForbid},
	{"socketpair AF_TIPC (autoload)", "socketpair", []uint64{30, 5, 0}, retForbid},

	{"ioctl TCGETS", "ioctl", []uint64{0, 0x5401}, retAllow},
	{"ioctl FIONBIO", "ioctl", []uint64{3, 0x5421}, retAllow},
	{"ioctl TIOCGWINSZ with high garbage", "ioctl", []uint64{1, 0x123<<32 | 0x5413}, retAllow},
	{"ioctl TIOCSTI", "ioctl", []uint64{0, tiocsti}, retForbid},
	{"ioctl (0x123<<32)|TIOCSTI (CVE-2019-10063)", "ioctl", []uint64{0, 0x123<<32 | tiocsti}, retForbid},
	{"ioctl TIOCLINUX", "ioctl", []uint64{0, tioclinux}, retForbid},
	{"ioctl ~0<<32|TIOCLINUX", "ioctl", []uint64{0, 0xffffffff00000000 | tioclinux}, retForbid},

	{"prctl PR_SET_NO_NEW_PRIVS", "prctl", []uint64{38, 1}, retAllow},
	{"prctl PR_SET_NAME", "prctl", []uint64{15, 0}, retAllow},
	{"prctl PR_SET_SECCOMP", "prctl", []uint64{prSetSeccomp, 2, 0}, retForbid},
	{"prctl (1<<32)|PR_SET_SECCOMP", "prctl", []uint64{1<<32 | prSetSeccomp, 2, 0}, retForbid},
	{"seccomp SET_MODE_FILTER NEW_LISTENER", "seccomp", []uint64{1, 8, 0}, retForbid},

	{"personality query 0xffffffff", "personality", []uint64{0xffffffff}, retAllow},
	{"personality PER_LINUX", "personality", []uint64{0}, retAllow},
	{"personality ADDR_NO_RANDOMIZE", "personality", []uint64{0x20000}, retAllow},
	{"personality READ_IMPLIES_EXEC", "personality", []uint64{0x400000}, retForbid},
	{"personality PER_LINUX32", "personality", []uint64{0x8}, retAllow},
	{"personality PER_SVR4", "personality", []uint64{0x10}, retForbid},

	{"mknodat S_IFIFO (os.mkfifo)", "mknodat", []uint64{0xffffff9c, 0, sIFIFO | 0o644, 0}, retAllow},
	{"mknodat S_IFREG", "mknodat", []uint64{0xffffff9c, 0, sIFREG | 0o600, 0}, retAllow},
	{"mknodat mode 0 (regular)", "mknodat", []uint64{0xffffff9c, 0, 0o600, 0}, retAllow},
	{"mknodat S_IFSOCK", "mknodat", []uint64{0xffffff9c, 0, sIFSOCK | 0o600, 0}, retAllow},
	{"mknodat S_IFBLK 8:0 (F13)", "mknodat", []uint64{0xffffff9c, 0, 0o060000 | 0o600, 0x800}, retForbid},
	{"mknodat S_IFCHR", "mknodat", []uint64{0xffffff9c, 0, 0o020000 | 0o600, 0x103}, retForbid},
	{"mknod S_IFCHR", "mknod", []uint64{0, 0o020000 | 0o600, 0x103}, retForbid},
	{"mknod S_IFIFO", "mknod", []uint64{0, sIFIFO | 0o600, 0}, retAllow},

	{"fsync (a disk flush: succeeds, does not run)", "fsync", []uint64{3}, retSucceed},
	{"fdatasync", "fdatasync", []uint64{3}, retSucceed},
	{"syncfs", "syncfs", []uint64{3}, retSucceed},
	{"sync_file_range WAIT_BEFORE|WRITE|WAIT_AFTER", "sync_file_range", []uint64{3, 0, 0, 7}, retSucceed},
	{"sync (every filesystem: forbidden)", "sync", nil, retForbid},
	{"fadvise64 DONTNEED", "fadvise64", []uint64{3, 0, 0, 4}, retSucceed},
	{"msync MS_SYNC", "msync", []uint64{0x10000, 4096, msSync}, retSucceed},
	{"msync MS_SYNC|MS_INVALIDATE", "msync", []uint64{0x10000, 4096, msSync | 2}, retSucceed},
	{"msync MS_ASYNC (libunwind's probe)", "msync", []uint64{0x10000, 4096, 1}, retAllow},
	{"msync 0", "msync", []uint64{0x10000, 4096, 0}, retAllow},
	{"io_setup (fs.aio-nr, host-wide)", "io_setup", []uint64{4096, 0}, retForbid},
	{"io_submit", "io_submit", []uint64{0, 1, 0}, retForbid},
	{"inotify_init1 (owner uid's instances)", "inotify_init1", []uint64{0}, retForbid},
	{"mq_open (owner uid's RLIMIT_MSGQUEUE)", "mq_open", []uint64{0, 0x40, 0o600, 0}, retForbid},
	{"membarrier QUERY", "membarrier", []uint64{0, 0, 0}, retAllow},
	{"membarrier REGISTER_PRIVATE_EXPEDITED", "membarrier", []uint64{16, 0, 0}, retAllow},
	{"membarrier PRIVATE_EXPEDITED", "membarrier", []uint64{8, 0, 0}, retAllow},
	{"membarrier PRIVATE_EXPEDITED_RSEQ", "membarrier", []uint64{128, 1, 0}, retAllow},
	{"membarrier GLOBAL (an RCU grace period of the host)", "membarrier", []uint64{1, 0, 0}, retForbid},
	{"membarrier GLOBAL_EXPEDITED", "membarrier", []uint64{2, 0, 0}, retForbid},
	{"membarrier REGISTER_GLOBAL_EXPEDITED", "membarrier", []uint64{4, 0, 0}, retForbid},
	{"membarrier PRIVATE_EXPEDITED|GLOBAL", "membarrier", []uint64{9, 0, 0}, retForbid},
	{"mmap anonymous private", "mmap", []uint64{0, 4096, 3, 0x22, allOnes, 0}, retAllow},
	{"mmap MAP_HUGETLB (host huge page pool)", "mmap", []uint64{0, 2 << 20, 3, 0x22 | mapHugetlb, allOnes, 0}, retForbid},
	{"mmap MAP_HUGETLB|MAP_HUGE_2MB", "mmap", []uint64{0, 2 << 20, 3, 21<<26 | 0x22 | mapHugetlb, allOnes, 0}, retForbid},
	{"memfd_create MFD_CLOEXEC", "memfd_create", []uint64{0, 1}, retAllow},
	{"memfd_create MFD_HUGETLB", "memfd_create", []uint64{0, mfdHugetlb}, retForbid},
	{"shmget IPC_CREAT", "shmget", []uint64{0, 4096, 0o1000 | 0o600}, retAllow},
	{"shmget SHM_HUGETLB", "shmget", []uint64{0, 2 << 20, 0o1000 | shmHugetlb}, retForbid},
	{"shmctl IPC_RMID", "shmctl", []uint64{0, 0, 0}, retAllow},
	{"shmctl SHM_LOCK (owner uid's RLIMIT_MEMLOCK)", "shmctl", []uint64{0, shmLock, 0}, retForbid},
	{"shmctl (1<<32)|SHM_LOCK", "shmctl", []uint64{0, 1<<32 | shmLock, 0}, retForbid},
	{"remap_file_pages", "remap_file_pages", []uint64{0, 4096, 0, 0, 0}, retForbid},

	{"preadv2 flags 0", "preadv2", []uint64{3, 0, 1, 0, 0, 0}, retAllow},
	{"preadv2 RWF_HIPRI", "preadv2", []uint64{3, 0, 1, 0, 0, 1}, retAllow},
	{"preadv2 RWF_NOWAIT (I11: page cache probe)", "preadv2", []uint64{3, 0, 1, 0, 0, rwfNowait}, eopnotsupp},
	{"preadv2 RWF_NOWAIT|RWF_HIPRI", "preadv2", []uint64{3, 0, 1, 0, 0, rwfNowait | 1}, eopnotsupp},
	{"preadv2 RWF_NOWAIT with high garbage", "preadv2", []uint64{3, 0, 1, 0, 0, 1<<40 | rwfNowait}, eopnotsupp},
	{"preadv2 RWF_NOWAIT in pos_h, not flags", "preadv2", []uint64{3, 0, 1, 0, rwfNowait, 0}, retAllow},
	{"pwritev2 flags 0", "pwritev2", []uint64{3, 0, 1, 0, 0, 0}, retAllow},
	{"pwritev2 RWF_NOWAIT", "pwritev2", []uint64{3, 0, 1, 0, 0, rwfNowait}, eopnotsupp},
}

// forbiddenAttackCalls are the calls that docs/security.md requires to fail
// (P04–P16, F14–F16, N04, N07); each must be Forbid (EPERM, reported).
var forbiddenAttackCalls = []string{
	"ptrace", "process_vm_readv", "process_vm_writev", "pidfd_getfd", "kcmp", // P04
	"unshare", "setns", // P05
	"keyctl", "add_key", "request_key", // P07
	"bpf", "perf_event_open", // P08, P09
	"io_uring_setup", "io_uring_enter", "io_uring_register", // P10
	"userfaultfd",                                  // P11
	"init_module", "finit_module", "delete_module", // P12
	"reboot", "kexec_load", "kexec_file_load", // P13
	"sethostname", "setdomainname", // P14
	"clock_settime", "settimeofday", "clock_adjtime", "adjtimex", // P15
	"mount", "umount2", "fsopen", "fsconfig", "fsmount", "fspick", "open_tree", "move_mount", "mount_setattr", // F14
	"chroot", "pivot_root", // F15
	"open_by_handle_at", "name_to_handle_at", // F16
	"swapon", "swapoff", "acct", "quotactl", "iopl", "ioperm", "lookup_dcookie", "syslog",
	"vhangup", "uselib", "ustat", "sysfs", "nfsservctl", "fanotify_init", "seccomp",
}

func TestCompiledPolicyGolden(t *testing.T) {
	prog := defaultProgram(t)
	var b strings.Builder
	t.Logf("%d instructions", len(prog.Instructions))
	fmt.Fprintf(&b, "# Decisions of DefaultPolicy().Compile(), evaluated on the\n")
	fmt.Fprintf(&b, "# exported BPF. Regenerate on purpose: go test ./seccomp -run Golden -update\n")
	fmt.Fprintf(&b, "# FORBID = SECCOMP_RET_USER_NOTIF: EPERM and reported (or the jail killed).\n")
	fmt.Fprintf(&b, "#\n# nr name: args all 0 / args all 0xffff...\n")
	known := DefaultPolicy().KnownThrough
	for nr := 0; nr <= known; nr++ {
		name := SyscallName(nr)
		if name == "" {
			continue // the holes are summarised below
		}
		zero := eval(t, prog, auditArchX86_64, nr, [6]uint64{})
		one := eval(t, prog, auditArchX86_64, nr, ones)
		fmt.Fprintf(&b, "%d %s: %s / %s\n", nr, name, retString(zero), retString(one))
	}
	for _, h := range holes(known) {
		fmt.Fprintf(&b, "%d..%d (undefined): %s\n", h[0], h[1], summarise(t, prog, auditArchX86_64, h[0], h[1], 0))
	}
	fmt.Fprintf(&b, "%d..%d (newer): %s\n", known+1, maxTestedNr-1, summarise(t, prog, auditArchX86_64, known+1, maxTestedNr-1, 0))
	fmt.Fprintf(&b, "nr 0xffffffff (-1): %s\n", retString(eval(t, prog, auditArchX86_64, -1, [6]uint64{})))
	fmt.Fprintf(&b, "\n# architectures and ABIs\n")
	fmt.Fprintf(&b, "x32 (nr|0x40000000) 0..%d: %s\n", maxTestedNr-1, summarise(t, prog, auditArchX86_64, 0, maxTestedNr-1, x32SyscallBit))
	fmt.Fprintf(&b, "i386 0..%d: %s\n", maxTestedNr-1, summarise(t, prog, auditArchI386, 0, maxTestedNr-1, 0))
	fmt.Fprintf(&b, "aarch64 0..%d: %s\n", maxTestedNr-1, summarise(t, prog, 0xc00000b7, 0, maxTestedNr-1, 0))
	fmt.Fprintf(&b, "\n# argument rules\n")
	for _, c := range argCases {
		fmt.Fprintf(&b, "%s: %s\n", c.label, retString(native(t, prog, c.name, c.args...)))
	}
	got := b.String()

	if *update {
		require.NoError(t, os.WriteFile(goldenPath, []byte(got), 0o644))
		t.Logf("wrote %s", goldenPath)
		return
	}
	want, err := os.ReadFile(goldenPath)
	require.NoError(t, err, "missing golden file; run with -update")
	if got != string(want) {
		gl, wl := strings.Split(got, "\n"), strings.Split(string(want), "\n")
		var diff []string
		for i := 0; i < len(gl) || i < len(wl); i++ {
			var g, w string
			if i < len(gl) {
				g = gl[i]
			}
			if i < len(wl) {
				w = wl[i]
			}
			if g != w && len(diff) < 20 {
				diff = append(diff, fmt.Sprintf("line %d:\n  golden: %s\n  now:    %s", i+1, w, g))
			}
		}
		t.Fatalf("the compiled policy's decisions changed; if on purpose, rerun with -update and review the diff of %s:\n%s",
			goldenPath, strings.Join(diff, "\n"))
	}
}

// summarise evaluates every number from..to (ORed with bit) with zero and
// all-ones arguments: one decision when all agree, else the first exceptions.
func summarise(t *testing.T, prog *Program, arch uint32, from, to int, bit int) string {
	first := ""
	var odd []string
	for nr := from; nr <= to; nr++ {
		for _, args := range [][6]uint64{{}, ones} {
			r := retString(eval(t, prog, arch, nr|bit, args))
			if first == "" {
				first = r
			} else if r != first && len(odd) < 5 {
				odd = append(odd, fmt.Sprintf("%d=%s", nr, r))
			}
		}
	}
	if len(odd) > 0 {
		return first + " except " + strings.Join(odd, ",")
	}
	return first
}

func TestArgumentRules(t *testing.T) {
	prog := defaultProgram(t)
	for _, c := range argCases {
		require.Equal(t, retString(c.want), retString(native(t, prog, c.name, c.args...)), c.label)
	}
}

func TestForbiddenAttackCalls(t *testing.T) {
	prog := defaultProgram(t)
	for _, name := range forbiddenAttackCalls {
		for _, args := range [][6]uint64{{}, ones, {1, 2, 3, 4, 5, 6}} {
			nr, ok := syscallNumber(name)
			require.True(t, ok, name)
			require.Equal(t, "FORBID", retString(eval(t, prog, auditArchX86_64, nr, args)), "%s%v", name, args)
		}
	}
}

// TestForeignABIsAreNotified: i386 (`int 0x80`, where 102 is socketcall,
// not getuid), x32 (the same AUDIT_ARCH_X86_64 with bit 30 in nr) and any
// other architecture never reach the rules (docs/security.md P17): every one is
// the Forbid notification, which the supervisor marks Foreign and answers
// EPERM. Never KILL_PROCESS (SIGSYS is no evidence once the jail's PID 1 is
// our init) and never ERRNO (it would outrank a stacked filter's report).
func TestForeignABIsAreNotified(t *testing.T) {
	prog := defaultProgram(t)
	for nr := 0; nr < maxTestedNr; nr++ {
		for _, args := range [][6]uint64{{}, ones} {
			require.Equal(t, "FORBID", retString(eval(t, prog, auditArchX86_64, nr|x32SyscallBit, args)), "x32 %d", nr)
			require.Equal(t, "FORBID", retString(eval(t, prog, auditArchI386, nr, args)), "i386 %d", nr)
			require.Equal(t, "FORBID", retString(eval(t, prog, 0xc00000b7, nr, args)), "aarch64 %d", nr)
		}
	}
	// The ioctl/prctl prefix must not let an x32 or i386 number through,
	// nor the ENOSYS of unknown numbers answer a foreign one.
	require.Equal(t, "FORBID", retString(eval(t, prog, auditArchX86_64, 16|x32SyscallBit, [6]uint64{0, tiocsti})))
	require.Equal(t, "FORBID", retString(eval(t, prog, auditArchI386, 16, [6]uint64{0, tiocsti})))
	require.Equal(t, "FORBID", retString(eval(t, prog, auditArchI386, 400, [6]uint64{})), "a hole of the x86_64 table")
	require.Equal(t, "FORBID", retString(eval(t, prog, auditArchX86_64, 0x7fffffff, [6]uint64{})))
	require.Equal(t, "FORBID", retString(eval(t, prog, auditArchX86_64, -2, [6]uint64{})), "negative numbers but -1")
	// Nowhere in the program is there a KILL action any more.
	for i, in := range prog.Instructions {
		if in.Code == unix.BPF_RET|unix.BPF_K {
			require.NotContains(t, []uint32{retKillProcess, 0 /* KILL_THREAD */, 0x00030000 /* TRAP */}, in.K&0xffff0000, "instruction %d", i)
		}
	}
}

// TestNewerSyscallsGetENOSYS: numbers above KnownThrough and holes in the
// table fail with ENOSYS (not reported), so a newer libc falls back.
func TestNewerSyscallsGetENOSYS(t *testing.T) {
	prog := defaultProgram(t)
	p := DefaultPolicy()
	for nr := p.KnownThrough + 1; nr < maxTestedNr; nr++ {
		require.Equal(t, "ERRNO(ENOSYS)", retString(eval(t, prog, auditArchX86_64, nr, [6]uint64{})), "nr %d", nr)
	}
	for nr := 337; nr < 424; nr++ { // the x86_64 hole kept for the asm-generic numbers
		require.Equal(t, "ERRNO(ENOSYS)", retString(eval(t, prog, auditArchX86_64, nr, [6]uint64{})), "nr %d", nr)
	}
	// Lowering KnownThrough turns reviewed calls into ENOSYS too.
	p.KnownThrough = 450
	var kept []Rule
	for _, r := range p.Rules {
		if nr, _ := syscallNumber(r.Syscall); nr <= 450 {
			kept = append(kept, r)
		}
	}
	p.Rules = kept
	older, err := p.Compile()
	require.NoError(t, err)
	require.Equal(t, "ERRNO(ENOSYS)", retString(eval(t, older, auditArchX86_64, 462 /* mseal */, [6]uint64{})))
	require.Equal(t, "ALLOW", retString(eval(t, older, auditArchX86_64, 0, [6]uint64{})))
}

// TestCompiledMatchesPolicy compares the exported BPF with Policy.decide, the
// policy's meaning written in Go, for every number and for arguments built
// from every condition of every rule (each condition met, missed by one bit,
// with garbage in the high word), plus random ones.
func TestCompiledMatchesPolicy(t *testing.T) {
	p := DefaultPolicy()
	prog := defaultProgram(t)
	rng := rand.New(rand.NewSource(1))
	check := func(nr int, args [6]uint64) {
		t.Helper()
		want := p.decide(nr, args)
		got := eval(t, prog, auditArchX86_64, nr, args)
		if got != want {
			t.Fatalf("nr %d (%s) args %#x: BPF says %s, policy says %s", nr, SyscallName(nr), args, retString(got), retString(want))
		}
	}
	for nr := 0; nr < maxTestedNr; nr++ {
		check(nr, [6]uint64{})
		check(nr, ones)
		for _, r := range p.rulesFor(SyscallName(nr)) {
			var base [6]uint64
			for _, c := range r.When {
				base[c.Arg] = c.Value
			}
			check(nr, base)
			for _, c := range r.When {
				low := c.Mask & -c.Mask
				for _, v := range []uint64{c.Value ^ low, c.Value | 1<<40, c.Value | ^c.Mask, c.Value + 1, c.Value - 1} {
					a := base
					a[c.Arg] = v
					check(nr, a)
				}
			}
			if e := r.Except; e != nil {
				for _, v := range e.Values {
					for _, x := range []uint64{uint64(v), 0x123<<32 | uint64(v), uint64(v) + 1, uint64(v) - 1, 0xffffffff00000000 | uint64(v)} {
						var a [6]uint64
						a[e.Arg] = x
						check(nr, a)
					}
				}
			}
		}
		for i := 0; i < 20; i++ {
			var a [6]uint64
			for j := range a {
				switch rng.Intn(3) {
				case 0:
					a[j] = rng.Uint64()
				case 1:
					a[j] = uint64(rng.Intn(64))
				default:
					a[j] = uint64(rng.Uint32())
				}
			}
			check(nr, a)
		}
	}
}

// TestPolicyAllowsInitTail: after the filter is loaded the init stage
// (nsjail/boot/init_run_linux.c) sends the listener, closes it and execs, or on a
// failure sends its error (send) and exits; a warm run's init (aj_adopt)
// reads msgAdopt, watches the program with a pidfd, reaps and forwards
// signals; a Go thread after Install (install_linux.go) also runs the
// runtime's calls. Each must be allowed.
func TestPolicyAllowsInitTail(t *testing.T) {
	prog := defaultProgram(t)
	for _, name := range []string{
		"sendmsg", "sendto", "close", "close_range", "execve", "execveat", "fcntl", "dup3", "write", "read",
		"futex", "mmap", "munmap", "madvise", "mprotect", "nanosleep", "sched_yield", "sched_getaffinity",
		"rt_sigaction", "rt_sigprocmask", "rt_sigreturn", "sigaltstack", "gettid", "getpid", "tgkill",
		"exit", "exit_group", "epoll_pwait", "epoll_ctl", "getrandom", "clock_gettime",
		"recvmsg", "pidfd_open", "ppoll", "wait4", "kill",
	} {
		require.Equal(t, "ALLOW", retString(native(t, prog, name, 0, 0, 0)), name)
	}
	require.Equal(t, "ALLOW", retString(native(t, prog, "clone", cloneThread)), "clone for a new M")
}

// TestSyscallNamesMatchLibseccomp cross-checks the generated table (from
// golang.org/x/sys) against libseccomp's own x86_64 table.
func TestSyscallNamesMatchLibseccomp(t *testing.T) {
	checked := 0
	for nr := 0; nr < maxTestedNr; nr++ {
		name, err := libseccomp.ScmpSyscall(nr).GetNameByArch(libseccomp.ArchAMD64)
		if err != nil || strings.HasPrefix(name, "UNKNOWN") {
			continue // newer than this libseccomp
		}
		require.Equal(t, name, SyscallName(nr), "nr %d", nr)
		checked++
	}
	require.Greater(t, checked, 350)
	require.Equal(t, "ptrace", SyscallName(unix.SYS_PTRACE))
	require.Equal(t, "mseal", SyscallName(462))
	require.Equal(t, "", SyscallName(400))
	require.Equal(t, "", SyscallName(-1))
	require.Equal(t, "", SyscallName(1<<20))
}

func TestCompileRejectsBadPolicy(t *testing.T) {
	p := DefaultPolicy()
	p.Rules = append(p.Rules, Rule{Syscall: "ptrace", Action: Allow})
	_, err := p.Compile()
	require.ErrorContains(t, err, "ptrace")
}
