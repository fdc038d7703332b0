// The jail's init stage: pid 1 of the jail's user and pid namespaces,
// entered from bootstrap_linux.c's clone and never returning. It is C, not
// Go, so that a jail pays for no second Go runtime (BENCHMARKS.md has the
// figures): no Go runtime ever starts in a jail.
//
// It decides nothing. The parent sends it plans (plan.go): lists of steps,
// each a system call or a small fixed sequence of them with its arguments
// and the name to report when it fails, and it carries them out in order
// (init_plan_linux.c, init_fs_linux.c), then does the fixed end of every
// jail (aj_start_program) and stays, as the jail's init, until the program
// has ended (aj_reap; both in init_run_linux.c). This file is the
// conversation, protocol.go's (its messages: init_msg_linux.c):
//
//	<- msgBuild (plan)      carried out; -> msgReady with the jail's mount
//	                        namespace (SCM_RIGHTS), or msgError
//	<- msgRequest (plan)    with stdin, stdout, stderr, report (SCM_RIGHTS);
//	                        carried out; -> msgReady or msgError
//	<- msgGo                with the v1 group's tasks files (SCM_RIGHTS);
//	                        join, cgroup namespace, capabilities dropped,
//	                        fds close-on-exec, no_new_privs and seccomp,
//	                        -> msgSeccomp with the listener (and /workspace);
//	                        vfork: the child execs python3;
//	                        -> msgExec with the time of that exec
//	                        reap every child; forward signals to the program;
//	                        -> msgExit with the program's wait status, exit
//
// Every failure sends msgError (a struct aj_record) and exits 1. An end
// of the socket where a message is awaited exits without a word: nothing
// is left to report to. This process has one thread, so everything it
// does (namespaces, capabilities, the filter) holds for the whole process
// and for the program it starts.

#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "init_linux.h"

__attribute__((noreturn)) void aj_init(int nested)
{
	// The jail's own umask, whatever the parent's was at the fork (the
	// daemon changes its own while it binds its socket): the modes of
	// /etc, /code and the request's files, and the program's default.
	umask(022);
	// Nor the parent's signals: the mask (the daemon's locked thread's at
	// the fork) and what it ignores (SIG_IGN survives an exec; Go keeps
	// SIGHUP and SIGINT ignored when it started so, as under nohup).
	// python3 starts as from a shell. Before the wait of a prepared jail.
	sigset_t none;
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	// The kernel's call, not the C library's signal(), which refuses
	// the signals that library keeps for itself (glibc 32 and 33, musl
	// 32 to 34): every one is reset, whichever library this is built on.
	// 64 is the kernel's _NSIG on x86_64 (the only architecture the
	// policy and the standalone init are built for); 8, its sigset's size.
	struct {
		void (*handler)(int);
		unsigned long flags;
		void (*restorer)(void);
		uint64_t mask;
	} dfl = {SIG_DFL, 0, NULL, 0};
	for (int sig = 1; sig <= 64; sig++)
		if (sig != SIGKILL && sig != SIGSTOP && syscall(SYS_rt_sigaction, sig, &dfl, NULL, sizeof dfl.mask) < 0)
			aj_fail("reset the signals' actions", errno, NULL);
	struct aj_state s;
	memset(&s, 0, sizeof s);
	struct aj_msg m;
	if (!aj_recv(&m, "read build plan"))
		_exit(1);
	if (m.type != AJ_MSG_BUILD || m.nfds > 1)
		aj_fail("read build plan", 0, "unexpected message instead of the build plan");
	aj_plan(&s, &m);
	if (s.filter == NULL)
		aj_fail("decode seccomp filter", 0, "no usable filter");
	if (s.argv != NULL) // it would point into the payload freed here
		aj_fail("read build plan", 0, "the build plan names the program");
	free(m.payload); // a prepared jail waits long: nothing of it is kept
	// The jail's mount namespace goes to the parent with msgReady: held
	// there, its ~30 mounts are not torn down on the way to the parent's
	// wait at the program's end (an expedited RCU grace period and the
	// superblocks' release), but when the parent closes it, on another
	// thread once the run is over.
	// A warm run's init sends its other namespaces too: the parent hands
	// them to the zygote, whose fork of the program joins them.
	static const char *const ns_files[] = {"/proc/self/ns/mnt", "/proc/self/ns/pid", "/proc/self/ns/user",
					       "/proc/self/ns/net", "/proc/self/ns/ipc", "/proc/self/ns/uts"};
	int ns[6], nns = nested ? 6 : 1;
	for (int i = 0; i < nns; i++)
		if ((ns[i] = open(ns_files[i], O_RDONLY | O_CLOEXEC)) < 0)
			aj_fail(ns_files[i], errno, "open");
	if (aj_send_fds(AJ_MSG_READY, ns, nns) < 0)
		aj_fail("send namespaces", errno, NULL); // quietly, if the parent is gone
	for (int i = 0; i < nns; i++)
		close(ns[i]);

	// A prepared jail may wait here for as long as the daemon runs; the
	// end of the socket (a daemon that stops, or drops the jail) ends it.
	if (!aj_recv(&m, "read request"))
		_exit(0);
	if (m.type != AJ_MSG_REQUEST) {
		for (int i = 0; i < m.nfds; i++)
			close(m.fds[i]);
		aj_fail("read request", 0, "unexpected message instead of the request");
	}
	aj_plan(&s, &m);
	if (s.argv == NULL && !s.adopt)
		aj_fail("decode request", 0, "no program to exec");
	if (s.adopt && !nested)
		aj_fail("decode request", 0, "only a warm run's init adopts its program");
	if (nested && !s.adopt) // its filter (seccomp.AdoptCalls) would not let it start one
		aj_fail("decode request", 0, "a warm run's init adopts its program, it does not exec one");
	if (s.adopt) {
		// The program exists already: it is the first process born in the
		// jail's pid namespace after this one, pid 2. Signals are passed
		// on to it from before msgReady, upon which the parent lets it
		// run: a pid 1 without a handler ignores the signals its
		// namespace sends it, and one the program sent at once would be
		// lost.
		aj_program = 2;
		aj_forward_signals();
	}
	aj_write_msg(AJ_MSG_READY, NULL, 0);

	struct aj_msg go;
	if (!aj_recv(&go, "read go") || go.type != AJ_MSG_GO)
		_exit(1); // the parent went away or gave up: nothing to report to
	if (s.adopt)
		aj_adopt(&s, go.fds, go.nfds);
	aj_start_program(&s, go.fds, go.nfds);
}
