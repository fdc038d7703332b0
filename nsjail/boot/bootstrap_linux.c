// The jail's bootstrap: C that runs in the re-executed binary before the
// Go runtime starts (a constructor), because two of its steps need a
// process with one thread: unshare(CLONE_NEWUSER) and a fork. It lets the
// parent start the init stage with a plain vfork and exec, instead of a
// clone with CLONE_NEWUSER, which Go does as a full fork of the parent (a
// daemon's page tables copied on every jail). runc's nsexec is the model.
//
//	parent (vfork, exec; no namespace;       bootstrap, before the Go runtime
//	the jail's host uid in the environment)
//	                                           no supplementary groups; become
//	                                           the jail's host uid and gid;
//	                                           unshare(CLONE_NEWUSER);
//	                                           setgroups deny, uid_map, gid_map
//	                                           (1000 inside = that host uid);
//	                                           capabilities CAP_SYS_ADMIN,
//	                                           CAP_NET_ADMIN, CAP_SETPCAP only,
//	                                           unshare(CLONE_NEWPID),
//	                                           fork with CLONE_PARENT: the child
//	                                           is pid 1 and the parent's own child
//	  <--- record AJ_REC_PID (its host pid) -  (this process exits 0)
//	  reap this process; wait for, signal
//	  and attach the pid 1 from now on
//	                                           pid 1 goes on in C: aj_init
//	                                           (init_linux.c) and the
//	                                           protocol of protocol.go; no
//	                                           Go runtime ever starts here
//
// The user namespace is made by the jail's own host uid, not by root: the
// kernel charges what a user namespace holds (inotify instances, message
// queues, pending signals, the user namespaces themselves) to its owner as
// well as to the user in it, so a namespace of root's would let one jail
// take root's share of every such counter. As its own owner, the jail
// writes its one-line maps itself: no round trip with the parent.
//
// A warm run's jail (AJ_NEST_ENV) is made inside its zygote's user and
// pid namespaces, so that the zygote, which holds CAP_SYS_ADMIN there, can
// fork the program into the jail's (zygote.py): the bootstrap first joins
// them (fd AJ_NEST_FD, a pidfd of the zygote's jail's pid 1), becomes the
// jail's uid as the zygote's namespace maps it, and makes the jail's user
// namespace there. The kernel refuses unshare(CLONE_NEWPID) to a process
// whose children are born in another pid namespace than its own, so a
// child makes the jail's pid namespace and its pid 1, which reports itself
// (AJ_REC_PID, with its credentials: its pid in the parent's namespace)
// and lives on as an orphan of the zygote's pid namespace (below).
//
// Any failure sends AJ_REC_ERROR (errno and the step) and exits 1. Every
// other process of this binary returns at once from the constructor.

#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <grp.h>
#include <linux/capability.h>
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bootstrap_linux.h"

void aj_send_all(const void *buf, size_t len)
{
	const char *p = buf;
	while (len > 0) {
		ssize_t n = send(AJ_SYNC_FD, p, len, MSG_NOSIGNAL);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			_exit(1); // the parent is gone: nobody to tell
		p += n;
		len -= (size_t)n;
	}
}

static void aj_send(char kind, int32_t value, const char *stage)
{
	struct aj_record r;
	aj_error_record(&r, stage, value, NULL);
	r.kind = kind;
	if (stage == NULL)
		r.stage[0] = 0;
	aj_send_all(&r, sizeof r);
}

__attribute__((noreturn)) static void aj_fail(const char *stage)
{
	aj_send(AJ_REC_ERROR, errno, stage);
	_exit(1);
}

// aj_write_proc writes content to a file of /proc/self, or fails.
static void aj_write_proc(const char *path, const char *content)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		aj_fail(path);
	size_t n = strlen(content);
	if (write(fd, content, n) != (ssize_t)n) {
		int e = errno;
		close(fd);
		errno = e;
		aj_fail(path);
	}
	close(fd);
}

// aj_has_env tells whether envp holds name=1.
static int aj_has_env(char **envp, const char *name)
{
	size_t n = strlen(name);
	for (char **e = envp; e && *e; e++)
		if (strncmp(*e, name, n) == 0 && strcmp(*e + n, "=1") == 0)
			return 1;
	return 0;
}

// aj_env_id is the id in envp's name=value, value a decimal number; 0
// when it is missing or not one (never a jail's: Go refuses such a range,
// and the zygote's namespace maps no jail at 0).
static uid_t aj_env_id(char **envp, const char *name)
{
	const size_t n = strlen(name);
	for (char **e = envp; e && *e; e++) {
		if (strncmp(*e, name, n) != 0 || (*e)[n] != '=')
			continue;
		unsigned long v = 0;
		const char *p = *e + n + 1;
		if (*p == 0)
			return 0;
		for (; *p; p++) {
			if (*p < '0' || *p > '9' || v > 0xfffffffful / 10)
				return 0;
			v = v * 10 + (unsigned long)(*p - '0');
		}
		return v < 0xfffffffful ? (uid_t)v : 0;
	}
	return 0;
}

