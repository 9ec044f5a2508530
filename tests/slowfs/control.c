// SPDX-License-Identifier: LGPL-2.1-or-later OR BSD-2-Clause
/*
 * Control socket: a unix stream socket with a line protocol (see README.md).  Each request line
 * is answered by zero or more output lines and then "OK" or "ERR <message>".  One thread serves
 * clients one after another; every command is quick, and a receive timeout keeps a silent client
 * from blocking the others.
 */
#include "slowfs.h"

#include <fcntl.h>
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

volatile int sf_fail_lookups;

static int listen_fd = -1;
static int stop_pipe[2] = { -1, -1 };
static pthread_t thread;
static char *sock_path;

static const struct {
	const char *name;
	int value;
} errnames[] = {
	{ "EPERM", EPERM }, { "ENOENT", ENOENT }, { "EIO", EIO }, { "ENXIO", ENXIO },
	{ "ENOMEM", ENOMEM }, { "EACCES", EACCES }, { "EBUSY", EBUSY }, { "ENOTDIR", ENOTDIR },
	{ "EINVAL", EINVAL }, { "ENAMETOOLONG", ENAMETOOLONG }, { "ELOOP", ELOOP },
	{ "ESTALE", ESTALE }, { "ETIMEDOUT", ETIMEDOUT }, { "ENOTCONN", ENOTCONN },
	{ "EAGAIN", EAGAIN }, { "EINTR", EINTR }, { "EROFS", EROFS }, { "ENOSYS", ENOSYS },
};

/* "0", "2", "ENOENT" -> errno value; -1 if not understood. */
static int parse_errno(const char *s)
{
	size_t i;
	char *end;
	long v;

	for (i = 0; i < sizeof(errnames) / sizeof(errnames[0]); i++)
		if (strcasecmp(s, errnames[i].name) == 0)
			return errnames[i].value;
	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < 0 || v > 4095)
		return -1;
	return (int)v;
}

static void command(char *line, FILE *out)
{
	char *argv[4] = { 0 }, *save = NULL, *tok;
	int argc = 0;

	for (tok = strtok_r(line, " \t\r", &save); tok && argc < 4;
	     tok = strtok_r(NULL, " \t\r", &save))
		argv[argc++] = tok;
	if (argc == 0) {
		fputs("ERR empty command\n", out);
		return;
	}
	if (strcmp(argv[0], "stats") == 0 && argc == 1) {
		sf_stats_print(out);
	} else if (strcmp(argv[0], "reset") == 0 && argc == 1) {
		sf_stats_reset();
	} else if (strcmp(argv[0], "stall") == 0 && argc == 1) {
		sf_sched_stall(true);
		sf_debug("control: stalled");
	} else if (strcmp(argv[0], "stall-pid") == 0 && argc == 2) {
		char *end;
		long t;

		errno = 0;
		t = strtol(argv[1], &end, 10);
		if (errno || end == argv[1] || *end || t < 0 || t > 0x7fffffff) {
			fprintf(out, "ERR bad process id '%s'\n", argv[1]);
			return;
		}
		sf_sched_stall_pid((pid_t)t);
		sf_debug("control: stalled pid %ld", t);
	} else if (strcmp(argv[0], "release") == 0 && argc == 1) {
		sf_sched_stall(false);
		sf_debug("control: released");
	} else if (strcmp(argv[0], "fail-lookups") == 0 && argc == 2) {
		int e = parse_errno(argv[1]);

		if (e < 0) {
			fprintf(out, "ERR bad errno '%s' (a number or a name like ENOENT)\n", argv[1]);
			return;
		}
		sf_fail_lookups = e;
		sf_debug("control: fail-lookups %d", e);
	} else if (strcmp(argv[0], "watch") == 0 && argc == 2) {
		sf_stats_watch_set(argv[1]);
		sf_debug("control: watch %s", argv[1]);
	} else if (strcmp(argv[0], "unwatch") == 0 && argc == 1) {
		sf_stats_watch_set(NULL);
		sf_debug("control: unwatch");
	} else if (strcmp(argv[0], "ping") == 0 && argc == 1) {
		fputs("pong\n", out);
	} else if (strcmp(argv[0], "help") == 0 && argc == 1) {
		fputs("stats\nreset\nstall\nstall-pid TGID\nrelease\nfail-lookups ERRNO\nwatch PREFIX\n"
		      "unwatch\nping\nhelp\n", out);
	} else {
		fprintf(out, "ERR unknown command or wrong arguments: %s (try help)\n", argv[0]);
		return;
	}
	fputs("OK\n", out);
}

