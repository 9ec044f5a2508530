/* SPDX-License-Identifier: LGPL-2.1-or-later OR BSD-2-Clause */
/*
 * libFuzzer target: one client's bytes to the metrics endpoint (daemon/diraheadd/httpd.c and
 * its Host check, hostcheck.c), served as the daemon serves them: two endpoints made by
 * httpd_new() run by libmicrohttpd in this process's sd-event loop, one on a unix socket and one
 * on 127.0.0.1 (where the Host check applies), answering from a status snapshot (snapshot.h).
 *
 * Input: one selector byte, then what the client sends (it then reads the answer).  Bit 0 of the selector picks the endpoint (1: TCP); the rest picks the local
 * address for a direct dd_host_allowed() check of the request's Host header.  Checked besides
 * the sanitizers' reports: an answer is HTTP; the metrics page goes out over TCP only to a request
 * whose Host is allowed (or that has none); a Host that is allowed names the local address,
 * localhost or an allowed_hosts entry.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "daemon.h"
#include "hostcheck.h"
#include "httpd.h"
#include "snapshot.h"

#define CHECK(cond)                                                                            \
	do {                                                                                   \
		if (!(cond)) {                                                                 \
			fprintf(stderr, "fuzz_http: %s:%d: broken: %s\n", __FILE__, __LINE__, #cond); \
			abort();                                                               \
		}                                                                              \
	} while (0)

#define HOST_MAX 8

static struct daemon d;
static struct httpd *ep[2];             /* unix, TCP */
static struct sockaddr_un ep_unix;
static struct sockaddr_in ep_tcp;
static char dir[256];

static void teardown(void)
{
	httpd_free(ep[0]);
	httpd_free(ep[1]);
	sd_event_unref(d.loop);
	snapshot_daemon_fini(&d);
	rmdir(dir);
}

static unsigned free_port(void)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(sa);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	CHECK(fd >= 0);
	CHECK(bind(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0);
	CHECK(getsockname(fd, (struct sockaddr *)&sa, &len) == 0);
	close(fd);
	return ntohs(sa.sin_port);
}

static void setup(void)
{
	char addr[512], err[512];
	snapshot_daemon_init(&d);
	CHECK(sd_event_new(&d.loop) >= 0);
	d.cfg.metrics_hosts.v[d.cfg.metrics_hosts.n++] = strdup("metrics.example");
	d.cfg.metrics_hosts.v[d.cfg.metrics_hosts.n++] = strdup("scrape.example:9567");
	const char *tmp = getenv("TMPDIR");
	snprintf(dir, sizeof(dir), "%s/dirahead-fuzz-http.XXXXXX", tmp && tmp[0] ? tmp : "/tmp");
	CHECK(mkdtemp(dir));
	ep_unix.sun_family = AF_UNIX;
	CHECK(strlen(dir) + sizeof("/metrics.sock") <= sizeof(ep_unix.sun_path));
	snprintf(ep_unix.sun_path, sizeof(ep_unix.sun_path), "%s/metrics.sock", dir);
	snprintf(addr, sizeof(addr), "unix:%s", ep_unix.sun_path);
	ep[0] = httpd_new(&d, addr, err, sizeof(err));
	if (!ep[0])
		fprintf(stderr, "fuzz_http: %s: %s\n", addr, err);
	CHECK(ep[0]);
	/* a free port, which another process might take before us: try a few */
	for (int i = 0; i < 20 && !ep[1]; i++) {
		unsigned port = free_port();
		snprintf(addr, sizeof(addr), "127.0.0.1:%u", port);
		ep[1] = httpd_new(&d, addr, err, sizeof(err));
		ep_tcp = (struct sockaddr_in){ .sin_family = AF_INET, .sin_port = htons((uint16_t)port),
					       .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	}
	if (!ep[1])
		fprintf(stderr, "fuzz_http: 127.0.0.1: %s\n", err);
	CHECK(ep[1]);
	atexit(teardown);
}

/* Every "Host:" header line's value of the first request (as a server trims it), up to
 * HOST_MAX; lenient on purpose: what libmicrohttpd takes as the Host is among them.  (A request
 * without one, as HTTP/1.0 allows, is answered: no browser sends one so.) */
static int host_values(const uint8_t *data, size_t size, char hosts[HOST_MAX][512])
{
	int n = 0;
	const uint8_t *nul = memchr(data, '\0', size);
	if (nul)
		size = (size_t)(nul - data); /* libmicrohttpd reads no header past a NUL byte */
	for (size_t i = 0; i < size && n < HOST_MAX;) {
		const uint8_t *eol = memchr(data + i, '\n', size - i);
		size_t len = eol ? (size_t)(eol - (data + i)) : size - i;
		const char *line = (const char *)data + i;
		if (i > 0 && (len == 0 || (len == 1 && line[0] == '\r')))
			break; /* the end of the first request's headers */
		if (len >= 5 && !strncasecmp(line, "host:", 5)) {
			size_t a = 5, b = len;
			while (a < b && (line[a] == ' ' || line[a] == '\t'))
				a++;
			while (b > a && (line[b - 1] == ' ' || line[b - 1] == '\t' || line[b - 1] == '\r'))
				b--;
			if (b - a < 512) {
				memcpy(hosts[n], line + a, b - a);
				hosts[n++][b - a] = '\0';
			}
		}
		i += len + 1;
	}
	return n;
}

/* The local addresses of the direct check: what a listener may be bound to. */
static socklen_t local_address(unsigned sel, struct sockaddr_storage *ss)
{
	struct sockaddr_in *s4 = (struct sockaddr_in *)ss;
	struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)ss;
	static const char *const v4[] = { "127.0.0.1", "10.1.2.3" };
	static const char *const v6[] = { "::1", "::ffff:10.1.2.3", "2001:db8::1", "::" };
	memset(ss, 0, sizeof(*ss));
	sel %= 7;
	if (sel == 0) {
		ss->ss_family = AF_UNIX;
		return sizeof(struct sockaddr_un);
	}
	if (sel <= 2) {
		s4->sin_family = AF_INET;
		s4->sin_port = htons(sel == 1 ? 9567 : 80);
		inet_pton(AF_INET, v4[sel - 1], &s4->sin_addr);
		return sizeof(*s4);
	}
	s6->sin6_family = AF_INET6;
	s6->sin6_port = htons(sel & 1 ? 9567 : 80);
	inet_pton(AF_INET6, v6[sel - 3], &s6->sin6_addr);
	return sizeof(*s6);
}

