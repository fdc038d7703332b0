package seccomp

import (
	"errors"
	"fmt"
	"syscall"
)

//go:generate go run gen_sysnames.go

// Action is what the filter does with a system call.
type Action int

const (
	// Forbid: the call does not run. The filter returns
	// SECCOMP_RET_USER_NOTIF; the supervisor counts it and answers EPERM (or
	// kills the jail, in ModeKill). The zero value, so that a rule that
	// forgets its action forbids.
	Forbid Action = iota
	// Allow: the call runs.
	Allow
	// Errno: the call fails with Rule.Errno and is not reported. Only for
	// calls that libraries probe and fall back from (clone3 → clone; the
	// argument-conditional ones are in quiet.go).
	Errno
	// Succeed: the call does not run and returns 0 to the caller, unreported.
	// The filter returns SECCOMP_RET_ERRNO with errno 0, which the kernel
	// turns into a return value of 0 without entering the call (checked on
	// Linux 6.18 by TestKernelPythonErrnoMode: fsync(-1) returns 0, not
	// EBADF). Only for calls whose only effect from a jail is outside it
	// (disk flushes, fadvise; doc.go explains), and never for a call that a
	// stacked filter might want to report (ERRNO outranks USER_NOTIF).
	Succeed
)

func (a Action) String() string {
	switch a {
	case Forbid:
		return "forbid"
	case Allow:
		return "allow"
	case Errno:
		return "errno"
	case Succeed:
		return "succeed"
	}
	return fmt.Sprintf("Action(%d)", int(a))
}

// Cond holds when (args[Arg] & Mask) == Value, compared on all 64 bits.
// For an int-typed argument use Mask 0xffffffff: the kernel only looks at the
// low 32 bits, so the filter must not look at more.
type Cond struct {
	Arg   uint   // argument index, 0..5
	Mask  uint64 // bits of the argument that are compared; never 0
	Value uint64 // the expected bits; no bit outside Mask
}

// Except lists values of one int-typed argument for which an unconditional
// Allow rule forbids the call instead. The comparison is on the low 32 bits
// of the argument, which is what the kernel sees: ioctl(fd, (0x123<<32)|TIOCSTI)
// is TIOCSTI.
type Except struct {
	Arg    uint // argument index, 0..5
	Values []uint32
}

// Rule decides one system call.
type Rule struct {
	Syscall string // x86_64 name, as in asm/unistd_64.h
	Action  Action
	// Errno is the error of an Errno rule (e.g. ENOSYS); unused otherwise.
	Errno syscall.Errno
	// When makes an Allow, Succeed or Errno rule conditional: it applies only to
	// calls whose arguments meet every condition. Several conditional rules
	// of one system call are alternatives (their conditions must not overlap
	// when their actions differ); a call that meets none is forbidden.
	When []Cond
	// Except makes an unconditional Allow rule forbid some argument values.
	Except *Except
}

// Policy is a seccomp allowlist for x86_64. Every system call number up to
// KnownThrough that the kernel defines (see SyscallName) is decided: by its
// rules, or Forbid when it has none. Numbers above KnownThrough and numbers the
// kernel does not define fail with ENOSYS, so that a C library that probes a
// newer call falls back, as with runc. Foreign architectures (i386 `int 0x80`)
// and the x32 ABI are forbidden (SECCOMP_RET_USER_NOTIF, Violation.Foreign)
// whatever the rules say: the call never runs.
type Policy struct {
	// KnownThrough is the highest x86_64 system call number that the rules
	// were reviewed against. Raise it only after deciding every call up to it.
	KnownThrough int
	Rules        []Rule
}

// Mode is what a forbidden call does to the jail (docs/contract.md,
// on_forbidden_syscall). The filter is the same in both modes: the mode is
// how the supervisor answers.
type Mode int

const (
	// ModeErrno: a forbidden call fails with EPERM and is reported; the
	// program may go on. The default.
	ModeErrno Mode = iota
	// ModeKill: the first forbidden call ends the jail (kill_reason "seccomp").
	ModeKill
)

