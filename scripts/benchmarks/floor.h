// floor.h: the measuring helpers of nsfloor.c and cgfloor.c, which each
// build alone with one gcc command (gcc finds this file beside them).
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

// busy_us is the machine's busy CPU time so far, from /proc/stat, in
// microseconds (all CPUs, kernel threads included).
static long long busy_us(void)
{
	FILE *f = fopen("/proc/stat", "r");
	long long u, n, s, i, w, q, sq;
	if (!f || fscanf(f, "cpu %lld %lld %lld %lld %lld %lld %lld", &u, &n, &s, &i, &w, &q, &sq) != 7) {
		perror("/proc/stat");
		exit(1);
	}
	fclose(f);
	return (u + n + s + q + sq) * (1000000 / sysconf(_SC_CLK_TCK));
}

static double now_us(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

static double median(double *v, int n)
{
	qsort(v, n, sizeof *v, cmp);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}
