// Package seccomp is the jail's system-call filter: the policy as data, its
// compilation with libseccomp, loading it in the init stage, and naming the
// forbidden calls a job makes. It is the only importer of libseccomp-golang.
//
// # Life of a filter
//
//	daemon/CLI start:  prog, err := seccomp.DefaultPolicy().Compile()   // once; ~1 ms; cgo
//	                   b, _ := prog.MarshalBinary()                      // carried to every init stage
//	init stage (nsjail/boot/init_linux.c, C, one thread; its last steps):
//	                   close_range; prctl(PR_SET_NO_NEW_PRIVS)
//	                   fd = seccomp(NEW_LISTENER|WAIT_KILLABLE_RECV, prog)  // 5.19+; else NEW_LISTENER
//	                   sendmsg(fd → parent, SCM_RIGHTS); close(fd); execve(python3)
//	                   (Install is the same two calls for a Go thread)
//	parent:            go seccomp.Supervise(ctx, fd, mode, &collector, kill)
//	                   ... wait for and reap the jail ...
//	                   kill: ModeKill, or v.Foreign, or v.OverBudget (MaxNotifications)
//	                   result.Seccomp = collector.Report()                // docs/contract.md `seccomp`
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
//  1. A short prefix written here (program.go, prefix): a foreign
//     architecture (i386 `int 0x80`, anything but AUDIT_ARCH_X86_64) or an
//     x32 number (bit 0x40000000 in nr, and every nr above it but -1) →
//     USER_NOTIF, before any rule; then what libseccomp 2.5 cannot
//     express: ERRNO(ENOSYS) for every number the policy does not
//     know (above Policy.KnownThrough, the undefined 337..423, -1), so that a
//     newer libc that probes a newer call falls back, as in runc's patchbpf;
//     and the Except rules (ioctl TIOCSTI/TIOCLINUX, prctl PR_SET_SECCOMP,
//     shmctl SHM_LOCK) compared on the low 32 bits of the argument, which
//     is what the kernel uses. In libseccomp an unconditional rule silently swallows conditional
//     rules of the same call (the "obvious" allow-ioctl + deny-TIOCSTI
//     returns no error and allows TIOCSTI), and a conditional rule whose
//     conditions all fail falls to the filter's default action, so the
//     default must be the Forbid notification and ENOSYS must come from
//     elsewhere.
//  2. libseccomp's program (default action USER_NOTIF, bad-arch action
//     USER_NOTIF too, binary-tree layout; its own arch and x32 checks are
//     unreachable after the prefix): the rules → ALLOW, ERRNO (ERRNO(0) for
//     Succeed) or argument checks (SCMP_CMP_MASKED_EQ); anything else →
//     notify.
//
// The program has no KILL or TRAP action anywhere (a test checks it).
//
// The tests evaluate the exported program with a classic-BPF interpreter for
// every number 0..1023 on x86_64, x32 and i386, compare each decision with
// Policy.decide (the policy's meaning written in Go) and with the golden file
// testdata/decisions.golden, and run python3 under the filter in the real
// kernel.
//
// # Policy decisions (DefaultPolicy)
//
// Docker's default profile without capabilities, minus what docs/security.md Part
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
//     protocol or family makes the kernel load its module (docs/security.md P12);
//     AF_VSOCK reaches this VM's host. socketpair only for AF_UNIX (it takes
//     the same module-loading path before failing for anything else).
//   - Probes answered quietly (quiet.go, QuietProbes): a few calls fail
//     with the error a kernel without the feature gives, in the filter
//     (ERRNO), so they are neither reported nor fatal in ModeKill: a
//     netlink route socket (glibc's getaddrinfo with AI_ADDRCONFIG probes
//     it and falls back) → EAFNOSUPPORT; preadv2 and pwritev2 with
//     RWF_NOWAIT → EOPNOTSUPP (a read that succeeds only from the page
//     cache tells whether another jail or the host read a shared /usr file
//     recently; the flags are the sixth argument on x86_64). Every other
//     netlink protocol stays forbidden and reported.
//   - ioctl: everything except TIOCSTI and TIOCLINUX, on the low 32 bits
//     ((0x123<<32)|TIOCSTI is TIOCSTI to the kernel, CVE-2019-10063).
//   - personality only 0, 8, 0x20000, 0x20008, 0xffffffff (as Docker).
//   - mknod/mknodat only for regular files, FIFOs (os.mkfifo) and sockets;
//     device nodes are forbidden. Without CAP_MKNOD the kernel would refuse
//     them too; the rule makes the attempt visible in the report and does
//     not depend on the capability set.
//   - ptrace, process_vm_readv/writev, pidfd_getfd, kcmp, process_madvise:
//     forbidden (docs/security.md P04's recommended policy; Docker allows ptrace on
//     4.8+). strace and gdb do not work in the jail.
//   - io_uring_setup/enter/register: forbidden; its operations never pass
//     through seccomp (docs/security.md P10; Docker and containerd since 2023).
//   - memfd_create: allowed, but not with MFD_HUGETLB (below). Executing a
//     memfd is not an escape (the new program inherits the filter,
//     namespaces and cgroup; docs/security.md F18), and Python can run machine
//     code through ctypes anyway. memfd_secret is forbidden.
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
//     host).
//   - Identity calls (setuid, setgroups, capset, ...) are allowed as in
//     Docker: without capabilities they can only switch between ids the job
//     already has.
//
// Host-wide resources: what one jail could take from the host or from the
// other jails, outside its own limits (issue 21; docs/security.md,
// "Host-wide resources", has the tests). A jail's limits are its cgroup
// (memory, pids, CPU), its rlimits, its own namespaces, and the per-uid
// counters of its host uid, which no other live jail shares. Beware of
// counters kept per user namespace ("ucounts": inotify, fanotify, POSIX
// message queues, SHM_LOCK, pending signals): the kernel charges them to
// the jail's uid and also to the namespace's owner in the parent namespace,
// which is the uid that created the jail's user namespace: the daemon's
// (root) for every jail. Root's own limit applies there, shared by the
// host's root and every jail.
//
//   - Linux AIO (io_setup, io_destroy, io_submit, io_cancel, io_getevents,
//     io_pgetevents): forbidden. Contexts count against fs.aio-max-nr, one
//     number for the whole host: 16 × io_setup(4096) took all of it.
//     CPython never uses them (asyncio is epoll).
//   - Disk flushes (fsync, fdatasync, syncfs, sync_file_range, and msync
//     with MS_SYNC): Succeed, i.e. SECCOMP_RET_ERRNO with errno 0, which
//     returns 0 without entering the call. Every file a jail can write is
//     on its tmpfs, where they do nothing; on a read-only file of the host
//     (/usr), ext4 still sends the host disk a cache flush for each call
//     (one for one in /proc/diskstats). Nothing a jail writes outlives it
//     except what the daemon collects from the tmpfs, so no durability is
//     lost. The visible difference: they return 0 where they would fail
//     (EBADF on a bad descriptor, EINVAL on a pipe, ENOMEM for an unmapped
//     msync range). msync without MS_SYNC runs (libunwind probes addresses
//     with MS_ASYNC). sync stays forbidden and reported: it has no
//     descriptor to say what it flushes, and in ModeErrno os.sync() gets
//     EPERM.
//   - posix_fadvise (fadvise64): Succeed. It is advice the kernel may
//     ignore; POSIX_FADV_DONTNEED on a /usr file would drop the host's page
//     cache of it (the daemon's next python3 reads it from disk again).
//   - inotify (inotify_init, inotify_init1, inotify_add_watch,
//     inotify_rm_watch): forbidden. Instances and watches are ucounts:
//     a jail made 128 instances and host root's inotify_init1 failed with
//     EMFILE until it ended (fs.inotify.max_user_instances 128 for root and
//     all jails together). The standard library never uses inotify.
//   - fanotify: forbidden (it was; it is a ucounts counter as well).
//   - POSIX message queues (mq_*): forbidden. Queue bytes count against
//     RLIMIT_MSGQUEUE in the ucounts chain: a jail made 9 default queues
//     (≈ 800 KB) and host root's mq_open failed with EMFILE. The standard
//     library has no API for them. System V IPC stays: its limits are per
//     IPC namespace and its memory is the jail's.
//   - shmctl(SHM_LOCK): forbidden (an Except on shmctl): locked System V
//     segments count against RLIMIT_MEMLOCK in the ucounts chain.
//     mlock, mlock2, mlockall stay allowed: RLIMIT_MEMLOCK per process
//     (locked_vm, 8 MiB inherited), and the pages are the jail's memory,
//     which its cgroup limits.
//   - Huge pages from the host's pool (mmap MAP_HUGETLB, memfd_create
//     MFD_HUGETLB, shmget SHM_HUGETLB): forbidden. hugetlbfs pages are a
//     host-wide pool that the memory cgroup does not count (cgroup v1; v2
//     only with memory_hugetlb_accounting). Transparent huge pages
//     (madvise MADV_HUGEPAGE) are ordinary memory and stay.
//   - membarrier: only the commands that act on the caller's own threads
//     (QUERY, PRIVATE_EXPEDITED and its SYNC_CORE and RSEQ variants, their
//     REGISTER_ commands, GET_REGISTRATIONS). MEMBARRIER_CMD_GLOBAL waits
//     for an RCU grace period of the whole machine (≈ 8.6 ms here, so a
//     thread loops at ~115/s keeping the host's RCU busy); GLOBAL_EXPEDITED
//     interrupts every CPU that runs a process of anyone that registered.
//     CPython never calls membarrier.
//   - remap_file_pages: forbidden: deprecated, emulated since 3.16, unused.
//   - Pending signals and POSIX timers: allowed, and today not bounded per
//     jail: each queued real-time signal and each timer_create counts
//     against RLIMIT_SIGPENDING in the ucounts chain, so a jail that queues
//     SIGRTMIN to itself (kill, not refusable) takes root's 96364 and host
//     root's sigqueue fails with EAGAIN. The filter cannot fix this; the
//     jail's user namespace must be created by its own host uid (then the
//     chain ends at that uid), or the jail must get a small
//     RLIMIT_SIGPENDING (nsjail). timerfd is an fd (RLIMIT_NOFILE).
//   - pipes (pipe buffer pages: per host uid, fs.pipe-user-pages-soft,
//     and charged to the memory cgroup), epoll watches (per host uid,
//     fs.epoll.max_user_watches, and charged), memfd and tmpfs pages
//     (charged; the tmpfs also has its size), fallocate (the tmpfs size
//     and RLIMIT_FSIZE), pidfds (the jail's pid namespace only), setting
//     priorities and I/O priorities (no capability of the host: SCHED_FIFO,
//     SCHED_DEADLINE, nice below 0 and IOPRIO_CLASS_RT fail), /proc/sys
//     (read-only in the jail), the kernel keyring and userfaultfd
//     (forbidden): allowed or refused as listed, and bounded by the jail's
//     own limits.
//   - Forbidden calls themselves: each costs the daemon a notification
//     round trip (see "Notification budget").
//
// # Foreign ABIs
//
// A call through another ABI than x86_64's (i386 `int 0x80`, x32, any
// other AUDIT_ARCH) is the Forbid notification too, never KILL_PROCESS:
// since the jail's PID 1 is agentjail's own init, the program is an
// ordinary process that can kill itself with SIGSYS (or let a timer do it),
// so a death by SIGSYS is no evidence of anything. Supervise marks it
// Violation.Foreign (with Violation.Arch), counts it apart
// (Collector.Foreign; CallCount.ABI and Report.ABI say "x32", "i386", ...)
// and passes it to onViolation before it answers, in both modes: the
// caller ends the jail with kill_reason "seccomp". The call never runs:
// answered, it fails with EPERM; with no listener the kernel answers ENOSYS.
//
// # Stacked filters
//
// A "zygote" jail installs this filter under another one later. With
// several filters the kernel runs all of them and takes the action of
// highest precedence (KILL_PROCESS > KILL_THREAD > TRAP > ERRNO >
// USER_NOTIF > TRACE > LOG > ALLOW), and among equal actions the newest
// filter's (its listener gets the notification). So this policy must never
// answer ERRNO (or KILL, or TRAP) for a call that a stacked filter might
// want to report: its ERRNO would win over the other filter's USER_NOTIF.
// The program's only ERRNO answers are ENOSYS for numbers it does not know
// and clone3 (a libc's fallback probes), the quiet probes (QuietProbes:
// netlink route sockets, RWF_NOWAIT), and ERRNO(0) for Succeed (disk
// flushes and fadvise, which must not reach the host); everything refused,
// foreign ABIs included, is USER_NOTIF. Any new Errno or Succeed rule must
// keep to that. (The zygote's filter, under a warm run's, has the same
// ERRNO rules.)
//
// # Notification budget
//
// A forbidden call costs its jail little (the thread waits) and the daemon
// a notification round: 4.7 to 9.7 µs of the daemon's CPU each on the
// development VM (BenchmarkSupervisorCPU; the flood, 240,000 calls
// in 3 s costing the daemon 2 CPU-seconds, is 8.3 µs), CPU that no limit of
// the jail counts. A jail may therefore make at most MaxNotifications
// (1000) forbidden calls: Supervise marks the next one Violation.OverBudget
// and passes it on before answering it, whatever the mode, and the caller
// ends the jail (kill_reason "seccomp", with a feedback line saying that
// the program made more than 1000 forbidden system calls). That caps the
// daemon's work for one jail at 5 to 10 ms of CPU. Python programs make none
// (the standard library's calls are all allowed; getaddrinfo's netlink
// probe is answered in the filter) or a handful (os.sync).
//
// The filter is installed with SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV
// (Linux 5.19+; Install falls back without it): once the supervisor has
// received a notification, only a fatal signal interrupts the call.
// Without it a signal (a Go child's preemption, a Python SIGALRM) withdraws
// the call, which restarts and is notified, and counted, again.
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
//	Supervise:     count nr (Collector; a foreign ABI apart); ModeKill, Foreign or
//	               OverBudget: onViolation (the caller kills the jail)
//	Supervise   ── ioctl(SECCOMP_IOCTL_NOTIF_SEND, {id, val 0, error -EPERM, flags 0}) ──▶ kernel
//	jail thread ◀── -1, errno EPERM   (ENOENT from SEND: the thread is gone; ignored)
//	Supervise:     otherwise: onViolation
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
//   - The ucounts chain (see the host-wide resources above): pending
//     signals and POSIX timers of a jail count against the daemon's uid
//     until nsjail creates the jail's user namespace as the jail's host
//     uid or sets a small RLIMIT_SIGPENDING (TestHostwideSignalQueue).
//   - Socket buffers are not memory of the jail's cgroup on cgroup v1
//     (without memory.kmem.tcp.limit_in_bytes): 100 loopback TCP
//     connections of a jail held 381 MiB of the host's tcp_mem while its
//     cgroup counted 5 MiB (TestHostwideTCPMemory). cgroup v2 charges them.
//   - flock(2) works on any file a jail can open, including the read-only
//     host files under /usr: a host process that flocks the same file waits
//     until the jail ends (its wall limit bounds it; TestHostwideFlock).
//     Nothing of agentjail's or Debian's locks files there.
//   - An x32 or i386 call is named by its number and ABI only (Syscall is
//     ""): the name table is x86_64's.
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
//   - ModeKill, foreign-ABI calls and the budget rely on the caller's kill:
//     the filter itself does not kill.
//     The thread that made the call stays blocked until then; the jail's
//     other threads and processes run on for the round trip plus the kill
//     (tens of microseconds).
//   - In ModeKill os.sync() ends the jail (sync is forbidden); in ModeErrno
//     it gets EPERM, which CPython raises, and is reported. The library
//     probes found so far (netlink route sockets) are answered quietly:
//     a survey of numpy, pandas, matplotlib, urllib, http.client, ssl,
//     asyncio, multiprocessing (fork, spawn, forkserver, Manager),
//     subprocess, uuid, socket, sqlite3 and concurrent.futures in ModeKill
//     found no other (2026-11-28).
//   - x86_64 only: the name table, the prefix and the rules use x86_64
//     numbers; Compile refuses another native architecture.
//   - Costs, measured on the development VM (AMD EPYC, Linux 6.18):
//     Install ≈ 100 µs (the kernel JIT-compiles the ~500-instruction program
//     and precomputes its action cache; a linear, unoptimised program of the
//     same policy takes ≈ 240 µs); one forbidden call ≈ 9 to 16 µs round
//     trip, of which 4.7 to 9.7 µs of the supervisor's CPU;
//     an allowed call that needs the filter (ioctl) ≈ 90 ns including the
//     call; Compile ≈ 1 ms, once per process. mmap and msync now have
//     argument checks, so the kernel's action cache no longer skips the
//     filter for them: python3 -I -c pass makes ≈ 950 mmaps, each now
//     running the JIT-compiled filter (tens of ns), < 0.1 ms per start.
//   - libseccomp 2.6's 32-bit argument comparisons would make the Except
//     part of the prefix unnecessary; the ENOSYS part would remain.
package seccomp
