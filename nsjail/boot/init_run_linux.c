// The jail's init once the program runs (or, for a warm run, once it is
// adopted): the program's start, the signals passed on to it, the reaping
// of every child, and msgExit.

#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#ifndef CLOSE_RANGE_CLOEXEC
#include <linux/close_range.h> // musl's unistd.h does not define it
#endif

#include "init_linux.h"

// The signals a supervisor forwards: the program gets them as if they had
// been sent to it. Any other signal sent to this process from inside the
// jail is dropped by the kernel (a namespace's init without a handler),
// and SIGKILL from outside ends the whole jail.
static const int aj_forwarded[] = {SIGHUP, SIGINT, SIGQUIT, SIGTERM, SIGUSR1, SIGUSR2, SIGALRM, SIGWINCH};
#define AJ_NFORWARDED (int)(sizeof aj_forwarded / sizeof aj_forwarded[0])

volatile pid_t aj_program = -1;

static void aj_forward(int sig)
{
	int e = errno;
	if (aj_program > 0)
		kill(aj_program, sig);
	errno = e;
}

// aj_forward_signals has this process pass the signals a supervisor sends
// pid 1 (aj_forwarded) on to the program (aj_program).
void aj_forward_signals(void)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = aj_forward;
	sa.sa_flags = SA_RESTART;
	sigfillset(&sa.sa_mask);
	for (int i = 0; i < AJ_NFORWARDED; i++)
		if (sigaction(aj_forwarded[i], &sa, NULL) < 0)
			aj_fail("forward signals", errno, NULL);
}

// aj_reap is the jail's init once the program runs: it reaps every child
// (the program, and whatever the program's processes left to it), and
// when the program itself has ended it sends the parent its wait status
// (msgExit) and exits, upon which the kernel kills every process left in
// the jail's pid namespace. It calls only what the filter allows
// (seccomp's TestPolicyAllowsInitTail).
__attribute__((noreturn)) static void aj_reap(void)
{
	for (;;) {
		int st;
		pid_t pid = wait4(-1, &st, 0, NULL);
		if (pid < 0 && errno == EINTR)
			continue;
		if (pid < 0)
			_exit(1); // no child at all: cannot be while the program runs
		if (pid != aj_program)
			continue;
		int32_t status = st;
		aj_write_msg(AJ_MSG_EXIT, &status, sizeof status);
		_exit(WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st));
	}
}

// aj_enter is the start of aj_start_program and aj_adopt: the jail's
// cgroup (steps 1 and 2 below) and every capability dropped.
static void aj_enter(struct aj_state *s, int *join, int njoin)
{
	// The fds were opened by root (the kernel checks the opener, not the
	// writer): each is closed before anything of the program runs.
	for (int i = 0; i < njoin; i++) {
		ssize_t n;
		do
			n = write(join[i], "0", 1);
		while (n < 0 && errno == EINTR);
		int e = errno;
		close(join[i]);
		if (n != 1)
			aj_fail("join cgroup", n < 0 ? e : EIO, NULL);
	}
	if (unshare(CLONE_NEWCGROUP) < 0)
		aj_fail("unshare cgroup namespace", errno, NULL);

	// The bounding set needs CAP_SETPCAP: it goes first. A zygote keeps
	// CAP_SETUID, CAP_SETGID and CAP_SYS_ADMIN of its own user namespace
	// (keep_caps), as ambient capabilities across its exec; every other
	// program none.
	for (int c = 0; c <= 63; c++) {
		if (s->keep_caps & (1ull << c))
			continue;
		if (prctl(PR_CAPBSET_DROP, c, 0, 0, 0) < 0) {
			if (errno == EINVAL) // past the kernel's last capability
				break;
			char stage[64];
			snprintf(stage, sizeof stage, "drop capability %d from the bounding set", c);
			aj_fail(stage, errno, NULL);
		}
	}
	if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0)
		aj_fail("clear ambient capabilities", errno, NULL);
	struct __user_cap_header_struct hdr = {.version = _LINUX_CAPABILITY_VERSION_3, .pid = 0};
	struct __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3];
	memset(data, 0, sizeof data);
	data[0].effective = data[0].permitted = data[0].inheritable = (uint32_t)s->keep_caps;
	if (syscall(SYS_capset, &hdr, data) < 0)
		aj_fail("capset", errno, NULL);
	for (int c = 0; c <= 31; c++)
		if ((s->keep_caps & (1ull << c)) && prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_RAISE, c, 0, 0) < 0)
			aj_fail("keep capabilities", errno, NULL);
}

