// The zygote's fork loop in C (nsjail/zygote.py's _serve_in_c): the
// same loop as zygote.py's own (main's loop, _spawn, _reap), message for
// message, with no python run between two forks.
//
// Why: a fork makes every page of the zygote copy-on-write, so each page
// its next turn of the loop writes is copied again (or faulted back to
// it, once the program has its own copy). python's loop writes about 120
// pages a turn (its objects' reference counts, its allocator's pools, its
// frames): about 0.3 ms of page faults and 0.2 ms of interpreter a warm
// run. This loop writes a few (its stack, libc's). BENCHMARKS.md has the
// figures.
//
// The zygote loads this file (from /code, through a memfd: /code is
// noexec) with ctypes.PyDLL, which keeps the interpreter's lock for the
// call, and calls aj_zygote_serve once, after its imports. It never
// returns in the zygote but to end it; in each program it forks it
// returns 1, as os.fork returns 0, and the program goes on in python
// (_program). Around the fork it calls what os.fork calls (CPython's
// stable ABI, exported by the python3 executable that loads this).
//
// Nothing here is trusted more than zygote.py: the zygote runs it in its
// jail, under its filter, with its credentials.
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <sched.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

int PySys_Audit(const char *event, const char *format, ...);
void PyErr_Clear(void);
void PyOS_BeforeFork(void);
void PyOS_AfterFork_Parent(void);
void PyOS_AfterFork_Child(void);

// What zygote.py passes: its generated constants (protocol.go's and
// zygote_linux.go's), and its fds.
struct aj_zconf {
	int32_t ctl;        // the control socket
	int32_t wake;       // the read end of the SIGCHLD wake-up pipe (non-blocking)
	int32_t own_pid_ns; // the zygote's own pid namespace
	int32_t z_fork, z_ns, msg_exit, msg_error;
	int32_t max_fds; // the most fds a message may carry (zygote.py passes z_ns, as its _recv)
	int32_t reaps;
	uint32_t max_msg, min_uid;
};

#define AJ_FDS_MAX 16 // above any max_fds zygote.py passes (protocol.go's 8)
#define AJ_HDR 5      // a message's header: its type (1 byte), its length (4, little-endian)

// aj_record of nsjail/boot/bootstrap_linux.h: msgError's payload.
struct aj_zrecord {
	char kind, pad[3];
	int32_t value;
	char stage[120];
	char msg[128];
};
_Static_assert(sizeof(struct aj_zrecord) == 256, "record size");

// The programs forked and not yet reaped, and each one's socket: the
// zygote sends the program's wait status there (msgExit).
struct aj_zrun {
	pid_t pid;
	int fd;
};
static struct aj_zrun *runs;
static size_t nruns, capruns;

// Why the loop ended, for zygote.py to say (aj_zygote_error).
static char why[200];

const char *aj_zygote_error(void)
{
	return why;
}

static int fail(const char *what, int err)
{
	strncpy(why, what, sizeof(why) - 1);
	if (err) {
		size_t n = strlen(why);
		strncat(why, ": ", sizeof(why) - 1 - n);
		strncat(why, strerror(err), sizeof(why) - 1 - strlen(why));
	}
	return -1;
}

static void close_all(const int *fds, int n)
{
	for (int i = 0; i < n; i++)
		close(fds[i]);
}

// send_msg sends one message whole (a stream socket): 0, or -1 when the
// daemon dropped it.
static int send_msg(int fd, int typ, const void *payload, uint32_t n)
{
	unsigned char buf[AJ_HDR + sizeof(struct aj_zrecord)];
	if (n > sizeof(buf) - AJ_HDR)
		return -1;
	buf[0] = (unsigned char)typ;
	for (int i = 0; i < 4; i++)
		buf[1 + i] = (unsigned char)(n >> (8 * i));
	memcpy(buf + AJ_HDR, payload, n);
	size_t off = 0, len = AJ_HDR + n;
	while (off < len) {
		ssize_t k = send(fd, buf + off, len - off, MSG_NOSIGNAL);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return -1;
		off += (size_t)k;
	}
	return 0;
}

// answer tells the daemon why a fork failed (msgError), if it still
// listens: zygote.py's _answer.
static void answer(const struct aj_zconf *c, int fd, const char *stage, int err, const char *msg)
{
	struct aj_zrecord r;
	memset(&r, 0, sizeof(r));
	r.kind = 'E';
	r.value = err;
	strncpy(r.stage, stage, sizeof(r.stage) - 1);
	strncpy(r.msg, msg, sizeof(r.msg) - 1);
	(void)send_msg(fd, c->msg_error, &r, sizeof(r));
}

