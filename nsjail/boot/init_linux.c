// The jail's init stage: pid 1 of the jail's user and pid namespaces,
// entered from bootstrap_linux.c's clone and never returning. It is C, not
// Go, so that a jail pays for no second Go runtime (BENCHMARKS.md has the
// figures): no Go runtime ever starts in a jail.
//
// It decides nothing. The parent sends it plans (plan.go): lists of steps,
// each a system call or a small fixed sequence of them with its arguments
// and the name to report when it fails, and this file carries them out in
// order, then does the fixed end of every jail (aj_start_program) and
// stays, as the jail's init, until the program has ended (aj_reap). The
// conversation is protocol.go's:
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
#include <linux/capability.h>
#include <linux/filter.h>
#include <linux/openat2.h>
#include <linux/seccomp.h>
#include <net/if.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bootstrap_linux.h"

// ---- messages (protocol.go) ----

static void aj_write_msg(char type, const void *payload, uint32_t len)
{
	unsigned char hdr[5] = {(unsigned char)type, len & 0xff, (len >> 8) & 0xff, (len >> 16) & 0xff, len >> 24};
	aj_send_all(hdr, sizeof hdr);
	if (len > 0)
		aj_send_all(payload, len);
}

void aj_error_record(struct aj_record *r, const char *stage, int err, const char *msg)
{
	memset(r, 0, sizeof *r);
	r->kind = AJ_REC_ERROR;
	r->value = err;
	strncpy(r->stage, stage ? stage : "init", sizeof r->stage - 1);
	if (msg)
		strncpy(r->msg, msg, sizeof r->msg - 1);
}

// aj_fail reports the failed step (its stage, errno when err is not 0,
// and msg) and exits.
__attribute__((noreturn)) static void aj_fail(const char *stage, int err, const char *msg)
{
	struct aj_record r;
	aj_error_record(&r, stage, err, msg);
	aj_write_msg(AJ_MSG_ERROR, &r, sizeof r);
	_exit(1);
}

struct aj_msg {
	char type;
	char *payload; // malloc'd, len bytes (and a NUL after them)
	uint32_t len;
	int fds[AJ_MAX_FDS];
	int nfds;
};

static void aj_read_all(char *p, size_t len)
{
	while (len > 0) {
		ssize_t n = read(AJ_SYNC_FD, p, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			_exit(1);
		p += n;
		len -= (size_t)n;
	}
}

// aj_recv reads one message with the fds it carries. It returns 0 at the
// end of the socket before a header, 1 with a message; a message with more
// fds than AJ_MAX_FDS is refused whole (the kernel closed the rest).
static int aj_recv(struct aj_msg *m, const char *stage)
{
	unsigned char hdr[5];
	union {
		char buf[CMSG_SPACE(AJ_MAX_FDS * sizeof(int))];
		struct cmsghdr align;
	} cm;
	struct iovec iov = {.iov_base = hdr, .iov_len = sizeof hdr};
	struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = cm.buf, .msg_controllen = sizeof cm.buf};
	ssize_t n;
	do
		n = recvmsg(AJ_SYNC_FD, &mh, MSG_CMSG_CLOEXEC);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		aj_fail(stage, errno, "recvmsg");
	memset(m, 0, sizeof *m);
	for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c)) {
		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
			continue;
		int k = (int)((c->cmsg_len - CMSG_LEN(0)) / sizeof(int));
		for (int i = 0; i < k; i++) {
			int fd;
			memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof fd);
			if (m->nfds < AJ_MAX_FDS)
				m->fds[m->nfds++] = fd;
			else
				close(fd);
		}
	}
	if (mh.msg_flags & MSG_CTRUNC) {
		for (int i = 0; i < m->nfds; i++)
			close(m->fds[i]);
		aj_fail(stage, 0, "a message carried more than 8 fds");
	}
	if (n == 0)
		return 0;
	if ((size_t)n < sizeof hdr)
		aj_read_all((char *)hdr + n, sizeof hdr - (size_t)n);
	m->type = (char)hdr[0];
	m->len = (uint32_t)hdr[1] | (uint32_t)hdr[2] << 8 | (uint32_t)hdr[3] << 16 | (uint32_t)hdr[4] << 24;
	if (m->len > AJ_MAX_MSG)
		aj_fail(stage, 0, "message too large");
	m->payload = malloc((size_t)m->len + 1);
	if (m->payload == NULL)
		aj_fail(stage, ENOMEM, "");
	aj_read_all(m->payload, m->len);
	m->payload[m->len] = 0;
	return 1;
}

