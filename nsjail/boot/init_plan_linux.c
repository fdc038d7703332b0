// The init stage's plans (plan.go): the reader of a plan, the walk through
// it (a dry pass first, then the steps carried out), and the steps that
// set up the program (its filter, stdio, rlimits, capabilities, argv).
// The namespaces' and file system's steps are in init_fs_linux.c.

#define _GNU_SOURCE
#include <errno.h>
#include <linux/capability.h>
#include <linux/filter.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "init_linux.h"

uint64_t aj_uint(struct aj_reader *r, int size)
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
const char *aj_bytes(struct aj_reader *r, uint32_t *len)
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
const char *aj_str(struct aj_reader *r, int nullable)
{
	uint32_t n;
	const char *s = aj_bytes(r, &n);
	if (!r->bad && memchr(s, 0, n) != NULL)
		r->bad = "a string holds a NUL byte";
	return (nullable && n == 0) ? NULL : s;
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
		struct sock_filter last;          // the program must end with a return
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
		// jail.launch), so a received fd is never one of them.
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
	case AJ_OP_SETATTR:
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
void aj_plan(struct aj_state *s, struct aj_msg *m)
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