// aj_clone_parent forks this process as glibc's own fork does it, but as
// a sibling (CLONE_PARENT: the child is the parent's own child), because
// the child runs glibc after it (the init stage; and a Go runtime, in the
// design this was first written for, asks glibc about its thread): the
// kernel writes the child's thread id where glibc keeps it (the address
// glibc gave set_tid_address), and the child registers glibc's
// robust-futex list again (a fork drops it). glibc's clone() wrapper does
// neither: its child would carry this process's thread id
// (pthread_getattr_np fails with ESRCH, which Go 1.22 and later call;
// golang/go#65625, fixed in runc's nsexec the same way,
// opencontainers/runc#4247). It returns as fork does; in the child,
// glibc's idea of its thread id has been checked against the kernel's.
#ifdef __GLIBC__
static pid_t aj_clone_parent(void)
{
	pid_t *tid = NULL;
	struct robust_list_head *robust = NULL;
	size_t robust_len = 0;
	if (prctl(PR_GET_TID_ADDRESS, &tid, 0, 0, 0) < 0 || tid == NULL)
		aj_fail("get the thread id address");
	if (syscall(SYS_get_robust_list, 0, &robust, &robust_len) < 0)
		aj_fail("get the robust futex list");
	long pid = syscall(SYS_clone, CLONE_PARENT | CLONE_CHILD_SETTID | CLONE_CHILD_CLEARTID | SIGCHLD,
			   NULL, NULL, tid, 0);
	if (pid < 0)
		aj_fail("clone");
	// A failure in the child cannot be reported beside its parent's
	// record: the child exits, and the parent learns it from its exit
	// status.
	if (pid == 0 && (*tid != (pid_t)syscall(SYS_gettid) || syscall(SYS_set_robust_list, robust, robust_len) < 0))
		_exit(1);
	return (pid_t)pid;
}
#else
// musl (the standalone init binary): musl keeps the thread id in its
// thread descriptor, at AJ_MUSL_TID_OFFSET on x86_64 (musl 1.2's struct
// pthread: self, dtv, prev, next, sysinfo, canary, tid), and gives
// set_tid_address its thread-list lock at start. The kernel writes the
// child's id into the descriptor (CLONE_CHILD_SETTID), and the child
// gives set_tid_address the lock again, as musl's start did (a clone
// without CLONE_CHILD_CLEARTID leaves it unset). The offset is checked
// against gettid() before the clone: another layout fails here, never
// later.
#define AJ_MUSL_TID_OFFSET 48
static pid_t aj_clone_parent(void)
{
	pid_t *tid = (pid_t *)((char *)pthread_self() + AJ_MUSL_TID_OFFSET);
	int *lock = NULL;
	if (*tid != (pid_t)syscall(SYS_gettid)) {
		errno = ENOTSUP;
		aj_fail("find the C library's thread id (not musl 1.2 on x86_64?)");
	}
	if (prctl(PR_GET_TID_ADDRESS, &lock, 0, 0, 0) < 0 || lock == NULL)
		aj_fail("get the thread id address");
	long pid = syscall(SYS_clone, CLONE_PARENT | CLONE_CHILD_SETTID | SIGCHLD, NULL, NULL, tid, 0);
	if (pid < 0)
		aj_fail("clone");
	if (pid == 0 && (*tid != (pid_t)syscall(SYS_gettid) || syscall(SYS_set_tid_address, lock) != *tid))
		_exit(1);
	return (pid_t)pid;
}
#endif

// aj_user_rlimits sets the per-user rlimits the jail's user namespace is
// made with (a part of aj_bootstrap, before the namespace exists).
static void aj_user_rlimits(int zygote)
{
	// The bounds the new user namespace holds for what the kernel counts
	// per user (bootstrap_linux.h): a jail's own; for a zygote none where
	// they may be raised (CAP_SYS_RESOURCE, or a daemon whose own are
	// unlimited, as the shipped service's are), else the daemon's, which
	// its runs then share (Runner warns of it).
	static const struct {
		int res;
		rlim_t jail;
		const char *name;
	} user_rlimits[] = {
		{RLIMIT_SIGPENDING, AJ_RLIMIT_SIGPENDING, "RLIMIT_SIGPENDING"},
		{RLIMIT_NPROC, AJ_RLIMIT_NPROC, "RLIMIT_NPROC"},
		{RLIMIT_MSGQUEUE, AJ_RLIMIT_MSGQUEUE, "RLIMIT_MSGQUEUE"},
		{RLIMIT_MEMLOCK, AJ_RLIMIT_MEMLOCK, "RLIMIT_MEMLOCK"},
	};
	for (size_t i = 0; i < sizeof user_rlimits / sizeof user_rlimits[0]; i++) {
		struct rlimit rl;
		if (getrlimit(user_rlimits[i].res, &rl) < 0)
			aj_fail(user_rlimits[i].name);
		if (zygote) {
			struct rlimit inf = {RLIM_INFINITY, RLIM_INFINITY};
			if (setrlimit(user_rlimits[i].res, &inf) == 0 || errno != EPERM)
				continue;
			rl.rlim_cur = rl.rlim_max; // as high as it goes
		} else {
			if (rl.rlim_max > user_rlimits[i].jail)
				rl.rlim_max = user_rlimits[i].jail;
			rl.rlim_cur = rl.rlim_max;
		}
		if (setrlimit(user_rlimits[i].res, &rl) < 0)
			aj_fail(user_rlimits[i].name);
	}
}