// aj_filter installs the filter the plans left in s on this process, and
// so on the program (aj_start_program's step 4), and returns its listener.
static int aj_filter(struct aj_state *s)
{
	// no_new_privs first: the kernel refuses a filter from a task without
	// CAP_SYS_ADMIN unless it is set, and it must hold for execve anyway.
	// From the filter on, this process may only make calls the policy
	// allows (seccomp's TestPolicyAllowsInitTail), and the listener must
	// never reach the jail: whoever holds it could let forbidden calls run.
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		aj_fail("seccomp: prctl(PR_SET_NO_NEW_PRIVS)", errno, NULL);
	struct sock_fprog prog = {.len = s->filter_len, .filter = (struct sock_filter *)s->filter};
	// WAIT_KILLABLE_RECV (Linux 5.19): a call the supervisor has taken is
	// not withdrawn by a signal, to be notified and counted again; the
	// count of forbidden calls stays exact. Without it on older kernels.
#ifndef SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV
#define SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV (1UL << 5)
#endif
	int listener = (int)syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER,
				    SECCOMP_FILTER_FLAG_NEW_LISTENER | SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV, &prog);
	if (listener < 0 && errno == EINVAL)
		listener = (int)syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_NEW_LISTENER, &prog);
	if (listener < 0)
		aj_fail("seccomp: seccomp(SECCOMP_SET_MODE_FILTER, NEW_LISTENER)", errno,
			errno == EBUSY ? "this process is already under a seccomp filter with a listener" : NULL);
	return listener;
}

// aj_start_program ends the set-up and starts the program. The order
// matters and each step is as late as it can be:
//  1. on cgroup v1, join the jail's group by writing "0" to each
//     hierarchy's tasks file in join (opened by the parent:
//     cgroup.Group.JoinFiles; on v2 the parent has moved this process and
//     join is empty), then unshare(CLONE_NEWCGROUP), so that the program
//     sees that group as its root. A jail never runs outside its group:
//     any failure ends the stage;
//  2. drop every capability (the bounding set first: it needs
//     CAP_SETPCAP; then ambient, then effective, permitted, inheritable):
//     this process stays as the jail's init with no more power than the
//     program;
//  3. mark every fd but 0, 1, 2 close-on-exec (the sync socket included:
//     this process keeps it, the program never has it), except the report
//     channel on fd 3 when the run has one;
//  4. no_new_privs, then the seccomp filter, which holds for this process
//     and the program alike (last: it may forbid the calls above); its
//     listener goes to the parent;
//  5. vfork: the child execs the program (its time is taken just before,
//     for the parent's wall clock), this process gives up its copies of
//     the program's stdio and stays as the jail's init (aj_reap).
// Neither here nor in any plan may a step change the stage's uid, gids or
// groups, or gain a capability: the kernel's commit of such credentials
// resets the parent-death signal and the not-dumpable flag the bootstrap
// set, and the jail would outlive its parent's thread, or be ptrace-able.
__attribute__((noreturn)) void aj_start_program(struct aj_state *s, int *join, int njoin)
{
	aj_enter(s, join, njoin);
	int workspace = -1;
	if (s->collect) {
		// The parent reads the files out of it after the program ended;
		// an O_PATH fd gives it nothing but a starting point for openat2.
		workspace = open("/workspace", O_PATH | O_DIRECTORY | O_CLOEXEC);
		if (workspace < 0)
			aj_fail("open /workspace", errno, NULL);
	}
	if (syscall(SYS_close_range, 3, ~0U, CLOSE_RANGE_CLOEXEC) < 0)
		aj_fail("close_range", errno, NULL);
	if (s->report && fcntl(AJ_REPORT_FD, F_SETFD, 0) < 0)
		aj_fail("keep report channel open", errno, NULL);

	// The forwarding handlers, before the filter (rt_sigaction stays
	// allowed, but nothing here should depend on it).
	aj_forward_signals();

	int listener = aj_filter(s);

	int send_fds[2] = {listener, workspace};
	int sent = aj_send_fds(AJ_MSG_SECCOMP, send_fds, workspace >= 0 ? 2 : 1);
	int e = errno;
	close(listener);
	if (workspace >= 0)
		close(workspace);
	if (sent < 0)
		aj_fail("send seccomp listener", e, NULL);

	// The child shares this process's memory until its exec (vfork: no
	// page table is copied, and this process waits until the exec is
	// done). Signals are blocked around it, so that no handler of this
	// process runs on the child's side; the child takes the forwarded
	// ones back to their defaults before it unblocks them for the
	// program, which starts with no signal blocked, as from a shell.
	sigset_t all, none;
	sigfillset(&all);
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &all, NULL);
	static volatile int exec_errno;
	static struct timespec exec_at;
	exec_errno = 0;
	pid_t pid = vfork();
	if (pid == 0) {
		struct sigaction dfl;
		memset(&dfl, 0, sizeof dfl);
		dfl.sa_handler = SIG_DFL;
		for (int i = 0; i < AJ_NFORWARDED; i++)
			sigaction(aj_forwarded[i], &dfl, NULL);
		sigprocmask(SIG_SETMASK, &none, NULL);
		clock_gettime(CLOCK_MONOTONIC, &exec_at);
		execve(s->argv[0], s->argv, s->envp);
		exec_errno = errno;
		_exit(127);
	}
	if (pid < 0)
		aj_fail("start the program (vfork)", errno, NULL);
	aj_program = pid;
	// Only the program's processes may hold its stdio and report channel:
	// their ends are what tells the parent that the output is complete.
	for (int fd = 0; fd <= AJ_REPORT_FD; fd++)
		close(fd);
	if (exec_errno != 0) {
		char stage[256];
		snprintf(stage, sizeof stage, "exec %s", s->argv[0]);
		struct aj_record r;
		aj_error_record(&r, stage, exec_errno, NULL);
		aj_write_msg(AJ_MSG_ERROR, &r, sizeof r);
		int st;
		while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
			;
		_exit(1);
	}
	int64_t ns = (int64_t)exec_at.tv_sec * 1000000000 + exec_at.tv_nsec;
	aj_write_msg(AJ_MSG_EXEC, &ns, sizeof ns);
	sigprocmask(SIG_SETMASK, &none, NULL);
	aj_reap();
}