// read_exact reads n bytes into buf (NULL: reads and drops them): 1, 0
// at the socket's end, -1 on an error.
static int read_exact(int fd, unsigned char *buf, size_t n)
{
	unsigned char sink[4096];
	while (n > 0) {
		size_t want = buf ? n : (n < sizeof(sink) ? n : sizeof(sink));
		ssize_t k = read(fd, buf ? buf : sink, want);
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0)
			return -1;
		if (k == 0)
			return 0;
		if (buf)
			buf += k;
		n -= (size_t)k;
	}
	return 1;
}

// take reads one message, as zygote.py's _recv: its type, its length and
// its first 4 bytes (the rest is read and dropped: only zFork's 4 bytes
// are ever used), and the fds it carried (close-on-exec). 1, 0 at the
// socket's end (the daemon dropped this zygote), -1 when the zygote must
// end (why says why).
static int take(const struct aj_zconf *c, int *typ, uint32_t *len, unsigned char payload[4], int *fds, int *nfds)
{
	unsigned char hdr[AJ_HDR];
	union {
		struct cmsghdr align;
		char buf[CMSG_SPACE(sizeof(int) * (AJ_FDS_MAX + 1))];
	} ctrl;
	struct iovec iov = {.iov_base = hdr, .iov_len = sizeof(hdr)};
	struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctrl.buf, .msg_controllen = CMSG_SPACE(sizeof(int) * (size_t)(c->max_fds + 1))};
	ssize_t k;
	do
		k = recvmsg(c->ctl, &m, MSG_CMSG_CLOEXEC);
	while (k < 0 && errno == EINTR);
	if (k < 0)
		return fail("read a message", errno);
	*nfds = 0;
	int over = 0;
	for (struct cmsghdr *h = CMSG_FIRSTHDR(&m); h; h = CMSG_NXTHDR(&m, h)) {
		if (h->cmsg_level != SOL_SOCKET || h->cmsg_type != SCM_RIGHTS)
			continue;
		int n = (int)((h->cmsg_len - CMSG_LEN(0)) / sizeof(int));
		for (int i = 0; i < n; i++) {
			int fd;
			memcpy(&fd, CMSG_DATA(h) + i * sizeof(int), sizeof(int));
			if (*nfds < c->max_fds)
				fds[(*nfds)++] = fd;
			else {
				close(fd);
				over = 1;
			}
		}
	}
	if (k == 0) {
		close_all(fds, *nfds);
		return 0;
	}
	if ((m.msg_flags & MSG_CTRUNC) || over) {
		close_all(fds, *nfds);
		return fail("a message carried more fds than a zygote takes", 0);
	}
	if (k < AJ_HDR) {
		int r = read_exact(c->ctl, hdr + k, (size_t)(AJ_HDR - k));
		if (r <= 0)
			return r == 0 ? 0 : fail("read a message", errno);
	}
	*typ = hdr[0];
	*len = (uint32_t)hdr[1] | (uint32_t)hdr[2] << 8 | (uint32_t)hdr[3] << 16 | (uint32_t)hdr[4] << 24;
	if (*len > c->max_msg)
		return fail("a message too large", 0);
	memset(payload, 0, 4);
	uint32_t head = *len < 4 ? *len : 4;
	int r = read_exact(c->ctl, payload, head);
	if (r > 0)
		r = read_exact(c->ctl, NULL, *len - head);
	if (r <= 0)
		return r == 0 ? 0 : fail("read a message", errno);
	return 1;
}

// reap sends each ended program's wait status to the daemon on its
// socket, at most c->reaps of them: zygote.py's _reap.
static void reap(const struct aj_zconf *c)
{
	for (int i = 0; i < c->reaps; i++) {
		int status;
		pid_t pid = waitpid(-1, &status, WNOHANG);
		if (pid < 0 && errno == EINTR) {
			i--;
			continue;
		}
		if (pid <= 0)
			return;
		for (size_t j = 0; j < nruns; j++) {
			if (runs[j].pid != pid)
				continue;
			int32_t s = status;
			(void)send_msg(runs[j].fd, c->msg_exit, &s, sizeof(s));
			close(runs[j].fd);
			runs[j] = runs[--nruns];
			break;
		}
	}
}

