// The init stage's messages (protocol.go): init_linux.c's conversation
// with the parent over AJ_SYNC_FD, and the failure record every failed
// step sends.

#define _GNU_SOURCE
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "init_linux.h"

void aj_write_msg(char type, const void *payload, uint32_t len)
{
	unsigned char hdr[5] = {(unsigned char)type, len & 0xff, (len >> 8) & 0xff, (len >> 16) & 0xff, len >> 24};
	aj_send_all(hdr, sizeof hdr);
	if (len > 0)
		aj_send_all(payload, len);
}

void aj_error_record(struct aj_record *r, const char *stage, int err, const char *msg)
{
	memset(r, 0, sizeof *r);
	r->kind = AJ_REC_ERROR;
	r->value = err;
	strncpy(r->stage, stage ? stage : "init", sizeof r->stage - 1);
	if (msg)
		strncpy(r->msg, msg, sizeof r->msg - 1);
}

// aj_fail reports the failed step (its stage, errno when err is not 0,
// and msg) and exits.
__attribute__((noreturn)) void aj_fail(const char *stage, int err, const char *msg)
{
	struct aj_record r;
	aj_error_record(&r, stage, err, msg);
	aj_write_msg(AJ_MSG_ERROR, &r, sizeof r);
	_exit(1);
}

static void aj_read_all(char *p, size_t len)
{
	while (len > 0) {
		ssize_t n = read(AJ_SYNC_FD, p, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			_exit(1);
		p += n;
		len -= (size_t)n;
	}
}

// aj_recv reads one message with the fds it carries. It returns 0 at the
// end of the socket before a header, 1 with a message; a message with more
// fds than AJ_MAX_FDS is refused whole (the kernel closed the rest).
int aj_recv(struct aj_msg *m, const char *stage)
{
	unsigned char hdr[5];
	union {
		char buf[CMSG_SPACE(AJ_MAX_FDS * sizeof(int))];
		struct cmsghdr align;
	} cm;
	struct iovec iov = {.iov_base = hdr, .iov_len = sizeof hdr};
	struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = cm.buf, .msg_controllen = sizeof cm.buf};
	ssize_t n;
	do
		n = recvmsg(AJ_SYNC_FD, &mh, MSG_CMSG_CLOEXEC);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		aj_fail(stage, errno, "recvmsg");
	memset(m, 0, sizeof *m);
	for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c)) {
		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
			continue;
		int k = (int)((c->cmsg_len - CMSG_LEN(0)) / sizeof(int));
		for (int i = 0; i < k; i++) {
			int fd;
			memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof fd);
			if (m->nfds < AJ_MAX_FDS)
				m->fds[m->nfds++] = fd;
			else
				close(fd);
		}
	}
	if (mh.msg_flags & MSG_CTRUNC) {
		for (int i = 0; i < m->nfds; i++)
			close(m->fds[i]);
		aj_fail(stage, 0, "a message carried more than 8 fds");
	}
	if (n == 0)
		return 0;
	if ((size_t)n < sizeof hdr)
		aj_read_all((char *)hdr + n, sizeof hdr - (size_t)n);
	m->type = (char)hdr[0];
	m->len = (uint32_t)hdr[1] | (uint32_t)hdr[2] << 8 | (uint32_t)hdr[3] << 16 | (uint32_t)hdr[4] << 24;
	if (m->len > AJ_MAX_MSG)
		aj_fail(stage, 0, "message too large");
	m->payload = malloc((size_t)m->len + 1);
	if (m->payload == NULL)
		aj_fail(stage, ENOMEM, "");
	aj_read_all(m->payload, m->len);
	m->payload[m->len] = 0;
	return 1;
}

// aj_send_fds sends a message of type with no payload and n fds
// (SCM_RIGHTS). Returns 0, or -1 with errno set.
int aj_send_fds(char type, const int *fds, int n)
{
	unsigned char msg[5] = {(unsigned char)type, 0, 0, 0, 0};
	union {
		char buf[CMSG_SPACE(AJ_MAX_FDS * sizeof(int))];
		struct cmsghdr align;
	} cm;
	if (n < 1 || n > AJ_MAX_FDS) {
		errno = EINVAL;
		return -1;
	}
	memset(&cm, 0, sizeof cm);
	struct iovec iov = {.iov_base = msg, .iov_len = sizeof msg};
	// clang-format would join these lines:
	// clang-format off
	struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = cm.buf,
			    .msg_controllen = CMSG_SPACE((size_t)n * sizeof(int))};
	// clang-format on
	struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN((size_t)n * sizeof(int));
	memcpy(CMSG_DATA(c), fds, (size_t)n * sizeof(int));
	ssize_t sent;
	do
		sent = sendmsg(AJ_SYNC_FD, &mh, MSG_NOSIGNAL);
	while (sent < 0 && errno == EINTR);
	if (sent < 0)
		return -1;
	if (sent != (ssize_t)sizeof msg) {
		errno = EIO;
		return -1;
	}
	return 0;
}
