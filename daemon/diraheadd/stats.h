/* SPDX-License-Identifier: LGPL-2.1-or-later OR BSD-2-Clause */
/*
 * The daemon's statistics, kept in memory, and the one table that declares each of them for
 * both its renderings: `diraheadctl stats` (control.c, JSON) and the metrics page (metrics.c,
 * Prometheus text).  A new statistic is a field here and a row in dd_stat_rows (stats.c).
 */
#ifndef DIRAHEAD_STATS_H
#define DIRAHEAD_STATS_H

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "dirahead_event.h"

/* Why a scan or a walk (walk.h) ended: one family; the third field says whom a reason ends
 * (DD_ENDS_SCAN, DD_ENDS_WALK).  COMPLETED: every entry was prefetched, or the application
 * finished the directory; the rest are aborts. */
#define DD_ENDS_SCAN 0x1
#define DD_ENDS_WALK 0x2
#define DD_ENDS_BOTH (DD_ENDS_SCAN | DD_ENDS_WALK)
#define DD_END_REASONS(X)                                                                          \
	X(COMPLETED, "completed", DD_ENDS_SCAN)                                                    \
	X(EXITED, "process_exited", DD_ENDS_BOTH)    /* the program exited or exec'ed mid-way */   \
	X(IDLE, "idle", DD_ENDS_BOTH)          /* no progress (listing) for idle_timeout_ms */     \
	X(LOW_HITS, "low_hit_ratio", DD_ENDS_SCAN)   /* Lustre: hit ratio under stop_hit_ratio */  \
	X(MISSES, "consecutive_misses", DD_ENDS_SCAN)                                              \
	X(VANISHED, "directory_gone", DD_ENDS_SCAN)  /* removed, renamed or unreadable mid-way */  \
	X(EVICTED, "evicted", DD_ENDS_SCAN)    /* the detector dropped its state */                \
	X(SHUTDOWN, "shutdown", DD_ENDS_BOTH)  /* the daemon stopped or was disabled */            \
	X(NO_GAIN, "no_gain", DD_ENDS_BOTH)    /* what it did ahead did not pay */                 \
	X(HUNG, "fs_hung", DD_ENDS_BOTH)       /* its requests hang: the breaker opened */         \
	X(CRED, "credentials_changed", DD_ENDS_BOTH) /* the program's credentials changed */       \
	X(LEFT, "left_tree", DD_ENDS_WALK)     /* the walker listed a directory outside the tree */\
	X(FAST, "fast_listings", DD_ENDS_WALK) /* listing only, and the listings wait for nothing */\
	X(OPEN_FAILED, "open_failed", DD_ENDS_WALK) /* the tree's top could not be opened */

/* Why a confirmed scan was not prefetched. */
#define DD_SKIP_REASONS(X)                                                                         \
	X(PSEUDO_FS, "pseudo_fs")                                                                  \
	X(FILTERED, "filtered")        /* excluded by the [filter] settings */                     \
	X(BUSY, "busy")                /* max_scans or max_scans_per_process reached */            \
	X(DUPLICATE, "duplicate")      /* that process's scan of that directory is running */      \
	X(OPEN_FAILED, "open_failed")  /* the directory could not be opened through /proc */       \
	X(MISMATCH, "mismatch")        /* what opened was not the directory BPF saw */             \
	X(SMALL, "small")              /* below min_dir_size */                                    \
	X(ENGINE, "engine")            /* the engine refused it */                                 \
	X(DRY_RUN, "dry_run")                                                                      \
	X(FAST, "fast_stats")          /* the program's stats already cost less than prefetch */  \
	X(FS_NO_GAIN, "fs_no_gain")    /* prefetch did not pay on this filesystem lately */        \
	X(PROBE_ENDED, "probe_ended")  /* the program was done before the probe was */            \
	X(WALKED, "walked")            /* the process's walk (walk.h) covers it already */      \
	X(OPENERS_BUSY, "openers_busy")/* every opener thread busy (stuck on a hung filesystem) */ \
	X(USER_BUSY, "user_busy")      /* max_scans_per_user or _per_cgroup reached */            \
	X(FS_HUNG, "fs_hung")          /* its filesystem's requests hang (the breaker is open) */  \
	X(CRED, "credentials")         /* its credentials could not be taken whole (groups) */    \
	X(OPENERS_USER, "openers_user")/* the user's share of the openers is in use (stuck) */    \
	X(PATH_MISMATCH, "path_mismatch") /* a run by path: the directory its path leads to now  \
					   * does not hold the file the program's stat saw */      \
	X(OUTSIDE_ROOT, "outside_root") /* a relative path of a program whose cwd is outside its \
					 * root (a chroot without chdir) */                       \
	X(SERIAL_LOOKUPS, "serial_lookups") /* its filesystem serializes lookups in a directory  \
					     * (FUSE without parallel dirops): no lookups sent   \
					     * there, a walk may still list ahead (fsknow.h) */