// aj_send_fds sends a message of type with no payload and n fds
// (SCM_RIGHTS). Returns 0, or -1 with errno set.
static int aj_send_fds(char type, const int *fds, int n)
{
	unsigned char msg[5] = {(unsigned char)type, 0, 0, 0, 0};
	union {
		char buf[CMSG_SPACE(AJ_MAX_FDS * sizeof(int))];
		struct cmsghdr align;
	} cm;
	if (n < 1 || n > AJ_MAX_FDS) {
		errno = EINVAL;
		return -1;
	}
	memset(&cm, 0, sizeof cm);
	struct iovec iov = {.iov_base = msg, .iov_len = sizeof msg};
	struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = cm.buf,
			    .msg_controllen = CMSG_SPACE((size_t)n * sizeof(int))};
	struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN((size_t)n * sizeof(int));
	memcpy(CMSG_DATA(c), fds, (size_t)n * sizeof(int));
	ssize_t sent;
	do
		sent = sendmsg(AJ_SYNC_FD, &mh, MSG_NOSIGNAL);
	while (sent < 0 && errno == EINTR);
	if (sent < 0)
		return -1;
	if (sent != (ssize_t)sizeof msg) {
		errno = EIO;
		return -1;
	}
	return 0;
}

// ---- plans (plan.go) ----

// A reader of a plan. A read past the end, or a string that is not one,
// sets bad and returns an empty value: the walk checks bad after each
// step's arguments, so that a malformed plan is refused before any of
// its steps runs (the dry pass) and never read past its end.
struct aj_reader {
	const unsigned char *p, *end;
	const char *bad; // why the plan is malformed; NULL while it is not
};

static uint64_t aj_uint(struct aj_reader *r, int size)
{
	if (r->bad || r->end - r->p < size) {
		r->bad = r->bad ? r->bad : "a step is cut short";
		return 0;
	}
	uint64_t v = 0;
	for (int i = 0; i < size; i++)
		v |= (uint64_t)r->p[i] << (8 * i);
	r->p += size;
	return v;
}

// aj_bytes returns the next length-prefixed bytes; they are followed by a
// NUL in the plan (plan.go writes one), so that every string is a C string.
static const char *aj_bytes(struct aj_reader *r, uint32_t *len)
{
	uint32_t n = (uint32_t)aj_uint(r, 4);
	if (len)
		*len = 0;
	if (r->bad)
		return "";
	if ((uint64_t)(r->end - r->p) < (uint64_t)n + 1 || r->p[n] != 0) {
		r->bad = "a string is cut short or not terminated";
		return "";
	}
	const char *s = (const char *)r->p;
	r->p += n + 1;
	if (len)
		*len = n;
	return s;
}

// aj_str is aj_bytes without NUL bytes inside; "" is NULL where nullable.
static const char *aj_str(struct aj_reader *r, int nullable)
{
	uint32_t n;
	const char *s = aj_bytes(r, &n);
	if (!r->bad && memchr(s, 0, n) != NULL)
		r->bad = "a string holds a NUL byte";
	return (nullable && n == 0) ? NULL : s;
}

// What the plans leave for the end: the filter and the exec.
struct aj_state {
	const struct sock_filter *filter;
	unsigned short filter_len;
	int report, collect;
	char **argv, **envp;
	uint64_t keep_caps; // AJ_OP_KEEP_CAPS: a zygote's
	int adopt;          // AJ_OP_ADOPT: a warm run's; no argv
};

// aj_mkdir makes a directory, or finds one (not another file) there.
static int aj_mkdir(const char *path, mode_t mode)
{
	struct stat st;
	if (mkdir(path, mode) == 0)
		return 0;
	if (errno != EEXIST)
		return -1;
	if (stat(path, &st) < 0)
		return -1;
	if (!S_ISDIR(st.st_mode)) {
		errno = ENOTDIR;
		return -1;
	}
	return 0;
}

static int aj_mkdirs(const char *path, mode_t mode)
{
	char buf[4096];
	size_t n = strlen(path);
	if (n == 0 || n >= sizeof buf) {
		errno = ENAMETOOLONG;
		return -1;
	}
	memcpy(buf, path, n + 1);
	for (char *p = buf + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = 0;
		if (aj_mkdir(buf, mode) < 0)
			return -1;
		*p = '/';
	}
	return aj_mkdir(buf, mode);
}

