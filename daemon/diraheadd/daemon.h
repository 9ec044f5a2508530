/* SPDX-License-Identifier: LGPL-2.1-or-later OR BSD-2-Clause */
/* The daemon's state, shared by its modules; built and reloaded by daemon.c. */
#ifndef DIRAHEAD_DAEMON_H
#define DIRAHEAD_DAEMON_H

#include <stdbool.h>
#include <systemd/sd-event.h>
#include "config.h"
#include "stats.h"

struct detector;
struct scan_mgr;
struct control;
struct httpd;
struct arm;
struct hooks;
struct host;
struct walk_mgr;
struct events;
struct persist;

struct daemon {
	sd_event *loop;
	struct dd_config cfg;
	const char *config_path;
	struct detector *det;
	struct host *host;           /* the engine, openers, cost model and tick (host.h) */
	struct walk_mgr *walks;      /* tree-ahead (walk.h) */
	struct scan_mgr *mgr;        /* the scans (scan.h) */
	struct control *ctl;
	struct events *events;       /* the ring buffer's pump and the events' route (events.h) */
	struct hooks *hooks;         /* stat timing, while scans probe (hooks.h) */
	struct arm *arm;             /* arms the detector's syscall hooks on blocked calls (arm.h) */
	struct httpd *http;          /* the metrics endpoint; NULL when [metrics] address is empty */
	struct persist *persist;     /* memory across restarts (persist.h); NULL: none */
	sd_event_source *persist_src;/* its save, armed by activity, at most every PERSIST_INTERVAL_S */
	struct dd_stats stats;
	sd_event_source *summary_src;/* the periodic summary line, armed only while scans happen */
	struct dd_stats summary_prev;/* the counters at the last summary */
	uint64_t summary_since;      /* CLOCK_MONOTONIC usec: the start of the summary's period */
	unsigned last_active;        /* active scans at the last status line */
	uint64_t last_notify;        /* CLOCK_MONOTONIC µs of the last status line */
	uint64_t start_usec;         /* CLOCK_REALTIME µs at start */
	bool force_dry_run;          /* -n: survives reloads */
	bool force_debug;            /* -v: survives reloads */
	bool force_socket;           /* -s: the file's [control] socket does not count */
};

/* Re-reads the config file; on error keeps the old one.  Returns 0 or -1 with err filled. */
int daemon_reload(struct daemon *d, char *err, size_t errlen);
/* Builds the parts on d->cfg (loaded by main) and tells systemd it is ready: 0, or -1 with err
 * filled (what was built is freed by daemon_stop). */
int daemon_start(struct daemon *d, bool verbose, char *err, size_t errlen);
/* Frees every part, the loop and d->cfg. */
void daemon_stop(struct daemon *d);

#endif
