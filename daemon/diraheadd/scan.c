/* SPDX-License-Identifier: LGPL-2.1-or-later OR BSD-2-Clause */
#include "scan.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <time.h>
#include <unistd.h>

#include "budget.h"
#include "decisions.h"
#include "detector.h"
#include "dirahead.h"
#include "fsmagic.h"
#include "gate.h"
#include "judge.h"
#include "host.h"
#include "log.h"
#include "monoclock.h"
#include "opener.h"
#include "order.h"
#include "policy.h"
#include "procdir.h"
#include "start.h"
#include "walk.h"

/* A scan's life.  PROBING: confirmed, its stats being timed before the cost model decides
 * (nothing open, not counted against the limits; a probe that ends is dropped, never ENDED).
 * OPENING and PREFETCHING count against them; FOLLOWING: all was fetched, hits are still counted
 * until the program is done.  The ENDED states are terminal: counted as ended (end_reason),
 * gone for BPF, waiting for what still holds the scan to let go of it, which frees it. */
enum scan_life {
	SCAN_PROBING,
	SCAN_OPENING,
	SCAN_PREFETCHING,
	SCAN_FOLLOWING,
	SCAN_ENDED_OPENING,         /* its opener is still out: the opener's result frees it */
	SCAN_ENDED_DIR,             /* its directory is being cancelled: the engine's end frees it */
};
/* `diraheadctl scans`' names of the live states (ended scans are not shown). */
static const char *const life_names[] = {
	[SCAN_PROBING] = "probing", [SCAN_OPENING] = "opening",
	[SCAN_PREFETCHING] = "prefetching", [SCAN_FOLLOWING] = "following",
};

struct scan {
	struct host_dir hd;         /* first: the engine's dir_data (host.h) */
	struct scan *next;
	struct scan_mgr *mgr;
	enum scan_life life;
	uint64_t id;                /* BPF scan_id */
	uint32_t tgid, dev_major, dev_minor;
	uint64_t ino, magic, mnt_id;
	uint32_t tid;               /* the thread whose stats confirmed it */
	/* the directory as BPF names it (differs for a run of stats by path: 0:0 and a hash) */
	uint32_t bdev_major, bdev_minor;
	uint64_t bino;
	bool unlisted;              /* DIRAHEAD_EVF_UNLISTED: the program never listed it */
	bool sorted;                /* DIRAHEAD_EVF_SORTED: its names came in ascending order */
	uint64_t parent_ino;        /* its directory's parent (0: not known), for walks */
	/* the device the program's stat returned, from its SCAN event (later events carry none):
	 * what a mute of its runs by path is on */
	uint32_t name_dev_major, name_dev_minor;
	unsigned gone_ticks;        /* timer ticks in a row BPF had no state for it */
	bool bpf_gone;              /* BPF dropped it (END, or its state is gone): no controls */
	int pre_fd;                 /* the directory, opened while resolving a run by path; -1 */
	enum dirahead_order pre_order; /* learnt then */
	char comm[DIRAHEAD_COMM_LEN];
	char path[DIRAHEAD_PATH_LEN];
	enum dirahead_order order;
	struct dirahead_dir *dir;   /* while prefetching */
	enum dd_end_reason end_reason; /* in an ENDED state */
	uint64_t stats_seen;        /* the application's stat count at the last event */
	uint64_t stats0;            /* ... when prefetch started */
	double judged_before_ns, judged_after_ns; /* the last pay-off judgment (decisions.h) */
	uint64_t app_pos;           /* entries of our order the application has reached */
	uint64_t window, limit;     /* window: in requests (a request reads a group where grouped) */
	bool grouped;               /* one request per inode group (DIRAHEAD_DIR_SHARED_READS) */
	char *real;                 /* its directory's path as the daemon sees it ([budget] path:) */
	bool budgeted;              /* a [budget] rule holds its filesystem */
	bool budget_short;          /* ... and granted less than the window asked for */
	uint64_t completed, failed; /* entries fetched (with those read with a request), failed */
	uint64_t requests;          /* prefetch requests finished */
	struct pol_waits waits;     /* ... what they waited (the time saved) */
	uint64_t hits, misses, late, consecutive_misses;
	uint64_t start_ns, last_ns;
	struct judge j;             /* the cost model's view of it (judge.h) */
	unsigned depth;             /* requests in flight now */
	struct dirahead_cred cred;  /* the program's, when prefetch started: all I/O runs with it */
	uint64_t cgroup_id;
};

struct scan_mgr {
	struct dd_config cfg;       /* shallow copy: lists and strings stay owned by the caller */
	struct detector *det;
	struct dd_stats *st;
	struct host *host;          /* the engine, the openers, the cost model (host.h) */
	struct dirahead_engine *engine;
	struct opener *openers;     /* for scans and walks (opener.h) */
	struct policy *pol;
	struct scan *scans;
	struct pending *pending;
	unsigned active;            /* scans opening or prefetching (the ones limits count) */
	unsigned nscans;
	struct walk_mgr *walks;
	struct {                    /* the scan started last: a sibling of the next one? */
		uint32_t tgid, dev_major, dev_minor;
		uint64_t ino, parent_ino;
	} last_start;
	void (*want_timing)(void *);
	void *want_timing_ctx;
	uint32_t last_filtered;     /* the process whose filtered skip was logged last */
};

/* A run of stats by path whose directory is being resolved (start_resolving). */
struct pending {
	struct pending *next;
	struct dirahead_event ev;   /* its SCAN event */
	bool ended;                 /* its END came meanwhile */
};
#define PENDING_MAX 16

static const struct host_ops scan_ops;


static bool scan_ended(const struct scan *s)
{
	return s->life >= SCAN_ENDED_OPENING;
}

/* The process's scan of that directory that is not ending (one ending is gone for BPF: a new
 * scan of the same directory is no duplicate of it). */
static struct scan *find_scan(struct scan_mgr *m, uint32_t tgid, uint32_t maj, uint32_t min,
			      uint64_t ino)
{
	for (struct scan *s = m->scans; s; s = s->next)
		if (s->tgid == tgid && s->ino == ino && s->dev_major == maj && s->dev_minor == min &&
		    !scan_ended(s))
			return s;
	return NULL;
}

static bool counts_active(const struct scan *s)
{
	return s->life == SCAN_OPENING || s->life == SCAN_PREFETCHING;
}

/* Room for one more scan or walk of this user and this cgroup (walks count as scans): one user,
 * or one container, cannot hold everybody's. */
static bool user_room(void *ctx, uint32_t uid, uint64_t cgroup_id)
{
	struct scan_mgr *m = ctx;
	unsigned user = 0, cg = 0;
	for (struct scan *o = m->scans; o; o = o->next) {
		if (!counts_active(o))
			continue;
		user += o->cred.euid == uid;
		cg += o->cgroup_id == cgroup_id;
	}
	walk_mgr_count_of(m->walks, uid, cgroup_id, &user, &cg);
	return user < m->cfg.max_scans_per_user && cg < m->cfg.max_scans_per_cgroup;
}

static struct pol_fs *scan_fs(const struct scan *s)
{
	return policy_fs_mount(s->mgr->pol, s->dev_major, s->dev_minor, s->magic, s->mnt_id, mono_ns());
}

static struct scan *find_scan_id(struct scan_mgr *m, uint64_t id)
{
	for (struct scan *s = m->scans; s; s = s->next)
		if (s->id == id)
			return s;
	return NULL;
}

static void update_timer(struct scan_mgr *m)
{
	host_update(m->host);
}

/* A scan never linked in (admit_scan gave up on it), or one still listed at shutdown
 * (scan_mgr_free). */
static void discard(struct scan *s)
{
	if (s->pre_fd >= 0)
		close(s->pre_fd);
	free(s->real);
	free(s);
}

static void free_scan(struct scan *s)
{
	struct scan_mgr *m = s->mgr;
	if (s->pre_fd >= 0)
		close(s->pre_fd);
	for (struct scan **pp = &m->scans; *pp; pp = &(*pp)->next)
		if (*pp == s) {
			*pp = s->next;
			break;
		}
	assert(m->nscans > 0);
	m->nscans--;
	free(s->real);
	free(s);
	update_timer(m);
}