// spawn forks one run's program into the run's pid namespace (zFork):
// zygote.py's _spawn. 1 in the program (out holds its fds and uid), 0 in
// the zygote, -1 when the zygote must end.
static int spawn(const struct aj_zconf *c, uint32_t len, const unsigned char payload[4], int *fds, int nfds,
		 int *out)
{
	if (nfds == 0)
		return 0;
	uint32_t uid = (uint32_t)payload[0] | (uint32_t)payload[1] << 8 | (uint32_t)payload[2] << 16 |
		       (uint32_t)payload[3] << 24;
	if (nfds != c->z_ns || len != 4 || uid < c->min_uid || uid > INT32_MAX) {
		answer(c, fds[0], "fork", 0, "a fork of another uid, or with other fds");
		close_all(fds, nfds);
		return 0;
	}
	if (nruns == capruns) {
		size_t cap = capruns ? 2 * capruns : 64;
		struct aj_zrun *r = realloc(runs, cap * sizeof(*r));
		if (!r) {
			answer(c, fds[0], "fork the program", ENOMEM, strerror(ENOMEM));
			close_all(fds, nfds);
			return 0;
		}
		runs = r, capruns = cap;
	}
	// Only this process's next child is born in the run's pid namespace
	// (as pid 2: its init is pid 1); this process stays in its own.
	if (syscall(SYS_setns, fds[2], CLONE_NEWPID) < 0) {
		int e = errno;
		answer(c, fds[0], "fork the program", e, strerror(e));
		close_all(fds, nfds);
		return 0;
	}
	// What os.fork does first: an audit hook (of a preload, say) may
	// refuse the fork.
	if (PySys_Audit("os.fork", NULL) < 0) {
		PyErr_Clear();
		answer(c, fds[0], "fork the program", 0, "an audit hook refused os.fork");
		close_all(fds, nfds);
		return syscall(SYS_setns, c->own_pid_ns, CLONE_NEWPID) < 0 ? fail("go back to the zygote's pid namespace", errno) : 0;
	}
	PyOS_BeforeFork();
	pid_t pid = fork();
	int e = errno;
	if (pid == 0) {
		PyOS_AfterFork_Child();
		// The other runs' sockets are the zygote's.
		for (size_t j = 0; j < nruns; j++)
			close(runs[j].fd);
		free(runs);
		runs = NULL, nruns = capruns = 0;
		memcpy(out, fds, sizeof(int) * (size_t)nfds);
		out[nfds] = (int)uid;
		return 1;
	}
	PyOS_AfterFork_Parent();
	// Unlike python's loop, which went on, a zygote that cannot leave the
	// run's pid namespace ends: the daemon starts another.
	if (syscall(SYS_setns, c->own_pid_ns, CLONE_NEWPID) < 0) {
		e = errno;
		answer(c, fds[0], "fork the program", e, strerror(e));
		close_all(fds, nfds);
		return fail("go back to the zygote's pid namespace", e);
	}
	close_all(fds + 1, nfds - 1);
	if (pid < 0) {
		answer(c, fds[0], "fork the program", e, strerror(e));
		close(fds[0]);
		return 0;
	}
	runs[nruns++] = (struct aj_zrun){.pid = pid, .fd = fds[0]};
	return 0;
}

// aj_zygote_serve is the zygote's loop: it serves zFork until the daemon
// closes the control socket (0) or the zygote must end (-1; see
// aj_zygote_error). In each program it forks it returns 1, and out holds
// the run's z_ns fds (its socket first) and then its uid.
int aj_zygote_serve(const struct aj_zconf *c, int *out)
{
	if (c->z_ns < 1 || c->max_fds < c->z_ns || c->max_fds > AJ_FDS_MAX || c->reaps < 1)
		return fail("the zygote's loop was given other constants than its own", 0);
	for (;;) {
		struct pollfd p[2] = {{.fd = c->ctl, .events = POLLIN}, {.fd = c->wake, .events = POLLIN}};
		// Woken by a message, or by SIGCHLD through the wake-up pipe
		// (python's signal handler writes it), and once a second, should
		// a wake-up be missed.
		int n = poll(p, 2, 1000);
		if (n < 0 && errno != EINTR)
			return fail("wait for a message", errno);
		if (n > 0 && p[1].revents) {
			char sink[256];
			while (read(c->wake, sink, sizeof(sink)) > 0)
				;
		}
		reap(c);
		if (n <= 0 || !p[0].revents)
			continue;
		int typ = 0, fds[AJ_FDS_MAX], nfds = 0;
		uint32_t len = 0;
		unsigned char payload[4];
		int r = take(c, &typ, &len, payload, fds, &nfds);
		if (r <= 0)
			return r;
		if (typ != c->z_fork) {
			close_all(fds, nfds);
			continue;
		}
		r = spawn(c, len, payload, fds, nfds, out);
		if (r != 0)
			return r;
	}
}