static int aj_open_beneath(int dir, const char *rel, int flags, mode_t mode)
{
	// No "..", no symbolic or magic link, no other mount: a path that
	// tries to leave dir fails (the paths were checked by Spec.Validate;
	// this is the second line).
	struct open_how how = {
		.flags = (uint64_t)(flags | O_CLOEXEC),
		.mode = (flags & O_CREAT) ? mode : 0,
		.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV,
	};
	int fd, tries = 0;
	do // EAGAIN: a rename raced the resolution of a path ("..", which Validate refuses)
		fd = (int)syscall(SYS_openat2, dir, rel, &how, sizeof how);
	while (fd < 0 && (errno == EINTR || (errno == EAGAIN && ++tries < 16)));
	return fd;
}

// aj_write_beneath writes one file at rel below the directory dir, making
// the directories on its way one level at a time, each beneath dir.
// Returns 0, or -1 with errno set. writeBeneath calls it for a test.
int aj_write_beneath(int dir, const char *rel, const char *content, size_t len, unsigned mode)
{
	const int flags = O_WRONLY | O_CREAT | O_TRUNC;
	int fd = aj_open_beneath(dir, rel, flags, mode);
	if (fd < 0 && errno == ENOENT && strchr(rel, '/') != NULL) {
		char buf[4096];
		size_t n = strlen(rel);
		if (n >= sizeof buf) {
			errno = ENAMETOOLONG;
			return -1;
		}
		memcpy(buf, rel, n + 1);
		for (char *slash = strchr(buf, '/'); slash; slash = strchr(slash + 1, '/')) {
			// buf up to this slash is the next directory; the part
			// before its last slash, its parent (dir itself at first).
			*slash = 0;
			char *base = strrchr(buf, '/');
			int pfd;
			if (base) {
				*base = 0;
				pfd = aj_open_beneath(dir, buf, O_PATH | O_DIRECTORY, 0);
				*base = '/';
			} else {
				pfd = fcntl(dir, F_DUPFD_CLOEXEC, 0);
			}
			if (pfd < 0)
				return -1;
			int r = mkdirat(pfd, base ? base + 1 : buf, 0755);
			int e = errno;
			close(pfd);
			if (r < 0 && e != EEXIST) {
				errno = e;
				return -1;
			}
			*slash = '/';
		}
		fd = aj_open_beneath(dir, rel, flags, mode);
	}
	if (fd < 0)
		return -1;
	while (len > 0) {
		ssize_t w = write(fd, content, len);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0) {
			int e = errno;
			close(fd);
			errno = e;
			return -1;
		}
		content += w;
		len -= (size_t)w;
	}
	return close(fd);
}

// aj_locked_flags are the flags of the mount at path that a remount inside
// a user namespace must repeat (the kernel locks them).
static unsigned long aj_locked_flags(const struct statvfs *st)
{
	static const struct {
		unsigned long st, ms;
	} m[] = {{ST_NOEXEC, MS_NOEXEC}, {ST_NOATIME, MS_NOATIME}, {ST_NODIRATIME, MS_NODIRATIME},
		 {ST_RELATIME, MS_RELATIME}, {ST_NOSUID, MS_NOSUID},   {ST_NODEV, MS_NODEV}};
	unsigned long f = 0;
	for (size_t i = 0; i < sizeof m / sizeof m[0]; i++)
		if (st->f_flag & m[i].st)
			f |= m[i].ms;
	return f;
}

// AJ_ARGS_READ ends a step's reading of its arguments (in aj_step_*): the
// plan is malformed if they could not be read, and a skipped step ends
// there.
#define AJ_ARGS_READ()                                                                                                 \
	do {                                                                                                           \
		if (r->bad)                                                                                            \
			return r->bad;                                                                                 \
		if (w->skip)                                                                                           \
			return NULL;                                                                                   \
	} while (0)

// aj_walk is one walk through a plan: its reader, its fds, and what its
// steps have done so far.
struct aj_walk {
	struct aj_state *s;
	struct aj_reader r;
	int *fds, nfds;
	int skip;           // the steps to read without carrying them out (all of them: dry)
	int filters, execs; // at most one each, ever
	int attached;       // AJ_OP_ATTACH: at most one a plan, with the message's one fd
	int wdir;           // AJ_OP_WRITE's directory, wdir_path
	const char *wdir_path;
};