/* The scan ended having saved its program *saved seconds (estimated, policy_saved_scan_s):
 * booked once, here.  false: no figures stood behind an estimate (nothing was judged). */
static bool book_saved(struct scan *s, double *saved)
{
	struct pol_fs *fs = scan_fs(s);
	bool measured;
	*saved = policy_saved_scan_s(fs, s->judged_before_ns, s->judged_after_ns, s->hits + s->late,
				     &s->waits, policy_reads_shared(s->magic, s->dev_major), &measured);
	dd_stats_saved(s->mgr->st, fs, fsmagic_name(s->magic), *saved, measured, false);
	return measured;
}

static void log_end(struct scan *s, enum dd_end_reason why, double saved, bool measured)
{
	char f_pid[32], f_comm[48], f_dir[DIRAHEAD_PATH_LEN + 16], f_n[48], f_out[64];
	const char *fields[] = { f_pid, f_comm, f_dir, f_n, f_out, NULL };
	snprintf(f_pid, sizeof(f_pid), "DIRAHEAD_PID=%u", s->tgid);
	snprintf(f_comm, sizeof(f_comm), "DIRAHEAD_COMM=%s", s->comm);
	snprintf(f_dir, sizeof(f_dir), "DIRAHEAD_DIR=%s", s->path);
	snprintf(f_n, sizeof(f_n), "DIRAHEAD_ENTRIES=%llu", (unsigned long long)s->completed);
	snprintf(f_out, sizeof(f_out), "DIRAHEAD_OUTCOME=%s", dd_end_reason_names[why]);
	log_fields(LOG_DEBUG, fields,
		   "scan end: pid %u (%s) %s: %s, %llu prefetched, %llu errors, %llu hits, %llu misses, "
		   "%.3f s, saved %s%.3f s (its requests %.3f s, in flight %.3f s)",
		   s->tgid, s->comm, s->path, dd_end_reason_names[why],
		   (unsigned long long)s->completed, (unsigned long long)s->failed,
		   (unsigned long long)s->hits, (unsigned long long)s->misses,
		   (double)(mono_ns() - s->start_ns) / 1e9, measured ? "~" : "(unjudged) ", saved,
		   s->waits.lat_sum_ns / 1e9, s->waits.busy_ns / 1e9);
	struct dec_nums n = { .cost_ns = s->judged_before_ns, .with_ns = s->judged_after_ns,
			      .min_gain = s->mgr->cfg.min_gain, .stats = s->stats_seen - s->stats0,
			      .prefetched = s->completed, .hits = s->hits, .misses = s->misses,
			      .has_saved = measured, .saved_s = saved };
	decisions_add(DEC_ENDED, DEC_SCAN, s->tgid, s->cred.euid, s->comm,
		      s->path, dd_end_reason_names[why], &n);
}

/* Ends a scan: counts it, tells the detector to stop reporting it, and frees it once the engine
 * has let go of the directory (cancel calls back with ECANCELED, maybe right away). */
static void end_scan(struct scan *s, enum dd_end_reason why)
{
	struct scan_mgr *m = s->mgr;
	if (scan_ended(s))
		return;
	if (s->life == SCAN_PROBING) { /* never started: not a scan that ended */
		if (!s->bpf_gone)
			detector_scan_forget(m->det, s->id);
		m->st->skips[DD_SKIP_PROBE_ENDED]++;
		free_scan(s);
		return;
	}
	s->end_reason = why;
	m->st->scans_ended[why]++;
	double saved;
	bool measured = book_saved(s, &saved);
	log_end(s, why, saved, measured);
	uint64_t used = s->hits + s->late, ok = s->completed - s->failed;
	m->st->entries_wasted += ok > used ? ok - used : 0;
	if (why == DD_END_NO_GAIN) {
		/* the rest of this walk on this filesystem is not worth watching either */
		detector_scan_mute(m->det, s->id, s->tgid, false, s->bdev_major, s->bdev_minor,
				   policy_mute_ms(m->pol));
		m->st->scans_muted++;
	} else if (!s->bpf_gone) {
		detector_scan_forget(m->det, s->id);
	}
	if (counts_active(s)) {
		assert(m->active > 0);
		m->active--;
	}
	if (s->dir) {
		assert(s->life == SCAN_PREFETCHING);
		s->life = SCAN_ENDED_DIR;
		dirahead_dir_cancel(s->dir); /* scan_dir_done frees s */
	} else if (s->life == SCAN_OPENING) {
		s->life = SCAN_ENDED_OPENING; /* the opener's result frees it */
	} else {
		free_scan(s);
	}
}

/* A skip, with the numbers it was decided by (n: NULL if none) for the decision log. */
static void skip_why(struct scan_mgr *m, const struct dirahead_event *ev, enum dd_skip_reason why,
		     const struct dec_nums *n)
{
	if (why == DD_SKIP_DRY_RUN)
		log_debug("scan (dry run): pid %u (%.16s) %.256s", ev->tgid, ev->comm, ev->path);
	m->st->skips[why]++;
	/* a process the filter excludes is skipped at each of its events, and a FUSE server's
	 * (slowfs: 171 in 20 s) took the log's rate-limit burst, the walk decisions after it lost:
	 * logged once in a run of them */
	bool again = why == DD_SKIP_FILTERED && ev->tgid == m->last_filtered;
	m->last_filtered = why == DD_SKIP_FILTERED ? ev->tgid : 0;
	/* the walk of a program's runs is told of each of them: one skip per directory it goes
	 * through, not logged or kept among the decisions (as the walker's listings are not) */
	bool run_walked = why == DD_SKIP_WALKED && (ev->flags & DIRAHEAD_EVF_UNLISTED);
	if (!again && !run_walked)
		log_debug("scan skipped: pid %u (%.16s) %.256s: %s", ev->tgid, ev->comm, ev->path,
			  dd_skip_reason_names[why]);
	if (why == DD_SKIP_WALKED && (ev->flags & DIRAHEAD_EVF_UNLISTED))
		walk_mgr_on_run(m->walks, ev); /* where the walk of its runs is */
	if (why == DD_SKIP_FAST || why == DD_SKIP_FS_NO_GAIN || why == DD_SKIP_SERIAL_LOOKUPS) {
		/* prefetch does not pay for this process here: let its walk run untracked */
		/* a run by path is muted as runs by path, on the device its stats return (BPF knows
		 * no other filesystem of theirs): its runs elsewhere stay watched */
		bool by_path = (ev->flags & DIRAHEAD_EVF_UNLISTED) &&
			       !(ev->ref & (DIRAHEAD_REF_FD | DIRAHEAD_REF_CWD));
		/* (no device known: forgotten, not muted; BPF takes a mute of runs by path on
		 * device 0 for one on every filesystem) */
		bool known = !by_path || ev->name_dev_major || ev->name_dev_minor;
		detector_scan_mute(m->det, ev->scan_id, ev->tgid, by_path,
				   by_path ? ev->name_dev_major : ev->dev_major,
				   by_path ? ev->name_dev_minor : ev->dev_minor,
				   known ? policy_mute_ms(m->pol) : 0);
		m->st->scans_muted++;
		/* but if it walks, its listings may still be worth doing ahead of it.  A run of
		 * stats by a dirfd or the cwd counts: hooks attached while the program was blocked
		 * listing its first directory (arming) saw its stats there, not the listing (an
		 * sshfs find -ls walked on alone in 2 of 3 runs); a run by path never listed. */
		if (!by_path)
			walk_mgr_candidate(m->walks, ev);
		update_timer(m);
	} else if (why != DD_SKIP_DRY_RUN) {
		detector_scan_forget(m->det, ev->scan_id);
	}
	/* Recorded after the mute: the program's next listings are not tracked meanwhile.  Not
	 * what [filter] and pseudo filesystems leave out: every other program's scans, they would
	 * crowd the decisions of those that may be helped out of the log. */
	if (why == DD_SKIP_FILTERED || why == DD_SKIP_PSEUDO_FS || run_walked)
		return;
	struct dec_nums dn = n ? *n : (struct dec_nums)DEC_NUMS_INIT;
	char dir[DIRAHEAD_PATH_LEN];
	dn.dry_run = why == DD_SKIP_DRY_RUN;
	if (ev->ref & DIRAHEAD_REF_PATH)
		snprintf(dir, sizeof(dir), "%.*s", DIRAHEAD_PATH_LEN - 1, ev->path);
	else
		snprintf(dir, sizeof(dir), "(dev %u:%u ino %llu)", ev->dev_major, ev->dev_minor,
			 (unsigned long long)ev->ino);
	decisions_add(DEC_SKIPPED, DEC_SCAN, ev->tgid, ev->cred_euid, ev->comm,
		      dir, dd_skip_reason_names[why], &dn);
}

