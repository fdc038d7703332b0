// plan_fuzz: FuzzPlanDryPass's target, aj_plan_check (init_plan_linux.c's dry
// pass over a plan), built with -fsanitize=address,undefined by gcc, which
// has no libFuzzer. It replays every seed in DIR, then mutates them at
// random for SECONDS: any sanitizer report ends it (exit status not 0),
// and the input that caused it is left in DIR/crash-PID. scripts/ci/checks
// builds and runs it; TestPlanSeeds writes the seeds.
//   plan_fuzz DIR SECONDS [RANDOM-SEED]
// Each seed file is one byte, the message's fds, then the plan. Every
// input goes to aj_plan_check in a buffer of exactly its size, so that a
// read past the plan's end is a heap overflow that ASan reports.
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../bootstrap_linux.h"

#define MAXSEEDS 4096
#define MAXLEN (1 << 20)

struct input {
	unsigned char *b;
	size_t n;
};

static struct input seeds[MAXSEEDS];
static int nseeds;
static const char *dir;
static struct input current; // the input being checked, for the crash file

void __sanitizer_set_death_callback(void (*)(void));

static void save_crash(void)
{
	char path[4096];
	snprintf(path, sizeof path, "%s/crash-%d", dir, (int)getpid());
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0)
		return;
	if (write(fd, current.b, current.n) == (ssize_t)current.n)
		fprintf(stderr, "plan_fuzz: the input is in %s\n", path);
	close(fd);
}

static void on_alarm(int sig)
{
	(void)sig;
	save_crash();
	static const char msg[] = "plan_fuzz: an input took over 10 s (a hang)\n";
	if (write(2, msg, sizeof msg - 1) < 0)
		_exit(3);
	_exit(3);
}

// UBSan's reports end in abort() (UBSAN_OPTIONS=abort_on_error=1, as
// scripts/ci/checks sets it): the input is saved here, then the abort goes on.
static void on_abort(int sig)
{
	save_crash();
	signal(sig, SIG_DFL);
	raise(sig);
}

static uint64_t rng;

static uint64_t rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static size_t below(size_t n)
{
	return n ? (size_t)(rnd() % n) : 0;
}

// check runs the decoder over b (its first byte the fds), in an exact copy.
static void check(const unsigned char *b, size_t n)
{
	int nfds = n ? b[0] % (AJ_MAX_FDS + 1) : 0;
	size_t len = n ? n - 1 : 0;
	char *plan = malloc(len ? len : 1);
	if (plan == NULL)
		abort();
	memcpy(plan, b + (n ? 1 : 0), len);
	current.b = (unsigned char *)b;
	current.n = n;
	alarm(10);
	aj_plan_check(plan, (uint32_t)len, nfds);
	alarm(0);
	free(plan);
}

static void load(void)
{
	DIR *d = opendir(dir);
	if (d == NULL) {
		fprintf(stderr, "plan_fuzz: %s: %s\n", dir, strerror(errno));
		exit(2);
	}
	struct dirent *e;
	while ((e = readdir(d)) != NULL && nseeds < MAXSEEDS) {
		if (strncmp(e->d_name, "seed-", 5) != 0)
			continue;
		char path[4096];
		snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
		FILE *f = fopen(path, "rb");
		if (f == NULL)
			continue;
		unsigned char *b = malloc(MAXLEN);
		size_t n = b ? fread(b, 1, MAXLEN, f) : 0;
		fclose(f);
		if (b == NULL)
			abort();
		seeds[nseeds].b = b;
		seeds[nseeds].n = n;
		nseeds++;
	}
	closedir(d);
}

// Values that make a length or a count wrong in the ways that matter.
static const uint32_t interesting[] = {0, 1, 2, 0x7f, 0x80, 0xff, 0x100, 0xffff, 0x10000, 0x7fffffff, 0x80000000, 0xfffffffe, 0xffffffff};

// mutate changes buf (n bytes, room for MAXLEN) a few times; returns its new size.
static size_t mutate(unsigned char *buf, size_t n)
{
	int times = 1 + (int)below(8);
	for (int t = 0; t < times; t++) {
		size_t at = below(n), k;
		switch (below(8)) {
		case 0: // flip a bit
			if (n)
				buf[at] ^= (unsigned char)(1u << below(8));
			break;
		case 1: // a random byte
			if (n)
				buf[at] = (unsigned char)rnd();
			break;
		case 2: // an interesting 32-bit value, little-endian (the plan's)
			if (n >= 4) {
				uint32_t v = interesting[below(sizeof interesting / sizeof interesting[0])];
				at = below(n - 3);
				memcpy(buf + at, &v, 4);
			}
			break;
		case 3: // cut the end off
			n = below(n + 1);
			break;
		case 4: // delete a run
			k = below(n - at + 1);
			memmove(buf + at, buf + at + k, n - at - k);
			n -= k;
			break;
		case 5: // insert random bytes
			k = 1 + below(16);
			if (n + k <= MAXLEN) {
				memmove(buf + at + k, buf + at, n - at);
				for (size_t i = 0; i < k; i++)
					buf[at + i] = (unsigned char)rnd();
				n += k;
			}
			break;
		case 6: // repeat a run of this input
			k = below(n - at + 1);
			if (k && n + k <= MAXLEN) {
				static unsigned char run[MAXLEN];
				size_t to = below(n + 1);
				memcpy(run, buf + at, k);
				memmove(buf + to + k, buf + to, n - to);
				memcpy(buf + to, run, k);
				n += k;
			}
			break;
		case 7: { // splice in the tail of another seed
			const struct input *o = &seeds[below((size_t)nseeds)];
			size_t from = below(o->n + 1);
			k = o->n - from;
			if (at + k <= MAXLEN) {
				memcpy(buf + at, o->b + from, k);
				n = at + k;
			}
			break;
		}
		}
	}
	return n;
}

int main(int argc, char **argv)
{
	if (argc < 3 || atoi(argv[2]) < 0) {
		fprintf(stderr, "usage: plan_fuzz DIR SECONDS [RANDOM-SEED]\n");
		return 2;
	}
	dir = argv[1];
	int seconds = atoi(argv[2]);
	rng = argc > 3 ? strtoull(argv[3], NULL, 0) : (uint64_t)time(NULL);
	if (rng == 0)
		rng = 1;
	__sanitizer_set_death_callback(save_crash);
	signal(SIGALRM, on_alarm);
	signal(SIGABRT, on_abort);
	load();
	if (nseeds == 0) {
		fprintf(stderr, "plan_fuzz: no seed-* files in %s\n", dir);
		return 2;
	}
	for (int i = 0; i < nseeds; i++)
		check(seeds[i].b, seeds[i].n);
	printf("plan_fuzz: %d seeds replayed; mutating for %d s (random seed %llu)\n", nseeds, seconds,
	       (unsigned long long)rng);
	unsigned char *buf = malloc(MAXLEN);
	if (buf == NULL)
		abort();
	time_t end = time(NULL) + seconds;
	long runs = 0;
	while (time(NULL) < end) {
		for (int i = 0; i < 256; i++, runs++) {
			const struct input *s = &seeds[below((size_t)nseeds)];
			memcpy(buf, s->b, s->n);
			check(buf, mutate(buf, s->n));
		}
	}
	printf("plan_fuzz: %ld inputs, no sanitizer report\n", runs);
	return 0;
}
