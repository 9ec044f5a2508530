/* SPDX-License-Identifier: LGPL-2.1-or-later OR BSD-2-Clause */
/*
 * Tree-ahead: a process that descends from a scanned directory into one of its subdirectories
 * is a walker.  Its walk lists the tree from that parent down, pre-order, in the order the
 * program visits subdirectories (readdir or name, learnt from its listings), a budget ahead of
 * the program (directories open, directories and entries ahead), and prefetches the entries'
 * attributes.  The detector then reports the walker's listings (DIRAHEAD_EV_LISTING) instead of
 * tracking them as scans: each one moves the walk's cursor, hands the directory over (already
 * fetched: nothing to confirm, open or ramp) and drops subtrees the program passed over.
 * Symlinks, mount and automount points are never entered.
 *
 * A program that lists nothing but stats the files of a tree by name from a list (a version
 * control index, a build tool, an rsync receiver) is followed the same way by its runs of stats
 * (DIRAHEAD_EVF_UNLISTED) in a second directory of one parent: the detector keeps reporting
 * each of its runs as a scan, and each one moves the walk's cursor (walk_mgr_on_run) instead of
 * a listing.  Those reports are all it has of where the program is: it is not a walker to BPF.
 *
 * Where the program's stats need no prefetch (they are fast, or fetching them did not pay) but
 * its listings wait on the filesystem (sshfs, NFS or FUSE readdirplus: the listing brings the
 * attributes), a walk lists only: it reads the directories ahead and fetches no entry but the
 * subdirectories it needs to go on.  Whether that pays is the cost model's (policy.h): the
 * program's listings, timed by BPF, must get faster where the walk was ahead.
 */
#ifndef DIRAHEAD_WALK_H
#define DIRAHEAD_WALK_H

#include <stdbool.h>
#include <stdint.h>
#include <systemd/sd-event.h>
#include "config.h"
#include "dirahead.h"
#include "dirahead_event.h"
#include "stats.h"

struct detector;
struct host;
struct walk_mgr;

struct walk_info {
	uint32_t pid;
	const char *comm;
	const char *path;      /* the program's name for the top of the walk */
	uint64_t entries;      /* entries prefetched */
	uint64_t dirs_visited; /* directories the program listed */
	uint64_t dirs_ahead;   /* directories listed ahead of it now */
	double age_s;
};

/* Walks on host's engine (they join its tick and breaker).  NULL: out of memory. */
struct walk_mgr *walk_mgr_new(const struct dd_config *cfg, struct detector *det,
			      struct dd_stats *st, struct host *host);
/* room(ctx, uid, cgroup): whether that user and that cgroup may have one more scan or walk
 * (the scans' limits per user and cgroup; walks count as scans). */
void walk_mgr_set_room(struct walk_mgr *w, bool (*room)(void *ctx, uint32_t uid, uint64_t cgroup),
		       void *ctx);
/* Adds the walks of uid to *user and those of cgroup to *cgroup. */
void walk_mgr_count_of(const struct walk_mgr *w, uint32_t uid, uint64_t cgroup, unsigned *user,
		       unsigned *cgroup_n);
/* Ends every walk on that filesystem (the breaker). */
void walk_mgr_end_on(struct walk_mgr *w, uint32_t dev_major, uint32_t dev_minor,
		     enum dd_end_reason why);
void walk_mgr_reconfigure(struct walk_mgr *w, const struct dd_config *cfg);
/* The process of `ev` (a scan, or a listing) went below or beside a directory it scanned: start
 * a walk from the parent of ev's directory (top_path: the program's name for it; top_ev, if not
 * NULL: a scan of that parent or of a child of it, tried when ev's directory can no longer be
 * opened).  list_only: list ahead, fetch only what may be a subdirectory.  true if one started. */
bool walk_mgr_start(struct walk_mgr *w, const struct dirahead_event *ev,
		    const struct dirahead_event *top_ev, const char *top_path, bool list_only);
/* The scan `ev` was skipped: the program's stats are fast, or fetching them does not pay on
 * that filesystem.  Watch its next listings: one below or beside that directory starts a walk
 * that lists only (where the cost model lets listings ahead run). */
void walk_mgr_candidate(struct walk_mgr *w, const struct dirahead_event *ev);
/* The process has a walk (on any filesystem when dev_major and dev_minor are UINT32_MAX). */
bool walk_mgr_walking(const struct walk_mgr *w, uint32_t tgid, uint32_t dev_major,
		      uint32_t dev_minor);
void walk_mgr_on_listing(struct walk_mgr *w, const struct dirahead_event *ev);
/* A run of stats without a listing (a SCAN event with DIRAHEAD_EVF_UNLISTED, its directory and
 * parent known) skipped as walked: where it is the walk of a program's runs, it moves there. */
void walk_mgr_on_run(struct walk_mgr *w, const struct dirahead_event *ev);
/* A run of stats by path (its SCAN event, not resolved): where its process's walk of runs knows
 * the directory by the names below its top, the walk moves there and true is returned (the
 * run needs no resolving: its directory is the walk's, fetched or being fetched). */
bool walk_mgr_run_at(struct walk_mgr *w, const struct dirahead_event *ev);
/* A stat of process tgid blocked on that filesystem, in directory ino (0: not known; the
 * sentinel's signal): where its walk lists only because the stats at its top were fast, the
 * depth of that directory is judged to pay, and the walk fetches the entries of the
 * directories there from now on, those it listed only already included (policy.h,
 * struct pol_depths).  true if that changed the walk. */
bool walk_mgr_blocked(struct walk_mgr *w, uint32_t tgid, uint32_t dev_major, uint32_t dev_minor,
		      uint64_t ino);
/* Is any walk waiting for that signal (listing only, judgeable, fetching nowhere yet)?  The
 * signal is wanted at once then: changed(ctx) is called each time the answer changes (the
 * arming's, which has the sentinel's records wake the daemon meanwhile; NULL: none). */
bool walk_mgr_rejudging(const struct walk_mgr *w);
void walk_mgr_set_watch(struct walk_mgr *w, void (*changed)(void *ctx), void *ctx);
/* DIRAHEAD_EV_END with scan_id 0: the walker is gone. */
void walk_mgr_on_exit(struct walk_mgr *w, const struct dirahead_event *ev);
/* Ends idle walks and walks on filesystems where prefetch stopped paying, lets go of watched
 * processes that did not walk; true while any walk or watch is left. */
bool walk_mgr_tick(struct walk_mgr *w);
unsigned walk_mgr_count(const struct walk_mgr *w);
/* Walks or watched processes: the tick is needed. */
bool walk_mgr_busy(const struct walk_mgr *w);
void walk_mgr_foreach(struct walk_mgr *w, void (*fn)(const struct walk_info *, void *), void *ctx);
/* Ends every walk; never waits for a hung filesystem.  Call before freeing the engine. */
void walk_mgr_free(struct walk_mgr *w);

#endif