static void skip(struct scan_mgr *m, const struct dirahead_event *ev, enum dd_skip_reason why)
{
	skip_why(m, ev, why, NULL);
}

/* A probing scan is over without prefetch: the probe said no (n: its numbers), or the program
 * was done first. */
static void drop_probing(struct scan *s, const struct dirahead_event *ev, enum dd_skip_reason why,
			 const struct dec_nums *n)
{
	if (ev) {
		/* a later event than the SCAN: the stat's device is the scan's */
		struct dirahead_event e = *ev;
		e.name_dev_major = s->name_dev_major;
		e.name_dev_minor = s->name_dev_minor;
		skip_why(s->mgr, &e, why, n);
	} else {
		s->mgr->st->skips[why]++;
		decisions_add(DEC_SKIPPED, DEC_SCAN, s->tgid, s->cred.euid, s->comm,
			      s->path, dd_skip_reason_names[why], n);
	}
	free_scan(s);
}

/* The entries the window spans ahead of the program (policy_window_reach). */
static uint64_t window_reach(const struct scan *s)
{
	return policy_window_reach(s->window, s->grouped, s->completed, s->requests);
}

static uint32_t progress_step(const struct scan *s)
{
	/* Hear from the application a few times per window: often enough to stay ahead of it,
	 * rarely enough to cost nothing. */
	uint64_t step = s->window / 4;
	return step < 2 ? 2 : step > 256 ? 256 : (uint32_t)step;
}

/* A scan that never got going (its directory could not be opened, was filtered out or refused
 * by the engine): undo what on_scan_event() counted and let the detector forget it. */
static void drop_opening(struct scan *s, enum dd_skip_reason why)
{
	struct scan_mgr *m = s->mgr;
	assert(s->life == SCAN_OPENING && m->active > 0);
	m->st->skips[why]++;
	decisions_add(DEC_SKIPPED, DEC_SCAN, s->tgid, s->cred.euid, s->comm,
		      s->path, dd_skip_reason_names[why], NULL);
	m->st->scans_started--;
	m->active--;
	if (!s->bpf_gone)
		detector_scan_forget(m->det, s->id);
	free_scan(s);
}

static void opened(struct start_job *job);

/* Does the program pass our entries in our order, so that those below its position are done
 * (never to be fetched)?  A run whose names BPF saw ascend, fetched in name order: its k-th name
 * is at least the k-th of the directory (a list may leave names out, never reorder them).
 * Elsewhere a position is where the program's last name is, and other threads or a second pass
 * may still want what lies below it.  (A list-driven run fetched its first 8 names, done by the
 * time they came, in every directory: 16% of its requests, all of its first round.) */
static bool passes_in_order(const struct scan *s)
{
	return s->sorted && s->order == DIRAHEAD_ORDER_NAME && s->dir;
}

static enum dirahead_order choose_order(const struct scan_mgr *m, const struct dirahead_event *ev)
{
	if (m->cfg.order != DIRAHEAD_ORDER_DEFAULT)
		return m->cfg.order;
	/* Measured here: coreutils 9.1 `ls -l` stats in readdir order too, interleaved with
	 * getdents, like rsync, tar, os.walk and fts below 10,000 entries; so readdir order until
	 * the opener has learnt otherwise (order_learn). */
	(void)ev;
	return DIRAHEAD_ORDER_READDIR;
}

/* It descends from a directory it scanned, or scans a second subdirectory of one parent: a
 * walker, help it ahead of where it goes.  ev: the scan's latest event (a run by path's name
 * its directory by a hash, and its parent not at all: the scan's own names are used). */
static void start_walk(struct scan *s, const struct dirahead_event *ev)
{
	struct scan_mgr *m = s->mgr;
	struct dirahead_event e = *ev;
	e.dev_major = s->dev_major;
	e.dev_minor = s->dev_minor;
	e.ino = s->ino;
	e.mnt_id = s->mnt_id;
	e.magic = s->magic;
	e.parent_ino = s->parent_ino;
	struct scan *parent = e.parent_ino ? find_scan(m, s->tgid, s->dev_major, s->dev_minor,
							 e.parent_ino) : NULL;
	bool sibling = e.parent_ino && m->last_start.tgid == s->tgid &&
		       m->last_start.dev_major == s->dev_major &&
		       m->last_start.dev_minor == s->dev_minor &&
		       m->last_start.parent_ino == e.parent_ino && m->last_start.ino != e.ino;
	char top[DIRAHEAD_PATH_LEN];
	const char *slash = s->unlisted && (ev->ref & DIRAHEAD_REF_PATH) ? strrchr(s->path, '/')
									   : NULL;
	if (parent)
		snprintf(top, sizeof(top), "%s", parent->path);
	else if (slash && slash > s->path) /* a run by path: its runs are placed by these names */
		snprintf(top, sizeof(top), "%.*s", (int)(slash - s->path), s->path);
	else
		snprintf(top, sizeof(top), "(dev %u:%u ino %llu)", s->dev_major, s->dev_minor,
			 (unsigned long long)e.parent_ino);
	/* a program that does not list has no listings for a walk to follow; one whose runs
	 * of names ascend is followed by them (walk_mgr_on_run) */
	if ((parent || sibling) && (!s->unlisted || s->sorted) &&
	    walk_mgr_start(m->walks, &e, NULL, top, false))
		update_timer(m);
	m->last_start.tgid = s->tgid;
	m->last_start.dev_major = s->dev_major;
	m->last_start.dev_minor = s->dev_minor;
	m->last_start.ino = e.ino;
	m->last_start.parent_ino = e.parent_ino;
}

/* Opening goes through the filesystem, which may hang: do it in a thread of its own so the
 * event loop never waits for one filesystem.  ev: the latest event of the scan (its fd and
 * names are the freshest).  0, or a skip reason. */
static int start_opening(struct scan *s, const struct dirahead_event *ev)
{
	struct scan_mgr *m = s->mgr;
	unsigned per_proc = 0;
	for (struct scan *o = m->scans; o; o = o->next)
		per_proc += o->tgid == s->tgid && counts_active(o);
	if (m->active >= m->cfg.max_scans || per_proc >= m->cfg.max_scans_per_process)
		return DD_SKIP_BUSY;
	if (!user_room(m, ev->cred_euid, ev->cgroup_id))
		return DD_SKIP_USER_BUSY;
	/* all of the program's credentials, or no prefetch */
	if (procdir_cred(ev, &s->cred) < 0)
		return DD_SKIP_CRED;
	struct start_job *job = start_job_new(START_DIR, m, s->id, ev, opened);
	if (!job)
		return DD_SKIP_ENGINE;
	job->learn = m->cfg.order == DIRAHEAD_ORDER_DEFAULT;
	/* the directory as the daemon knows it: a run by path's events name it by a hash */
	job->ev.dev_major = s->dev_major;
	job->ev.dev_minor = s->dev_minor;
	job->ev.ino = s->ino;
	job->ev.mnt_id = s->mnt_id;
	job->ev.magic = s->magic;
	if (s->pre_fd >= 0) {
		/* opened already (a run by path): handed to the opener, which only passes it on */
		job->fd = s->pre_fd;
		job->order = s->pre_order;
		job->learn = false;
	}
	int why = start_run(m->openers, s->dev_major, s->dev_minor, ev->cred_euid, job);
	if (why) {
		job->fd = -1; /* s->pre_fd stays the scan's */
		start_job_free(job);
		return why;
	}
	s->pre_fd = -1; /* the job's now */
	assert(s->life == SCAN_PROBING);
	s->life = SCAN_OPENING;
	s->cgroup_id = ev->cgroup_id;
	s->app_pos = s->stats_seen = s->stats0 = ev->stats;
	s->start_ns = s->last_ns = mono_ns();
	m->active++;
	m->st->scans_started++;
	log_debug("scan: pid %u (%s) %s, %s order", s->tgid, s->comm, s->path,
		 s->order == DIRAHEAD_ORDER_NAME ? "name" : s->order == DIRAHEAD_ORDER_INODE ? "inode" : "readdir");
	start_walk(s, ev);
	return 0;
}