// aj_user_namespace makes the jail's user namespace and has it mapped (a
// part of aj_bootstrap): a zygote's by the parent, a jail's by this
// process, which maps id, its host uid (and gid), to AJ_JAIL_ID.
static void aj_user_namespace(int zygote, uid_t id)
{
	if (unshare(CLONE_NEWUSER) < 0)
		aj_fail("unshare user namespace");
	if (zygote) {
		// A zygote's namespace maps more than its own uid (the uids of
		// the runs it will fork), which only the parent, with CAP_SETUID
		// where the map is written from, may write. This process is not
		// dumpable: its /proc files are root's, which the parent is.
		aj_send(AJ_REC_USERNS, 0, NULL);
		char mapped;
		for (;;) {
			ssize_t n = read(AJ_SYNC_FD, &mapped, 1);
			if (n < 0 && errno == EINTR)
				continue;
			if (n != 1 || mapped != AJ_MAPPED)
				_exit(1); // the parent went away or gave up
			break;
		}
	} else {
		// The files of /proc/self belong to root while this process is
		// not dumpable, and root is not mapped in the new namespace:
		// dumpable for the three writes. Nothing else runs as this host
		// uid (it is this jail's alone), and root could read the process
		// anyway.
		if (prctl(PR_SET_DUMPABLE, 1, 0, 0, 0) < 0)
			aj_fail("set dumpable for the maps");
		char map[64];
		snprintf(map, sizeof map, "%d %lu 1\n", AJ_JAIL_ID, (unsigned long)id);
		aj_write_proc("/proc/self/setgroups", "deny");
		aj_write_proc("/proc/self/uid_map", map);
		aj_write_proc("/proc/self/gid_map", map);
		if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) < 0)
			aj_fail("set not dumpable");
	}
}

// aj_nested_pid1 makes a warm run's jail (a part of aj_bootstrap, once
// the user namespace is set up inside the zygote's): its pid namespace and
// pid 1, which becomes the init stage. It never returns.
__attribute__((noreturn)) static void aj_nested_pid1(void)
{
	// unshare(CLONE_NEWPID) is refused to a process whose children are born in
	// another pid namespace than its own (the zygote's, joined in
	// aj_bootstrap): a child of this process, born there, makes the jail's pid
	// namespace and its pid 1, and exits at once. The pid 1 is then an orphan
	// of the zygote's pid namespace, whose init (the zygote's jail's C init)
	// reaps it: it is not the parent's child, and no zombie of it can keep the
	// zygote's jail from ending. It dies with the zygote's jail (the kernel
	// kills every process of a pid namespace and of the ones inside it when
	// its init ends), which dies with the parent. So nothing of this jail but
	// this process is tied to the parent's thread, which the daemon lets go
	// once this process has been waited for (pid1.threadBound): no process
	// below may take a parent-death signal, or become a child of the parent
	// (CLONE_PARENT), without changing that.
	pid_t child = fork();
	if (child < 0)
		aj_fail("fork");
	if (child > 0) {
		int st;
		while (waitpid(child, &st, 0) < 0)
			if (errno != EINTR)
				aj_fail("wait for the child");
		_exit(WIFEXITED(st) ? WEXITSTATUS(st) : 1);
	}
	if (unshare(CLONE_NEWPID) < 0)
		aj_fail("unshare pid namespace");
	pid_t pid = fork();
	if (pid < 0)
		aj_fail("fork pid 1");
	if (pid > 0)
		_exit(0);
	// Its host pid comes with its credentials (the parent's socket
	// has SO_PASSCRED).
	if (setsid() < 0)
		_exit(1);
	aj_send(AJ_REC_PID, 0, NULL);
	aj_init(1);
}