/* What became of a request to the metrics endpoint (httpd.c). */
#define DD_HTTP_RESULTS(X)                                                                         \
	X(OK, "ok")                                                                                \
	X(BAD_HOST, "bad_host")        /* Host header of another name: DNS rebinding */           \
	X(NOT_FOUND, "not_found")                                                                  \
	X(BAD_METHOD, "bad_method")    /* not GET or HEAD */                                      \
	X(FORBIDDEN, "forbidden")      /* [metrics] access = control-group: a peer outside it */   \
	/* connections closed unanswered: that uid's (or remote address's) are at the limit; */     \
	X(PEER_LIMIT, "refused_peer_limit")                                                        \
	/* ... all are taken (all but root's reserve, for others) */                               \
	X(TOTAL_LIMIT, "refused_total_limit")                                                      \
	X(TOO_SLOW, "closed_too_slow") /* open past its lifetime (slow or idle client): closed */

#define X_ENUM(e, s) DD_HTTP_##e,
enum dd_http_result { DD_HTTP_RESULTS(X_ENUM) DD_HTTP_MAX };
#undef X_ENUM
#define X_ENUM(e, s, who) DD_END_##e,
enum dd_end_reason { DD_END_REASONS(X_ENUM) DD_END_MAX };
#undef X_ENUM
#define X_ENUM(e, s) DD_SKIP_##e,
enum dd_skip_reason { DD_SKIP_REASONS(X_ENUM) DD_SKIP_MAX };
#undef X_ENUM

/* Why opener_run() (opener.h) refused a job: its -errno as a skip reason. */
static inline enum dd_skip_reason dd_skip_of_opener(int r)
{
	return r == -EUSERS ? DD_SKIP_OPENERS_USER : r == -EBUSY ? DD_SKIP_OPENERS_BUSY : DD_SKIP_ENGINE;
}

/* errno classes for errors of prefetch requests */
enum dd_err_class { DD_ERR_ENOENT, DD_ERR_EACCES, DD_ERR_EIO, DD_ERR_OTHER, DD_ERR_MAX };

#define DD_LAT_BUCKETS 12
/* Filesystem types time saved is kept for; more go to the last, "other". */
#define DD_SAVED_TYPES 12