/* A run without a listing was confirmed by unlisted_stats names in a row already, which says
 * more than a listing's few confirming stats: its window starts that much further. */
static uint64_t first_window(const struct scan_mgr *m, const struct dirahead_event *ev)
{
	uint64_t w = m->cfg.window_start;
	if ((ev->flags & DIRAHEAD_EVF_UNLISTED) && ev->stats > w)
		w = ev->stats;
	w = (ev->flags & DIRAHEAD_EVF_UNLISTED) ? 4 * w : w;
	return w < m->cfg.window_max ? w : m->cfg.window_max;
}

/* ev's thread moved on to another directory (a SCAN or a walker's LISTING): what its other scans
 * see now is not their stats' cost alone (see pays_off).  Listing the same directory again is not
 * going elsewhere. */
static void mark_interleaved(struct scan_mgr *m, const struct dirahead_event *ev)
{
	for (struct scan *o = m->scans; o; o = o->next)
		if (o->tgid == ev->tgid && o->tid == ev->tid &&
		    !(o->dev_major == ev->dev_major && o->dev_minor == ev->dev_minor && o->ino == ev->ino))
			o->j.interleaved = true;
}

static void want_timing(struct scan *s)
{
	s->j.timed_probe = true;
	if (s->mgr->want_timing)
		s->mgr->want_timing(s->mgr->want_timing_ctx);
	s->j.timed_from_ns = mono_ns(); /* the hook attaches synchronously */
}

static struct pol_fs *who_fs(const void *ctx)
{
	return scan_fs(ctx);
}

/* The scan, to the judge. */
static struct judge_who who_of(const struct scan *s)
{
	return (struct judge_who){ .pol = s->mgr->pol, .fs = who_fs, .ctx = s, .path = s->path,
				   .tgid = s->tgid, .now_ns = mono_ns() };
}

/* Which directory a run of stats by path is in: resolved in an opener thread (the filesystem
 * may hang), then admitted like a scan BPF saw the directory of.  0, or a skip reason. */
static int start_resolving(struct scan_mgr *m, const struct dirahead_event *ev)
{
	unsigned n = 0;
	for (struct pending *p = m->pending; p; p = p->next)
		n++;
	if (n >= PENDING_MAX)
		return DD_SKIP_BUSY;
	/* its filesystem is not known before it is resolved: the breaker of a run by path is its
	 * user's (a resolve of theirs hangs: the next one likely would too) */
	if (opener_stuck_on(m->openers, 0, 0, ev->cred_euid))
		return DD_SKIP_FS_HUNG;
	struct pending *p = calloc(1, sizeof(*p));
	struct start_job *job = start_job_new(START_RESOLVE, m, ev->scan_id, ev, opened);
	int why = p && job ? 0 : DD_SKIP_ENGINE;
	if (!why) {
		p->ev = *ev;
		job->learn = m->cfg.order == DIRAHEAD_ORDER_DEFAULT;
		why = start_run(m->openers, 0, 0, ev->cred_euid, job);
	}
	if (why) {
		free(p);
		if (job)
			start_job_free(job);
		return why;
	}
	p->next = m->pending;
	m->pending = p;
	update_timer(m);
	return 0;
}

static void admit(struct scan_mgr *m, const struct dirahead_event *ev, uint32_t bdev_major,
		  uint32_t bdev_minor, uint64_t bino, int pre_fd, enum dirahead_order pre_order);

static void on_scan_event(struct scan_mgr *m, const struct dirahead_event *ev)
{
	m->st->scans_confirmed++;
	if (ev->flags & DIRAHEAD_EVF_UNLISTED)
		m->st->scans_unlisted++;
	if (ev->dev_major || ev->dev_minor)
		policy_note_fsinfo(m->pol, ev->dev_major, ev->dev_minor, ev->magic, ev->mnt_id,
				   ev->fsinfo, mono_ns());
	struct gate_verdict v = gate_event(&m->cfg, ev);
	if (v.act == GATE_IGNORE)
		return;
	mark_interleaved(m, ev);
	if (v.act == GATE_SKIP) {
		skip(m, ev, v.why);
	} else if (v.act == GATE_RESOLVE) {
		/* where the walk of its runs knows the directory by name, nothing to resolve */
		int why = walk_mgr_run_at(m->walks, ev) ? DD_SKIP_WALKED : start_resolving(m, ev);
		if (why)
			skip(m, ev, (enum dd_skip_reason)why);
	} else {
		admit(m, ev, ev->dev_major, ev->dev_minor, ev->ino, -1, DIRAHEAD_ORDER_READDIR);
	}
}

/* A confirmed scan whose directory is known: the filters, the limits and the start rule.
 * pre_fd: the directory opened already (taken over, -1 if none), pre_order learnt with it. */
static void admit_scan(struct scan_mgr *m, const struct dirahead_event *ev, uint32_t bdev_major,
		       uint32_t bdev_minor, uint64_t bino, int *pre_fd, enum dirahead_order pre_order);

static void admit(struct scan_mgr *m, const struct dirahead_event *ev, uint32_t bdev_major,
		  uint32_t bdev_minor, uint64_t bino, int pre_fd, enum dirahead_order pre_order)
{
	admit_scan(m, ev, bdev_major, bdev_minor, bino, &pre_fd, pre_order);
	if (pre_fd >= 0)
		close(pre_fd); /* not taken: skipped */
}

/* The gate's questions (gate_facts), about the scan the event is of: BPF names its directory
 * bdev:bino. */
struct gate_ask {
	struct scan_mgr *m;
	uint32_t bdev_major, bdev_minor;
	uint64_t bino;
};

static bool ask_hung(void *ctx, const struct dirahead_event *ev)
{
	struct scan_mgr *m = ((struct gate_ask *)ctx)->m;
	return policy_hung(policy_fs_mount(m->pol, ev->dev_major, ev->dev_minor, ev->magic,
					   ev->mnt_id, mono_ns()), mono_ns()) ||
	       opener_stuck_on(m->openers, ev->dev_major, ev->dev_minor, ev->cred_euid);
}

static enum gate_dup ask_dup(void *ctx, const struct dirahead_event *ev)
{
	const struct gate_ask *a = ctx;
	const struct scan *dup = find_scan(a->m, ev->tgid, ev->dev_major, ev->dev_minor, ev->ino);
	if (!dup)
		return GATE_DUP_NONE;
	return dup->bdev_major == a->bdev_major && dup->bdev_minor == a->bdev_minor &&
	       dup->bino == a->bino ? GATE_DUP_STALE : GATE_DUP_OTHER;
}

static bool ask_walking(void *ctx, const struct dirahead_event *ev)
{
	const struct gate_ask *a = ctx;
	return walk_mgr_walking(a->m->walks, ev->tgid, ev->dev_major, ev->dev_minor);
}

/* The filesystem of an event's directory, before there is a scan of it. */
struct gate_ask_fs {
	struct scan_mgr *m;
	const struct dirahead_event *ev;
};

static struct pol_fs *ev_fs(const void *ctx)
{
	const struct gate_ask_fs *a = ctx;
	const struct dirahead_event *ev = a->ev;
	return policy_fs_mount(a->m->pol, ev->dev_major, ev->dev_minor, ev->magic, ev->mnt_id,
			       mono_ns());
}

