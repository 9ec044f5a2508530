/* SPDX-License-Identifier: LGPL-2.1-or-later OR BSD-2-Clause */
/* The client's half of the control protocol (ctlproto.h): one request, one whole reply. */
#include "ctlproto.h"

#include <assert.h>
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "monoclock.h"

static int wait_fd(int fd, short ev, uint64_t deadline)
{
	uint64_t now = mono_ms();
	if (now >= deadline)
		return -ETIMEDOUT;
	struct pollfd p = { .fd = fd, .events = ev };
	int r = poll(&p, 1, (int)(deadline - now));
	return r < 0 ? -errno : r == 0 ? -ETIMEDOUT : 0;
}

/* Connects fd to the daemon's socket and sends the line "cmd\n": 0 or -errno. */
static int send_request(int fd, const struct sockaddr_un *sa, const char *cmd, uint64_t deadline)
{
	char line[DD_CTL_MAX_REQUEST];
	int r, n;
	if (connect(fd, (const struct sockaddr *)sa, sizeof(*sa)) < 0 && errno != EINPROGRESS)
		return -errno;
	n = snprintf(line, sizeof(line), "%s\n", cmd);
	if (n < 0 || (size_t)n >= sizeof(line))
		return -EINVAL;
	for (int off = 0; off < n;) {
		if ((r = wait_fd(fd, POLLOUT, deadline)) < 0)
			return r;
		ssize_t w = send(fd, line + off, (size_t)(n - off), MSG_NOSIGNAL);
		if (w < 0 && errno != EAGAIN)
			/* the daemon closes at once on clients it does not accept, maybe before this */
			return errno == EPIPE || errno == ECONNRESET ? -EACCES : -errno;
		off += w > 0 ? (int)w : 0;
	}
	return 0;
}

/* Reads what the daemon sends until it closes: into *out (malloc'ed, NUL-terminated, also on
 * error), its length in *len.  0 or -errno. */
static int read_reply(int fd, uint64_t deadline, char **out, size_t *len)
{
	size_t cap = 4096;
	char *buf = malloc(cap);
	int r;
	*out = buf;
	*len = 0;
	if (!buf)
		return -ENOMEM;
	for (;;) {
		if ((r = wait_fd(fd, POLLIN, deadline)) < 0)
			return r;
		if (*len + 1 >= cap) {
			if (cap >= DD_CTL_MAX_REPLY)
				return -EMSGSIZE;
			char *nb = realloc(buf, cap * 2);
			if (!nb)
				return -ENOMEM;
			*out = buf = nb;
			cap *= 2;
		}
		ssize_t got = recv(fd, buf + *len, cap - *len - 1, 0);
		if (got < 0 && errno == EAGAIN)
			continue;
		if (got < 0) /* the daemon closes at once on clients it does not accept */
			return errno == ECONNRESET ? -EACCES : -errno;
		if (got == 0)
			break;
		*len += (size_t)got;
	}
	assert(*len < cap);
	buf[*len] = '\0';
	return 0;
}

/* "ok\n<body>" or "error <message>\n": the body (or message) moved to the front of buf, and 0 or
 * 1; -EPROTO for anything else. */
static int split_reply(char *buf, size_t len)
{
	char *nl = strchr(buf, '\n');
	char *body = nl ? nl + 1 : buf + len;
	int r;
	if (!strncmp(buf, "ok", 2)) {
		r = 0;
	} else if (!strncmp(buf, "error ", 6)) {
		r = 1;
		if (nl)
			*nl = '\0';
		body = buf + 6;
	} else {
		return -EPROTO;
	}
	memmove(buf, body, strlen(body) + 1);
	return r;
}

int ctl_request(const char *socket_path, const char *cmd, char **reply, int timeout_ms)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	uint64_t deadline = mono_ms() + (uint64_t)(timeout_ms > 0 ? timeout_ms : 0);
	size_t len = 0;
	char *buf = NULL;
	int fd, r;

	*reply = NULL;
	if (strlen(socket_path) >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	strcpy(sa.sun_path, socket_path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -errno;
	r = send_request(fd, &sa, cmd, deadline);
	if (r == 0)
		r = read_reply(fd, deadline, &buf, &len);
	if (r == 0 && len == 0)
		r = -EACCES; /* closed without a word: refused */
	if (r == 0)
		r = split_reply(buf, len);
	if (r >= 0) {
		*reply = buf;
		buf = NULL;
	}
	free(buf);
	close(fd);
	return r;
}
