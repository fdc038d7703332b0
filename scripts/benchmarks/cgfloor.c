// cgfloor: what a run's cgroup costs the process that manages it, apart
// from agentjail.
//
// A floor for the daemon's CPU per run: the daemon makes each run's group
// in every hierarchy the host has, sets its limits, hands the jail the
// files it joins by, reads the figures and removes the group. This does
// the same system calls from a small C program, so no Go runtime, HTTP or
// protocol is in the figure: what remains is the kernel's own work, which
// no daemon can do with less CPU. It is a floor measured hot, in a tight
// loop; between a daemon's runs other work cools the caches. Names are
// made relative to the DIRs' fds (the daemon walks whole paths: about
// 50 us more per run on the project's VM). Rows add one step each, in
// the order a run takes them:
//
//   mkdir, rmdir             the group made and removed in each hierarchy
//   + locks                  each directory opened and flocked (how the
//                            daemon marks a group as live for Stale)
//   + limits                 memory (no swap), pids and CPU quota written
//   + rename                 a group made ahead, renamed for its run (v1)
//   + join files, figures    the join files opened, the peak reset, the
//                            OOM counters read, the OOM watch registered
//                            (an eventfd on v1, inotify on v2),
//                            then the figures read after the run
//   + a process in it        a child joins, writes 1 MiB and exits before
//                            the figures (the jail's side: its CPU is the
//                            children's column, not the caller's)
//
// The first row, a process and no group, is that child alone: the
// caller's fork and wait, which the daemon does not pay for a group (its
// jails are started by a bootstrap it vforks while building them), to
// subtract from the last row.
//
// Figures per iteration: wall, the caller's own CPU (RUSAGE_SELF: what
// the daemon would pay), its children's, and the machine's busy CPU from
// /proc/stat (300 ms after the loop, for the kernel's deferred work).
// Run it on a quiet machine and read medians.
//
//   gcc -O2 -Wall -o /tmp/cgfloor scripts/benchmarks/cgfloor.c
//   /tmp/cgfloor [-r ROW] N ROUNDS DIR...
//
// -r ROW (an index into the table, from 0) runs that row alone and does
// not wait after it: scripts/bench --throughput measures around it with
// the kernel's counters of its own cgroup (scripts/benchmarks/kernelcpu.py).
//
// Each DIR is a directory the caller may make groups in, one per
// hierarchy: on cgroup v1 the memory, pids, cpu and cpuacct ones (a
// hybrid host mounts them apart), on v2 one directory whose
// cgroup.subtree_control enables memory, pids and cpu. Every group it
// makes is removed before it exits, also when a step fails. On a host
// whose v1 controllers are each mounted apart, as root:
//
//   set --; for c in memory pids cpu cpuacct; do
//     d=/sys/fs/cgroup/$c$(grep ":$c:" /proc/self/cgroup | cut -d: -f3)/cgfloor
//     mkdir $d && set -- "$@" $d; done
//   /tmp/cgfloor 400 5 "$@"; rmdir "$@"
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/file.h>
#include <sys/inotify.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "floor.h"

#define MAXDIRS 8
#define MAXROUNDS 64

// tables, laid out by hand:
// clang-format off
enum { NOGROUP, MKDIR, LOCKS, LIMITS, RENAME, FIGURES, PROCESS, NROWS };
static const char *rows[NROWS] = {
	"a process, no group", "mkdir, rmdir", "+ locks", "+ limits", "+ rename", "+ join files, figures",
	"+ a process in it",
};
// clang-format on

static int ndirs;
static int parent[MAXDIRS]; // fds of the DIR arguments
static const char *parentName[MAXDIRS];
static char made[MAXDIRS][64]; // the group this made in each, "" when none

static void fail(const char *what, const char *name)
{
	fprintf(stderr, "cgfloor: %s %s: %s\n", what, name, strerror(errno));
	for (int d = 0; d < ndirs; d++)
		if (made[d][0])
			unlinkat(parent[d], made[d], AT_REMOVEDIR);
	exit(1);
}

