// The timer slack of the Go runtime's sysmon thread.
//
// sysmon is the runtime's watchdog thread. After every spell in which all
// the daemon's Ps were idle, the first system call wakes it and it polls
// every 20 µs for 50 rounds before it backs off. A warm run has several
// such spells (the daemon waits for the jail between the protocol's
// steps), so sysmon polled about 60 times per run: 0.28 to 0.30 ms of the
// daemon's CPU per run, and its wake-ups cost the other threads too (each
// a timer interrupt and a context switch in a VM). A larger timer slack
// lets the kernel run those 20 µs sleeps late, with other timers: with
// 2 ms the daemon's CPU per run dropped by about 0.3 ms, warm or cold
// (BENCHMARKS.md). sysmon's duties have coarse clocks anyway: it preempts
// a goroutine after 10 ms and takes a P back from a system call that
// blocks while other goroutines wait.
//
// A thread starts with its creator's slack, and only a thread can set its
// own without CAP_SYS_NICE, which the daemon does not have. So every
// thread the Go runtime makes (through pthread_create in a cgo binary;
// -Wl,--wrap in bootstrap_linux.go) sets its own as it starts: the first,
// which Go's runtime.main makes for sysmon before any other, takes
// AJ_SYSMON_SLACK_NS; every later one the main thread's (50 µs, or what
// the service set, TimerSlackNSec=), so that threads sysmon itself starts
// do not inherit its slack. TestOnlySysmonHasTheLargeTimerSlack checks
// that the thread with the slack is the one that polls,
// TestThreadsSysmonMakesDoNotInheritItsSlack that a thread made by one
// with a large slack gets the main thread's. A binary without cgo makes
// its threads with clone and keeps the default.
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "bootstrap_linux.h"

int __real_pthread_create(pthread_t *thread, const pthread_attr_t *attr, void *(*start)(void *), void *arg);

struct aj_thread {
	void *(*start)(void *);
	void *arg;
	unsigned long slack;
};

static unsigned long aj_threads;    // made so far
static unsigned long aj_main_slack; // the main thread's, read at the first

// aj_timer_slack is the calling thread's slack (-1: unknown). The raw
// call: glibc's prctl returns an int, too small for a slack of seconds
// (TimerSlackNSec=).
static long aj_timer_slack(void)
{
	return syscall(SYS_prctl, PR_GET_TIMERSLACK, 0, 0, 0, 0);
}

static void *aj_thread_start(void *p)
{
	struct aj_thread t = *(struct aj_thread *)p;
	free(p);
	(void)prctl(PR_SET_TIMERSLACK, t.slack, 0, 0, 0); // a refusal (seccomp) leaves the inherited one
	return t.start(t.arg);
}

int __wrap_pthread_create(pthread_t *thread, const pthread_attr_t *attr, void *(*start)(void *), void *arg)
{
	// The first call comes from the main thread before any other thread
	// exists; every later one happens after it.
	unsigned long n = __atomic_fetch_add(&aj_threads, 1, __ATOMIC_RELAXED);
	if (n == 0) {
		long s = aj_timer_slack();
		aj_main_slack = s > 0 ? (unsigned long)s : 0;
	}
	unsigned long slack = aj_main_slack;
	if (slack == 0) // unknown: no thread is changed, sysmon neither
		return __real_pthread_create(thread, attr, start, arg);
	if (n == 0 && slack < AJ_SYSMON_SLACK_NS)
		slack = AJ_SYSMON_SLACK_NS;
	int err = EAGAIN;
	struct aj_thread *t = malloc(sizeof *t);
	if (t != NULL) {
		t->start = start;
		t->arg = arg;
		t->slack = slack;
		err = __real_pthread_create(thread, attr, aj_thread_start, t);
		if (err != 0)
			free(t);
	}
	// cgo retries a failed create (EAGAIN): sysmon's retry must be the
	// first again. Only the main thread exists while n is 0.
	if (err != 0 && n == 0)
		__atomic_store_n(&aj_threads, 0, __ATOMIC_RELAXED);
	return err;
}

// For the tests: the timer slack of a thread that a thread with a slack
// of creator_slack makes (as sysmon makes threads for the runtime); -1
// if a thread could not be made.
struct aj_probe {
	unsigned long creator_slack;
	long made_slack;
};

static void *aj_probe_made(void *p)
{
	((struct aj_probe *)p)->made_slack = aj_timer_slack();
	return NULL;
}

static void *aj_probe_creator(void *p)
{
	pthread_t t;
	(void)prctl(PR_SET_TIMERSLACK, ((struct aj_probe *)p)->creator_slack, 0, 0, 0);
	if (pthread_create(&t, NULL, aj_probe_made, p) == 0) // through __wrap_pthread_create
		pthread_join(t, NULL);
	return NULL;
}

long aj_slack_of_a_thread_made_by(unsigned long creator_slack, long *main_slack)
{
	*main_slack = (long)aj_main_slack;
	struct aj_probe p = {creator_slack, -1};
	pthread_t t;
	// Not through the wrapper: the creator keeps the slack it sets.
	if (__real_pthread_create(&t, NULL, aj_probe_creator, &p) != 0)
		return -1;
	pthread_join(t, NULL);
	return p.made_slack;
}
