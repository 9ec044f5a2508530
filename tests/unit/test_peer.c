/* SPDX-License-Identifier: LGPL-2.1-or-later OR BSD-2-Clause */
/*
 * Who is on the other end of a socket (daemon/diraheadd/peer.c): the group decision (root, the
 * primary gid or a supplementary group; no group: root only), the uid owning the client's end
 * of a loopback TCP connection (from any 127/8 address; found by sock_diag), a socketpair's
 * SO_PEERCRED, and a client the diagnostics do not find (remote, ENOENT).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "peer.h"

static void in_group(void **state)
{
	(void)state;
	gid_t g[] = { 10, 20, 30 };
	assert_true(dd_peer_in_group(0, 0, NULL, 0, (gid_t)-1));     /* root, no group */
	assert_true(dd_peer_in_group(0, 5, NULL, 0, 7));              /* root, not a member */
	assert_false(dd_peer_in_group(1000, 7, g, 3, (gid_t)-1));     /* no group: root only */
	assert_true(dd_peer_in_group(1000, 7, NULL, 0, 7));           /* primary */
	assert_true(dd_peer_in_group(1000, 7, g, 3, 30));             /* supplementary */
	assert_false(dd_peer_in_group(1000, 7, g, 3, 40));
	assert_false(dd_peer_in_group(1000, 7, g, 0, 10));            /* no list given */
}

static struct sockaddr_in v4(const char *ip, unsigned port)
{
	struct sockaddr_in s = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	assert_int_equal(inet_pton(AF_INET, ip, &s.sin_addr), 1);
	return s;
}

/* A connection to a listener on 127.0.0.1 from src; *cfd the client's end, returns the
 * server's. */
static int connect_from(const char *src, int *cfd)
{
	struct sockaddr_in l = v4("127.0.0.1", 0), c = v4(src, 0);
	socklen_t len = sizeof(l);
	int lfd = socket(AF_INET, SOCK_STREAM, 0);
	assert_int_equal(bind(lfd, (struct sockaddr *)&l, sizeof(l)), 0);
	assert_int_equal(listen(lfd, 1), 0);
	assert_int_equal(getsockname(lfd, (struct sockaddr *)&l, &len), 0);
	*cfd = socket(AF_INET, SOCK_STREAM, 0);
	assert_int_equal(bind(*cfd, (struct sockaddr *)&c, sizeof(c)), 0);
	assert_int_equal(connect(*cfd, (struct sockaddr *)&l, sizeof(l)), 0);
	int sfd = accept(lfd, NULL, NULL);
	assert_true(sfd >= 0);
	close(lfd);
	return sfd;
}

static void tcp_loopback(void **state)
{
	(void)state;
	const char *src[] = { "127.0.0.1", "127.0.0.2", "127.0.0.77" };
	for (size_t i = 0; i < sizeof(src) / sizeof(src[0]); i++) {
		int cfd, sfd = connect_from(src[i], &cfd);
		struct dd_peer p;
		assert_int_equal(dd_peer_identify(sfd, &p), 0);
		if (p.kind == DD_PEER_REMOTE && p.diag_errno != ENOENT)
			skip(); /* no sock_diag here (a sandbox without AF_NETLINK) */
		assert_int_equal(p.kind, DD_PEER_LOCAL);
		assert_int_equal(p.uid, geteuid());
		close(cfd);
		close(sfd);
	}
}

static void tcp_not_found(void **state)
{
	(void)state;
	/* a connection no socket here has: what a client on another machine looks like */
	struct sockaddr_in peer = v4("127.0.0.9", 1), local = v4("127.0.0.1", 1);
	uid_t uid;
	errno = 0;
	assert_int_equal(dd_peer_tcp_owner((struct sockaddr *)&peer, (struct sockaddr *)&local, &uid), -1);
	if (errno != ENOENT && errno != EAFNOSUPPORT && errno != EPERM)
		fail_msg("errno %d", errno);
}

static void unix_cred(void **state)
{
	(void)state;
	int sv[2];
	struct dd_peer p;
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	assert_int_equal(dd_peer_identify(sv[0], &p), 0);
	assert_int_equal(p.kind, DD_PEER_UNIX);
	assert_int_equal(p.uid, geteuid());
	assert_int_equal(p.gid, getegid());
	assert_true(dd_peer_member(&p, sv[0], getegid()) || geteuid() == 0);
	assert_true(dd_peer_member(&p, sv[0], (gid_t)-1) == (geteuid() == 0));
	close(sv[0]);
	close(sv[1]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(in_group),
		cmocka_unit_test(tcp_loopback),
		cmocka_unit_test(tcp_not_found),
		cmocka_unit_test(unix_cred),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