// The files a new group offers in each hierarchy, looked up once in a
// probe group (the daemon, too, learns them at its start): has(d, f) is
// whether a group in hierarchy d has file f.
// a table, laid out by hand:
// clang-format off
static const char *files[] = {
	"memory.limit_in_bytes", "memory.memsw.limit_in_bytes", "memory.kmem.tcp.limit_in_bytes", "memory.max",
	"memory.swap.max", "pids.max", "cpu.cfs_quota_us", "cpu.max", "tasks", "memory.max_usage_in_bytes",
	"memory.peak", "cgroup.event_control",
	// read as figures, each through an fd kept from the first read
	"memory.oom_control", "memory.events", "pids.events", "pids.peak", "cpuacct.usage", "cpu.stat",
};
// clang-format on
#define NFILES (sizeof files / sizeof files[0])
#define FIRSTKEPT 12
#define NKEPT (NFILES - FIRSTKEPT)
static int offered[MAXDIRS][NFILES];

static size_t fileIndex(const char *f)
{
	for (size_t i = 0; i < NFILES; i++)
		if (!strcmp(files[i], f))
			return i;
	fprintf(stderr, "cgfloor: %s is not in the table\n", f);
	exit(2);
}

static int has(int d, const char *f)
{
	return offered[d][fileIndex(f)];
}

// makeGroup makes group name in hierarchy d; made[d] names it only once
// it exists, so that fail never removes a directory this did not make.
static void makeGroup(int d, const char *name)
{
	if (mkdirat(parent[d], name, 0755))
		fail("mkdir", name);
	snprintf(made[d], sizeof made[d], "%s", name);
}

