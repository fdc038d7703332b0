// adopt_tail: TestKernelAdoptTail's program. It loads the filter of a warm
// run's init (the file argv[1], seccomp.AdoptProgramBytes) in a child that
// then makes the calls nsjail/boot/init_run_linux.c's aj_adopt makes after its own
// load, through the same C library calls: recvmsg of a message with a
// pidfd, malloc and free (small, many, large: brk and mmap), waitpid with
// WNOHANG|__WALL, ppoll with a signal mask until the pidfd is readable, a
// signal handler that passes SIGTERM on with kill, send, close, _exit.
// Then calls the filter must refuse with ENOSYS. The child writes what
// each call returned to memory shared with this process, which checks it
// and prints one line per call; exit status 0 when every call did what
// it should, 1 otherwise, 2 when the test itself could not run.
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_CALLS 32

struct call {
	char name[40];
	int want_ok; // 1: must succeed; 0: must fail with ENOSYS
	int ok;
	int err;
};

static struct {
	int n;
	struct call c[MAX_CALLS];
} *shared;

static void record(const char *name, int want_ok, int ok, int err)
{
	if (shared->n >= MAX_CALLS)
		_exit(3);
	struct call *c = &shared->c[shared->n++];
	snprintf(c->name, sizeof c->name, "%s", name);
	c->want_ok = want_ok;
	c->ok = ok;
	c->err = err;
}

#define ALLOWED(name, cond) do { errno = 0; int ok_ = (cond); record(name, 1, ok_, errno); } while (0)
#define REFUSED(name, expr) do { errno = 0; long r_ = (long)(expr); record(name, 0, r_ != -1, errno); } while (0)

static volatile pid_t program = -1;
static volatile int forwarded;

static void forward(int sig)
{
	int e = errno;
	if (program > 0 && kill(program, sig) == 0)
		forwarded = 1;
	errno = e;
}

static void nothing(int sig)
{
	(void)sig;
}

static void child(const char *filter, int len, int sock)
{
	// As aj_init: malloc has run before the filter (the plans it decodes).
	free(malloc(100));
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = forward;
	sa.sa_flags = SA_RESTART;
	sigfillset(&sa.sa_mask);
	if (sigaction(SIGTERM, &sa, NULL) < 0)
		_exit(2);
	sigset_t chld, none;
	sigemptyset(&chld);
	sigaddset(&chld, SIGCHLD);
	sigemptyset(&none);
	sigprocmask(SIG_BLOCK, &chld, NULL);
	sa.sa_handler = nothing;
	sa.sa_flags = 0;
	if (sigaction(SIGCHLD, &sa, NULL) < 0)
		_exit(2);
	pid_t ended = fork();
	if (ended == 0)
		_exit(0);
	if (ended < 0 || prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		_exit(2);
	struct sock_fprog prog = {.len = (unsigned short)(len / 8), .filter = (struct sock_filter *)filter};
	if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog) < 0)
		_exit(4);

	ALLOWED("malloc(16)", malloc(16) != NULL);
	// A child that ended, for waitpid to reap (the init reaps orphans).
	int reaped = 0;
	for (int i = 0; i < 500 && !reaped; i++) {
		reaped = waitpid(-1, NULL, WNOHANG | __WALL) > 0;
		if (!reaped) {
			struct timespec ms = {.tv_nsec = 1000000};
			ppoll(NULL, 0, &ms, NULL);
		}
	}
	ALLOWED("waitpid (a child that ended)", reaped);
	void *big = malloc(4 << 20);
	ALLOWED("malloc(4 MiB) (mmap)", big != NULL);
	free(big); // munmap
	static void *many[4000];
	for (int i = 0; i < 4000; i++)
		many[i] = malloc(1000);
	ALLOWED("4000 x malloc(1000) (brk)", many[3999] != NULL);
	for (int i = 3999; i >= 0; i--)
		free(many[i]); // the heap's top trimmed: brk
	void *m = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ALLOWED("mmap", m != MAP_FAILED);
	ALLOWED("madvise", madvise(m, 4096, MADV_DONTNEED) == 0);
	ALLOWED("mprotect", mprotect(m, 4096, PROT_READ) == 0); // musl's malloc, its metadata's guard pages
	ALLOWED("munmap", munmap(m, 4096) == 0);
	ALLOWED("send", send(sock, "r", 1, MSG_NOSIGNAL) == 1);

	// msgAdopt: a header and the program's pidfd.
	char hdr[5];
	union {
		char buf[CMSG_SPACE(8 * sizeof(int))];
		struct cmsghdr align;
	} cm;
	struct iovec iov = {.iov_base = hdr, .iov_len = sizeof hdr};
	struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = cm.buf, .msg_controllen = sizeof cm.buf};
	ssize_t n = recvmsg(sock, &mh, MSG_CMSG_CLOEXEC);
	struct cmsghdr *c = n > 0 ? CMSG_FIRSTHDR(&mh) : NULL;
	ALLOWED("recvmsg (a pidfd)", c != NULL && c->cmsg_type == SCM_RIGHTS);
	if (c == NULL)
		_exit(0);
	int pidfd;
	memcpy(&pidfd, CMSG_DATA(c), sizeof pidfd);
	char x;
	ALLOWED("read", read(sock, &x, 1) == 1);
	pid_t pid = -1;
	ALLOWED("read (the program's pid)", read(sock, &pid, sizeof pid) == sizeof pid);
	program = pid;
	// The parent now sends SIGTERM to this process: forward passes it on,
	// the program dies of it, and the pidfd becomes readable.
	struct pollfd p = {.fd = pidfd, .events = POLLIN};
	struct timespec tick = {.tv_nsec = 100000000}; // aj_adopt waits without one; here 5 s at most
	int ready = 0;
	for (int i = 0; i < 50 && !ready; i++) {
		while (waitpid(-1, NULL, WNOHANG | __WALL) > 0)
			;
		int k = ppoll(&p, 1, &tick, &none);
		if (k > 0)
			ready = 1;
		else if (k < 0 && errno != EINTR)
			break;
	}
	ALLOWED("ppoll, waitpid (to its end)", ready);
	ALLOWED("kill (SIGTERM passed on)", forwarded);
	ALLOWED("close", close(pidfd) == 0);

	REFUSED("getpid", syscall(SYS_getpid));
	REFUSED("write", syscall(SYS_write, 2, "", 0));
	REFUSED("mlock", syscall(SYS_mlock, many, 4096));
	REFUSED("mmap with MAP_HUGETLB",
		syscall(SYS_mmap, NULL, 2 << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB, -1, 0));
	REFUSED("x32 read", syscall(0x40000000 | SYS_read, 0, NULL, 0));
	REFUSED("openat", syscall(SYS_openat, AT_FDCWD, "/", O_RDONLY));
	_exit(0);
}