// aj_step_ns carries out (or, skipping, only reads) one of the
// namespaces' steps: unshare, the host and domain names, lo up. It returns
// why the plan is malformed, or NULL; *ok says whether the step worked.
static const char *aj_step_ns(struct aj_walk *w, int op, const char *stage, int *ok)
{
	struct aj_reader *r = &w->r;
	(void)stage; // none of these fails but through *ok
	const char *a;
	uint64_t x;
	int err;
	switch (op) {
	case AJ_OP_UNSHARE:
		x = aj_uint(r, 4);
		AJ_ARGS_READ();
		*ok = unshare((int)x) == 0;
		break;
	case AJ_OP_HOSTNAME:
		a = aj_str(r, 0);
		AJ_ARGS_READ();
		*ok = sethostname(a, strlen(a)) == 0;
		break;
	case AJ_OP_DOMAINNAME:
		a = aj_str(r, 0);
		AJ_ARGS_READ();
		*ok = setdomainname(a, strlen(a)) == 0;
		break;
	case AJ_OP_LOOPBACK_UP: {
		if (w->skip)
			break;
		int sock = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
		struct ifreq ifr;
		memset(&ifr, 0, sizeof ifr);
		strcpy(ifr.ifr_name, "lo");
		ifr.ifr_flags = IFF_UP | IFF_LOOPBACK | IFF_RUNNING;
		*ok = sock >= 0 && ioctl(sock, SIOCSIFFLAGS, &ifr) == 0;
		err = errno;
		if (sock >= 0)
			close(sock);
		errno = err;
		break;
	}
	}
	return NULL;
}

// aj_step_mount carries out (or, skipping, only reads) one of the mounts'
// steps: mount, a read-only bind, unmount, pivot_root, attach. It returns
// why the plan is malformed, or NULL; *ok says whether the step worked.
static const char *aj_step_mount(struct aj_walk *w, int op, const char *stage, int *ok)
{
	struct aj_reader *r = &w->r;
	const char *a, *b, *c, *d;
	uint64_t x, y;
	switch (op) {
	case AJ_OP_MOUNT:
		a = aj_str(r, 1), b = aj_str(r, 0), c = aj_str(r, 1), x = aj_uint(r, 8), d = aj_str(r, 1);
		AJ_ARGS_READ();
		*ok = mount(a, b, c, x, d) == 0;
		break;
	case AJ_OP_BIND_RO: {
		a = aj_str(r, 0), b = aj_str(r, 0), x = aj_uint(r, 8), y = aj_uint(r, 8);
		AJ_ARGS_READ();
		struct statvfs st;
		if (mount(a, b, NULL, MS_BIND, NULL) < 0)
			break;
		if (statvfs(b, &st) < 0)
			aj_fail(stage, errno, "statfs");
		if (mount(NULL, b, NULL,
			  ((MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV | x | aj_locked_flags(&st)) & ~y),
			  NULL) < 0)
			aj_fail(stage, errno, "remount read-only");
		*ok = 1;
		break;
	}
	case AJ_OP_UMOUNT:
		a = aj_str(r, 0), x = aj_uint(r, 4);
		AJ_ARGS_READ();
		*ok = umount2(a, (int)x) == 0;
		break;
	case AJ_OP_PIVOT_ROOT:
		// runc's pivot_root(".", ".") idiom needs no put_old directory;
		// the detach leaves nothing of the host's file system reachable.
		a = aj_str(r, 0);
		AJ_ARGS_READ();
		*ok = chdir(a) == 0 && syscall(SYS_pivot_root, ".", ".") == 0 && umount2(".", MNT_DETACH) == 0 &&
		     chdir("/") == 0;
		break;
	case AJ_OP_ATTACH:
		a = aj_str(r, 0);
		if (r->bad)
			return r->bad;
		if (w->attached++ > 0 || w->nfds != 1)
			return "an attach without its one fd";
		if (w->skip)
			break;
		*ok = syscall(SYS_move_mount, w->fds[0], "", AT_FDCWD, a, MOVE_MOUNT_F_EMPTY_PATH) == 0;
		if (*ok)
			close(w->fds[0]);
		break;
	}
	return NULL;
}

