// The init stage's steps on the jail's namespaces and file system
// (aj_step_ns, aj_step_mount, aj_step_files: aj_step in init_plan_linux.c
// calls them), and the file helpers they use.

#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/mount.h>
#include <linux/openat2.h>
#include <net/if.h>
#include <sched.h>
#include <stdint.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "init_linux.h"

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

// aj_setattr sets the attributes attrs (MOUNT_ATTR_*) on the mount at
// path, and with recursive on every mount below it too: one call, which,
// unlike a remount, need not repeat the flags the kernel locks in a user
// namespace (it changes only what it is given, and only adds here).
static int aj_setattr(const char *path, uint64_t attrs, int recursive)
{
	struct mount_attr attr = {.attr_set = attrs};
	return (int)syscall(SYS_mount_setattr, AT_FDCWD, path, recursive ? AT_RECURSIVE : 0, &attr, sizeof attr);
}

// aj_attrs are the MOUNT_ATTR_* bits of the MS_* flags f (of the four a
// plan may set).
static uint64_t aj_attrs(uint64_t f)
{
	return ((f & MS_RDONLY) ? MOUNT_ATTR_RDONLY : 0) | ((f & MS_NOSUID) ? MOUNT_ATTR_NOSUID : 0) |
	       ((f & MS_NODEV) ? MOUNT_ATTR_NODEV : 0) | ((f & MS_NOEXEC) ? MOUNT_ATTR_NOEXEC : 0);
}

// aj_step_ns carries out (or, skipping, only reads) one of the
// namespaces' steps: unshare, the host and domain names, lo up. It returns
// why the plan is malformed, or NULL; *ok says whether the step worked.
const char *aj_step_ns(struct aj_walk *w, int op, const char *stage, int *ok)
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
// steps: mount, a read-only bind, unmount, pivot_root, attach, a mount's
// attributes. It returns why the plan is malformed, or NULL; *ok says
// whether the step worked.
const char *aj_step_mount(struct aj_walk *w, int op, const char *stage, int *ok)
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
		if (!r->bad && ((x | y) & ~(uint64_t)(MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC)))
			return "a bind's flags other than read-only, nosuid, nodev and noexec";
		AJ_ARGS_READ();
		if (mount(a, b, NULL, MS_BIND, NULL) < 0)
			break;
		if (aj_setattr(b, aj_attrs((MS_RDONLY | MS_NOSUID | MS_NODEV | x) & ~y), 0) < 0)
			aj_fail(stage, errno, "make the bind read-only");
		*ok = 1;
		break;
	}
	case AJ_OP_SETATTR:
		a = aj_str(r, 0), x = aj_uint(r, 8), y = aj_uint(r, 4);
		if (r->bad)
			return r->bad;
		if (x & ~(uint64_t)(MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC))
			return "a mount's attributes other than read-only, nosuid, nodev and noexec";
		if (w->skip)
			break;
		*ok = aj_setattr(a, x, y != 0) == 0;
		break;
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
const char *aj_step_files(struct aj_walk *w, int op, const char *stage, int *ok)
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
