/* SPDX-License-Identifier: LGPL-2.1-or-later OR BSD-2-Clause */
/*
 * Events: the only pump of the detector's ring buffer.  Each event goes straight to whom it is
 * for: SCAN, PROGRESS and END of a scan to the scans (scan.h), a walker's LISTING and its END
 * (scan_id 0) to the walks (walk.h).  The ring is read when BPF wakes the daemon (io source),
 * and whenever something else woke it (events_pump: the engine, the scans' poll and tick), as
 * END and walker events are queued without a wakeup (DIRAHEAD_CFG_LAZY_WAKEUP).
 */
#ifndef DIRAHEAD_EVENTS_H
#define DIRAHEAD_EVENTS_H

#include <systemd/sd-event.h>
#include "dirahead_event.h"

struct detector;
struct scan_mgr;
struct walk_mgr;
struct events;

/* on_batch(ctx): after each wakeup by BPF (the daemon's summary and status). */
struct events *events_new(sd_event *loop, void (*on_batch)(void *ctx), void *ctx);
/* The detector's callback (detector_event_fn, ctx: the events); events before events_start are
 * dropped (the daemon is not running yet). */
int events_on_event(const struct dirahead_event *ev, void *events);
/* Routes to mgr and walks from now, and reads det's ring when BPF wakes the daemon.  0 or
 * -errno. */
int events_start(struct events *e, struct detector *det, struct scan_mgr *mgr,
		 struct walk_mgr *walks);
/* Drains what BPF queued (ctx: the events). */
void events_pump(void *events);
void events_free(struct events *e);

#endif