// ParseMode parses the contract's names "errno" and "kill".
func ParseMode(s string) (Mode, error) {
	switch s {
	case "errno":
		return ModeErrno, nil
	case "kill":
		return ModeKill, nil
	}
	return 0, fmt.Errorf("seccomp: unknown on_forbidden_syscall mode %q (want errno or kill)", s)
}

func (m Mode) String() string {
	switch m {
	case ModeErrno:
		return "errno"
	case ModeKill:
		return "kill"
	}
	return fmt.Sprintf("Mode(%d)", int(m))
}

// MarshalText makes a Mode a JSON/TOML string.
func (m Mode) MarshalText() ([]byte, error) {
	if m != ModeErrno && m != ModeKill {
		return nil, fmt.Errorf("seccomp: invalid mode %d", int(m))
	}
	return []byte(m.String()), nil
}

// UnmarshalText accepts "errno" and "kill".
func (m *Mode) UnmarshalText(b []byte) error {
	v, err := ParseMode(string(b))
	if err != nil {
		return err
	}
	*m = v
	return nil
}

// SyscallName returns the x86_64 name of system call nr, or "" when the
// kernel defines no such number.
func SyscallName(nr int) string {
	if nr < 0 || nr >= len(syscallNames) {
		return ""
	}
	return syscallNames[nr]
}

// syscallNumber is the inverse of SyscallName.
func syscallNumber(name string) (int, bool) {
	nr, ok := syscallNumbers[name]
	return nr, ok
}

var syscallNumbers = func() map[string]int {
	m := make(map[string]int, len(syscallNames))
	for nr, name := range syscallNames {
		if name != "" {
			m[name] = nr
		}
	}
	return m
}()

// ABIs as seccomp_data shows them (linux/audit.h, asm/unistd_x32.h).
const (
	auditArchX86_64 = 0xc000003e // AUDIT_ARCH_X86_64
	auditArchI386   = 0x40000003 // AUDIT_ARCH_I386
	x32SyscallBit   = 0x40000000 // __X32_SYSCALL_BIT
)

// Seccomp return values (linux/seccomp.h).
const (
	retKillProcess = 0x80000000 // SECCOMP_RET_KILL_PROCESS
	retErrno       = 0x00050000 // SECCOMP_RET_ERRNO | errno
	retForbid      = 0x7fc00000 // SECCOMP_RET_USER_NOTIF: what Forbid compiles to
	retSucceed     = retErrno   // SECCOMP_RET_ERRNO | 0: what Succeed compiles to
	retAllow       = 0x7fff0000 // SECCOMP_RET_ALLOW
)

var errEmptyPolicy = errors.New("seccomp: policy allows nothing")

// Linux x86_64 values used by the default policy, spelled out so that the
// policy means the same whatever GOOS the package is built for.
const (
	afUnix  = 1  // AF_UNIX
	afInet  = 2  // AF_INET
	afInet6 = 10 // AF_INET6

	sockStream   = 1   // SOCK_STREAM
	sockDgram    = 2   // SOCK_DGRAM
	sockTypeMask = 0xf // SOCK_TYPE_MASK: the rest are SOCK_NONBLOCK, SOCK_CLOEXEC

	ipprotoIP     = 0  // IPPROTO_IP: the type's default protocol
	ipprotoICMP   = 1  // IPPROTO_ICMP (ping sockets)
	ipprotoTCP    = 6  // IPPROTO_TCP
	ipprotoUDP    = 17 // IPPROTO_UDP
	ipprotoICMPV6 = 58 // IPPROTO_ICMPV6

	// cloneForbidden is every CLONE_NEW* flag: NEWNS|NEWCGROUP|NEWUTS|
	// NEWIPC|NEWUSER|NEWPID|NEWNET|NEWTIME, and CLONE_PARENT (0x8000).
	// CLONE_NEWTIME (0x80) lies in clone()'s exit-signal byte, where no
	// valid signal has that bit. CLONE_PARENT would make the child a
	// sibling: of the jail's init in a cold run (which reaps it anyway),
	// but of the zygote in a warm one, whose program's parent is outside
	// the jail, and which would have to reap every such child, on its own
	// CPU. Neither glibc nor CPython uses it.
	cloneForbidden = 0x7e028080

	// fNotify is fcntl's F_NOTIFY (dnotify): a signal at every access to
	// a directory's files. On the files jails share (/usr, and an
	// environment's /etc) it would tell one jail when another, or the
	// host, reads them. CPython's library never uses it.
	fNotify = 1026

	tiocsti   = 0x5412 // TIOCSTI: push bytes into a terminal's input
	tioclinux = 0x541c // TIOCLINUX: console selection, also pushes input

	prSetSeccomp = 22 // PR_SET_SECCOMP

	msSync     = 4       // MS_SYNC
	mapHugetlb = 0x40000 // MAP_HUGETLB
	mfdHugetlb = 4       // MFD_HUGETLB
	shmHugetlb = 0o4000  // SHM_HUGETLB
	shmLock    = 11      // SHM_LOCK

	sIFMT   = 0o170000
	sIFREG  = 0o100000
	sIFIFO  = 0o010000
	sIFSOCK = 0o140000

	mask32 = 0xffffffff
)

