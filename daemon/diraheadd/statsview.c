/* SPDX-License-Identifier: LGPL-2.1-or-later OR BSD-2-Clause */
/* One moment of the statistics (statsview.h). */
#include "statsview.h"

#include <string.h>

#include "daemon.h"
#include "detector.h"
#include "policy.h"
#include "scan.h"

void statsview_read(struct daemon *d, struct dd_stats_view *v)
{
	struct detector_counters dc = { 0 };
	memset(v, 0, sizeof(*v));
	v->s = d->stats;
	v->s.cpu_s = dd_process_cpu_s();
	detector_counters(d->det, &dc);
	_Static_assert(sizeof(v->det) == sizeof(dc.v), "one counter each");
	memcpy(v->det, dc.v, sizeof(v->det));
	v->active_scans = scan_mgr_active(d->mgr);
	v->requests_in_flight = scan_mgr_inflight(d->mgr);
	v->active_walks = scan_mgr_walks(d->mgr);
	v->openers_stuck = scan_mgr_openers_stuck(d->mgr);
	v->entry_cost_ns = policy_entry_cost_ns(scan_mgr_policy(d->mgr));
	dd_stats_view_derive(v);
}