static void probe(void)
{
	char name[64];
	snprintf(name, sizeof name, "cgfloor-%d-probe", getpid());
	for (int d = 0; d < ndirs; d++) {
		makeGroup(d, name);
		int g = openat(parent[d], made[d], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (g < 0)
			fail("opening", made[d]);
		for (size_t i = 0; i < NFILES; i++)
			offered[d][i] = faccessat(g, files[i], F_OK, 0) == 0;
		// v1's cpu.stat holds only throttling, which the daemon does not
		// read; v2's holds the usage (v1: cpuacct.usage).
		if (has(d, "cpu.cfs_quota_us"))
			offered[d][fileIndex("cpu.stat")] = 0;
		close(g);
		if (unlinkat(parent[d], made[d], AT_REMOVEDIR))
			fail("rmdir", made[d]);
		made[d][0] = 0;
	}
}

static void put(int g, const char *f, const char *v)
{
	int fd = openat(g, f, O_WRONLY | O_CLOEXEC);
	if (fd < 0 || write(fd, v, strlen(v)) != (ssize_t)strlen(v))
		fail("writing", f);
	close(fd);
}

static void limits(int d, int g)
{
	const char *mem = "268435456";
	if (has(d, "memory.limit_in_bytes")) { // v1
		put(g, "memory.swappiness", "0");
		put(g, "memory.limit_in_bytes", mem);
		if (has(d, "memory.memsw.limit_in_bytes"))
			put(g, "memory.memsw.limit_in_bytes", mem);
		if (has(d, "memory.kmem.tcp.limit_in_bytes"))
			put(g, "memory.kmem.tcp.limit_in_bytes", mem);
	}
	if (has(d, "memory.max")) { // v2
		put(g, "memory.max", mem);
		if (has(d, "memory.swap.max"))
			put(g, "memory.swap.max", "0");
		put(g, "memory.oom.group", "1");
	}
	if (has(d, "pids.max"))
		put(g, "pids.max", "70");
	if (has(d, "cpu.cfs_quota_us"))
		put(g, "cpu.cfs_quota_us", "100000");
	if (has(d, "cpu.max"))
		put(g, "cpu.max", "100000 100000");
}

// readFile reads file f of g through *keep, an fd opened by the first
// read and kept (read again with pread), as the daemon reads figures.
static void readFile(int g, const char *f, int *keep)
{
	char b[1024];
	if (*keep < 0)
		*keep = openat(g, f, O_RDONLY | O_CLOEXEC);
	if (*keep < 0 || pread(*keep, b, sizeof b, 0) < 0)
		fail("reading", f);
}

struct run {
	int dir[MAXDIRS], join[MAXDIRS], peak, oomCtl, efd;
	int kept[MAXDIRS][NKEPT];
};

// figures reads what the daemon reads of a group: at the join as
// baselines, and after the run.
static void figures(struct run *r)
{
	char b[64];
	if (r->peak >= 0 && pread(r->peak, b, sizeof b, 0) < 0)
		fail("reading", "the peak");
	for (int d = 0; d < ndirs; d++)
		for (size_t k = 0; k < NKEPT; k++)
			if (offered[d][FIRSTKEPT + k])
				readFile(r->dir[d], files[FIRSTKEPT + k], &r->kept[d][k]);
}

static void join(struct run *r)
{
	for (int d = 0; d < ndirs; d++) {
		const char *f = has(d, "tasks") ? "tasks" : "cgroup.procs";
		if ((r->join[d] = openat(r->dir[d], f, O_WRONLY | O_CLOEXEC)) < 0) {
			char path[4096];
			snprintf(path, sizeof path, "%s/%s/%s (is the DIR in a cgroup hierarchy?)", parentName[d], made[d], f);
			fail("opening", path);
		}
		if (r->peak < 0 && has(d, "memory.max_usage_in_bytes")) {
			r->peak = openat(r->dir[d], "memory.max_usage_in_bytes", O_RDWR | O_CLOEXEC);
			if (r->peak < 0 || write(r->peak, "0", 1) != 1)
				fail("resetting", "memory.max_usage_in_bytes");
		} else if (r->peak < 0 && has(d, "memory.peak")) {
			// Resettable through its fd since Linux 6.12; before, the
			// file is read-only and the peak counts since creation.
			r->peak = openat(r->dir[d], "memory.peak", O_RDWR | O_CLOEXEC);
			if (r->peak >= 0 && write(r->peak, "reset", 5) != 5)
				fail("resetting", "memory.peak");
			if (r->peak < 0 && (r->peak = openat(r->dir[d], "memory.peak", O_RDONLY | O_CLOEXEC)) < 0)
				fail("opening", "memory.peak");
		}
		if (has(d, "cgroup.event_control") && has(d, "memory.limit_in_bytes")) { // v1 memory: the OOM watch
			char ctl[32];
			r->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
			r->oomCtl = openat(r->dir[d], "memory.oom_control", O_RDONLY | O_CLOEXEC);
			if (r->efd < 0 || r->oomCtl < 0)
				fail("registering", "the OOM eventfd");
			snprintf(ctl, sizeof ctl, "%d %d", r->efd, r->oomCtl);
			put(r->dir[d], "cgroup.event_control", ctl);
		} else if (has(d, "memory.events")) { // v2: the OOM watch
			r->efd = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
			char path[4096];
			snprintf(path, sizeof path, "%s/%s/memory.events", parentName[d], made[d]);
			if (r->efd < 0 || inotify_add_watch(r->efd, path, IN_MODIFY) < 0)
				fail("watching", path);
		}
	}
	figures(r);
}

static void child(struct run *r)
{
	char pid[16];
	int n = snprintf(pid, sizeof pid, "%d", getpid());
	for (int d = 0; r && d < ndirs; d++)
		if (write(r->join[d], pid, n) != n)
			_exit(3);
	char *m = malloc(1 << 20);
	if (!m)
		_exit(4);
	memset(m, 1, 1 << 20);
	_exit(0);
}

static void process(struct run *r)
{
	int st;
	pid_t p = fork();
	if (p == 0)
		child(r);
	if (p < 0 || waitpid(p, &st, 0) != p)
		fail("the child in", r ? made[0] : "no group");
	if (st != 0) {
		errno = 0;
		fprintf(stderr, "cgfloor: the child ended with status %#x\n", st);
		fail("the child in", r ? made[0] : "no group");
	}
}

static void iteration(int row, int i)
{
	if (row == NOGROUP) {
		process(NULL);
		return;
	}
	struct run r = {.peak = -1, .oomCtl = -1, .efd = -1};
	memset(r.kept, 0xff, sizeof r.kept); // -1: not opened yet
	char name[64];
	snprintf(name, sizeof name, "cgfloor-%d-%d", getpid(), i);
	for (int d = 0; d < ndirs; d++) {
		makeGroup(d, name);
		r.dir[d] = -1;
		if (row >= LOCKS) {
			r.dir[d] = openat(parent[d], made[d], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
			if (r.dir[d] < 0 || flock(r.dir[d], LOCK_EX | LOCK_NB))
				fail("locking", made[d]);
		}
	}
	if (row >= LIMITS)
		for (int d = 0; d < ndirs; d++)
			limits(d, r.dir[d]);
	if (row >= RENAME)
		for (int d = 0; d < ndirs; d++) {
			if (!has(d, "tasks"))
				continue; // v2 renames no group, nor does the daemon there
			char to[64];
			snprintf(to, sizeof to, "cgfloor-%d-r%d", getpid(), i);
			if (renameat(parent[d], made[d], parent[d], to))
				fail("renaming", made[d]);
			strcpy(made[d], to);
		}
	if (row >= FIGURES)
		join(&r);
	if (row >= PROCESS)
		process(&r);
	if (row >= FIGURES)
		figures(&r);
	for (int d = 0; d < ndirs; d++) {
		for (size_t k = 0; k < NKEPT; k++)
			if (r.kept[d][k] >= 0)
				close(r.kept[d][k]);
		if (row >= FIGURES)
			close(r.join[d]);
	}
	if (r.peak >= 0)
		close(r.peak);
	if (r.oomCtl >= 0)
		close(r.oomCtl);
	if (r.efd >= 0)
		close(r.efd);
	for (int d = 0; d < ndirs; d++) {
		if (unlinkat(parent[d], made[d], AT_REMOVEDIR))
			fail("rmdir", made[d]);
		made[d][0] = 0;
		if (r.dir[d] >= 0)
			close(r.dir[d]);
	}
}

static double cpu_us(int who)
{
	struct rusage u;
	getrusage(who, &u);
	return (u.ru_utime.tv_sec + u.ru_stime.tv_sec) * 1e6 + u.ru_utime.tv_usec + u.ru_stime.tv_usec;
}

int main(int argc, char **argv)
{
	int only = -1; // -r ROW: that row alone, for a caller that measures around this program
	if (argc > 2 && strcmp(argv[1], "-r") == 0) {
		only = atoi(argv[2]);
		if (only < 0 || only >= NROWS) {
			fprintf(stderr, "cgfloor: -r ROW: a row from 0 to %d\n", NROWS - 1);
			return 2;
		}
		argc -= 2;
		argv += 2;
	}
	int n = argc > 1 ? atoi(argv[1]) : 0;
	int rounds = argc > 2 ? atoi(argv[2]) : 0;
	ndirs = argc - 3;
	if (n < 1 || rounds < 1 || rounds > MAXROUNDS || ndirs < 1 || ndirs > MAXDIRS) {
		fprintf(stderr, "usage: cgfloor N ROUNDS DIR... (N >= 1, ROUNDS 1..%d, 1..%d DIRs: one per cgroup hierarchy)\n",
			MAXROUNDS, MAXDIRS);
		return 2;
	}
	for (int d = 0; d < ndirs; d++) {
		parentName[d] = argv[3 + d];
		if ((parent[d] = open(parentName[d], O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0)
			fail("opening", parentName[d]);
	}
	probe();
	static double wall[NROWS][MAXROUNDS], self[NROWS][MAXROUNDS], kids[NROWS][MAXROUNDS], machine[NROWS][MAXROUNDS];
	int it = 0;
	for (int k = 0; k < rounds; k++) {
		for (int j = 0; j < NROWS; j++) {
			int row = k % 2 ? NROWS - 1 - j : j; // the order alternates
			if (only >= 0 && row != only)
				continue;
			double s0 = cpu_us(RUSAGE_SELF), c0 = cpu_us(RUSAGE_CHILDREN), t0 = now_us();
			long long b0 = busy_us();
			for (int m = 0; m < n; m++)
				iteration(row, it++);
			double t1 = now_us(), s1 = cpu_us(RUSAGE_SELF);
			if (only < 0)
				usleep(300000);
			long long b1 = busy_us();
			wall[row][k] = (t1 - t0) / n;
			self[row][k] = (s1 - s0) / n;
			kids[row][k] = (cpu_us(RUSAGE_CHILDREN) - c0) / n;
			machine[row][k] = (double)(b1 - b0) / n;
		}
	}
	printf("%d iterations a row, %d rounds, %d hierarchies; medians, microseconds per iteration\n\n", n, rounds, ndirs);
	printf("| steps | wall | the caller's CPU | its children's CPU | machine CPU |\n|---|---|---|---|---|\n");
	for (int i = 0; i < NROWS; i++)
		if (only < 0 || i == only)
			printf("| %s | %.0f | %.0f | %.0f | %.0f |\n", rows[i], median(wall[i], rounds), median(self[i], rounds),
			       median(kids[i], rounds), median(machine[i], rounds));
	return 0;
}