// aj_step_files carries out (or, skipping, only reads) one of the files'
// steps: a directory, a link, a file written, a mode, a condition, chdir.
// It returns why the plan is malformed, or NULL; *ok says whether the step
// worked.
static const char *aj_step_files(struct aj_walk *w, int op, const char *stage, int *ok)
{
	struct aj_reader *r = &w->r;
	const char *a, *b, *c;
	uint64_t x, y;
	uint32_t n;
	(void)stage; // none of these fails but through *ok
	switch (op) {
	case AJ_OP_MKDIR:
		a = aj_str(r, 0), x = aj_uint(r, 4), y = aj_uint(r, 4);
		AJ_ARGS_READ();
		*ok = (y ? aj_mkdirs(a, (mode_t)x) : mkdir(a, (mode_t)x)) == 0;
		break;
	case AJ_OP_SYMLINK:
		a = aj_str(r, 0), b = aj_str(r, 0);
		AJ_ARGS_READ();
		*ok = symlink(a, b) == 0;
		break;
	case AJ_OP_WRITE: {
		a = aj_str(r, 0), b = aj_str(r, 0), x = aj_uint(r, 4), c = aj_bytes(r, &n);
		AJ_ARGS_READ();
		// The directory is opened once for a run of files in it (a
		// request's many files: one open, not one each).
		if (w->wdir_path == NULL || strcmp(a, w->wdir_path) != 0) {
			if (w->wdir >= 0)
				close(w->wdir);
			w->wdir = open(a, O_PATH | O_DIRECTORY | O_CLOEXEC);
			w->wdir_path = w->wdir >= 0 ? a : NULL;
		}
		*ok = w->wdir >= 0 && aj_write_beneath(w->wdir, b, c, n, (unsigned)x) == 0;
		break;
	}
	case AJ_OP_CHMOD:
		a = aj_str(r, 0), x = aj_uint(r, 4);
		AJ_ARGS_READ();
		*ok = chmod(a, (mode_t)x) == 0;
		break;
	case AJ_OP_IF_EXISTS: {
		a = aj_str(r, 0);
		AJ_ARGS_READ();
		// The next step is skipped when a is missing, and only then.
		struct stat st;
		int missing = lstat(a, &st) < 0;
		*ok = !missing || errno == ENOENT;
		if (*ok && missing)
			w->skip = 2;
		break;
	}
	case AJ_OP_RMDIR:
		a = aj_str(r, 0);
		AJ_ARGS_READ();
		*ok = rmdir(a) == 0;
		break;
	case AJ_OP_CHDIR:
		a = aj_str(r, 0);
		AJ_ARGS_READ();
		*ok = chdir(a) == 0;
		break;
	}
	return NULL;
}

// aj_step_program carries out (or, skipping, only reads) one of the
// program's steps: its filter, stdio, rlimits and capabilities. It returns
// why the plan is malformed, or NULL; *ok says whether the step worked.
static const char *aj_step_program(struct aj_walk *w, int op, const char *stage, int *ok)
{
	struct aj_reader *r = &w->r;
	const char *a;
	uint64_t x, y, z;
	uint32_t n;
	switch (op) {
	case AJ_OP_SECCOMP: {
		a = aj_bytes(r, &n);
		if (r->bad)
			return r->bad;
		if (w->filters++ > 0)
			return "a second filter"; // it would replace the first
		struct sock_filter last; // the program must end with a return
		if (n == 0 || n % sizeof last != 0 || n / sizeof last > BPF_MAXINSNS)
			return "no usable filter";
		memcpy(&last, a + n - sizeof last, sizeof last);
		if (last.code != (BPF_RET | BPF_K))
			return "no usable filter";
		if (w->skip)
			break;
		struct sock_filter *f = malloc(n); // aligned, unlike its place in the plan
		if (f == NULL)
			aj_fail(stage, ENOMEM, NULL);
		memcpy(f, a, n);
		w->s->filter = f;
		w->s->filter_len = (unsigned short)(n / sizeof last);
		*ok = 1;
		break;
	}
	case AJ_OP_STDIO:
		x = aj_uint(r, 4);
		if (r->bad)
			return r->bad;
		if ((int)x != w->nfds)
			return "wrong number of fds with the request";
		if (w->skip)
			break;
		// 0 to 3 are held from the start (stdio and fd 3 on /dev/null:
		// jail.start), so a received fd is never one of them.
		for (int i = 0; i < w->nfds; i++)
			if (w->fds[i] <= AJ_REPORT_FD)
				aj_fail(stage, 0, "received an fd below the ones this stage holds");
		*ok = 1;
		for (int i = 0; i < w->nfds && *ok; i++)
			*ok = dup3(w->fds[i], i, 0) == i && close(w->fds[i]) == 0;
		break;
	case AJ_OP_RLIMIT: {
		x = aj_uint(r, 4), y = aj_uint(r, 8), z = aj_uint(r, 8);
		AJ_ARGS_READ();
		struct rlimit rl = {.rlim_cur = y, .rlim_max = z};
		*ok = setrlimit((int)x, &rl) == 0;
		break;
	}
	case AJ_OP_KEEP_CAPS:
		x = aj_uint(r, 8);
		if (r->bad)
			return r->bad;
		if (x & ~((1ull << CAP_SETUID) | (1ull << CAP_SETGID) | (1ull << CAP_SYS_ADMIN)))
			return "only CAP_SETUID, CAP_SETGID and CAP_SYS_ADMIN may be kept";
		if (w->skip)
			break;
		w->s->keep_caps = x;
		*ok = 1;
		break;
	}
	return NULL;
}