/* An allowed Host names the local address, loopback, localhost or one of allowed_hosts. */
static void check_host(const char *host, const struct sockaddr *local)
{
	struct dd_host h;
	bool ok = dd_host_allowed(host, local, &d.cfg.metrics_hosts);
	if (!ok || !host || local->sa_family == AF_UNIX)
		return;
	CHECK(dd_host_parse(host, &h) == 0);
	struct in_addr a4;
	struct in6_addr a6;
	if (h.ipv6)
		CHECK(inet_pton(AF_INET6, h.name, &a6) == 1);
	else if (inet_pton(AF_INET, h.name, &a4) != 1)
		CHECK(!strcasecmp(h.name, "localhost") || !strcasecmp(h.name, "metrics.example") ||
		      !strcasecmp(h.name, "scrape.example"));
}

/* Sends the request, reads the answer (its first bytes into head).  On the unix socket the
 * sending side is then shut down, so the server sees the end; over TCP never: a FIN of ours would
 * leave each run's port in TIME_WAIT (thousands a second); the close is an RST instead. */
static size_t exchange(bool tcp, const uint8_t *data, size_t size, char *head, size_t headlen)
{
	const struct sockaddr *sa = tcp ? (const struct sockaddr *)&ep_tcp : (const struct sockaddr *)&ep_unix;
	socklen_t salen = tcp ? sizeof(ep_tcp) : sizeof(ep_unix);
	int fd = socket(sa->sa_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	size_t sent = 0, got = 0;
	bool connected = false, all_sent = false, eof = false;
	CHECK(fd >= 0);
	/* Until the server closes, or has nothing more to do with what it got (it keeps an incomplete
	 * request for its timeout): one thread and loopback sockets, so an idle loop is a server
	 * waiting for the client.  Bounded in any case. */
	for (int round = 0, idle = 0; round < 400 && !eof && idle < 2; round++) {
		size_t got_before = got;
		if (!connected) {
			int r = connect(fd, sa, salen);
			if (r == 0 || errno == EISCONN)
				connected = true;
			else
				CHECK(errno == EINPROGRESS || errno == EALREADY || errno == EAGAIN);
		}
		if (connected && sent < size) {
			ssize_t w = send(fd, data + sent, size - sent, MSG_NOSIGNAL);
			if (w > 0)
				sent += (size_t)w;
			else if (errno != EAGAIN)
				sent = size; /* the server closed (refused or answered early) */
		}
		if (connected && sent == size && !all_sent) {
			if (!tcp)
				shutdown(fd, SHUT_WR);
			all_sent = true;
		}
		while (connected) {
			char buf[4096];
			ssize_t n = recv(fd, buf, sizeof(buf), 0);
			if (n < 0 && errno == EAGAIN)
				break;
			if (n <= 0) {
				eof = true;
				break;
			}
			if (got < headlen) {
				size_t k = headlen - got < (size_t)n ? headlen - got : (size_t)n;
				memcpy(head + got, buf, k);
			}
			got += (size_t)n;
		}
		if (eof)
			break;
		int r = sd_event_run(d.loop, 1000);
		CHECK(r >= 0);
		idle = all_sent && r == 0 && got == got_before ? idle + 1 : 0;
	}
	/* an abortive close: no TIME_WAIT left behind by thousands of runs */
	struct linger lg = { .l_onoff = 1, .l_linger = 0 };
	setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
	close(fd);
	for (int i = 0; i < 4; i++) /* the server notices and frees the connection */
		CHECK(sd_event_run(d.loop, 0) >= 0);
	return got < headlen ? got : headlen;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char hosts[HOST_MAX][512], head[4096];
	struct sockaddr_storage local;

	if (!d.loop)
		setup();
	if (size < 1)
		return 0;
	unsigned sel = data[0];
	data++;
	size--;

	int nh = host_values(data, size, hosts);
	local_address(sel >> 1, &local);
	check_host(nh ? hosts[0] : NULL, (struct sockaddr *)&local);

	bool tcp = sel & 1;
	size_t n = exchange(tcp, data, size, head, sizeof(head) - 1);
	head[n] = '\0';
	if (!n)
		return 0; /* closed without an answer: an incomplete or refused request */
	CHECK(!strncmp(head, "HTTP/1.", 7));
	const char *body = strstr(head, "\r\n\r\n");
	if (tcp && !strncmp(head + 8, " 200", 4) && body && !strncmp(body + 4, "# HELP", 6)) {
		bool allowed = nh == 0;
		for (int i = 0; i < nh && !allowed; i++)
			allowed = dd_host_allowed(hosts[i], (struct sockaddr *)&ep_tcp, &d.cfg.metrics_hosts);
		CHECK(allowed);
	}
	return 0;
}
