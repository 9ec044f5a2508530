/* SPDX-License-Identifier: LGPL-2.1-or-later OR BSD-2-Clause */
/* One moment of the statistics, read from the daemon's parts for control.c and metrics.c. */
#ifndef DIRAHEAD_STATSVIEW_H
#define DIRAHEAD_STATSVIEW_H

#include "stats.h"

struct daemon;

/* The daemon's counters, the detector's, the scan manager's gauges, and what derives from them. */
void statsview_read(struct daemon *d, struct dd_stats_view *v);

#endif
