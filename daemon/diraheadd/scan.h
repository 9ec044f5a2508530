/* SPDX-License-Identifier: LGPL-2.1-or-later OR BSD-2-Clause */
/*
 * The scans: one state machine per confirmed scan (enum scan_life in scan.c: probing, opening,
 * prefetching, following, and its terminal ended states).  It acts on the decisions of others,
 * each in one place: the gate's (gate.h: skipped, and then muted, forgotten or watched for a
 * walk), the judge's (judge.h: probe, start, no gain), the opener's (start.h); and it keeps the
 * window: prefetches a window ahead of the application, grows it while prefetched entries are
 * used, and ends scans by Lustre's rules (done, exited, idle, hit ratio too low, too many
 * consecutive misses).  Its directories go to the engine through the host (host.h).
 */
#ifndef DIRAHEAD_SCAN_H
#define DIRAHEAD_SCAN_H

#include <stdbool.h>
#include <stdint.h>
#include <systemd/sd-event.h>
#include "config.h"
#include "dirahead_event.h"
#include "stats.h"

struct detector;
struct scan_mgr;

/* A read-only view of one active scan, for `diraheadctl scans`. */
struct scan_info {
	uint32_t pid;
	const char *comm;
	const char *path;     /* the process's name for the directory */
	uint64_t entries;     /* entries prefetched so far */
	uint64_t app_pos;     /* how far the application got (entries) */
	uint64_t window;
	uint64_t hits, misses;
	const char *state;    /* probing, opening, prefetching, following */
	double age_s;
};

struct host;
struct walk_mgr;
/* Scans on host's engine, starting walks (walks: the peers they share the limits with).  NULL:
 * out of memory. */
struct scan_mgr *scan_mgr_new(const struct dd_config *cfg, struct detector *det,
			      struct dd_stats *st, struct host *host, struct walk_mgr *walks);
/* The detector's events of scans (events.h routes them): SCAN, PROGRESS, END (scan_id != 0). */
void scan_mgr_on_scan(struct scan_mgr *m, const struct dirahead_event *ev);
void scan_mgr_on_progress(struct scan_mgr *m, const struct dirahead_event *ev);
void scan_mgr_on_end(struct scan_mgr *m, const struct dirahead_event *ev);
/* ev's thread listed another directory (a SCAN, or a walker's LISTING). */
void scan_mgr_mark_interleaved(struct scan_mgr *m, const struct dirahead_event *ev);
/* The config changed (reload): limits and rules apply to new and running scans (the cost
 * model's: host_reconfigure). */
void scan_mgr_reconfigure(struct scan_mgr *m, const struct dd_config *cfg);
unsigned scan_mgr_active(const struct scan_mgr *m);
unsigned scan_mgr_walks(const struct scan_mgr *m);  /* walks running (walk.h) */
/* Scans known in any state (probing, opening, prefetching) and runs of stats still being
 * resolved: what the daemon is still deciding about. */
unsigned scan_mgr_tracked(const struct scan_mgr *m);
unsigned scan_mgr_openers_stuck(const struct scan_mgr *m);
uint64_t scan_mgr_inflight(const struct scan_mgr *m);
const char *scan_mgr_backend(const struct scan_mgr *m);
/* fn(ctx) is called when a probe needs the programs' stats timed (detector_stat_timing). */
void scan_mgr_set_timing_hook(struct scan_mgr *m, void (*fn)(void *), void *ctx);
/* Scans probing now (their stats may need timing: hooks.h). */
unsigned scan_mgr_probing(const struct scan_mgr *m);
/* The cost model's per-filesystem memory (policy.h), for stats and metrics. */
struct policy *scan_mgr_policy(struct scan_mgr *m);
void scan_mgr_foreach(struct scan_mgr *m, void (*fn)(const struct scan_info *, void *), void *ctx);
/* Ends every scan (reason SHUTDOWN); never waits for a hung filesystem. */
void scan_mgr_stop(struct scan_mgr *m);
/* Frees what is left, after the engine was stopped (host_stop_engine). */
void scan_mgr_free(struct scan_mgr *m);

#endif