// aj_step_exec carries out (or, skipping, only reads) one of the steps
// that name the program: its argv and environment, or a warm run's adopted
// fork. It returns why the plan is malformed, or NULL; *ok says whether
// the step worked.
static const char *aj_step_exec(struct aj_walk *w, int op, const char *stage, int *ok)
{
	struct aj_reader *r = &w->r;
	switch (op) {
	case AJ_OP_EXEC: {
		if (w->execs++ > 0)
			return "a second program";
		int report = (int)aj_uint(r, 4), collect = (int)aj_uint(r, 4);
		char **lists[2] = {NULL, NULL};
		for (int l = 0; l < 2 && !r->bad; l++) {
			uint32_t count = (uint32_t)aj_uint(r, 4);
			if (!r->bad && (count > (uint32_t)(r->end - r->p) || (l == 0 && count == 0)))
				r->bad = "a list is longer than the plan, or argv is empty";
			char **v = NULL;
			if (!w->skip && !r->bad && (v = calloc((size_t)count + 1, sizeof(char *))) == NULL)
				aj_fail(stage, ENOMEM, NULL);
			for (uint32_t i = 0; i < count && !r->bad; i++) {
				const char *e = aj_str(r, 0);
				if (v)
					v[i] = (char *)e;
			}
			lists[l] = v;
		}
		if (r->bad) {
			free(lists[0]);
			free(lists[1]);
			return r->bad;
		}
		if (w->skip)
			break;
		w->s->report = report, w->s->collect = collect;
		w->s->argv = lists[0], w->s->envp = lists[1];
		*ok = 1;
		break;
	}
	case AJ_OP_ADOPT:
		if (w->execs++ > 0)
			return "a second program";
		if (w->skip)
			break;
		w->s->adopt = 1;
		*ok = 1;
		break;
	}
	return NULL;
}

// aj_step carries out (or reads) one step of a plan, of code op.
static const char *aj_step(struct aj_walk *w, int op, const char *stage, int *ok)
{
	switch (op) {
	case AJ_OP_UNSHARE:
	case AJ_OP_HOSTNAME:
	case AJ_OP_DOMAINNAME:
	case AJ_OP_LOOPBACK_UP:
		return aj_step_ns(w, op, stage, ok);
	case AJ_OP_MOUNT:
	case AJ_OP_BIND_RO:
	case AJ_OP_UMOUNT:
	case AJ_OP_PIVOT_ROOT:
	case AJ_OP_ATTACH:
		return aj_step_mount(w, op, stage, ok);
	case AJ_OP_MKDIR:
	case AJ_OP_SYMLINK:
	case AJ_OP_WRITE:
	case AJ_OP_CHMOD:
	case AJ_OP_IF_EXISTS:
	case AJ_OP_RMDIR:
	case AJ_OP_CHDIR:
		return aj_step_files(w, op, stage, ok);
	case AJ_OP_SECCOMP:
	case AJ_OP_STDIO:
	case AJ_OP_RLIMIT:
	case AJ_OP_KEEP_CAPS:
		return aj_step_program(w, op, stage, ok);
	case AJ_OP_EXEC:
	case AJ_OP_ADOPT:
		return aj_step_exec(w, op, stage, ok);
	}
	return "an unknown step";
}

