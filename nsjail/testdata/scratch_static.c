// A static program a jail's Python writes to /workspace and executes
// (scratch_exec_test.go): what it can do there is what its parent can,
// no more. It prints one "key value" line per probe.
#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

static const char *err(int r) { return r == 0 ? "OK" : strerrorname_np(errno); }

static void status(const char *key)
{
	char line[256];
	FILE *f = fopen("/proc/self/status", "r");
	if (!f)
		return;
	while (fgets(line, sizeof line, f))
		if (strncmp(line, key, strlen(key)) == 0 && line[strlen(key)] == ':')
			printf("%s %s", key, line + strlen(key) + 2);
	fclose(f);
}

int main(void)
{
	char ns[64];
	ssize_t n;
	uid_t r, e, s;
	getresuid(&r, &e, &s);
	printf("uids %d %d %d\n", r, e, s);
	status("CapEff");
	status("NoNewPrivs");
	status("Seccomp");
	n = readlink("/proc/self/ns/mnt", ns, sizeof ns - 1);
	ns[n < 0 ? 0 : n] = 0;
	printf("mntns %s\n", ns);
	n = readlink("/proc/self/ns/pid", ns, sizeof ns - 1);
	ns[n < 0 ? 0 : n] = 0;
	printf("pidns %s\n", ns);
	printf("unshare %s\n", err(unshare(CLONE_NEWUSER)));
	printf("mount %s\n", err(mount("none", "/tmp", "tmpfs", 0, NULL)));
	printf("mknod %s\n", err(mknod("/workspace/sda", S_IFBLK | 0600, makedev(8, 0))));
	printf("setuid %s\n", err(setuid(0)));
	return 0;
}