func allow(names ...string) []Rule {
	rules := make([]Rule, len(names))
	for i, n := range names {
		rules[i] = Rule{Syscall: n, Action: Allow}
	}
	return rules
}

func succeed(names ...string) []Rule {
	rules := make([]Rule, len(names))
	for i, n := range names {
		rules[i] = Rule{Syscall: n, Action: Succeed}
	}
	return rules
}

// membarrierPrivate are the membarrier commands that act on the caller's own
// threads: QUERY, PRIVATE_EXPEDITED (+SYNC_CORE, +RSEQ) and their
// REGISTER_ commands, GET_REGISTRATIONS. Not GLOBAL (1), GLOBAL_EXPEDITED
// (2), REGISTER_GLOBAL_EXPEDITED (4).
var membarrierPrivate = []uint64{0, 8, 16, 32, 64, 128, 256, 512}

func forbid(names ...string) []Rule {
	rules := make([]Rule, len(names))
	for i, n := range names {
		rules[i] = Rule{Syscall: n, Action: Forbid}
	}
	return rules
}

// allowWhen allows name when argument arg, masked, is one of values.
func allowWhen(name string, arg uint, mask uint64, values ...uint64) []Rule {
	rules := make([]Rule, len(values))
	for i, v := range values {
		rules[i] = Rule{Syscall: name, Action: Allow, When: []Cond{{Arg: arg, Mask: mask, Value: v}}}
	}
	return rules
}