// aj_walk goes through one plan; fds are the ones its message brought.
// With dry set it only reads the plan through (and checks what depends on
// the plan alone): aj_plan does that first, so that a malformed plan is
// refused before any of its steps runs. It returns NULL, or why the plan
// is unusable (*stage: the step, when one is to blame). A step that fails
// when carried out ends the stage (aj_fail) at once.
static const char *aj_walk(struct aj_state *s, const char *plan, uint32_t len, int *fds, int nfds, int dry,
			   const char **stage_out)
{
	struct aj_walk w = {.s = s,
			    .r = {(const unsigned char *)plan, (const unsigned char *)plan + len, NULL},
			    .fds = fds,
			    .nfds = nfds,
			    .skip = dry,
			    .filters = s->filter != NULL,
			    .execs = s->argv != NULL || s->adopt,
			    .wdir = -1};
	int cond = 0; // the last step was AJ_OP_IF_EXISTS
	const char *why = NULL;
	*stage_out = "decode plan";
	while (w.r.p < w.r.end) {
		int op = (int)aj_uint(&w.r, 1);
		int was_cond = cond;
		cond = op == AJ_OP_IF_EXISTS;
		if (cond && was_cond) {
			why = "a condition on a condition";
			goto out;
		}
		const char *stage = aj_str(&w.r, 0);
		if (w.r.bad) {
			why = w.r.bad;
			goto out;
		}
		*stage_out = stage;
		int ok = 0;
		if ((why = aj_step(&w, op, stage, &ok)) != NULL)
			goto out;
		if (w.skip) {
			if (!dry)
				w.skip--;
			continue;
		}
		if (!ok)
			aj_fail(stage, errno, NULL);
	}
	*stage_out = "decode plan";
	if (cond)
		why = "a condition with no step after it";
out:
	if (w.wdir >= 0)
		close(w.wdir);
	return why;
}

// aj_plan carries out the plan m carries, once it has read it through.
static void aj_plan(struct aj_state *s, struct aj_msg *m)
{
	const char *stage;
	const char *why = aj_walk(s, m->payload, m->len, m->fds, m->nfds, 1, &stage);
	if (why == NULL)
		why = aj_walk(s, m->payload, m->len, m->fds, m->nfds, 0, &stage);
	if (why != NULL) {
		char msg[128];
		snprintf(msg, sizeof msg, "malformed plan: %s", why);
		aj_fail(stage, 0, msg);
	}
}

int aj_plan_check(const char *plan, uint32_t len, int nfds)
{
	struct aj_state s;
	int fds[AJ_MAX_FDS];
	for (int i = 0; i < AJ_MAX_FDS; i++)
		fds[i] = -1;
	const char *stage;
	memset(&s, 0, sizeof s);
	return aj_walk(&s, plan, len, fds, nfds, 1, &stage) == NULL ? 0 : -1;
}

// ---- the jail's init, once the program runs ----

// The signals a supervisor forwards: the program gets them as if they had
// been sent to it. Any other signal sent to this process from inside the
// jail is dropped by the kernel (a namespace's init without a handler),
// and SIGKILL from outside ends the whole jail.
static const int aj_forwarded[] = {SIGHUP, SIGINT, SIGQUIT, SIGTERM, SIGUSR1, SIGUSR2, SIGALRM, SIGWINCH};
#define AJ_NFORWARDED (int)(sizeof aj_forwarded / sizeof aj_forwarded[0])

static volatile pid_t aj_program = -1;

static void aj_forward(int sig)
{
	int e = errno;
	if (aj_program > 0)
		kill(aj_program, sig);
	errno = e;
}

// aj_forward_signals has this process pass the signals a supervisor sends
// pid 1 (aj_forwarded) on to the program (aj_program).
static void aj_forward_signals(void)
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
__attribute__((noreturn)) static void aj_start_program(struct aj_state *s, int *join, int njoin)
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
//    malloc may call getrandom): from here on a malloc needs only brk or
//    mmap, a free only brk, munmap or madvise;
//  - a call outside the list fails with ENOSYS. One this tail needs would
//    end it (a failed brk crashes malloc: TestKernelAdoptTail), and with
//    it the jail: it fails closed, never open.
__attribute__((noreturn)) static void aj_adopt(struct aj_state *s, int *join, int njoin)
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
	for (int sig = 1; sig < NSIG; sig++)
		if (sig != SIGKILL && sig != SIGSTOP)
			signal(sig, SIG_DFL); // EINVAL for the few the C library keeps: nothing to reset
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
