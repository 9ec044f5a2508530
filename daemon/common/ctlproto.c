/* SPDX-License-Identifier: LGPL-2.1-or-later OR BSD-2-Clause */
#include "ctlproto.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

static long long ms_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int wait_fd(int fd, short ev, long long deadline)
{
	long long left = deadline - ms_now();
	if (left <= 0)
		return -ETIMEDOUT;
	struct pollfd p = { .fd = fd, .events = ev };
	int r = poll(&p, 1, (int)left);
	return r < 0 ? -errno : r == 0 ? -ETIMEDOUT : 0;
}

int ctl_request(const char *socket_path, const char *cmd, char **reply, int timeout_ms)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	long long deadline = ms_now() + timeout_ms;
	size_t len = 0, cap = 4096;
	char *buf = NULL;
	int fd, r;

	*reply = NULL;
	if (strlen(socket_path) >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	strcpy(sa.sun_path, socket_path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -errno;
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 && errno != EINPROGRESS) {
		r = -errno;
		goto out;
	}
	char line[DA_CTL_MAX_REQUEST];
	int n = snprintf(line, sizeof(line), "%s\n", cmd);
	if (n < 0 || (size_t)n >= sizeof(line)) {
		r = -EINVAL;
		goto out;
	}
	for (int off = 0; off < n;) {
		if ((r = wait_fd(fd, POLLOUT, deadline)) < 0)
			goto out;
		ssize_t w = send(fd, line + off, (size_t)(n - off), MSG_NOSIGNAL);
		if (w < 0 && errno != EAGAIN) {
			/* the daemon closes at once on clients it does not accept, maybe before this */
			r = errno == EPIPE || errno == ECONNRESET ? -EACCES : -errno;
			goto out;
		}
		off += w > 0 ? (int)w : 0;
	}
	buf = malloc(cap);
	if (!buf) {
		r = -ENOMEM;
		goto out;
	}
	for (;;) {
		if ((r = wait_fd(fd, POLLIN, deadline)) < 0)
			goto out;
		if (len + 1 >= cap) {
			if (cap >= DA_CTL_MAX_REPLY) {
				r = -EMSGSIZE;
				goto out;
			}
			char *nb = realloc(buf, cap * 2);
			if (!nb) {
				r = -ENOMEM;
				goto out;
			}
			buf = nb;
			cap *= 2;
		}
		ssize_t got = recv(fd, buf + len, cap - len - 1, 0);
		if (got < 0 && errno == EAGAIN)
			continue;
		if (got < 0) {
			/* the daemon closes at once on clients it does not accept */
			r = errno == ECONNRESET ? -EACCES : -errno;
			goto out;
		}
		if (got == 0)
			break;
		len += (size_t)got;
	}
	buf[len] = '\0';
	if (len == 0) {
		r = -EACCES; /* closed without a word: refused */
		goto out;
	}
	char *nl = strchr(buf, '\n');
	char *body = nl ? nl + 1 : buf + len;
	if (!strncmp(buf, "ok", 2)) {
		r = 0;
	} else if (!strncmp(buf, "error ", 6)) {
		r = 1;
		if (nl)
			*nl = '\0';
		body = buf + 6;
	} else {
		r = -EPROTO;
		goto out;
	}
	memmove(buf, body, strlen(body) + 1);
	*reply = buf;
	buf = NULL;
out:
	free(buf);
	close(fd);
	return r;
}
