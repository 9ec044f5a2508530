/* SPDX-License-Identifier: LGPL-2.1-or-later OR BSD-2-Clause */
/* The ring buffer's pump, and the route of each event to the scans or the walks (events.h). */
#include "events.h"

#include <assert.h>
#include <stdlib.h>

#include "detector.h"
#include "scan.h"
#include "walk.h"

struct events {
	sd_event *loop;
	struct detector *det;
	struct scan_mgr *mgr;
	struct walk_mgr *walks;
	sd_event_source *ring_src;
	void (*on_batch)(void *ctx);
	void *ctx;
};

int events_on_event(const struct dirahead_event *ev, void *events)
{
	struct events *e = events;
	if (!e->mgr)
		return 0;
	switch (ev->type) {
	case DIRAHEAD_EV_SCAN:
		scan_mgr_on_scan(e->mgr, ev);
		break;
	case DIRAHEAD_EV_PROGRESS:
		scan_mgr_on_progress(e->mgr, ev);
		break;
	case DIRAHEAD_EV_END:
		if (ev->scan_id == 0)
			walk_mgr_on_exit(e->walks, ev); /* the walker is gone */
		else
			scan_mgr_on_end(e->mgr, ev);
		break;
	case DIRAHEAD_EV_LISTING:
		/* a walker's listing, as a SCAN event of it would be */
		scan_mgr_mark_interleaved(e->mgr, ev);
		walk_mgr_on_listing(e->walks, ev);
		break;
	}
	return 0;
}

void events_pump(void *events)
{
	struct events *e = events;
	detector_consume(e->det);
}

static int on_ringbuf(sd_event_source *s, int fd, uint32_t revents, void *userdata)
{
	struct events *e = userdata;
	(void)s;
	(void)fd;
	(void)revents;
	detector_consume(e->det);
	if (e->on_batch)
		e->on_batch(e->ctx);
	return 0;
}

struct events *events_new(sd_event *loop, void (*on_batch)(void *ctx), void *ctx)
{
	struct events *e = calloc(1, sizeof(*e));
	if (!e)
		return NULL;
	*e = (struct events){ .loop = loop, .on_batch = on_batch, .ctx = ctx };
	return e;
}

int events_start(struct events *e, struct detector *det, struct scan_mgr *mgr,
		 struct walk_mgr *walks)
{
	assert(det && mgr && walks && !e->ring_src);
	e->det = det;
	e->mgr = mgr;
	e->walks = walks;
	return sd_event_add_io(e->loop, &e->ring_src, detector_fd(det), EPOLLIN, on_ringbuf, e);
}

void events_free(struct events *e)
{
	if (!e)
		return;
	sd_event_source_disable_unref(e->ring_src);
	free(e);
}