static pid_t kids[2] = {-1, -1};

// bail ends the children and says the test could not run: the parent
// exits at once, and no child outlives it.
static int bail(const char *why)
{
	printf("the test could not run: %s\n", why);
	for (int i = 0; i < 2; i++)
		if (kids[i] > 0)
			kill(kids[i], SIGKILL);
	return 2;
}

int main(int argc, char **argv)
{
	static char filter[32768];
	if (argc != 2)
		return 2;
	int fd = open(argv[1], O_RDONLY);
	int len = fd < 0 ? -1 : (int)read(fd, filter, sizeof filter);
	if (len <= 0 || len % 8 != 0)
		return 2;
	close(fd);
	shared = mmap(NULL, sizeof *shared, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	int sv[2];
	if (shared == MAP_FAILED || socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
		return 2;
	// Whatever goes wrong, nothing hangs: SIGALRM ends each process.
	alarm(20);
	pid_t prog = kids[0] = fork(); // the "program": waits for a signal
	if (prog == 0) {
		alarm(20);
		close(sv[0]);
		close(sv[1]);
		for (;;)
			pause();
	}
	pid_t init = kids[1] = fork();
	if (init == 0) {
		alarm(20);
		close(sv[0]);
		child(filter, len, sv[1]);
	}
	close(sv[1]);
	char ready;
	if (prog < 0 || init < 0)
		return bail("fork");
	if (read(sv[0], &ready, 1) != 1) {
		int st = 0;
		waitpid(init, &st, 0);
		kids[1] = -1;
		printf("the child ended before its first send, status %#x\n", st);
		bail("no send");
		return 1;
	}
	int pidfd = (int)syscall(SYS_pidfd_open, prog, 0);
	if (pidfd < 0)
		return bail("pidfd_open");
	char hdr[5] = {9, 0, 0, 0, 0};
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} cm;
	memset(&cm, 0, sizeof cm);
	struct iovec iov = {.iov_base = hdr, .iov_len = sizeof hdr};
	struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = cm.buf, .msg_controllen = sizeof cm.buf};
	struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(c), &pidfd, sizeof pidfd);
	if (sendmsg(sv[0], &mh, 0) < 0 || write(sv[0], "x", 1) != 1 || write(sv[0], &prog, sizeof prog) != sizeof prog)
		return bail("send msgAdopt");
	usleep(100000); // the child is in ppoll
	kill(init, SIGTERM);
	int st;
	if (waitpid(init, &st, 0) < 0)
		return bail("waitpid");
	kill(prog, SIGKILL);
	waitpid(prog, NULL, 0);
	int bad = !WIFEXITED(st) || WEXITSTATUS(st) != 0;
	if (bad)
		printf("the child ended with status %#x\n", st);
	for (int i = 0; i < shared->n; i++) {
		struct call *k = &shared->c[i];
		int good = k->want_ok ? k->ok : (!k->ok && k->err == ENOSYS);
		bad |= !good;
		printf("%s: %s (%s, errno %d)\n", good ? "ok" : "WRONG", k->name, k->want_ok ? "allowed" : "refused with ENOSYS",
		       k->err);
	}
	if (shared->n == 0)
		bad = 1;
	return bad;
}
