/* SPDX-License-Identifier: LGPL-2.1-or-later OR BSD-2-Clause */
/* Stat timing: attached while scans probe, detached when none has for a while (hooks.h). */
#include "hooks.h"

#include <assert.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "detector.h"
#include "log.h"
#include "scan.h"

/*
 * Stat timing (the cost model's probes, and the application stat latency histogram) needs the
 * detector's sys_enter program, which once attached costs every syscall on the machine (about
 * 20 ns here, ~10% of a warm `ls -l`): it is attached when a probe cannot decide by the
 * progress rate alone (the program takes long between stats: slow stats, or work of its own),
 * and detached when no scan has been probing for this long, or when disabled.  The pay-off rule
 * needs no timing (it judges the progress rate).
 */
#define STAT_TIMING_IDLE_USEC (2ull * 1000000ull)

struct hooks {
	sd_event *loop;
	struct detector *det;
	struct scan_mgr *mgr;
	sd_event_source *idle_src; /* detaches the stat timing program once scans stop probing */
	bool enabled;              /* [daemon] enabled */
};

static int on_timing_idle(sd_event_source *s, uint64_t usec, void *userdata)
{
	struct hooks *h = userdata;
	if (h->mgr && scan_mgr_probing(h->mgr) && h->enabled) {
		sd_event_source_set_time(s, usec + STAT_TIMING_IDLE_USEC);
		sd_event_source_set_enabled(s, SD_EVENT_ONESHOT);
		return 0;
	}
	detector_stat_timing(h->det, false);
	log_debug("stat latency timing detached: no scans");
	return 0;
}

void hooks_want_timing(void *ctx)
{
	struct hooks *h = ctx;
	uint64_t now;
	if (!h->enabled) /* a SCAN queued before a reload that disabled */
		return;
	if (!detector_stat_timing_on(h->det)) {
		int r = detector_stat_timing(h->det, true);
		if (r < 0) {
			log_warn("cannot attach the stat timing program: %s", strerror(-r));
			return;
		}
		log_debug("stat latency timing attached");
	}
	sd_event_now(h->loop, CLOCK_MONOTONIC, &now);
	sd_event_source_set_time(h->idle_src, now + STAT_TIMING_IDLE_USEC);
	sd_event_source_set_enabled(h->idle_src, SD_EVENT_ONESHOT);
}

struct hooks *hooks_new(sd_event *loop, struct detector *det, char *err, size_t errlen)
{
	struct hooks *h = calloc(1, sizeof(*h));
	if (!h) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	*h = (struct hooks){ .loop = loop, .det = det, .enabled = true };
	/* Until a probe needs it, stats are not timed (see STAT_TIMING_IDLE_USEC). */
	detector_stat_timing(det, false);
	int r = sd_event_add_time(loop, &h->idle_src, CLOCK_MONOTONIC, UINT64_MAX, 1000000,
				  on_timing_idle, h);
	if (r < 0) {
		snprintf(err, errlen, "event loop: %s", strerror(-r));
		free(h);
		return NULL;
	}
	sd_event_source_set_enabled(h->idle_src, SD_EVENT_OFF);
	return h;
}

void hooks_set_scans(struct hooks *h, struct scan_mgr *mgr)
{
	assert(h && mgr);
	h->mgr = mgr;
}

void hooks_reconfigure(struct hooks *h, bool enabled)
{
	h->enabled = enabled;
	if (!enabled)
		detector_stat_timing(h->det, false); /* the programs return at once now */
}

void hooks_free(struct hooks *h)
{
	if (!h)
		return;
	sd_event_source_disable_unref(h->idle_src);
	free(h);
}
