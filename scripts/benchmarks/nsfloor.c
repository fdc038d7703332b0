// nsfloor: what fresh namespaces cost the machine, apart from agentjail.
//
// A floor for warm runs: each is a fork into a new user, pid, mount, net,
// ipc, uts and cgroup namespace, so no warm run costs the machine less
// CPU than making (and the kernel later tearing down) that set, whatever
// the daemon does. Each row forks a tiny C child N times that unshares
// the row's namespaces (a pid namespace gets its pid 1 forked and reaped)
// and exits; the parent waits for each. Figures per iteration: wall, the
// children's CPU (rusage), and the machine's busy CPU from /proc/stat,
// which includes the kernel threads that tear namespaces down after the
// last process left (a network namespace's cleanup_net runs in a
// kworker); the machine figure waits 300 ms after the loop for them, so
// it also holds whatever else the machine ran then: run it on a quiet
// machine, rows interleaved over rounds, and read medians.
//
//   gcc -O2 -Wall -o /tmp/nsfloor scripts/benchmarks/nsfloor.c && /tmp/nsfloor [N] [ROUNDS] [ROW]
//
// ROW (an index into the table, from 0) runs that row alone and does not
// wait after it: scripts/bench --throughput measures around it with the
// kernel's counters of its own cgroup (scripts/benchmarks/kernelcpu.py). The last
// row adds a jail's mount tree (a tmpfs and 19 binds), whose unmounting
// when the namespace goes is part of every run's floor.
//
// As root (or with user namespaces for everyone); it writes nothing.
#define _GNU_SOURCE
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <fcntl.h>
#include <sys/wait.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/resource.h>
#include <time.h>

#include "floor.h"

struct row {
	const char *name;
	int user; // a user namespace first, mapping the caller's ids
	int flags;
	int fork_pid1;
	int mounts; // a jail's mount tree: a tmpfs and binds in it
};

static const struct row rows[] = {
	{"fork + exit, no namespace", 0, 0, 0},
	{"user", 1, 0, 0},
	{"user + mount", 1, CLONE_NEWNS, 0},
	{"user + net", 1, CLONE_NEWNET, 0},
	{"user + ipc", 1, CLONE_NEWIPC, 0},
	{"user + uts", 1, CLONE_NEWUTS, 0},
	{"user + pid (and its pid 1)", 1, CLONE_NEWPID, 1},
	{"user + cgroup", 1, CLONE_NEWCGROUP, 0},
	{"all but net", 1, CLONE_NEWNS | CLONE_NEWIPC | CLONE_NEWUTS | CLONE_NEWPID | CLONE_NEWCGROUP, 1},
	{"all (a warm run's set)", 1, CLONE_NEWNS | CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWUTS | CLONE_NEWPID | CLONE_NEWCGROUP, 1},
	{"all + a jail's 20 mounts", 1, CLONE_NEWNS | CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWUTS | CLONE_NEWPID | CLONE_NEWCGROUP, 1, 1},
};
#define NROWS (sizeof rows / sizeof rows[0])
#define JAIL_MOUNTS 20
#define MAXROUNDS 64

static void put(const char *path, const char *s)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0 || write(fd, s, strlen(s)) != (ssize_t)strlen(s))
		_exit(3);
	close(fd);
}

// mount_tree mounts what a jail's mount namespace holds, roughly: a
// tmpfs (over /tmp, in this namespace only) and 19 read-only binds of /usr
// in it, 20 mounts that the kernel unmounts when the namespace goes.
static void mount_tree(void)
{
	char dir[32];
	if (mount("none", "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, "size=64k,nr_inodes=64"))
		_exit(4);
	for (int i = 1; i < JAIL_MOUNTS; i++) {
		snprintf(dir, sizeof dir, "/tmp/%d", i);
		if (mkdir(dir, 0755) || mount("/usr", dir, NULL, MS_BIND, NULL) ||
		    mount(NULL, dir, NULL, MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV, NULL))
			_exit(4);
	}
}

static void child(const struct row *r, uid_t uid, gid_t gid)
{
	char map[64];
	if (r->user) {
		if (unshare(CLONE_NEWUSER))
			_exit(2);
		put("/proc/self/setgroups", "deny");
		snprintf(map, sizeof map, "0 %u 1", uid);
		put("/proc/self/uid_map", map);
		snprintf(map, sizeof map, "0 %u 1", gid);
		put("/proc/self/gid_map", map);
	}
	if (r->flags && unshare(r->flags))
		_exit(2);
	if (r->mounts)
		mount_tree();
	if (r->fork_pid1) {
		pid_t p = fork();
		if (p == 0)
			_exit(0);
		if (p < 0 || waitpid(p, NULL, 0) != p)
			_exit(2);
	}
	_exit(0);
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 500;
	int rounds = argc > 2 ? atoi(argv[2]) : 5;
	int only = argc > 3 ? atoi(argv[3]) : -1; // one row, for a caller that measures around this program
	if (n < 1 || rounds < 1 || rounds > MAXROUNDS || only < -1 || only >= (int)NROWS) {
		fprintf(stderr, "usage: nsfloor [N >= 1] [ROUNDS 1..%d] [ROW 0..%d]\n", MAXROUNDS, (int)NROWS - 1);
		return 2;
	}
	static double wall[NROWS][MAXROUNDS], cpu[NROWS][MAXROUNDS], machine[NROWS][MAXROUNDS];
	uid_t uid = getuid();
	gid_t gid = getgid();
	for (int k = 0; k < rounds; k++) {
		for (size_t j = 0; j < NROWS; j++) {
			size_t i = k % 2 ? NROWS - 1 - j : j; // the order alternates
			if (only >= 0 && i != (size_t)only)
				continue;
			struct rusage before, after;
			getrusage(RUSAGE_CHILDREN, &before);
			long long b0 = busy_us();
			double t0 = now_us();
			for (int m = 0; m < n; m++) {
				int st;
				pid_t p = fork();
				if (p == 0)
					child(&rows[i], uid, gid);
				if (p < 0 || waitpid(p, &st, 0) != p || st != 0) {
					fprintf(stderr, "nsfloor: %s: the child failed (status %#x): are user namespaces allowed?\n", rows[i].name, st);
					return 1;
				}
			}
			double t1 = now_us();
			if (only < 0)
				usleep(300000);
			long long b1 = busy_us();
			getrusage(RUSAGE_CHILDREN, &after);
			double c = (after.ru_utime.tv_sec - before.ru_utime.tv_sec) * 1e6 + (after.ru_utime.tv_usec - before.ru_utime.tv_usec) +
				   (after.ru_stime.tv_sec - before.ru_stime.tv_sec) * 1e6 + (after.ru_stime.tv_usec - before.ru_stime.tv_usec);
			wall[i][k] = (t1 - t0) / n;
			cpu[i][k] = c / n;
			machine[i][k] = (double)(b1 - b0) / n;
		}
	}
	printf("%d iterations a row, %d rounds; medians, microseconds per iteration\n\n", n, rounds);
	printf("| namespaces | wall | children's CPU | machine CPU (kernel threads included) |\n|---|---|---|---|\n");
	for (size_t i = 0; i < NROWS; i++)
		if (only < 0 || i == (size_t)only)
			printf("| %s | %.0f | %.0f | %.0f |\n", rows[i].name, median(wall[i], rounds), median(cpu[i], rounds),
			       median(machine[i], rounds));
	return 0;
}