// DefaultPolicy returns the jail's policy: Docker's default profile (moby
// profiles/seccomp/default.json, no capabilities) minus what docs/security.md Part
// A.1 forbids, minus calls that CPython, /bin/sh and their libraries never
// make and that only add kernel surface. doc.go explains the decisions. The
// caller may change the returned value; each call returns a fresh one.
func DefaultPolicy() *Policy {
	var r []Rule
	add := func(rules ...[]Rule) {
		for _, rs := range rules {
			r = append(r, rs...)
		}
	}

	add(
		// Descriptors, files and directories.
		allow("read", "write", "open", "close", "stat", "fstat", "lstat", "lseek",
			"pread64", "pwrite64", "readv", "writev", "preadv", "pwritev",
			"access", "faccessat", "faccessat2", "pipe", "pipe2", "dup", "dup2", "dup3",
			"flock",
			"truncate", "ftruncate", "fallocate", "readahead",
			"getdents", "getdents64", "getcwd", "chdir", "fchdir",
			"rename", "renameat", "renameat2", "mkdir", "mkdirat", "rmdir", "creat",
			"link", "linkat", "unlink", "unlinkat", "symlink", "symlinkat", "readlink", "readlinkat",
			"chmod", "fchmod", "fchmodat", "fchmodat2", "chown", "fchown", "lchown", "fchownat", "umask",
			"openat", "openat2", "newfstatat", "statx", "statfs", "fstatfs",
			"utime", "utimes", "futimesat", "utimensat",
			"setxattr", "lsetxattr", "fsetxattr", "getxattr", "lgetxattr", "fgetxattr",
			"listxattr", "llistxattr", "flistxattr", "removexattr", "lremovexattr", "fremovexattr",
			"setxattrat", "getxattrat", "listxattrat", "removexattrat",
			"sendfile", "copy_file_range", "splice", "tee", "vmsplice", "close_range",
			"cachestat",
		),
		// Disk flushes succeed without running (Succeed: ERRNO 0). Every
		// file a jail can write is on its tmpfs, where they do nothing; on
		// a read-only host file (/usr) ext4 still sends the host's disk a
		// cache flush for each call. sync stays forbidden (below).
		succeed("fsync", "fdatasync", "syncfs", "sync_file_range"),
		// posix_fadvise is advice the kernel may ignore; POSIX_FADV_DONTNEED
		// on a /usr file would drop the host's page cache of it (the next
		// jails' python3 reads it from disk again).
		succeed("fadvise64"),
		// memfd_create, but not backed by the host's huge page pool
		// (MFD_HUGETLB), which no cgroup of ours accounts.
		allowWhen("memfd_create", 1, mfdHugetlb, 0),
		// ioctl: anything but pushing input into a terminal (TIOCSTI,
		// TIOCLINUX; bubblewrap CVE-2017-5226, CVE-2019-10063).
		[]Rule{{Syscall: "ioctl", Action: Allow, Except: &Except{Arg: 1, Values: []uint32{tiocsti, tioclinux}}}},
		// mknod(at) for regular files, FIFOs (os.mkfifo) and sockets, never
		// device nodes: without CAP_MKNOD the kernel refuses those too, but
		// the filter names the attempt.
		allowWhen("mknod", 1, sIFMT, 0, sIFREG, sIFIFO, sIFSOCK),
		allowWhen("mknodat", 2, sIFMT, 0, sIFREG, sIFIFO, sIFSOCK),

		// Memory.
		// mlock: RLIMIT_MEMLOCK per process, and the pages are the jail's
		// own memory (its cgroup's limit).
		allow("brk", "mprotect", "munmap", "mremap", "mincore", "madvise",
			"mlock", "mlock2", "munlock", "mlockall", "munlockall",
			"pkey_mprotect", "pkey_alloc", "pkey_free", "mseal", "map_shadow_stack"),
		// NUMA memory policy of the caller's own pages and threads:
		// OpenBLAS (numpy) calls mbind at start-up. Moving pages that other
		// processes share (MPOL_MF_MOVE_ALL) needs CAP_SYS_NICE, which the
		// kernel checks and a jail never has; migrate_pages and move_pages,
		// which reach other processes, stay forbidden.
		allow("mbind", "set_mempolicy", "get_mempolicy", "set_mempolicy_home_node"),
		// mmap, but not from the host's huge page pool (MAP_HUGETLB).
		allowWhen("mmap", 3, mapHugetlb, 0),
		// msync: MS_SYNC on a shared mapping of a host file is an fsync
		// (a disk flush): it succeeds without running. MS_ASYNC and
		// MS_INVALIDATE run (libunwind probes addresses with MS_ASYNC).
		allowWhen("msync", 2, msSync, 0),
		[]Rule{{Syscall: "msync", Action: Succeed, When: []Cond{{Arg: 2, Mask: msSync, Value: msSync}}}},
		// membarrier on the jail's own threads only: QUERY, the PRIVATE_*
		// commands and their registrations, GET_REGISTRATIONS. The GLOBAL
		// ones wait for an RCU grace period of the whole machine or
		// interrupt every CPU that runs a registered process of anyone.
		allowWhen("membarrier", 0, mask32, membarrierPrivate...),

		// fcntl, but for F_NOTIFY (fNotify).
		[]Rule{{Syscall: "fcntl", Action: Allow, Except: &Except{Arg: 1, Values: []uint32{fNotify}}}},

		// Processes and threads. clone only without CLONE_NEW* flags (no
		// nested namespaces) and CLONE_PARENT; clone3 hides its flags in memory where the
		// filter cannot read them, so it gets ENOSYS and glibc falls back to
		// clone (with EPERM, Python's threads break).
		[]Rule{{Syscall: "clone", Action: Allow, When: []Cond{{Arg: 0, Mask: cloneForbidden, Value: 0}}}},
		[]Rule{{Syscall: "clone3", Action: Errno, Errno: syscall.ENOSYS}},
		allow("fork", "vfork", "execve", "execveat", "exit", "exit_group", "wait4", "waitid",
			"set_tid_address", "set_robust_list", "get_robust_list", "rseq", "restart_syscall",
			"arch_prctl", "gettid", "getpid", "getppid", "uname", "sysinfo",
			"getrlimit", "setrlimit", "prlimit64", "getrusage", "times",
			"getpriority", "setpriority", "sched_yield", "sched_setparam", "sched_getparam",
			"sched_setscheduler", "sched_getscheduler", "sched_get_priority_max", "sched_get_priority_min",
			"sched_rr_get_interval", "sched_setaffinity", "sched_getaffinity", "sched_setattr", "sched_getattr",
			"getcpu", "ioprio_set", "ioprio_get",
			"pidfd_open", "pidfd_send_signal", "process_mrelease",
			"landlock_create_ruleset", "landlock_add_rule", "landlock_restrict_self",
		),
		// prctl: anything but installing a seccomp filter (see seccomp below).
		[]Rule{{Syscall: "prctl", Action: Allow, Except: &Except{Arg: 0, Values: []uint32{prSetSeccomp}}}},
		// personality: only the values Docker allows (Linux, UNAME26,
		// ADDR_NO_RANDOMIZE, both, and the 0xffffffff query).
		allowWhen("personality", 0, mask32, 0, 0x8, 0x20000, 0x20008, 0xffffffff),

		// Identity: allowed as in Docker; with no capabilities the kernel
		// only lets the job switch between ids it already has.
		allow("getuid", "getgid", "geteuid", "getegid", "getgroups", "getresuid", "getresgid",
			"setuid", "setgid", "setreuid", "setregid", "setresuid", "setresgid", "setgroups",
			"setfsuid", "setfsgid", "getpgid", "getpgrp", "setpgid", "getsid", "setsid",
			"capget", "capset"),

		// Signals, timers, clocks (reading only).
		allow("rt_sigaction", "rt_sigprocmask", "rt_sigreturn", "rt_sigpending", "rt_sigtimedwait",
			"rt_sigqueueinfo", "rt_tgsigqueueinfo", "rt_sigsuspend", "sigaltstack",
			"kill", "tkill", "tgkill", "pause", "alarm", "getitimer", "setitimer",
			"signalfd", "signalfd4", "eventfd", "eventfd2",
			"nanosleep", "clock_nanosleep", "clock_gettime", "clock_getres", "gettimeofday", "time",
			"timer_create", "timer_settime", "timer_gettime", "timer_getoverrun", "timer_delete",
			"timerfd_create", "timerfd_settime", "timerfd_gettime"),

		// Waiting: futexes, poll, select, epoll (asyncio; watches count
		// against the jail's own host uid and its memory cgroup).
		allow("futex", "futex_waitv", "futex_wake", "futex_wait", "futex_requeue",
			"poll", "ppoll", "select", "pselect6",
			"epoll_create", "epoll_create1", "epoll_ctl", "epoll_wait", "epoll_pwait", "epoll_pwait2"),

		// Randomness.
		allow("getrandom"),

		// System V IPC: per IPC namespace. Not SHM_LOCK (its pages count
		// against RLIMIT_MEMLOCK in the user-namespace chain, up to the
		// daemon's uid, shared by every jail) nor SHM_HUGETLB (the host's
		// huge page pool). POSIX message queues are forbidden below.
		allow("shmat", "shmdt", "semget", "semop", "semctl", "semtimedop",
			"msgget", "msgsnd", "msgrcv", "msgctl"),
		allowWhen("shmget", 2, shmHugetlb, 0),
		[]Rule{{Syscall: "shmctl", Action: Allow, Except: &Except{Arg: 1, Values: []uint32{shmLock}}}},

		// Sockets: operations on any socket the job holds; creation below.
		allow("connect", "accept", "accept4", "bind", "listen", "shutdown",
			"sendto", "recvfrom", "sendmsg", "recvmsg", "sendmmsg", "recvmmsg",
			"getsockname", "getpeername", "setsockopt", "getsockopt"),
		// socket: AF_UNIX with any type; AF_INET and AF_INET6 for TCP, UDP
		// and ping (inetSocket). Every other family is forbidden: AF_VSOCK
		// reaches the host, AF_NETLINK the kernel's subsystems, AF_PACKET and
		// AF_ALG are old exploit targets.
		[]Rule{{Syscall: "socket", Action: Allow, When: []Cond{{Arg: 0, Mask: mask32, Value: afUnix}}}},
		inetSocket(afInet, ipprotoICMP), inetSocket(afInet6, ipprotoICMPV6),
		// socketpair goes through the same protocol lookup (and module
		// autoload) before failing for anything but AF_UNIX.
		allowWhen("socketpair", 0, mask32, afUnix),
		// Probes answered quietly (netlink route sockets), preadv2's and
		// pwritev2's RWF_NOWAIT: quiet.go.
		quietRules(),
	)

	// Explicitly forbidden: docs/security.md and Docker's reasons. Validate
	// refuses a policy that both allows and forbids a call, so a later edit
	// cannot re-open one of these by adding it to a list above.
	add(
		// Debugging other processes (P04): reads and writes their memory,
		// and (before 4.8) could rewrite a filtered syscall.
		forbid("ptrace", "process_vm_readv", "process_vm_writev", "pidfd_getfd", "kcmp", "process_madvise"),
		// Namespaces (P05, P06).
		forbid("unshare", "setns"),
		// Mounts, old and new API (F14), root changes (F15), file handles (F16).
		forbid("mount", "umount2", "pivot_root", "chroot",
			"fsopen", "fsconfig", "fsmount", "fspick", "open_tree", "open_tree_attr", "move_mount",
			"mount_setattr", "statmount", "listmount", "listns",
			"open_by_handle_at", "name_to_handle_at"),
		// Kernel keyring: not namespaced (P07).
		forbid("keyctl", "add_key", "request_key"),
		// Kernel programs, tracing, io_uring (whose operations bypass seccomp),
		// userfaultfd (a race amplifier for kernel exploits) (P08–P11).
		forbid("bpf", "perf_event_open", "io_uring_setup", "io_uring_enter", "io_uring_register",
			"userfaultfd", "uprobe", "uretprobe", "lookup_dcookie"),
		// Modules, kexec, reboot (P12, P13).
		forbid("init_module", "finit_module", "delete_module", "create_module", "get_kernel_syms", "query_module",
			"kexec_load", "kexec_file_load", "reboot"),
		// Host-wide state that namespaces do not cover (P14, P15).
		forbid("sethostname", "setdomainname", "clock_settime", "clock_adjtime", "settimeofday", "adjtimex",
			"swapon", "swapoff", "acct", "quotactl", "quotactl_fd", "syslog", "vhangup", "sync",
			"_sysctl", "ustat", "sysfs", "nfsservctl", "uselib"),
		// Hardware and x86 oddities.
		forbid("iopl", "ioperm", "modify_ldt", "set_thread_area", "get_thread_area"),
		// Host-wide quotas (doc.go, "Host-wide resources"). Linux AIO
		// contexts count against fs.aio-max-nr, one number for the whole
		// host. inotify instances and watches, and POSIX message queue
		// bytes, count against the user namespace's owner in the parent
		// namespace too, which is the daemon's uid for every jail: one
		// jail could take the host root's 128 inotify instances or its
		// RLIMIT_MSGQUEUE. CPython's standard library uses none of them.
		// remap_file_pages is deprecated (emulated since 3.16) and unused.
		forbid("io_setup", "io_destroy", "io_getevents", "io_pgetevents", "io_submit", "io_cancel",
			"inotify_init", "inotify_init1", "inotify_add_watch", "inotify_rm_watch",
			"mq_open", "mq_unlink", "mq_timedsend", "mq_timedreceive", "mq_notify", "mq_getsetattr",
			"remap_file_pages"),
		// Other processes' NUMA placement, fanotify, secret memory, LSM attributes.
		forbid("migrate_pages", "move_pages",
			"fanotify_init", "fanotify_mark", "memfd_secret",
			"lsm_get_self_attr", "lsm_set_self_attr", "lsm_list_modules"),
		// Numbers Linux reserves but does not implement, and the newest
		// calls that nothing in the jail uses yet (file attributes through a
		// path, 6.17; time-slice extension, 6.19).
		forbid("getpmsg", "putpmsg", "afs_syscall", "tuxcall", "security", "epoll_ctl_old", "epoll_wait_old",
			"vserver", "file_getattr", "file_setattr", "rseq_slice_yield"),
		// Installing a seccomp filter. Our forbidden action is USER_NOTIF
		// and the newest filter wins among equal actions: once our listener
		// is closed (the kernel refuses a second listener only while it is
		// open), a nested filter with its own listener could answer
		// CONTINUE and run any forbidden call. Any nested filter could also
		// turn a reported denial into a silent one.
		// prctl(PR_SET_SECCOMP) is refused by the prctl rule above.
		forbid("seccomp"),
	)
	return &Policy{KnownThrough: 471, Rules: r}
}

