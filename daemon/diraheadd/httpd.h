/* SPDX-License-Identifier: LGPL-2.1-or-later OR BSD-2-Clause */
/* The Prometheus endpoint: GET /metrics on [metrics] address (TCP, or unix:/PATH), served from
 * the event loop.  Requests under a foreign Host name are refused (hostcheck.h), and with
 * [metrics] access = control-group those of others than root and the [control] group;
 * connections are limited per user (peer.h: whatever address or socket it comes by) or remote
 * address, and in total with a reserve for root, and live 10 s at most; the rendered text is
 * reused for a second. */
#ifndef DIRAHEAD_HTTPD_H
#define DIRAHEAD_HTTPD_H

#include <stddef.h>

struct daemon;
struct httpd;

/* Listens on `address` (a valid [metrics] address).  Empty: NULL with err empty.  Failure: NULL
 * with err filled.  Several may exist at once (a reload starts the new one first). */
struct httpd *httpd_new(struct daemon *d, const char *address, char *err, size_t errlen);
const char *httpd_address(const struct httpd *h); /* "" for NULL */
void httpd_free(struct httpd *h);

#endif