// Priority 101, the first a program may use: no other constructor runs
// before it in the init stage.
#ifdef AJ_STANDALONE
void aj_bootstrap_main(int argc, char **argv, char **envp)
#else
__attribute__((constructor(101))) static void aj_bootstrap(int argc, char **argv, char **envp)
#endif
{
	if (argc < 1 || argv == NULL || argv[0] == NULL || strcmp(argv[0], AJ_INIT_ARG0) != 0)
		return;

	// Nothing may read or ptrace this process while it holds
	// capabilities (its clone, the jail's pid 1, inherits it). With
	// fs.suid_dumpable 0 (the default) the change of credentials below
	// would clear it too; these calls do not depend on that setting.
	if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) < 0)
		aj_fail("set not dumpable");
	// Only 0 to 4 are ours (stdio and fd 3 on /dev/null, the socket to
	// the parent); fd 5, the sealed binary, was exec'd already. Anything
	// else reached us only because the parent inherited it without
	// close-on-exec: it must not stay open here, as root, until the init
	// stage's close_range at the exec of python3.
	int zygote = aj_has_env(envp, AJ_ZYGOTE_ENV);
	// A warm run's jail: the id its zygote's namespace maps the jail's
	// host uid to (bootstrap_linux.h's AJ_NEST_ENV); fd AJ_NEST_FD stays.
	uid_t nest = zygote ? 0 : aj_env_id(envp, AJ_NEST_ENV);
	if (nest == 0 ? syscall(SYS_close_range, AJ_SYNC_FD + 1, ~0U, 0) < 0
		      : syscall(SYS_close_range, AJ_SYNC_FD + 1, AJ_NEST_FD - 1, 0) < 0 ||
				syscall(SYS_close_range, AJ_NEST_FD + 1, ~0U, 0) < 0)
		aj_fail("close inherited fds");
	uid_t host = aj_env_id(envp, AJ_UID_ENV);
	if (host == 0) {
		errno = EINVAL;
		aj_fail("read the jail's host uid (" AJ_UID_ENV ")");
	}
	pid_t parent = getppid();
	aj_user_rlimits(zygote);
	// The parent's supplementary groups (kernel gids: they would still
	// open group-readable host files) do not enter the jail. The user
	// namespace's setgroups "deny" forbids it from then on.
	if (setgroups(0, NULL) < 0)
		aj_fail("drop supplementary groups");
	uid_t id = host;
	if (nest != 0) {
		// Into the zygote's user namespace (as root of the host, with
		// every capability there) and, for this process's children, its
		// pid namespace: the jail's own are made inside them, where the
		// zygote may enter them to fork the program (its fork joins them
		// with the namespace fds this jail's pid 1 sends).
		if (setns(AJ_NEST_FD, CLONE_NEWUSER | CLONE_NEWPID) < 0)
			aj_fail("join the zygote's user and pid namespaces");
		close(AJ_NEST_FD);
		id = nest; // the same host uid, as the zygote's namespace names it
	}
	// From root to the jail's own host uid and gid, before its user
	// namespace: the namespace is that user's, and so are its counters.
	if (setresgid(id, id, id) < 0)
		aj_fail("setresgid to the jail's host gid");
	if (setresuid(id, id, id) < 0)
		aj_fail("setresuid to the jail's host uid");
	// A change of credentials resets both; a parent that died before the
	// parent-death signal was set again is seen here.
	if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) < 0)
		aj_fail("set not dumpable");
	if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) < 0)
		aj_fail("set parent-death signal");
	if (getppid() != parent)
		_exit(1);
	aj_user_namespace(zygote, id);

	// The creator of a user namespace has every capability in it: only
	// the three that set-up needs are kept (the init stage drops them
	// before the program starts).
	struct __user_cap_header_struct hdr = {.version = _LINUX_CAPABILITY_VERSION_3, .pid = 0};
	struct __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3];
	memset(data, 0, sizeof data);
	data[0].permitted = data[0].effective =
		(1u << CAP_SYS_ADMIN) | (1u << CAP_NET_ADMIN) | (1u << CAP_SETPCAP) |
		(zygote ? (1u << CAP_SETUID) | (1u << CAP_SETGID) : 0);
	if (syscall(SYS_capset, &hdr, data) < 0)
		aj_fail("set capabilities");
	if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) < 0)
		aj_fail("set not dumpable");
	if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) < 0)
		aj_fail("set parent-death signal");

	if (nest != 0)
		aj_nested_pid1();
	// Only this process's children are born into the new pid namespace.
	if (unshare(CLONE_NEWPID) < 0)
		aj_fail("unshare pid namespace");
	pid_t pid = aj_clone_parent();
	if (pid > 0) {
		aj_send(AJ_REC_PID, (int32_t)pid, NULL);
		_exit(0);
	}

	// pid 1 of the jail, a child of the parent's thread that started this
	// process: that thread's end kills it, as it would have killed us.
	if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) < 0 || setsid() < 0)
		_exit(1);
	aj_init(0); // init_linux.c: never returns
}
