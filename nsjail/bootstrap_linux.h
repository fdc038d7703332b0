/*
 * The bootstrap's constants, shared by bootstrap_linux.c and its Go side
 * (bootstrap_linux.go, which checks them against protocol.go's).
 */
#ifndef AGENTJAIL_BOOTSTRAP_H
#define AGENTJAIL_BOOTSTRAP_H

#define AJ_INIT_ARG0 "agentjail-init" /* argv[0] of a jail's init stage */
#define AJ_SYNC_FD 4                  /* the socket to the parent */
#define AJ_JAIL_ID 1000               /* uid and gid of the jail's user, inside */

/* Records the bootstrap sends: struct aj_record, AJ_RECORD_SIZE bytes. */
#define AJ_RECORD_SIZE 64
#define AJ_REC_USERNS 'U' /* the user namespace exists: map it */
#define AJ_REC_PID 'P'    /* value: host pid of the jail's pid 1 */
#define AJ_REC_ERROR 'E'  /* value: errno; stage: the step that failed */

/* The one byte the parent sends once the maps are written. */
#define AJ_MAPPED 'M'

#endif