/* A scan of ev's directory (BPF's name for it: a), not linked in yet; pre_fd is taken. */
static struct scan *new_scan(struct scan_mgr *m, const struct dirahead_event *ev,
			     const struct gate_ask *a, int *pre_fd, enum dirahead_order pre_order)
{
	struct scan *s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	*s = (struct scan){
		.hd = { &scan_ops }, .mgr = m, .life = SCAN_PROBING, .id = ev->scan_id, .tgid = ev->tgid,
		.dev_major = ev->dev_major, .dev_minor = ev->dev_minor, .ino = ev->ino,
		.magic = ev->magic, .mnt_id = ev->mnt_id, .order = choose_order(m, ev),
		.tid = ev->tid, .bdev_major = a->bdev_major, .bdev_minor = a->bdev_minor,
		.bino = a->bino, .unlisted = (ev->flags & DIRAHEAD_EVF_UNLISTED) != 0, .pre_fd = *pre_fd,
		.sorted = (ev->flags & DIRAHEAD_EVF_SORTED) != 0, .parent_ino = ev->parent_ino,
		.name_dev_major = ev->name_dev_major, .name_dev_minor = ev->name_dev_minor,
		.pre_order = m->cfg.order == DIRAHEAD_ORDER_DEFAULT ? pre_order : m->cfg.order,
		.stats_seen = ev->stats, .app_pos = ev->stats, .window = first_window(m, ev),
		.start_ns = mono_ns(),
	};
	*pre_fd = -1; /* the scan's now */
	s->last_ns = s->start_ns;
	memcpy(s->comm, ev->comm, sizeof(s->comm));
	s->comm[sizeof(s->comm) - 1] = '\0';
	if (ev->ref & DIRAHEAD_REF_PATH)
		snprintf(s->path, sizeof(s->path), "%.*s", DIRAHEAD_PATH_LEN - 1, ev->path);
	else
		snprintf(s->path, sizeof(s->path), "(dev %u:%u ino %llu)", ev->dev_major, ev->dev_minor,
			 (unsigned long long)ev->ino);
	return s;
}

/* Its stats are timed or its rate measured before the cost model decides.  0, or a skip reason. */
static int start_probing(struct scan *s, const struct dirahead_event *ev, bool timed)
{
	struct scan_mgr *m = s->mgr;
	if (timed)
		want_timing(s);
	/* hear from BPF again once probe_stats more stats were made */
	if (detector_scan_step(m->det, s->id, policy_probe_stats(m->pol)) < 0)
		return DD_SKIP_ENGINE;
	log_debug("scan probing: pid %u (%s) %s (%llu confirming stats, %.1f us apart)", s->tgid,
		  s->comm, s->path, (unsigned long long)ev->stats, s->j.before.gap_ns / 1e3);
	return 0;
}

/* The start rule's numbers for the decision log: ev's scan, whose stats cost c (NULL: its
 * confirming stats), on ev's filesystem (fs: NULL) or fs. */
static struct dec_nums start_nums(struct scan_mgr *m, const struct dirahead_event *ev,
				  struct pol_fs *fs, const struct pol_cost *c, bool probed)
{
	struct gate_ask_fs at = { m, ev };
	struct pol_sample smp;
	struct pol_cost own;
	if (!c) {
		pol_sample_of(&smp, ev);
		pol_cost_between(NULL, &smp, &own);
		c = &own;
	}
	return decisions_start_nums(m->pol, fs ? fs : ev_fs(&at), c, m->cfg.start_factor, probed,
				    mono_ns());
}

static void record_start(struct scan *s, const struct dirahead_event *ev, bool probed)
{
	struct dec_nums n = start_nums(s->mgr, ev, scan_fs(s), &s->j.before, probed);
	decisions_add(DEC_STARTED, DEC_SCAN, s->tgid, s->cred.euid, s->comm,
		      s->path, "prefetch", &n);
}

static void admit_scan(struct scan_mgr *m, const struct dirahead_event *ev, uint32_t bdev_major,
		       uint32_t bdev_minor, uint64_t bino, int *pre_fd, enum dirahead_order pre_order)
{
	struct dec_nums dn;
	struct gate_ask ask = { m, bdev_major, bdev_minor, bino };
	const struct gate_facts facts = { .hung = ask_hung, .dup = ask_dup, .walking = ask_walking,
					  .ctx = &ask };
	struct gate_verdict v = gate_dir(&m->cfg, ev, &facts);
	if (v.end_stale) {
		struct scan *dup = find_scan(m, ev->tgid, ev->dev_major, ev->dev_minor, ev->ino);
		assert(dup);
		dup->bpf_gone = true;
		if (dup->life == SCAN_PROBING)
			drop_probing(dup, NULL, DD_SKIP_PROBE_ENDED, NULL);
		else
			end_scan(dup, DD_END_COMPLETED);
	}
	if (v.act == GATE_SKIP) {
		if (v.why == DD_SKIP_DRY_RUN) /* advice: what it would have done */
			dn = start_nums(m, ev, NULL, NULL, false);
		skip_why(m, ev, v.why, v.why == DD_SKIP_DRY_RUN ? &dn : NULL);
		return;
	}
	assert(v.act == GATE_ADMIT);

	/* The start rule: is prefetch worth it for this scan, on this filesystem? */
	struct gate_ask_fs at = { m, ev };
	struct judge_who w = { .pol = m->pol, .fs = ev_fs, .ctx = &at, .path = ev->path,
			       .tgid = ev->tgid, .now_ns = mono_ns() };
	struct judge j = { 0 };
	struct judge_verdict jv = judge_start(&j, &w, ev);
	if (jv.act == JUDGE_FAST || jv.act == JUDGE_NO_GAIN) {
		dn = start_nums(m, ev, NULL, &j.before, false);
		skip_why(m, ev, jv.act == JUDGE_FAST ? DD_SKIP_FAST : DD_SKIP_FS_NO_GAIN, &dn);
		return;
	}
	struct scan *s = new_scan(m, ev, &ask, pre_fd, pre_order);
	if (!s) {
		skip(m, ev, DD_SKIP_ENGINE);
		return;
	}
	s->j = j;
	int why = jv.act == JUDGE_PROBE ? start_probing(s, ev, jv.want_timing) : start_opening(s, ev);
	if (why) {
		*pre_fd = s->pre_fd; /* not taken */
		s->pre_fd = -1;
		discard(s);
		skip(m, ev, (enum dd_skip_reason)why);
		return;
	}
	if (jv.act == JUDGE_START)
		record_start(s, ev, false);
	s->next = m->scans;
	m->scans = s;
	m->nscans++;
	update_timer(m);
}

/* The probe's PROGRESS event: prefetch, or leave the program alone. */
static void end_probe(struct scan *s, const struct dirahead_event *ev)
{
	struct scan_mgr *m = s->mgr;
	struct judge_who w = who_of(s);
	struct pol_cost cost;
	struct judge_verdict v = judge_probe(&s->j, &w, ev, &cost);
	if (v.act == JUDGE_WAIT) {
		if (v.want_timing)
			want_timing(s);
		return;
	}
	assert(v.act == JUDGE_DECIDE);
	struct dec_nums dn = start_nums(m, ev, scan_fs(s), &cost, true);
	if (walk_mgr_walking(m->walks, s->tgid, s->dev_major, s->dev_minor)) {
		drop_probing(s, ev, DD_SKIP_WALKED, &dn);
		return;
	}
	struct pol_sample now;
	pol_sample_of(&now, ev);
	w.now_ns = mono_ns();
	v = judge_after_probe(&s->j, &w, &cost, now.lat_n - s->j.at_scan.lat_n);
	if (v.act == JUDGE_FAST) {
		dn = start_nums(m, ev, scan_fs(s), &cost, true); /* the threshold it was judged by */
		drop_probing(s, ev, DD_SKIP_FAST, &dn);
		return;
	}
	int why = start_opening(s, ev);
	if (why)
		drop_probing(s, ev, (enum dd_skip_reason)why, &dn);
	else
		record_start(s, ev, true);
}

/* Why an opener's directory is not prefetched: what it found was another directory (for a run
 * by path, resolve: one without the file the program stat'ed), a cwd outside the program's
 * root, or it could not open it. */
static enum dd_skip_reason open_skip(int err, bool resolve)
{
	if (err == -ESTALE)
		return resolve ? DD_SKIP_PATH_MISMATCH : DD_SKIP_MISMATCH;
	return err == -EXDEV ? DD_SKIP_OUTSIDE_ROOT : DD_SKIP_OPEN_FAILED;
}

