// What the init stage's files share (init_linux.c and the files it is
// split into, by stage); private to them. bootstrap_linux.h has what the
// bootstrap, the Go side and the tests share.
#ifndef AGENTJAIL_INIT_H
#define AGENTJAIL_INIT_H

#include <linux/filter.h>
#include <stdint.h>
#include <sys/types.h>

#include "bootstrap_linux.h"

// ---- messages (protocol.go; init_msg_linux.c) ----

struct aj_msg {
	char type;
	char *payload; // malloc'd, len bytes (and a NUL after them)
	uint32_t len;
	int fds[AJ_MAX_FDS];
	int nfds;
};

void aj_write_msg(char type, const void *payload, uint32_t len);
__attribute__((noreturn)) void aj_fail(const char *stage, int err, const char *msg);
int aj_recv(struct aj_msg *m, const char *stage);
int aj_send_fds(char type, const int *fds, int n);

// ---- plans (plan.go; init_plan_linux.c, init_fs_linux.c) ----

// A reader of a plan. A read past the end, or a string that is not one,
// sets bad and returns an empty value: the walk checks bad after each
// step's arguments, so that a malformed plan is refused before any of
// its steps runs (the dry pass) and never read past its end.
struct aj_reader {
	const unsigned char *p, *end;
	const char *bad; // why the plan is malformed; NULL while it is not
};

uint64_t aj_uint(struct aj_reader *r, int size);
const char *aj_bytes(struct aj_reader *r, uint32_t *len);
const char *aj_str(struct aj_reader *r, int nullable);

// What the plans leave for the end: the filter and the exec.
struct aj_state {
	const struct sock_filter *filter;
	unsigned short filter_len;
	int report, collect;
	char **argv, **envp;
	uint64_t keep_caps; // AJ_OP_KEEP_CAPS: a zygote's
	int adopt;          // AJ_OP_ADOPT: a warm run's; no argv
};

// AJ_ARGS_READ ends a step's reading of its arguments (in aj_step_*): the
// plan is malformed if they could not be read, and a skipped step ends
// there.
#define AJ_ARGS_READ()                 \
	do {                           \
		if (r->bad)            \
			return r->bad; \
		if (w->skip)           \
			return NULL;   \
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

const char *aj_step_ns(struct aj_walk *w, int op, const char *stage, int *ok);
const char *aj_step_mount(struct aj_walk *w, int op, const char *stage, int *ok);
const char *aj_step_files(struct aj_walk *w, int op, const char *stage, int *ok);
void aj_plan(struct aj_state *s, struct aj_msg *m);

// ---- the jail's init, once the program runs (init_run_linux.c) ----

extern volatile pid_t aj_program;
void aj_forward_signals(void);
__attribute__((noreturn)) void aj_start_program(struct aj_state *s, int *join, int njoin);
__attribute__((noreturn)) void aj_adopt(struct aj_state *s, int *join, int njoin);

#endif