struct dd_stats {
	uint64_t scans_confirmed;        /* SCAN events received */
	uint64_t scans_unlisted;         /* ... of them for runs of stats without a listing */
	uint64_t scans_started;          /* prefetch started */
	uint64_t scans_ended[DD_END_MAX];
	uint64_t skips[DD_SKIP_MAX];
	uint64_t entries_prefetched;     /* prefetch requests completed without error, and the
					  * entries they read for their inode group */
	uint64_t entries_grouped;        /* ... the latter (DIRAHEAD_DIR_SHARED_READS) */
	uint64_t hits;                   /* the application's stat found the entry fetched */
	uint64_t late;                   /* ... found it in flight */
	uint64_t misses;                 /* ... ahead of the window */
	uint64_t errors[DD_ERR_MAX];
	uint64_t progress_events;
	uint64_t scans_muted;            /* scans the cost model muted in BPF */
	uint64_t orders_learnt[2];       /* scans fetched sorted as the program stats: inode, name */
	uint64_t entries_wasted;         /* prefetched, scan over, never found by the program */
	/* the program's per-stat cost in judged stretches, without and with prefetch */
	double judged_before_s, judged_after_s;
	uint64_t judged;
	/* tree-ahead */
	uint64_t walks_started;
	uint64_t walks_list_only;        /* ... listing only (DIRAHEAD_DIR_LIST_ONLY), or turned so */
	uint64_t walks_ahead_only;       /* ... fetching only ahead of the program (lookups serialize) */
	uint64_t walks_by_runs;          /* ... following runs of stats without a listing (walk.h) */
	uint64_t walk_candidates;        /* processes watched for a walk after a skipped scan */
	uint64_t walk_entries_used;      /* fetched by walks in directories the program listed */
	uint64_t walks_ended[DD_END_MAX];
	uint64_t walk_listings;          /* listings of walkers reported by the detector */
	uint64_t walk_dirs_opened;       /* directories the walks listed */
	uint64_t walk_dirs_ahead;        /* ... that the program listed after the walk had opened them */
	uint64_t walk_dirs_late;         /* ... that the program listed before the walk got there */
	uint64_t walk_dirs_skipped;      /* opened ahead, then passed over by the program (pruned) */
	uint64_t walk_not_entered;       /* subdirectories not entered: mount points, failures */
	uint64_t walk_depths_rejudged;   /* depths of list-only walks judged to pay on a blocked stat */
	uint64_t walk_dirs_refetched;    /* directories listed only, then fetched at such a depth */
	uint64_t reloads_ok, reloads_failed;
	uint64_t http_requests[DD_HTTP_MAX];  /* requests to the metrics endpoint */
	/* prefetch request latency: cumulative-on-output buckets, upper bounds dd_latency_bounds */
	uint64_t lat_bucket[DD_LAT_BUCKETS + 1];
	uint64_t lat_count;
	double lat_sum_s;
	/* Time saved (dd_stats_saved, policy_saved_*): the programs' seconds, estimated, net in
	 * total; by filesystem type what scans and walks saved and, apart, what those that cost
	 * their program time lost (metrics are counters: they never go down); the scans and walks
	 * that had figures for an estimate. */
	double saved_s;
	uint64_t saved_scans, saved_walks;
	struct dd_saved_type {
		const char *fstype;      /* fsmagic_name(), "unknown"; NULL: a free slot */
		double gained, lost;     /* sums of the positive estimates, of the negative ones' size */
	} saved_by[DD_SAVED_TYPES];
	double cpu_s;                    /* the daemon's CPU time (dd_process_cpu_s) when read */
	/* [budget] (budget.h): requests the budget let go to filesystems under a rule, and entries
	 * it held back that the program then reached (it stat'ed them itself; never sent) */
	uint64_t budget_granted, budget_held_back;
};

extern const double dd_latency_bounds[DD_LAT_BUCKETS];
void dd_stats_latency(struct dd_stats *s, uint64_t ns);

extern const char *const dd_end_reason_names[DD_END_MAX];
extern const char *const dd_skip_reason_names[DD_SKIP_MAX];
/* The names of the reasons that end scans (walks), NULL for the others: for the renderings */
extern const char *const dd_scan_end_names[DD_END_MAX];
extern const char *const dd_walk_end_names[DD_END_MAX];
extern const char *const dd_err_class_names[DD_ERR_MAX];
extern const char *const dd_http_result_names[DD_HTTP_MAX];
enum dd_err_class dd_err_class_of(int err);

/* One moment of everything the table shows: the daemon's counters and what it reads from its
 * parts (the detector's counters, the scan manager's gauges); statsview.h fills it. */
struct dd_stats_view {
	struct dd_stats s;
	uint64_t det[DIRAHEAD_CNT_MAX];  /* the detector's counters, by enum dirahead_counter */
	uint64_t active_scans, requests_in_flight, active_walks, openers_stuck;
	double entry_cost_ns;            /* the cost model's measure (policy_entry_cost_ns) */
	/* derived by dd_stats_view_derive() */
	double app_stat_us_before, app_stat_us_prefetch; /* per judgment: the mean cost per stat */
	double entry_cost_us, entry_cost_s;
};
/* The derived fields of v from the others. */
void dd_stats_view_derive(struct dd_stats_view *v);

enum dd_stat_shape {
	DD_STAT_VALUE,   /* one uint64_t, or a double with f64 */
	DD_STAT_REASONS, /* uint64_t[n], one per names[i]: a JSON object; one label value each */
	DD_STAT_PARTS,   /* a family of separate fields: JSON keys of their own; one label value each */
	DD_STAT_HOOK,    /* rendered by the renderer itself: histograms, arming, filesystems */
};

/* The sections that are more than values of the view. */
enum dd_stat_hook {
	DD_STAT_HOOK_BUILD_INFO,
	DD_STAT_HOOK_PREFETCH_LATENCY,
	DD_STAT_HOOK_APP_LATENCY,
	DD_STAT_HOOK_ARM,
	DD_STAT_HOOK_FILESYSTEMS,
	DD_STAT_HOOK_PROGRAMS,
	DD_STAT_HOOK_SAVED,       /* time saved by filesystem type */
};

