/*
 * The C side's constants, shared by bootstrap_linux.c and init_*_linux.c
 * and checked against their Go twins at compile time (boot_linux.go:
 * nsjail/internal/wire's fds, message types and op codes).
 */
#ifndef AGENTJAIL_BOOTSTRAP_H
#define AGENTJAIL_BOOTSTRAP_H

#include <stdint.h>

#define AJ_INIT_ARG0 "agentjail-init" /* argv[0] of a jail's init stage */
#define AJ_SYNC_FD 4                  /* the socket to the parent */
#define AJ_JAIL_ID 1000               /* uid and gid of the jail's user, inside */

/* The one record both C stages send: the bootstrap bare, on its own
   short exchange; the init stage as the payload of AJ_MSG_ERROR.
   Strings are NUL-terminated (cut to fit). */
#define AJ_RECORD_SIZE 256
struct aj_record {
	char kind;     /* one of AJ_REC_* */
	char pad[3];   /* zero */
	int32_t value; /* AJ_REC_PID: a pid; AJ_REC_ERROR: errno, or 0 */
	char stage[120];
	char msg[128];
};
_Static_assert(sizeof(struct aj_record) == AJ_RECORD_SIZE, "record size");
#define AJ_REC_USERNS 'U' /* the user namespace exists: map it (AJ_ZYGOTE_ENV) */
#define AJ_REC_PID 'P'    /* value: host pid of the jail's pid 1; 0 from a nested jail's
                             pid 1 itself, whose credentials (SO_PASSCRED) give its pid */
#define AJ_REC_ERROR 'E'  /* value: errno; stage: the step that failed */

/* The environment variable that gives the bootstrap the jail's host uid
   (and gid). */
#define AJ_UID_ENV "AGENTJAIL_JAIL_UID"
/* Set to 1: a zygote's bootstrap. The parent writes the maps (of many
   ids), on AJ_REC_USERNS, and answers AJ_MAPPED; CAP_SETUID and
   CAP_SETGID of the namespace are kept too (its forks become their runs'
   uids with them). */
#define AJ_ZYGOTE_ENV "AGENTJAIL_ZYGOTE"
#define AJ_MAPPED 'M'
/* A warm run's jail: its user and pid namespaces are made inside its
   zygote's, so that the zygote can fork the program into them. The value
   is the jail's uid as the zygote's user namespace maps it (its host uid
   stays in AJ_UID_ENV); fd AJ_NEST_FD is a pidfd of a process in the
   zygote's user and pid namespaces (its jail's pid 1). The jail's pid 1
   sends its own AJ_REC_PID, and its build's msgReady carries its pid,
   user, network, IPC and UTS namespaces after its mount namespace. */
#define AJ_NEST_ENV "AGENTJAIL_NEST_UID"
#define AJ_NEST_FD 6

/* The per-user rlimits that the kernel also counts up the chain of user
   namespaces (queued signals, processes, POSIX message queue bytes,
   locked memory), each bounded at every level by what its creator's
   rlimit was when the namespace was made. A jail's namespace is made
   with these (and its processes keep them); a zygote's with none, so that
   the bound its runs share is none and each run's own namespace, made
   with these by the zygote's fork, holds the run's (ids.go's userRlimits
   must be the same). Where the daemon may not raise its own (no
   CAP_SYS_RESOURCE, finite hard limits), a zygote's namespace keeps the
   daemon's, which its runs then share: these are small enough that many
   runs fit in Linux's defaults (queued signals 96364 here, message queue
   bytes 819200). */
#define AJ_RLIMIT_SIGPENDING 1024
#define AJ_RLIMIT_NPROC 4096
#define AJ_RLIMIT_MSGQUEUE 102400
#define AJ_RLIMIT_MEMLOCK (8u << 20)

/* The timer slack of the Go runtime's sysmon thread (slack_linux.c). */
#define AJ_SYSMON_SLACK_NS 2000000UL
long aj_slack_of_a_thread_made_by(unsigned long creator_slack, long *main_slack); /* for the tests */

/* The init stage (init_linux.c): protocol.go's fd, message types and
   limits. */
