/* SPDX-License-Identifier: LGPL-2.1-or-later OR BSD-2-Clause */
/* The metrics endpoint's Host header check, against DNS rebinding: a web page whose name an
 * attacker makes resolve to 127.0.0.1 reaches the loopback listener from the victim's browser,
 * but its requests still carry the attacker's name in Host. */
#ifndef DIRAHEAD_HOSTCHECK_H
#define DIRAHEAD_HOSTCHECK_H

#include <stdbool.h>
#include <sys/socket.h>
#include "config.h"

/* A Host header value, uri-host [":" port] (RFC 9110 7.2), split up.  Names are limited to
 * letters, digits, '.', '-' and '_'; IPv6 literals are bracketed, without a zone. */
struct dd_host {
	char name[256];  /* as written, without the brackets of an IPv6 literal */
	unsigned port;   /* 0: none given (or an empty one) */
	bool ipv6;
};

/* 0, or -1 if `s` is no valid Host value. */
int dd_host_parse(const char *s, struct dd_host *h);

/*
 * Whether a request with Host `host` (NULL: the request had none, as HTTP/1.0 allows: refused
 * over TCP) that arrived on the socket whose local address is `local` may be answered: the
 * connection's own
 * address, localhost, 127.0.0.1 or [::1], or a name of `extra` ([metrics] allowed_hosts: NAME for
 * the listening port, NAME:PORT for exactly that), each with the port the request arrived on (80
 * when none is given).  Unix-socket connections are always answered: reaching them takes file
 * access, no browser can.
 */
bool dd_host_allowed(const char *host, const struct sockaddr *local, const struct dd_strlist *extra);

#endif
