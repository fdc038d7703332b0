// Package seccomp is the jail's system-call filter: the policy as data, its
// compilation with libseccomp, loading it in the init stage, and naming the
// forbidden calls a job makes. It is the only importer of libseccomp-golang.
//
// # Life of a filter
//
//	daemon/CLI start:  prog, err := seccomp.DefaultPolicy().Compile()   // once; ~1 ms; cgo
//	                   b, _ := prog.MarshalBinary()                      // carried to every init stage
//	init stage (nsjail/init_linux.c, C, one thread; its last steps):
//	                   close_range; prctl(PR_SET_NO_NEW_PRIVS); fd = seccomp(NEW_LISTENER, prog)
//	                   sendmsg(fd → parent, SCM_RIGHTS); close(fd); execve(python3)
//	                   (Install is the same two calls for a Go thread)
//	parent:            go seccomp.Supervise(ctx, fd, mode, &collector, kill)
//	                   ... wait for and reap the jail ...
//	                   result.Seccomp = collector.Report()                // CONTRACT.md `seccomp`
//
// The program is the same for both modes (on_forbidden_syscall is a
// per-request choice, the compilation is done once): the mode is how the
// supervisor answers. Compile, not Install, needs cgo; Install and Supervise
// are plain golang.org/x/sys/unix.
//
// # The program
//
// A forbidden call returns SECCOMP_RET_USER_NOTIF: it does not run, the
// calling thread waits, and the kernel tells the listener which call it was.
// The program has two parts:
//
//  1. A short prefix written here (program.go, prefix), because libseccomp 2.5
//     cannot express it: ERRNO(ENOSYS) for every number the policy does not
//     know (above Policy.KnownThrough, the undefined 337..423, -1), so that a
//     newer libc that probes a newer call falls back, as in runc's patchbpf;
//     and the Except rules (ioctl TIOCSTI/TIOCLINUX, prctl PR_SET_SECCOMP)
//     compared on the low 32 bits of the argument, which is what the kernel
//     uses. In libseccomp an unconditional rule silently swallows conditional
//     rules of the same call (the "obvious" allow-ioctl + deny-TIOCSTI
//     returns no error and allows TIOCSTI), and a conditional rule whose
//     conditions all fail falls to the filter's default action, so the
//     default must be the Forbid notification and ENOSYS must come from
//     elsewhere.
//  2. libseccomp's program (default action USER_NOTIF, bad-arch action
//     KILL_PROCESS, binary-tree layout): i386 (`int 0x80`), any foreign
//     arch and x32 (bit 0x40000000 in nr) → KILL_PROCESS; the rules → ALLOW,
//     ERRNO or argument checks (SCMP_CMP_MASKED_EQ); anything else → notify.
//
// The tests evaluate the exported program with a classic-BPF interpreter for
// every number 0..1023 on x86_64, x32 and i386, compare each decision with
// Policy.decide (the policy's meaning written in Go) and with the golden file
// testdata/decisions.golden, and run python3 under the filter in the real
// kernel.
//
// # Policy decisions (DefaultPolicy)
//
// Docker's default profile without capabilities, minus what attacks.md Part
// A.1 forbids, minus calls that CPython, /bin/sh and their libraries never
// make. Every known call has an explicit rule (a test checks it). Notable:
//
//   - clone only without CLONE_NEW* (NEWNS|NEWCGROUP|NEWUTS|NEWIPC|NEWUSER|
//     NEWPID|NEWNET|NEWTIME); clone3 → ENOSYS, never reported: its flags are
//     in memory where the filter cannot look, and glibc then uses clone (with
//     EPERM, Python threads break). unshare and setns are forbidden.
//   - socket: AF_UNIX; AF_INET/AF_INET6 only as TCP (protocol 0 or 6), UDP
//     (0 or 17) or ping (ICMP/ICMPv6) sockets; raw sockets, SCTP, DCCP, MPTCP
//     and every other family are forbidden. A request for an unregistered
//     protocol or family makes the kernel load its module (attacks.md P12);
//     AF_VSOCK reaches this VM's host. socketpair only for AF_UNIX (it takes
//     the same module-loading path before failing for anything else).
//   - ioctl: everything except TIOCSTI and TIOCLINUX, on the low 32 bits
//     ((0x123<<32)|TIOCSTI is TIOCSTI to the kernel, CVE-2019-10063).
//   - personality only 0, 8, 0x20000, 0x20008, 0xffffffff (as Docker).
//   - mknod/mknodat only for regular files, FIFOs (os.mkfifo) and sockets;
//     device nodes are forbidden. Without CAP_MKNOD the kernel would refuse
//     them too; the rule makes the attempt visible in the report and does
//     not depend on the capability set.
//   - ptrace, process_vm_readv/writev, pidfd_getfd, kcmp, process_madvise:
//     forbidden (attacks.md P04's recommended policy; Docker allows ptrace on
//     4.8+). strace and gdb do not work in the jail.
//   - io_uring_setup/enter/register: forbidden; its operations never pass
//     through seccomp (attacks.md P10; Docker and containerd since 2023).
//   - memfd_create: allowed. Executing a memfd is not an escape (the new
//     program inherits the filter, namespaces and cgroup; attacks.md F18),
//     and Python can run machine code through ctypes anyway. memfd_secret is
//     forbidden.
//   - seccomp(2) and prctl(PR_SET_SECCOMP): forbidden, unlike Docker. Our
//     forbidden action is USER_NOTIF, and among filters returning the same
//     action the newest one gets the notification. While our listener is
//     open the kernel refuses a second listener in the same chain (EBUSY),
//     but once it is closed (Supervise cancelled, daemon restarted) a job
//     could stack its own USER_NOTIF filter with
//     SECCOMP_FILTER_FLAG_NEW_LISTENER, answer CONTINUE, and so run any call
//     we forbid (checked on Linux 6.18 with a small C program). Any nested
//     filter could also turn our reported denials into silent ones.
//   - Forbidden besides: mount and the new mount API, pivot_root, chroot,
//     open_by_handle_at, name_to_handle_at, keyctl/add_key/request_key, bpf,
//     perf_event_open, userfaultfd, module and kexec calls, reboot,
//     sethostname/setdomainname, setting clocks (adjtimex too), swapon/off,
//     acct, quotactl, syslog, vhangup, iopl/ioperm, modify_ldt,
//     set/get_thread_area, NUMA placement, fanotify, statmount/listmount,
//     lsm_*, uprobe/uretprobe, and sync (it flushes every filesystem of the
//     host; syncfs and fsync stay allowed).
//   - Identity calls (setuid, setgroups, capset, ...) are allowed as in
//     Docker: without capabilities they can only switch between ids the job
//     already has.
//
// # The notification protocol (Supervise)
//
// The listener is the file descriptor seccomp(SECCOMP_SET_MODE_FILTER,
// SECCOMP_FILTER_FLAG_NEW_LISTENER) returns in the init stage; the child
// sends it to the parent with SCM_RIGHTS and closes its copy before execve
// (it is close-on-exec as well). One round per forbidden call:
//
//	jail thread ── forbidden call ──▶ kernel: thread blocks; listener polls POLLIN
//	Supervise   ── ioctl(SECCOMP_IOCTL_NOTIF_RECV) ──▶ {id, pid, data{nr, arch, ip, args}}
//	Supervise:     count nr (Collector); ModeKill: onViolation (the caller kills the jail)
//	Supervise   ── ioctl(SECCOMP_IOCTL_NOTIF_SEND, {id, val 0, error -EPERM, flags 0}) ──▶ kernel
//	jail thread ◀── -1, errno EPERM   (ENOENT from SEND: the thread is gone; ignored)
//	Supervise:     ModeErrno: onViolation
//	...
//	last jail process reaped ──▶ listener polls POLLHUP ──▶ Supervise closes it, returns nil
//
// Supervise never answers SECCOMP_USER_NOTIF_FLAG_CONTINUE. The kernel's
// warning that user notification "cannot be used to implement a security
// policy" is about the race between the supervisor reading a pointer
// argument and the kernel reading it again after CONTINUE. Here the filter
// has already decided that the call is refused; the notification only tells
// the supervisor which call it was, and the answer is always an error. The
// listener must never reach the jail, which could otherwise answer its own
// notifications with CONTINUE.
//
// The listener is non-blocking and registered with the Go runtime's poller,
// so a waiting Supervise holds no OS thread. The RECV ioctl itself blocks
// regardless of O_NONBLOCK; Supervise polls with a zero timeout before each
// RECV, so it only calls it when a notification is pending.
//
// # Ordering rule (the init stage)
//
// no_new_privs → seccomp → (send listener, close fds) → execve, as late as
// possible, on the runtime.LockOSThread'ed thread that execs. From Install
// on, that thread's calls are filtered (the tail it needs is allowed;
// TestPolicyAllowsInitTail). No TSYNC: the other threads are the Go
// runtime's, trusted, and execve ends them; the filter is inherited by
// everything the thread starts.
//
// # Known gaps
//
//   - A foreign-ABI call (x32, `int 0x80`) kills the calling process with
//     SIGSYS in the kernel; it is not notified, so the report does not name
//     it. The parent sees it only as SIGSYS in the wait status of a process
//     it waits for (the jail's pid 1); a child of python killed this way is
//     visible only to python.
//   - ENOSYS answers (clone3, calls newer than KnownThrough) are not
//     reported. Raising KnownThrough needs a decision for each new call;
//     gen_sysnames.go refreshes the name table from golang.org/x/sys.
//   - Pointer arguments are not inspected (the filter cannot read memory):
//     clone3's flags, sendmsg's SCM_RIGHTS, socket addresses. The design
//     avoids needing to (clone3 → ENOSYS; namespaces and the network
//     namespace do the rest).
//   - If Supervise stops early (ctx cancelled) or the daemon dies, later
//     forbidden calls fail with ENOSYS instead of EPERM and are not reported.
//     If the supervisor is alive but stuck, a forbidden call blocks its
//     thread until the jail's wall-clock limit kills it.
//   - ModeKill relies on the caller's kill: the filter itself does not kill.
//     The thread that made the call stays blocked until then; the jail's
//     other threads and processes run on for the round trip plus the kill
//     (tens of microseconds).
//   - In ModeKill some harmless library probes end the jail:
//     getaddrinfo(AI_ADDRCONFIG) and socket.if_nameindex() open AF_NETLINK
//     sockets, NUMA-aware libraries call get_mempolicy, os.sync() calls sync.
//     In ModeErrno they get EPERM, which glibc and CPython handle, and are
//     reported.
//   - x86_64 only: the name table, the prefix and the rules use x86_64
//     numbers; Compile refuses another native architecture.
//   - Costs, measured on the development VM (AMD EPYC, Linux 6.18):
//     Install ≈ 100 µs (the kernel JIT-compiles the ~490-instruction program
//     and precomputes its action cache; a linear, unoptimised program of the
//     same policy takes ≈ 240 µs); one forbidden call ≈ 11 µs round trip;
//     an allowed call that needs the filter (ioctl) ≈ 90 ns including the
//     call; Compile ≈ 1 ms, once per process.
//   - libseccomp 2.6's 32-bit argument comparisons would make the Except
//     part of the prefix unnecessary; the ENOSYS part would remain.
package seccomp
