/* SPDX-License-Identifier: LGPL-2.1-or-later OR BSD-2-Clause */
/* The Prometheus endpoint: GET /metrics on cfg.metrics_address, served from the event loop. */
#ifndef DIRAHEAD_HTTPD_H
#define DIRAHEAD_HTTPD_H

#include <stddef.h>

struct daemon;

/* Empty metrics_address: nothing is started, returns 0. */
int httpd_start(struct daemon *d, char *err, size_t errlen);
void httpd_stop(void);

#endif