static void serve(int fd)
{
	char line[1024];
	size_t len = 0;

	for (;;) {
		ssize_t n = read(fd, line + len, sizeof(line) - 1 - len);
		char *nl;

		if (n <= 0)
			return;		/* EOF, error or timeout */
		len += (size_t)n;
		line[len] = '\0';
		while ((nl = memchr(line, '\n', len)) != NULL) {
			char *text = NULL;
			size_t tlen = 0, off = 0;
			FILE *out;

			*nl = '\0';
			out = open_memstream(&text, &tlen);
			if (!out)
				return;
			command(line, out);
			fclose(out);
			while (off < tlen) {
				ssize_t w = write(fd, text + off, tlen - off);

				if (w <= 0)
					break;
				off += (size_t)w;
			}
			free(text);
			len -= (size_t)(nl + 1 - line);
			memmove(line, nl + 1, len);
			line[len] = '\0';
		}
		if (len == sizeof(line) - 1) {
			static const char msg[] = "ERR line too long\n";

			(void)!write(fd, msg, sizeof(msg) - 1);
			return;
		}
	}
}

static void *control_main(void *arg)
{
	struct pollfd p[2] = {
		{ .fd = listen_fd, .events = POLLIN },
		{ .fd = stop_pipe[0], .events = POLLIN },
	};

	(void)arg;
	for (;;) {
		if (poll(p, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		if (p[1].revents)
			break;
		if (p[0].revents & POLLIN) {
			struct timeval tv = { .tv_sec = 5 };
			int fd = accept4(listen_fd, NULL, NULL, SOCK_CLOEXEC);

			if (fd < 0)
				continue;
			setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
			setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
			serve(fd);
			close(fd);
		}
	}
	return NULL;
}

int sf_control_start(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	sigset_t all, old;
	struct stat st;
	mode_t um;
	int err;

	if (strlen(path) >= sizeof(sa.sun_path)) {
		sf_log("control socket path too long: %s", path);
		return -ENAMETOOLONG;
	}
	strcpy(sa.sun_path, path);
	/* Replace a stale socket from an earlier run, but never any other kind of file. */
	if (lstat(path, &st) == 0) {
		if (!S_ISSOCK(st.st_mode)) {
			sf_log("control socket path exists and is not a socket: %s", path);
			return -EEXIST;
		}
		unlink(path);
	}
	listen_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (listen_fd < 0)
		return -errno;
	um = umask(077);	/* owner only: the socket can stall the filesystem */
	err = bind(listen_fd, (struct sockaddr *)&sa, sizeof(sa));
	umask(um);
	if (err < 0 || listen(listen_fd, 16) < 0 || pipe2(stop_pipe, O_CLOEXEC) < 0) {
		err = -errno;
		sf_log("control socket %s: %s", path, strerror(errno));
		close(listen_fd);
		listen_fd = -1;
		return err;
	}
	sock_path = strdup(path);
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	err = pthread_create(&thread, NULL, control_main, NULL);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (err) {
		sf_log("control thread: %s", strerror(err));
		return -err;
	}
	return 0;
}

void sf_control_stop(void)
{
	if (listen_fd < 0)
		return;
	(void)!write(stop_pipe[1], "x", 1);
	pthread_join(thread, NULL);
	close(listen_fd);
	close(stop_pipe[0]);
	close(stop_pipe[1]);
	listen_fd = -1;
	if (sock_path) {
		unlink(sock_path);
		free(sock_path);
		sock_path = NULL;
	}
}
