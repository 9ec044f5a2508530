/* SPDX-License-Identifier: LGPL-2.1-or-later OR BSD-2-Clause */
/* Prometheus text exposition of the daemon's statistics (no PIDs or paths: low cardinality). */
#ifndef DIRAHEAD_METRICS_H
#define DIRAHEAD_METRICS_H

struct daemon;

/* malloc'ed exposition text, or NULL when out of memory */
char *metrics_text(struct daemon *d);

#endif