/* The directory of a run of stats by path is known (or could not be opened): admit it. */
static void on_resolved(struct scan_mgr *m, const struct start_job *r, int fd)
{
	struct pending *p = NULL, **pp;
	for (pp = &m->pending; *pp; pp = &(*pp)->next)
		if ((*pp)->ev.scan_id == r->id) {
			p = *pp;
			*pp = p->next;
			break;
		}
	if (!p) {
		if (fd >= 0)
			close(fd);
		return;
	}
	struct dirahead_event ev = p->ev;
	uint64_t bino = ev.ino;
	if (fd >= 0) {
		ev.dev_major = r->found.dev_major;
		ev.dev_minor = r->found.dev_minor;
		ev.ino = r->found.ino;
		ev.mnt_id = r->found.mnt_id;
		ev.magic = r->found.magic;
		ev.dir_size = r->found.size;
		ev.parent_ino = r->found.parent_ino; /* for a walk that follows its runs (walk.h) */
		ev.fsinfo = policy_fsinfo(m->pol, ev.dev_major, ev.dev_minor, ev.magic); /* fsknow.h */
	}
	if (p->ended || fd < 0) {
		if (fd >= 0)
			close(fd);
		log_debug("scan of %.256s by pid %u: %s", ev.path, ev.tgid,
			  p->ended ? "done before its directory was found" : strerror(-fd));
		if (p->ended) {
			m->st->skips[DD_SKIP_PROBE_ENDED]++;
			/* (a run in a directory the walk of its runs fetched is over that fast) */
			if (fd >= 0)
				walk_mgr_on_run(m->walks, &ev);
		} else {
			skip(m, &ev, open_skip(fd, true));
		}
		free(p);
		update_timer(m);
		return;
	}
	free(p);
	admit(m, &ev, 0, 0, bino, fd, r->order);
	update_timer(m);
}

/*
 * The window is to reach `want`: how far it may go under the [budget] (budget_grant, the
 * decision), acted on here, the one place a scan lets prefetch requests out.  Under a rule the
 * window starts where the program is: entries it reached while the budget held them back were
 * stat'ed by the program itself; they are counted and never sent (dirahead_dir_set_from).
 */
static uint64_t budget_window(struct scan *s, uint64_t want)
{
	struct scan_mgr *m = s->mgr;
	uint64_t start = s->limit > s->app_pos ? s->limit : s->app_pos;
	struct budget *b = host_budget(m->host);
	if (budget_empty(b) || want <= start)
		return want > s->limit ? want : s->limit;
	struct budget_fs fs = { .dev_major = s->dev_major, .dev_minor = s->dev_minor,
				.magic_name = fsmagic_name(s->magic), .path = s->real };
	bool ruled;
	uint64_t got = budget_grant(b, &fs, want - start, mono_ns(), &ruled);
	s->budgeted = ruled;
	if (!ruled)
		return want;
	if (s->budget_short && start > s->limit)
		m->st->budget_held_back += start - s->limit;
	if (start > s->limit && s->dir)
		dirahead_dir_set_from(s->dir, start);
	m->st->budget_granted += got;
	s->budget_short = got < want - start;
	return start + got;
}

/* The opener is done (on the event loop): prefetch, or drop the scan. */
static void opened(struct start_job *job)
{
	struct scan_mgr *m = job->owner;
	int fd = job->fd;
	job->fd = -1; /* ours now */
	if (job->what == START_RESOLVE) {
		on_resolved(m, job, fd);
		start_job_free(job);
		return;
	}
	assert(job->what == START_DIR);
	struct scan *s = find_scan_id(m, job->id);
	enum dirahead_order order = job->order;
	start_job_free(job);
	if (!s || (s->life != SCAN_OPENING && s->life != SCAN_ENDED_OPENING)) {
		if (fd >= 0)
			close(fd);
		return;
	}
	if (s->life == SCAN_ENDED_OPENING) { /* counted already */
		if (fd >= 0)
			close(fd);
		free_scan(s);
		return;
	}
	if (fd < 0) {
		log_debug("scan of %s by pid %u: cannot open as uid %u gid %u: %s", s->path, s->tgid,
			  s->cred.euid, s->cred.egid, strerror(-fd));
		drop_opening(s, open_skip(fd, false));
		return;
	}
	char real[4096] = "";
	char link[64];
	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	ssize_t n = readlink(link, real, sizeof(real) - 1);
	real[n > 0 ? n : 0] = '\0';
	struct gate_verdict v = gate_path(&m->cfg, real);
	if (v.act == GATE_SKIP) {
		close(fd);
		drop_opening(s, v.why);
		return;
	}
	s->real = strdup(real);
	s->grouped = policy_inode_groups(s->magic, s->dev_major);
	s->limit = budget_window(s, s->app_pos + window_reach(s));
	s->depth = policy_enabled(m->pol) ? policy_depth(m->pol, scan_fs(s)) : m->cfg.depth_per_scan;
	unsigned batch = 0;
	if (m->cfg.order == DIRAHEAD_ORDER_DEFAULT && order != s->order) {
		/* sorted as the program sorts: a whole fts chunk in one batch */
		s->order = order;
		batch = ORDER_FTS_CHUNK;
		m->st->orders_learnt[order == DIRAHEAD_ORDER_INODE ? 0 : 1]++;
		log_debug("scan of %s by pid %u: the program stats in %s order", s->path, s->tgid,
			  dirahead_order_name(order));
	}
	struct dirahead_dir_opts o = {
		.size = sizeof(o), .order = s->order, .limit = s->limit,
		.depth = s->depth, .data = s, .batch = batch, .cred = &s->cred,
		.flags = s->grouped ? DIRAHEAD_DIR_SHARED_READS : 0,
	};
	s->dir = dirahead_dir_submit(m->engine, fd, &o);
	close(fd);
	if (!s->dir) {
		drop_opening(s, DD_SKIP_ENGINE);
		return;
	}
	if (s->budgeted || passes_in_order(s)) /* the program did those on its own */
		dirahead_dir_set_from(s->dir, s->app_pos);
	s->life = SCAN_PREFETCHING;
	detector_scan_step(m->det, s->id, progress_step(s));
}

/* The pay-off rule's verdict (judge_payoff) acted on: false if the scan is to end (no gain). */
static bool act_on_judgment(struct scan *s, const struct judge_verdict *v)
{
	struct scan_mgr *m = s->mgr;
	if (v->judged) {
		m->st->judged++;
		m->st->judged_before_s += v->before_s;
		m->st->judged_after_s += v->after_s;
		s->judged_before_ns = v->before_s * 1e9;
		s->judged_after_ns = v->after_s * 1e9;
	}
	if (v->reset_misses)
		s->consecutive_misses = 0;
	if (v->step != JUDGE_STEP_KEEP)
		detector_scan_step(m->det, s->id, v->step == JUDGE_STEP_CONTROL ? JUDGE_CONTROL_STATS
										 : progress_step(s));
	if (v->want_timing)
		want_timing(s);
	if (v->depth && s->dir) {
		s->depth = v->depth;
		dirahead_dir_set_depth(s->dir, v->depth);
	}
	return v->act != JUDGE_NO_GAIN;
}

/* Room for a control stretch and a judged stretch after it (judge_control_room). */
static bool control_room(const struct scan *s)
{
	struct dirahead_dir_info info;
	if (!s->dir)
		return false;
	dirahead_dir_get_info(s->dir, &info);
	return judge_control_room(info.eof, info.read, s->limit, policy_gain_stats(s->mgr->pol));
}

/*
 * The pay-off rule, once per gain_stats stats while prefetching (and at the end, for a scan too
 * short for one full stretch): did the program's stats get cheaper?  false: end it as no_gain.
 */
