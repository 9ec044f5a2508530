/* SPDX-License-Identifier: LGPL-2.1-or-later OR BSD-2-Clause */
#include "hostcheck.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* ":PORT" (an empty one counts as none, as RFC 3986 says) */
static int parse_port(const char *s, unsigned *port)
{
	unsigned long v = 0;
	*port = 0;
	if (!*s)
		return 0;
	if (*s++ != ':')
		return -1;
	if (!*s)
		return 0;
	for (int n = 0; *s; s++, n++) {
		if (*s < '0' || *s > '9' || n == 5)
			return -1;
		v = v * 10 + (unsigned long)(*s - '0');
	}
	if (v == 0 || v > 65535)
		return -1;
	*port = (unsigned)v;
	return 0;
}

int dd_host_parse(const char *s, struct dd_host *h)
{
	memset(h, 0, sizeof(*h));
	if (s[0] == '[') {
		const char *end = strchr(s, ']');
		struct in6_addr a;
		size_t n = end ? (size_t)(end - s - 1) : 0;
		if (!end || n == 0 || n >= sizeof(h->name))
			return -1;
		memcpy(h->name, s + 1, n);
		if (inet_pton(AF_INET6, h->name, &a) != 1) /* also refuses a %zone */
			return -1;
		h->ipv6 = true;
		return parse_port(end + 1, &h->port);
	}
	size_t n = strcspn(s, ":");
	if (n == 0 || n >= sizeof(h->name))
		return -1;
	for (size_t i = 0; i < n; i++) {
		char c = s[i];
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      c == '.' || c == '-' || c == '_'))
			return -1;
	}
	memcpy(h->name, s, n);
	return parse_port(s + n, &h->port);
}

bool dd_host_allowed(const char *host, const struct sockaddr *local, const struct dd_strlist *extra)
{
	const struct sockaddr_in *l4 = (const struct sockaddr_in *)local;
	const struct sockaddr_in6 *l6 = (const struct sockaddr_in6 *)local;
	struct dd_host h, e;
	unsigned lport;

	if (local->sa_family == AF_UNIX)
		return true;
	/* HTTP/1.1 requires a Host; a request over TCP without one (HTTP/1.0, or one whose Host a
	 * parser read differently) could come from a rebound name: refused */
	if (!host)
		return false;
	if (local->sa_family == AF_INET)
		lport = ntohs(l4->sin_port);
	else if (local->sa_family == AF_INET6)
		lport = ntohs(l6->sin6_port);
	else
		return false;
	if (dd_host_parse(host, &h) < 0)
		return false;
	for (int i = 0; extra && i < extra->n; i++)
		if (dd_host_parse(extra->v[i], &e) == 0 && e.ipv6 == h.ipv6 &&
		    !strcasecmp(e.name, h.name) && (e.port ? e.port : lport) == (h.port ? h.port : 80))
			return true;
	if ((h.port ? h.port : 80) != lport)
		return false;
	if (h.ipv6) {
		struct in6_addr a;
		inet_pton(AF_INET6, h.name, &a);
		return IN6_IS_ADDR_LOOPBACK(&a) ||
		       (local->sa_family == AF_INET6 && !memcmp(&a, &l6->sin6_addr, sizeof(a)));
	}
	if (!strcasecmp(h.name, "localhost"))
		return true;
	struct in_addr a;
	if (inet_pton(AF_INET, h.name, &a) != 1)
		return false; /* a name: just what a rebinding attack sends */
	if (a.s_addr == htonl(INADDR_LOOPBACK))
		return true;
	if (local->sa_family == AF_INET)
		return a.s_addr == l4->sin_addr.s_addr;
	/* an IPv4 client of a dual-stack [::] listener: the local address is ::ffff:a.b.c.d */
	return IN6_IS_ADDR_V4MAPPED(&l6->sin6_addr) && !memcmp(&l6->sin6_addr.s6_addr[12], &a, 4);
}