static void aj_nothing(int sig)
{
	(void)sig;
}

// aj_adopt ends a warm run's set-up (AJ_OP_ADOPT). This process stays the
// jail's pid 1, but the program is not its child: the zygote forks it
// into the jail's namespaces (zygote.py), where it is pid 2, and is its
// parent. In the jail's group, with no capability left, no_new_privs and
// the build plan's filter (a warm run's is seccomp.AdoptCalls alone, and
// has no listener: any other call fails with ENOSYS; the program installs
// its own filter), this process (which forwards signals to the program
// since aj_init had the request) waits for msgAdopt, which brings a pidfd
// of the program, then reaps whatever the program's processes leave to
// it, and exits as soon as the program has ended, upon which the kernel
// kills every process left in the jail's pid namespace. The program's
// wait status is its parent's to tell (the zygote's msgExit). It calls
// only what that filter allows (seccomp.AdoptCalls: TestKernelAdoptTail
// runs these calls under it; the program's filter allows each of them
// too: TestAdoptCallsAreTheProgramsToo).
//
// What that filter rests on:
//  - nothing of the program can reach this process but signals: it is not
//    dumpable (no ptrace, no /proc/1/mem), its fds are not the program's,
//    and it forwards only aj_forwarded. The filter is a second wall;
//  - malloc was set up before it (aj_plan's allocations: glibc's first
//    malloc may call getrandom): from here on a malloc needs only brk,
//    mmap or (musl, the standalone init's C library, for its metadata once
//    brk has failed) mprotect, a free only brk, munmap or madvise;
//  - a call outside the list fails with ENOSYS. One this tail needs would
//    end it (a failed brk crashes malloc: TestKernelAdoptTail), and with
//    it the jail: it fails closed, never open.
__attribute__((noreturn)) void aj_adopt(struct aj_state *s, int *join, int njoin)
{
	aj_enter(s, join, njoin);
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		aj_fail("prctl(PR_SET_NO_NEW_PRIVS)", errno, NULL);
	// SIGCHLD is only let in while ppoll waits: none is lost between a
	// reap and the wait.
	sigset_t chld, none;
	sigemptyset(&chld);
	sigaddset(&chld, SIGCHLD);
	sigemptyset(&none);
	sigprocmask(SIG_BLOCK, &chld, NULL);
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = aj_nothing;
	sigfillset(&sa.sa_mask);
	if (sigaction(SIGCHLD, &sa, NULL) < 0)
		aj_fail("handle SIGCHLD", errno, NULL);
	struct sock_fprog prog = {.len = s->filter_len, .filter = (struct sock_filter *)s->filter};
	if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog) < 0)
		aj_fail("seccomp: seccomp(SECCOMP_SET_MODE_FILTER)", errno, NULL);

	struct aj_msg m;
	if (!aj_recv(&m, "read adopt") || m.type != AJ_MSG_ADOPT || m.nfds != 1)
		_exit(1); // the parent went away or gave up: nothing to report to
	// The program's pidfd, the parent's (taken while the program waited
	// for its request): it names the program and no other process, ended
	// or not.
	int pidfd = m.fds[0];
	struct pollfd p = {.fd = pidfd, .events = POLLIN};
	for (;;) {
		while (waitpid(-1, NULL, WNOHANG | __WALL) > 0)
			;
		int n = ppoll(&p, 1, NULL, &none);
		if (n > 0)
			_exit(0);
		if (n < 0 && errno != EINTR)
			_exit(1);
	}
}