#define DD_STAT_PARTS_MAX 5
struct dd_stat_part {
	const char *json;       /* its key in the JSON; NULL: not there */
	const char *label;      /* its label value in the metric family; NULL: the end of the parts */
	size_t off, json_off;   /* in struct dd_stats_view: the metric's value, the JSON's */
};

/* One statistic: its JSON key and its metric family, side by side.  Offsets are into struct
 * dd_stats_view; the JSON's differs from the metric's where the two show it in other units. */
struct dd_stat_row {
	enum dd_stat_shape shape;
	const char *json;       /* key in `diraheadctl stats` (VALUE, REASONS); NULL: a metric only */
	const char *metric;     /* Prometheus family; NULL: in the JSON only */
	const char *type;       /* "counter" or "gauge" */
	const char *help;
	bool f64;               /* VALUE, PARTS: doubles, not uint64_t */
	size_t off, json_off;   /* VALUE, REASONS */
	const char *label;      /* REASONS, PARTS: the label's name */
	int n;                  /* REASONS: how many, named by names[] */
	const char *const *names;
	bool merge;             /* REASONS: reason `hidden` is counted as reason `into` in the
				 * metric (the JSON keeps them apart) */
	int hidden, into;
	struct dd_stat_part part[DD_STAT_PARTS_MAX];
	enum dd_stat_hook hook;
};

/* Every statistic, in the order both renderings show them. */
extern const struct dd_stat_row dd_stat_rows[];
extern const size_t dd_stat_nrows;

static inline uint64_t dd_stat_u64(const struct dd_stats_view *v, size_t off)
{
	return *(const uint64_t *)((const char *)v + off);
}
static inline double dd_stat_f64(const struct dd_stats_view *v, size_t off)
{
	return *(const double *)((const char *)v + off);
}
/* REASONS: reason i's value in the metric.  false: the metric does not show it (merged). */
bool dd_stat_reason_metric(const struct dd_stat_row *r, const struct dd_stats_view *v, int i,
			   uint64_t *out);

/* The cost model's statistics of one filesystem (struct pol_fs, policy.h): a JSON object per
 * filesystem, a metric family per row with a sample per filesystem (labels device, fstype). */
enum dd_fs_kind {
	DD_FS_VERDICT, /* enum pol_verdict: its name in the JSON, 1 for it and 0 for the others */
	DD_FS_UINT,    /* unsigned */
	DD_FS_U64,     /* uint64_t */
	DD_FS_NS,      /* double, nanoseconds: microseconds in the JSON, seconds in the metric */
	DD_FS_SECONDS, /* double, seconds in both */
};

struct dd_fs_field {
	const char *json;       /* its key in the filesystem's JSON object */
	const char *label;      /* its label value in the family; NULL: a family without label */
	size_t off;             /* in struct pol_fs */
};

struct dd_fs_row {
	enum dd_fs_kind kind;
	const char *metric;     /* NULL: in the JSON only */
	const char *type, *help;
	const char *label;      /* the label's name, if the fields have values for it */
	struct dd_fs_field field[DD_STAT_PARTS_MAX]; /* up to the first without a JSON key */
};

extern const struct dd_fs_row dd_fs_rows[];
extern const size_t dd_fs_nrows;

/* A scan or walk (walk: true) ended having saved its program s seconds (policy_saved_scan_s,
 * _walk_s) on fs (its saved_s too; NULL: none known) of type `fstype` (fsmagic_name(); NULL:
 * "unknown"); had_figures: the estimate rests on measured figures (without, s is 0 and nothing
 * is booked, not even the scan).  The one place time saved is booked. */
struct pol_fs;
void dd_stats_saved(struct dd_stats *st, struct pol_fs *fs, const char *fstype, double s,
		    bool had_figures, bool walk);
/* The daemon process's CPU time so far, user and system, every thread: seconds. */
double dd_process_cpu_s(void);

/* What the scans did between two snapshots of the counters, as one line for the log (no path, no
 * PID): scans confirmed, started, ended and skipped (with their reasons), walks, entries,
 * hits, misses, errors.  Empty when none of these moved.  Returns strlen(buf). */
size_t dd_stats_summary(const struct dd_stats *now, const struct dd_stats *prev, char *buf, size_t len);

#endif