static bool pays_off(struct scan *s, const struct dirahead_event *ev, bool final)
{
	struct scan_mgr *m = s->mgr;
	if (!policy_enabled(m->pol) || s->life == SCAN_PROBING || s->life == SCAN_OPENING)
		return true;
	/* Its process walks this filesystem: the walk's requests and listings below weigh on its
	 * stats here; what this scan shows is the walk's doing, not its own. */
	if (walk_mgr_walking(m->walks, s->tgid, s->dev_major, s->dev_minor))
		return true;
	struct judge_who w = who_of(s);
	struct judge_scan js = {
		.late = s->late, .completed = s->completed, .app_pos = s->app_pos, .limit = s->limit,
		.room = control_room(s), .depth = s->depth, .min_gain = m->cfg.min_gain,
		.final = final, .grouped = s->grouped,
	};
	struct judge_verdict v = judge_payoff(&s->j, &w, ev, &js);
	return act_on_judgment(s, &v);
}

/* Where the program's latest stat was, in our order. */
enum served { SERVED_HIT, SERVED_LATE, SERVED_MISS };
struct progress {
	enum served kind;
	uint64_t pos;               /* entries of our order the program has reached */
	bool sequential;            /* its stats walked through our order since the last event */
};

/*
 * Was the application's latest stat served by us?  One sample per event stands for the stats
 * since the last one: cheap, and right on average whatever order the app uses.  "late" (inside
 * the window, still in flight) means the prefetch is on track but not done: it is neither a hit
 * nor evidence for the stop rules.
 */
static struct progress served(const struct scan *s, const struct dirahead_event *ev,
			      uint64_t delta)
{
	struct progress p = { .pos = s->app_pos + delta };
	bool found = false;         /* pos is where its last name is in our order */
	if (s->life == SCAN_FOLLOWING) {
		p.kind = SERVED_HIT; /* every entry was fetched before the app got there */
	} else if (s->life == SCAN_OPENING) {
		p.kind = SERVED_LATE;
	} else {
		char name[DIRAHEAD_NAME_LEN + 1];
		memcpy(name, ev->name, DIRAHEAD_NAME_LEN);
		name[DIRAHEAD_NAME_LEN] = '\0';
		int64_t idx = ev->name_len < DIRAHEAD_NAME_LEN ? dirahead_dir_find(s->dir, name) : -1;
		if (idx >= 0)
			p.pos = (uint64_t)idx + 1;
		found = idx >= 0;
		p.kind = p.pos <= s->completed ? SERVED_HIT : p.pos <= s->limit ? SERVED_LATE
										    : SERVED_MISS;
	}
	/* Did its stats since the last event walk through the entries in our order (as opposed to
	 * a few names picked here and there: imports, completion)? */
	p.sequential = p.pos > s->app_pos && p.pos - s->app_pos <= 2 * delta;
	/* Misses that say nothing of where the program goes, counted as late: nothing is fetched
	 * yet (the directory is still being read, or read whole to sort it: as while opening), or
	 * the window lags a program walking our order through what is fetched (threads side by
	 * side, a busy daemon; the window grows below), or the [budget] holds it back. */
	if (p.kind == SERVED_MISS && s->life == SCAN_PREFETCHING &&
	    (!s->completed || s->budget_short || (found && p.sequential && !judge_holds(&s->j))))
		p.kind = SERVED_LATE;
	return p;
}

/* The program's stats since the last event, counted as hits, late or misses. */
static void count_served(struct scan *s, const struct progress *p, uint64_t delta)
{
	struct dd_stats *st = s->mgr->st;
	if (p->pos > s->app_pos) {
		s->app_pos = p->pos;
		if (passes_in_order(s))
			dirahead_dir_set_from(s->dir, s->app_pos);
	}
	if (s->j.control == JUDGE_CTL_MEASURE ||
	    (s->j.control == JUDGE_CTL_WAIT && p->kind == SERVED_MISS)) {
		; /* the program on its own, on purpose: no evidence for the stop rules */
	} else if (p->kind == SERVED_HIT) {
		s->hits += delta;
		st->hits += delta;
		s->consecutive_misses = 0;
	} else if (p->kind == SERVED_LATE) {
		s->late += delta;
		st->late += delta;
	} else {
		s->misses += delta;
		st->misses += delta;
		s->consecutive_misses += delta;
	}
}

/* Lustre's stop rules, then its window: grow while prefetched entries are used, that is while
 * the program's stats walk through what was fetched (a program that stats a few names of a big
 * directory, imports or completion, keeps the first window). */
static void stop_or_grow(struct scan *s, const struct progress *p)
{
	struct scan_mgr *m = s->mgr;
	uint64_t judged = s->hits + s->misses;
	if (s->hits > m->cfg.stop_min_hits && (double)s->hits < m->cfg.stop_hit_ratio * (double)judged) {
		end_scan(s, DD_END_LOW_HITS);
		return;
	}
	if (s->consecutive_misses > m->cfg.stop_consecutive_misses) {
		end_scan(s, DD_END_MISSES);
		return;
	}
	uint32_t old_step = progress_step(s);
	uint32_t max = policy_window_max(m->pol, scan_fs(s), s->j.paid);
	if (p->kind != SERVED_MISS && p->sequential && s->window < max)
		s->window = s->window * 2 > max ? max : s->window * 2;
	uint64_t limit = budget_window(s, s->app_pos + window_reach(s));
	if (limit > s->limit) {
		s->limit = limit;
		dirahead_dir_set_limit(s->dir, limit);
	}
	if (progress_step(s) != old_step)
		detector_scan_step(m->det, s->id, progress_step(s));
}

static void on_progress(struct scan_mgr *m, const struct dirahead_event *ev, bool final)
{
	/* by scan id: an event of an earlier scan of the same directory is not this one's */
	struct scan *s = find_scan_id(m, ev->scan_id);
	if (!s || scan_ended(s))
		return;
	m->st->progress_events += !final;
	/* Credentials follow the program: one that dropped (or gained) rights mid-scan is never
	 * served with the old ones.  (The END event carries none: only SCAN and PROGRESS do.) */
	if (!final && s->life != SCAN_PROBING && !procdir_cred_same(&s->cred, ev)) {
		end_scan(s, DD_END_CRED);
		return;
	}
	if (s->life == SCAN_PROBING) {
		s->last_ns = mono_ns();
		if (!final)
			end_probe(s, ev);
		return;
	}
	uint64_t delta = ev->stats > s->stats_seen ? ev->stats - s->stats_seen : 0;
	s->stats_seen = ev->stats;
	s->last_ns = mono_ns();
	if (!delta)
		return;
	struct progress p = served(s, ev, delta);
	count_served(s, &p, delta);
	if (!pays_off(s, ev, final)) {
		if (!final) {
			end_scan(s, DD_END_NO_GAIN);
			/* fetching its entries does not pay; if it walks, listing ahead still may */
			walk_mgr_candidate(m->walks, ev);
			update_timer(m);
		}
		return;
	}
	if (final || s->life != SCAN_PREFETCHING)
		return;
	if (judge_holds(&s->j))
		return; /* the window is held for the control stretch */
	stop_or_grow(s, &p);
}

static void on_end_event(struct scan_mgr *m, const struct dirahead_event *ev)
{
	for (struct pending *p = m->pending; p; p = p->next)
		if (p->ev.scan_id == ev->scan_id)
			p->ended = true;
	struct scan *s = find_scan_id(m, ev->scan_id);
	if (!s || scan_ended(s))
		return;
	s->bpf_gone = true; /* BPF has forgotten it already */
	if (s->life == SCAN_PROBING) {
		drop_probing(s, NULL, DD_SKIP_PROBE_ENDED, NULL);
		return;
	}
	on_progress(m, ev, true);
	enum dd_end_reason why;
	if (s->life == SCAN_FOLLOWING || ev->end_reason == DIRAHEAD_END_NEXT ||
	    ev->end_reason == DIRAHEAD_END_THREAD)
		why = DD_END_COMPLETED; /* the application (its thread) is done with the directory */
	else if (ev->end_reason == DIRAHEAD_END_EVICTED)
		why = DD_END_EVICTED;
	else
		why = DD_END_EXITED;
	end_scan(s, why);
}

void scan_mgr_on_scan(struct scan_mgr *m, const struct dirahead_event *ev)
{
	on_scan_event(m, ev);
}

void scan_mgr_on_progress(struct scan_mgr *m, const struct dirahead_event *ev)
{
	on_progress(m, ev, false);
}

