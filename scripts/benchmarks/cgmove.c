// cgmove: how long one move of a process into a cgroup takes, by each way
// agentjail could do it (BENCHMARKS.md, 2026-11-24). Run as root:
//
//   gcc -O2 -o /tmp/cgmove scripts/benchmarks/cgmove.c && /tmp/cgmove   (as root)
//
// For each way it makes a fresh group below this process's own cgroup in
// the v1 memory, pids, cpu and cpuacct hierarchies (or, with a v2
// directory as its argument, below that one), waits 100 ms (a quiet
// spell), moves a forked child in, and prints the time of the writes; six
// times each. It removes what it made.
#define _GNU_SOURCE
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now_ms(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

// own returns this process's cgroup in the v1 hierarchy of ctrl ("" if none).
static const char *own(const char *ctrl)
{
	static char path[4096];
	char line[4096];
	FILE *f = fopen("/proc/self/cgroup", "r");
	path[0] = 0;
	while (f && fgets(line, sizeof line, f)) {
		char *c = strchr(line, ':'), *p = c ? strchr(c + 1, ':') : NULL;
		if (!p)
			continue;
		*p = 0;
		for (char *t = strtok(c + 1, ","); t; t = strtok(NULL, ","))
			if (strcmp(t, ctrl) == 0) {
				snprintf(path, sizeof path, "%s", p + 1);
				path[strcspn(path, "\n")] = 0;
			}
	}
	if (f)
		fclose(f);
	return path;
}

// unmake removes the first n groups of dirs (after a failure).
static void unmake(char dirs[][4096], int n)
{
	while (n-- > 0)
		rmdir(dirs[n]);
}

// way: 0 the parent writes the child's pid to cgroup.procs, 1 the child
// writes 0 to cgroup.procs, 2 the child writes 0 to tasks.
static void measure(const char *label, char dirs[][4096], int n, int way)
{
	for (int r = 0; r < 6; r++) {
		int fds[4];
		for (int i = 0; i < n; i++) {
			char f[4200];
			if (mkdir(dirs[i], 0755) < 0) {
				perror(dirs[i]);
				unmake(dirs, i);
				exit(1);
			}
			snprintf(f, sizeof f, "%.4080s/%s", dirs[i], way == 2 ? "tasks" : "cgroup.procs");
			if ((fds[i] = open(f, O_WRONLY | O_CLOEXEC)) < 0) {
				perror(f);
				unmake(dirs, i + 1);
				exit(1);
			}
		}
		usleep(100000);
		int gate[2];
		if (pipe(gate) < 0) {
			perror("pipe");
			unmake(dirs, n);
			exit(1);
		}
		pid_t pid = fork();
		if (pid < 0) {
			perror("fork");
			unmake(dirs, n);
			exit(1);
		}
		if (pid == 0) {
			char c;
			if (read(gate[0], &c, 1) != 1)
				_exit(1);
			if (way > 0) {
				double t = now_ms();
				for (int i = 0; i < n; i++)
					if (write(fds[i], "0", 1) < 0)
						perror("write");
				fprintf(stderr, "%-62s %.3f ms\n", label, now_ms() - t);
			}
			_exit(0);
		}
		if (way == 0) {
			char b[32];
			int len = snprintf(b, sizeof b, "%d", pid);
			double t = now_ms();
			for (int i = 0; i < n; i++)
				if (write(fds[i], b, len) < 0)
					perror("write");
			fprintf(stderr, "%-62s %.3f ms\n", label, now_ms() - t);
		}
		if (write(gate[1], "x", 1) != 1)
			kill(pid, SIGKILL); // and on: waited for, its groups removed
		waitpid(pid, NULL, 0);
		close(gate[0]);
		close(gate[1]);
		for (int i = 0; i < n; i++) {
			close(fds[i]);
			rmdir(dirs[i]);
		}
	}
}

int main(int argc, char **argv)
{
	static char dirs[4][4096];
	if (argc > 1) { // a v2 directory of the caller's
		snprintf(dirs[0], sizeof dirs[0], "%s/cgmove-%d", argv[1], getpid());
		measure("v2: the parent writes the pid to cgroup.procs", dirs, 1, 0);
		return 0;
	}
	const char *ctrls[] = {"memory", "pids", "cpu", "cpuacct"};
	static char roots[4][4096];
	int n = 0;
	for (int i = 0; i < 4; i++) {
		const char *o = own(ctrls[i]);
		char mnt[64];
		snprintf(mnt, sizeof mnt, "/sys/fs/cgroup/%s", ctrls[i]);
		if (!*o || !realpath(mnt, roots[n]))
			continue;
		// Debian mounts cpu and cpuacct as one hierarchy ("cpu,cpuacct",
		// with symlinks for each name): make its group once.
		int seen = 0;
		for (int j = 0; j < n; j++)
			seen |= strcmp(roots[j], roots[n]) == 0;
		if (!seen) {
			snprintf(dirs[n], sizeof dirs[0], "%.3000s%s/cgmove-%d", roots[n], strcmp(o, "/") ? o : "", getpid());
			n++;
		}
	}
	if (n == 0) {
		fprintf(stderr, "cgmove: no v1 memory, pids, cpu or cpuacct hierarchy; give a v2 directory\n");
		return 2;
	}
	measure("v1: the parent writes the pid to cgroup.procs", dirs, n, 0);
	measure("v1: the child writes 0 to cgroup.procs", dirs, n, 1);
	measure("v1: the child writes 0 to tasks (agentjail's way)", dirs, n, 2);
	return 0;
}