// inetSocket allows socket(family, type, protocol) for TCP and UDP (with the
// type's default protocol or named) and ping sockets, whatever the
// SOCK_NONBLOCK/SOCK_CLOEXEC flags. Raw sockets and any other protocol are
// forbidden: an unregistered protocol makes the kernel load a module (SCTP,
// DCCP: docs/security.md P12), and raw sockets are only a missing capability away
// from working (N04).
func inetSocket(family, ping uint64) []Rule {
	var rules []Rule
	for _, tp := range []struct {
		typ    uint64
		protos []uint64
	}{
		{sockStream, []uint64{ipprotoIP, ipprotoTCP}},
		{sockDgram, []uint64{ipprotoIP, ipprotoUDP, ping}},
	} {
		for _, proto := range tp.protos {
			rules = append(rules, Rule{Syscall: "socket", Action: Allow, When: []Cond{
				{Arg: 0, Mask: mask32, Value: family},
				{Arg: 1, Mask: sockTypeMask, Value: tp.typ},
				{Arg: 2, Mask: mask32, Value: proto},
			}})
		}
	}
	return rules
}

// ZygotePolicy is the filter of a zygote: a jailed, warm interpreter that
// never runs request code and forks each warm run's program into the
// run's jail (nsjail's zygote). It is DefaultPolicy plus what that fork
// needs: setns (the run's pid namespace for the zygote's next child; the
// run's user, mount, network, IPC and UTS namespaces for the fork),
// unshare (the run's cgroup namespace) and seccomp (the run's own
// filter). It never mounts: the run's jail is built by its own init.
// Every program installs DefaultPolicy's filter on top of this one before
// the request's code runs; filters stack, and the kernel takes the
// strictest answer, so these calls are forbidden again for the program,
// and reported by the run's own supervisor (the newest filter wins among
// equal answers: doc.go, "Stacked filters").
func ZygotePolicy() *Policy {
	p := DefaultPolicy()
	opened := map[string]bool{"setns": true, "unshare": true, "seccomp": true}
	rules := p.Rules[:0]
	for _, r := range p.Rules {
		if !opened[r.Syscall] {
			rules = append(rules, r)
		}
	}
	p.Rules = append(rules, allow("setns", "unshare", "seccomp")...)
	return p
}