void scan_mgr_on_end(struct scan_mgr *m, const struct dirahead_event *ev)
{
	assert(ev->scan_id != 0); /* a walker's END is the walks' */
	on_end_event(m, ev);
}

void scan_mgr_mark_interleaved(struct scan_mgr *m, const struct dirahead_event *ev)
{
	mark_interleaved(m, ev);
}

static void scan_complete(const struct dirahead_completion *c)
{
	struct scan *s = c->dir_data;
	s->failed += c->error != 0;
	s->completed += 1 + c->covered;
	s->requests++;
	policy_waits_add(&s->waits, mono_ns(), c->latency_ns);
	uint64_t unit = policy_read_unit(s->magic);
	if (unit && c->stx && policy_reads_shared(s->magic, s->dev_major))
		policy_waits_read(&s->waits, c->stx->stx_ino, unit);
}

static void scan_fs_of(const void *dir_data, struct host_fs *fs)
{
	const struct scan *s = dir_data;
	*fs = (struct host_fs){ s->dev_major, s->dev_minor, s->magic, s->mnt_id, false };
}

static void scan_dir_done(struct dirahead_dir *dir, void *dir_data, int error)
{
	struct scan *s = dir_data;
	struct scan_mgr *m = s->mgr;
	(void)dir;
	s->dir = NULL;
	if (s->life == SCAN_ENDED_DIR) {
		free_scan(s);
		return;
	}
	assert(s->life == SCAN_PREFETCHING);
	if (error == 0) {
		/* Everything is fetched: keep counting hits until the application is done, holding
		 * nothing open and no longer counting against the concurrency limits. */
		s->life = SCAN_FOLLOWING;
		assert(m->active > 0);
		m->active--;
		return;
	}
	log_debug("scan of %s by pid %u: %s", s->path, s->tgid, strerror(error));
	end_scan(s, DD_END_VANISHED);
}

static const struct host_ops scan_ops = {
	.complete = scan_complete, .fs_of = scan_fs_of, .dir_done = scan_dir_done,
};

/* The breaker of that filesystem opened: its scans end. */
static void scan_hung(void *ctx, uint32_t dev_major, uint32_t dev_minor)
{
	struct scan_mgr *m = ctx;
	for (struct scan *s = m->scans, *next; s; s = next) {
		next = s->next;
		if (!scan_ended(s) && s->dev_major == dev_major && s->dev_minor == dev_minor)
			end_scan(s, DD_END_HUNG);
	}
}

/*
 * Did BPF drop the scan without telling us (its END lost to a full ring buffer)?  Asked after
 * draining the ring, and believed on the second tick in a row only: an END submitted between the
 * drain and the lookup is read by then.
 */
static bool bpf_lost(struct scan *s)
{
	if (s->bpf_gone)
		return false;
	int r = detector_scan_alive(s->mgr->det, s->tgid, s->bdev_major, s->bdev_minor, s->bino,
				    s->id);
	if (r != 0) {
		s->gone_ticks = 0;
		return false;
	}
	if (++s->gone_ticks < 2)
		return false;
	s->bpf_gone = true;
	log_debug("scan of %s by pid %u: the detector has no state for it any more", s->path,
		  s->tgid);
	return true;
}

/* The host's tick: scans BPF lost, and idle ones, end. */
static void scan_tick(void *ctx, uint64_t t)
{
	struct scan_mgr *m = ctx;
	uint64_t idle = (uint64_t)m->cfg.idle_timeout_ms * 1000000ull;
	for (struct scan *s = m->scans, *next; s; s = next) {
		next = s->next;
		if (scan_ended(s))
			continue;
		if (bpf_lost(s)) {
			if (s->life == SCAN_PROBING)
				drop_probing(s, NULL, DD_SKIP_PROBE_ENDED, NULL);
			else
				end_scan(s, DD_END_EVICTED);
		} else if (t - s->last_ns > idle) {
			end_scan(s, s->life == SCAN_FOLLOWING ? DD_END_COMPLETED : DD_END_IDLE);
		}
	}
}

static bool scan_busy(const void *ctx)
{
	const struct scan_mgr *m = ctx;
	return m->nscans || m->pending;
}

struct scan_mgr *scan_mgr_new(const struct dd_config *cfg, struct detector *det,
			      struct dd_stats *st, struct host *host, struct walk_mgr *walks)
{
	struct scan_mgr *m = calloc(1, sizeof(*m));
	if (!m)
		return NULL;
	*m = (struct scan_mgr){ .cfg = *cfg, .det = det, .st = st, .host = host, .walks = walks,
				.engine = host_engine(host), .openers = host_openers(host),
				.pol = host_policy(host) };
	walk_mgr_set_room(walks, user_room, m);
	host_add_client(host, &(struct host_client){ .tick = scan_tick, .hung = scan_hung,
						      .busy = scan_busy, .ctx = m });
	return m;
}

void scan_mgr_reconfigure(struct scan_mgr *m, const struct dd_config *cfg)
{
	m->cfg = *cfg;
	if (!cfg->enabled) {
		struct scan *s, *next;
		for (s = m->scans; s; s = next) {
			next = s->next;
			end_scan(s, DD_END_SHUTDOWN);
		}
	}
}

unsigned scan_mgr_active(const struct scan_mgr *m) { return m->active; }
unsigned scan_mgr_walks(const struct scan_mgr *m) { return walk_mgr_count(m->walks); }
unsigned scan_mgr_tracked(const struct scan_mgr *m) { return m->nscans + (m->pending != NULL); }
unsigned scan_mgr_openers_stuck(const struct scan_mgr *m) { return opener_stuck(m->openers); }

uint64_t scan_mgr_inflight(const struct scan_mgr *m) { return host_inflight(m->host); }

struct policy *scan_mgr_policy(struct scan_mgr *m) { return m->pol; }

void scan_mgr_set_timing_hook(struct scan_mgr *m, void (*fn)(void *), void *ctx)
{
	m->want_timing = fn;
	m->want_timing_ctx = ctx;
}

unsigned scan_mgr_probing(const struct scan_mgr *m)
{
	unsigned n = 0;
	for (const struct scan *s = m->scans; s; s = s->next)
		n += s->life == SCAN_PROBING;
	return n;
}

const char *scan_mgr_backend(const struct scan_mgr *m) { return host_backend(m->host); }

static void walk_info_cb(const struct walk_info *w, void *ctx)
{
	struct fe { void (*fn)(const struct scan_info *, void *); void *ctx; } *fe = ctx;
	struct scan_info i = {
		.pid = w->pid, .comm = w->comm, .path = w->path, .entries = w->entries,
		.app_pos = w->dirs_visited, .window = w->dirs_ahead, .state = "walking",
		.age_s = w->age_s,
	};
	fe->fn(&i, fe->ctx);
}

void scan_mgr_foreach(struct scan_mgr *m, void (*fn)(const struct scan_info *, void *), void *ctx)
{
	uint64_t t = mono_ns();
	for (struct scan *s = m->scans; s; s = s->next) {
		if (scan_ended(s))
			continue;
		struct scan_info i = {
			.pid = s->tgid, .comm = s->comm, .path = s->path, .entries = s->completed,
			.app_pos = s->app_pos, .window = s->window, .hits = s->hits,
			.misses = s->misses, .state = life_names[s->life],
			.age_s = (double)(t - s->start_ns) / 1e9,
		};
		fn(&i, ctx);
	}
	struct fe { void (*fn)(const struct scan_info *, void *); void *ctx; } fe = { fn, ctx };
	walk_mgr_foreach(m->walks, walk_info_cb, &fe);
}

void scan_mgr_stop(struct scan_mgr *m)
{
	for (struct scan *s = m->scans, *next; s; s = next) {
		next = s->next;
		if (!scan_ended(s))
			end_scan(s, DD_END_SHUTDOWN);
	}
}

void scan_mgr_free(struct scan_mgr *m)
{
	if (!m)
		return;
	struct scan *s;
	while ((s = m->scans)) {
		m->scans = s->next;
		discard(s);
	}
	while (m->pending) {
		struct pending *p = m->pending;
		m->pending = p->next;
		free(p);
	}
	free(m);
}