#define AJ_MAX_MSG (256u << 20) /* maxMsg */
#define AJ_MAX_FDS 8            /* maxMsgFds (init_linux.c's error names it) */
#define AJ_REPORT_FD 3
#define AJ_MSG_BUILD 1
#define AJ_MSG_READY 2
#define AJ_MSG_REQUEST 3
#define AJ_MSG_GO 4
#define AJ_MSG_SECCOMP 5
#define AJ_MSG_EXEC 6
#define AJ_MSG_EXIT 7
#define AJ_MSG_ERROR 8
#define AJ_MSG_ADOPT 9 /* a nested jail's program is forked (it is pid 2): watch it (fd: its pidfd) */

/* The steps of a plan (init_plan_linux.c carries them out); wire's Op
   constants must be the same (boot_linux.go checks them). */
enum {
	AJ_OP_UNSHARE = 1, // flags u32
	AJ_OP_MOUNT,       // source, target, fstype, flags u64, data
	AJ_OP_BIND_RO,     // source, target, extra flags u64, cleared flags u64
	AJ_OP_MKDIR,       // path, mode u32, parents u32 (mkdir -p: existing ones are fine)
	AJ_OP_SYMLINK,     // target, path
	AJ_OP_WRITE,       // directory, path below it, mode u32, content
	AJ_OP_CHMOD,       // path, mode u32
	AJ_OP_IF_EXISTS,   // path: the next step only if it exists (lstat)
	AJ_OP_UMOUNT,      // path, flags u32
	AJ_OP_RMDIR,       // path
	AJ_OP_PIVOT_ROOT,  // new root
	AJ_OP_HOSTNAME,    // name
	AJ_OP_DOMAINNAME,  // name
	AJ_OP_LOOPBACK_UP, // (no arguments)
	AJ_OP_CHDIR,       // path
	AJ_OP_SECCOMP,     // the filter: struct sock_filter[], as seccomp.Program.MarshalBinary
	AJ_OP_STDIO,       // count u32: the message's fds become fds 0 to count-1
	AJ_OP_RLIMIT,      // resource u32, soft u64, hard u64
	AJ_OP_EXEC,        // report u32, collect u32, argc u32, argv..., envc u32, env...
	AJ_OP_KEEP_CAPS,   // mask u64: capabilities the program keeps (a zygote's), 0 by default
	AJ_OP_ADOPT,       // (no arguments) instead of AJ_OP_EXEC: the program is forked into
			   // the jail by its zygote, and this init only watches it (warm runs)
	AJ_OP_ATTACH,      // path: attach the mount the message brought (a detached tree, the
			   // message's only fd) there
	AJ_OP_SETATTR,     // path, attributes u64 (MOUNT_ATTR_RDONLY, _NOSUID, _NODEV, _NOEXEC: set, never
			   // cleared), recursive u32: mount_setattr, the mount at path (and with
			   // recursive, every mount below it)
	AJ_OP_LAST
};

#include <stddef.h>
/* Fills r as a failure record of stage (errno err, or 0, and msg). */
void aj_error_record(struct aj_record *r, const char *stage, int err, const char *msg);
/* Sends all of buf to the parent (AJ_SYNC_FD), or exits: nobody is left
   to tell. */
void aj_send_all(const void *buf, size_t len);
/* The jail's pid 1 after the bootstrap: never returns. nested: the jail's
   user and pid namespaces are in its zygote's (AJ_NEST_ENV). */
void aj_init(int nested) __attribute__((noreturn));
/* The bootstrap's entry in the standalone init (standalone/main.c, built
   with AJ_STANDALONE): it returns only when argv[0] is not the init
   stage's. In this package's cgo build it is a constructor instead. */
void aj_bootstrap_main(int argc, char **argv, char **envp);
/* Writes one file below the directory fd dir (and for a test, writeBeneath). */
int aj_write_beneath(int dir, const char *rel, const char *content, size_t len, unsigned mode);
/* Reads a plan through without carrying it out (the dry pass every plan
   gets before its first step runs), for the fuzz test: 0 when the init
   stage would carry it out, -1 when it would refuse it as malformed. It
   makes no system call and never exits. */
int aj_plan_check(const char *plan, uint32_t len, int nfds);

#endif
