/* SPDX-License-Identifier: LGPL-2.1-or-later OR BSD-2-Clause */
/*
 * ctl_request (daemon/common/ctlproto.c), against a stand-in daemon on a socket of its own: the
 * request line arrives whole; "ok" gives 0 and the body, "error MSG" 1 and the message, anything
 * else -EPROTO; a close without a word is -EACCES (refused), no socket -ENOENT, a daemon that never
 * answers -ETIMEDOUT at the deadline, a reply over DD_CTL_MAX_REPLY -EMSGSIZE, a command or path
 * too long for the protocol -EINVAL and -ENAMETOOLONG.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "ctlproto.h"

static char path[108];

struct server {
	int fd;
	const char *reply; /* NULL: hold the connection until the client gives up */
	size_t big;        /* instead of reply: this many bytes after "ok\n" */
	char got[DD_CTL_MAX_REQUEST];
};

static void *serve(void *arg)
{
	struct server *s = arg;
	int c = accept(s->fd, NULL, NULL);
	size_t n = 0;
	if (c < 0)
		return NULL;
	while (n < sizeof(s->got) - 1 && !memchr(s->got, '\n', n)) {
		ssize_t r = read(c, s->got + n, sizeof(s->got) - 1 - n);
		if (r <= 0)
			break;
		n += (size_t)r;
	}
	s->got[n] = '\0';
	if (s->big) {
		char chunk[65536];
		memset(chunk, 'x', sizeof(chunk));
		if (send(c, "ok\n", 3, MSG_NOSIGNAL) == 3)
			for (size_t sent = 0; sent < s->big;) {
				ssize_t w = send(c, chunk, sizeof(chunk), MSG_NOSIGNAL);
				if (w <= 0)
					break;
				sent += (size_t)w;
			}
	} else if (s->reply) {
		if (send(c, s->reply, strlen(s->reply), MSG_NOSIGNAL) < 0)
			s->got[0] = '\0';
	} else {
		char b;
		while (read(c, &b, 1) > 0) /* until the client closes */
			;
	}
	close(c);
	return NULL;
}

/* Asks cmd of a stand-in that answers reply; the result, *body and what it read. */
static int ask_cmd(const char *cmd, const char *reply, size_t big, char **body, char *got, int timeout_ms)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct server s = { .reply = reply, .big = big };
	pthread_t t;
	strcpy(sa.sun_path, path);
	unlink(path);
	s.fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_true(s.fd >= 0);
	assert_int_equal(bind(s.fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(listen(s.fd, 1), 0);
	assert_int_equal(pthread_create(&t, NULL, serve, &s), 0);
	int r = ctl_request(path, cmd, body, timeout_ms);
	pthread_join(t, NULL);
	close(s.fd);
	unlink(path);
	if (got)
		strcpy(got, s.got);
	return r;
}

static int ask(const char *reply, size_t big, char **body, char *got, int timeout_ms)
{
	return ask_cmd("status", reply, big, body, got, timeout_ms);
}

static void test_ok(void **state)
{
	char *body, got[DD_CTL_MAX_REQUEST];
	(void)state;
	assert_int_equal(ask("ok\n{\"a\":1}\n", 0, &body, got, 5000), 0);
	assert_string_equal(got, "status\n");
	assert_string_equal(body, "{\"a\":1}\n");
	free(body);
	assert_int_equal(ask("ok\n", 0, &body, NULL, 5000), 0);
	assert_string_equal(body, "");
	free(body);
}

static void test_error(void **state)
{
	char *body;
	(void)state;
	assert_int_equal(ask("error unknown command\n", 0, &body, NULL, 5000), 1);
	assert_string_equal(body, "unknown command");
	free(body);
}

static void test_refused(void **state)
{
	char *body = (char *)"x";
	(void)state;
	assert_int_equal(ask("", 0, &body, NULL, 5000), -EACCES);
	assert_null(body);
	assert_int_equal(ask("hello\n", 0, &body, NULL, 5000), -EPROTO);
	assert_null(body);
	unlink(path);
	assert_int_equal(ctl_request(path, "status", &body, 5000), -ENOENT);
	assert_null(body);
}

static void test_limits(void **state)
{
	char *body, long_cmd[DD_CTL_MAX_REQUEST + 1];
	(void)state;
	/* the stand-in never answers: the client gives up at its deadline */
	assert_int_equal(ask(NULL, 0, &body, NULL, 200), -ETIMEDOUT);
	assert_null(body);
	assert_int_equal(ask(NULL, DD_CTL_MAX_REPLY + 65536, &body, NULL, 60000), -EMSGSIZE);
	assert_null(body);
	memset(long_cmd, 'a', sizeof(long_cmd) - 1);
	long_cmd[sizeof(long_cmd) - 1] = '\0';
	assert_int_equal(ask_cmd(long_cmd, "ok\n", 0, &body, NULL, 5000), -EINVAL);
	assert_null(body);
	char big_path[200];
	memset(big_path, 'p', sizeof(big_path) - 1);
	big_path[sizeof(big_path) - 1] = '\0';
	assert_int_equal(ctl_request(big_path, "status", &body, 5000), -ENAMETOOLONG);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ok),
		cmocka_unit_test(test_error),
		cmocka_unit_test(test_refused),
		cmocka_unit_test(test_limits),
	};
	snprintf(path, sizeof(path), "/tmp/dirahead-test-ctlproto-%d.sock", (int)getpid());
	int r = cmocka_run_group_tests(tests, NULL, NULL);
	unlink(path);
	return r;
}
