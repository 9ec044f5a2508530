// SPDX-License-Identifier: LGPL-2.1-or-later OR BSD-2-Clause
/*
 * slowfsctl SOCKET COMMAND [ARG...]: send one command to a slowfs control socket and print the
 * answer without the final status line.  Exit 0 on "OK", 1 on "ERR" or a broken connection,
 * 2 on bad usage or when the socket cannot be reached.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	char *buf = NULL, *last, line[1024];
	size_t len = 0, cap = 0, pos = 0;
	int fd, i;

	if (argc < 3 || strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0) {
		fprintf(argc < 3 ? stderr : stdout,
			"Usage: slowfsctl SOCKET COMMAND [ARG...]\n"
			"Commands: stats | reset | stall | stall-pid TGID | release | fail-lookups ERRNO | ping | help\n");
		return argc < 3 ? 2 : 0;
	}
	if (strlen(argv[1]) >= sizeof(sa.sun_path)) {
		fprintf(stderr, "slowfsctl: socket path too long\n");
		return 2;
	}
	strcpy(sa.sun_path, argv[1]);
	for (i = 2; i < argc; i++) {
		int n = snprintf(line + pos, sizeof(line) - pos, "%s%s", i > 2 ? " " : "", argv[i]);

		if (n < 0 || (size_t)n >= sizeof(line) - pos - 1 || strchr(argv[i], '\n')) {
			fprintf(stderr, "slowfsctl: command too long or contains a newline\n");
			return 2;
		}
		pos += (size_t)n;
	}
	line[pos++] = '\n';

	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		fprintf(stderr, "slowfsctl: %s: %s\n", argv[1], strerror(errno));
		return 2;
	}
	if (write(fd, line, pos) != (ssize_t)pos) {
		fprintf(stderr, "slowfsctl: write: %s\n", strerror(errno));
		return 1;
	}
	shutdown(fd, SHUT_WR);	/* one command per connection: the server answers, then sees EOF */
	for (;;) {
		ssize_t n;

		if (cap - len < 4096) {
			char *nb = realloc(buf, cap + 65536);

			if (!nb) {
				fprintf(stderr, "slowfsctl: out of memory\n");
				return 1;
			}
			buf = nb;
			cap += 65536;
		}
		n = read(fd, buf + len, cap - len - 1);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			fprintf(stderr, "slowfsctl: read: %s\n", strerror(errno));
			return 1;
		}
		if (n == 0)
			break;
		len += (size_t)n;
	}
	close(fd);
	if (!buf || len == 0 || buf[len - 1] != '\n') {
		fprintf(stderr, "slowfsctl: connection closed without a status line\n");
		return 1;
	}
	buf[len - 1] = '\0';
	last = strrchr(buf, '\n');
	last = last ? last + 1 : buf;
	fwrite(buf, 1, (size_t)(last - buf), stdout);
	if (strcmp(last, "OK") == 0) {
		free(buf);
		return 0;
	}
	fprintf(stderr, "slowfsctl: %s\n", strncmp(last, "ERR ", 4) == 0 ? last + 4 : last);
	free(buf);
	return 1;
}
