/* SPDX-License-Identifier: LGPL-2.1-or-later OR BSD-2-Clause */
/*
 * The cost model ("do no harm"): decides, per scan and per filesystem, whether prefetching pays.
 *
 *   start rule   a confirmed scan whose stats already cost the program less than start_factor x
 *                what a prefetched entry costs the daemon (measured) is not prefetched, and muted;
 *   pay-off rule once prefetching, the program's per-stat cost must fall by min_gain within
 *                gain_stats stats, or the scan ends as no_gain;
 *   memory       per filesystem (superblock): the verdict, the depth that worked, the program's
 *                cost before and with prefetch, the daemon's cost per entry.  A filesystem where
 *                prefetch did not pay is skipped at the SCAN event until reprobe_s has passed
 *                (doubling on each failure), or at once when the program's cost there changes
 *                clearly (caches went cold).
 *
 * Pure bookkeeping: no I/O, no clock of its own (callers pass CLOCK_MONOTONIC ns), so the unit
 * tests drive it directly.
 */
#ifndef DIRAHEAD_POLICY_H
#define DIRAHEAD_POLICY_H

#include <stdbool.h>
#include <stdint.h>
#include "config.h"
#include "dirahead_event.h"

enum pol_verdict {
	POL_UNKNOWN = 0, /* nothing judged yet (or forgotten) */
	POL_PAYS,        /* the last judged scan gained */
	POL_NO_GAIN,     /* the last judged scan did not: skip until re-probe */
	POL_FAST,        /* the last probe found stats already cheaper than prefetch */
	POL_VERDICT_MAX,
};
extern const char *const pol_verdict_names[POL_VERDICT_MAX];

enum pol_action {
	POL_START,        /* prefetch now */
	POL_PROBE,        /* time probe_stats more stats first, then policy_after_probe() */
	POL_SKIP_FAST,    /* the program's stats are already fast: mute */
	POL_SKIP_NO_GAIN, /* this filesystem's verdict is no_gain: mute */
};

/* A scan's cumulative signals from one event (see struct dirahead_event). */
struct pol_sample {
	uint64_t stats, t_first, t_last, lat_sum, lat_n;
};

/* The program's mean cost per stat over a stretch of a scan; < 0: not enough data. */
struct pol_cost {
	double lat_ns; /* mean duration of the stats sys_enter timed */
	double gap_ns; /* mean time from one matched stat to the next (the progress rate) */
	uint64_t gap_n; /* the intervals gap_ns is the mean of */
};

/* A filesystem's listing verdict is judged every this many programs' listings of directories
 * listed ahead (policy_list_judge). */
#define POL_LIST_RECENT 8
struct pol_fs {
	uint32_t dev_major, dev_minor;
	uint64_t magic, mnt_id;
	enum pol_verdict verdict;
	uint64_t verdict_ns;       /* when it was set */
	uint64_t reprobe_ns;       /* NO_GAIN: not before this */
	unsigned backoff;          /* reprobe_s multiplier: 1, 2, 4 ... 16 */
	double no_gain_cost_ns;    /* the program's cost when no_gain was decided */
	unsigned depth;            /* requests in flight per scan that worked here */
	double before_ns, after_ns;/* EWMA of the program's cost without and with prefetch */
	double probed_ns;          /* EWMA of the program's cost per stat at the start of the scans
				    * prefetched here (probe or confirming stats): the time saved's
				    * figure where no scan was judged (policy_saved_scan_s) */
	double cost_ns;            /* EWMA of the daemon's CPU per prefetched entry here; 0: unmeasured */
	double pf_lat_ns;          /* EWMA of the prefetch request latency */
	double raised_at_lat_ns;   /* pf_lat_ns when depth was last raised; 0: not since */
	uint64_t scans, started, gained, no_gain, skipped_fast, skipped_no_gain, reprobes;
	uint64_t rejudged;         /* fast verdicts cleared by a blocked call (policy_blocked) */
	/* A blocked call re-judges a fast filesystem at most once per FAST_TRUST_NS x fast_backoff
	 * (2, 4 ... 64 after each re-judgment that found it fast again): a warm filesystem's
	 * calls also sleep now and then (writeback, its journal, a lock), and each re-judgment arms
	 * the syscall hooks for quiet_s at least. */
	unsigned fast_backoff;     /* 0: no re-judgment found it fast yet */
	uint64_t rejudge_after_ns; /* FAST: blocked calls before this leave it fast */
	bool rejudging;            /* cleared by a blocked call: the next verdict says if it was */
	uint32_t fsinfo;           /* DIRAHEAD_FSI_*: what the kernel said of it (fsknow.h), 0 if
				    * nothing yet */
	unsigned doubts;           /* no-gain stretches in a row while PAYS (hysteresis) */
	uint64_t hung_until;       /* the breaker: its requests hung, nothing is sent before this */
	uint64_t stall_since;      /* a request has been outstanding long since then (0: none) */
	uint64_t hung;             /* times the breaker opened */
	uint64_t last_ns;          /* last use, for eviction */
	double saved_s;            /* program time its scans and walks saved (dd_stats_saved) */
	/* Tree-ahead's listings (walk.c): does listing a directory before the program pay here? */
	struct pol_list {
		enum pol_verdict verdict; /* PAYS; NO_GAIN: the program's listings are no faster for
					   * it; FAST: listing costs the filesystem nothing (CPU
					   * bound), ahead it only takes CPU from the program */
		uint64_t verdict_ns, reprobe_ns;
		unsigned backoff;
		double wall_ns, cpu_ns;  /* EWMA: the daemon reading a directory here */
		double first_ns;         /* EWMA: ... its first getdents of it (like a program's) */
		double ahead_ns, own_ns; /* EWMA: the program's listing of a directory listed ahead
					  * of it, and of one it came to first */
		/* the last POL_LIST_RECENT of those listed ahead, which the pay-off rule judges by
		 * (their median, policy_list_judge) */
		float recent_ahead_ns[POL_LIST_RECENT];
		unsigned n_wall, n_ahead, n_own; /* samples since the last verdict */
		uint64_t judged, reprobes;
	} list;
};

struct policy;

struct policy *policy_new(const struct dd_config *cfg);
void policy_free(struct policy *p);
/* The config changed: knobs apply from now; what was learned stays. */
void policy_reconfigure(struct policy *p, const struct dd_config *cfg);
bool policy_enabled(const struct policy *p);

void pol_sample_of(struct pol_sample *s, const struct dirahead_event *ev);
/* Cost between two samples of one scan; from == NULL: from the scan's first stat. */
void pol_cost_between(const struct pol_sample *from, const struct pol_sample *to, struct pol_cost *c);

/*
 * Is a lookup by mount id `seen` of the entry of a device last seen through mount `had` a new
 * mount of that device (policy_fs_mount() starts its memory afresh)?  Not where either is 0 (not
 * known: a sentinel event, a path found without BPF; the first known id takes the entry) nor
 * for an adoptable restored memory (POL_MNT_ADOPT).  Mount ids the kernel never reuses
 * (mnt_id_unique, 6.8+: from POL_MNT_UNIQUE up) are in the order the mounts were made, and an
 * older one is no new mount: the last requests of a mount that was replaced complete after the
 * new one's first events (each run of a benchmark's fresh slowfs mount flipped its memory back
 * and forth, losing its judgments), or a bind mount of the same filesystem is used beside it.
 * Reusable ids (older kernels) cannot be ordered: any change is a new mount.
 */
#define POL_MNT_UNIQUE (1ull << 31)
bool policy_new_mount(uint64_t had, uint64_t seen);
/* The filesystem's state, created (evicting the least recently used) if new.  Never NULL.
 * mnt_id (struct dirahead_event.mnt_id) tells a new mount that got an old device number from
 * the old one: its entry starts afresh (policy_new_mount).  policy_fs(): mount 0. */
struct pol_fs *policy_fs_mount(struct policy *p, uint32_t dev_major, uint32_t dev_minor,
			       uint64_t magic, uint64_t mnt_id, uint64_t now);
struct pol_fs *policy_fs(struct policy *p, uint32_t dev_major, uint32_t dev_minor, uint64_t magic,
			 uint64_t now);
/* The least per-stat cost of the program that prefetch can beat on this filesystem. */
double policy_threshold_ns(const struct policy *p, const struct pol_fs *fs);

/* At the SCAN event: c is the cost of the confirming stats. */
enum pol_action policy_on_scan(struct policy *p, struct pol_fs *fs, const struct pol_cost *c,
			       uint64_t now);
/* At the end of the probe: POL_START or POL_SKIP_FAST. */
enum pol_action policy_after_probe(struct policy *p, struct pol_fs *fs, const struct pol_cost *c,
				   uint64_t now);
/* Depth for a scan starting now. */
unsigned policy_depth(const struct policy *p, const struct pol_fs *fs);

/*
 * The pay-off rule, for a stretch of gain_stats stats while prefetching: before and after are
 * the program's costs without and with prefetch; late_frac is the share of its stats that found
 * their entry still in flight.  Returns true if prefetch pays (go on), false for no_gain (end).
 * Updates the verdict and the depth; a short_stretch (a scan's last, fewer than gain_stats
 * stats) that shows no gain ends its scan only and leaves the verdict as it was.
 */
bool policy_judge(struct policy *p, struct pol_fs *fs, const struct pol_cost *before,
		  const struct pol_cost *after, double late_frac, bool short_stretch, uint64_t now);
/* The gain rule of policy_judge(): the program's cost per stat before (b) and with prefetch (a),
 * in ns, differ by min_gain. */
bool policy_gains(const struct policy *p, double b, double a);
/* The program's time per stat before and with prefetch that policy_judge() compares: progress
 * rates where both are known, else timed durations; < 0: unknown. */
void policy_judged_costs(const struct pol_cost *before, const struct pol_cost *after, double *b,
			 double *a);
/* Stats after prefetch started before each judgment. */
unsigned policy_gain_stats(const struct policy *p);
unsigned policy_probe_stats(const struct policy *p);
unsigned policy_mute_ms(const struct policy *p);

/* The daemon's CPU time spent over a stretch in which `entries` prefetches completed; `fs` is
 * the filesystem they all belong to, or NULL if several.  The stretch counts by its entries
 * (from 32 on), so one-off work in a short stretch moves the figure little. */
void policy_account_cpu(struct policy *p, struct pol_fs *fs, uint64_t cpu_ns, uint64_t entries);
/* A prefetch request on fs completed after latency_ns. */
void policy_account_latency(struct pol_fs *fs, uint64_t latency_ns);

/*
 * Tree-ahead's listings.  A walk that lists ahead of the program (walk.c) feeds two figures per
 * directory: what the daemon's own open and read cost (wall and CPU time), and what the
 * program's listing then cost (timed by BPF from its open to its end), as a directory the walk
 * had listed ahead of it or one it came to first.
 *
 * policy_list_allowed(): may a walk list ahead here now?  No while the verdict is NO_GAIN or
 * FAST, until reprobe_s (doubling on each failure) has passed.
 * policy_list_account(): the daemon listed a directory; after a few, a listing whose wall time
 * is not clearly above its CPU time (it waits for nothing) makes the verdict FAST.
 * policy_list_judge(): the program listed a directory; once enough were listed ahead of it, the
 * listing pays if the program's listing of those is min_gain faster than its own first listings
 * (or, before it made enough of those, than the daemon's first getdents of a directory: what
 * the program times is its open to its first getdents), else NO_GAIN.
 * Both return the verdict after the sample.
 */
bool policy_list_allowed(struct policy *p, struct pol_fs *fs, uint64_t now);
/* What the program's listing of a directory of a walk is a sample of: POL_LIST_OWN if the walk
 * had not opened it, POL_LIST_AHEAD if the walk had read it whole (by eof_ns, 0: not yet)
 * before the program began (from_ns, 0: not known), else POL_LIST_JOINED: the program waited
 * on the walk's reads in flight (both wait for the same block), a sample of neither. */
enum pol_list_kind { POL_LIST_JOINED = -1, POL_LIST_OWN = 0, POL_LIST_AHEAD = 1 };
enum pol_list_kind policy_list_kind(bool walk_opened, uint64_t eof_ns, uint64_t from_ns);
enum pol_verdict policy_list_account(struct policy *p, struct pol_fs *fs, uint64_t wall_ns,
				     uint64_t cpu_ns, uint64_t first_ns, uint64_t now);
enum pol_verdict policy_list_judge(struct policy *p, struct pol_fs *fs, bool ahead,
				   uint64_t prog_ns, uint64_t now);

/*
 * The breaker.  policy_stalled(): a request to fs has been outstanding for the engine's stall
 * time; policy_answered(): one of its requests completed.  policy_check_hung() opens the breaker
 * of every filesystem that stalled and answered nothing for HUNG_DETECT (2 s), calling
 * opened(fs) for each (its scans and walks end); policy_hung() is true while it is open (10 s,
 * or until the filesystem answers), and nothing new is sent to it meanwhile.  An opener stuck
 * there opens it too (policy_fs_hung).
 */
void policy_stalled(struct pol_fs *fs, uint64_t now);
void policy_answered(struct pol_fs *fs);
void policy_fs_hung(struct pol_fs *fs, uint64_t now);
bool policy_hung(const struct pol_fs *fs, uint64_t now);
void policy_check_hung(struct policy *p, uint64_t now, void (*opened)(struct pol_fs *, void *),
		       void *ctx);

/*
 * Arming (arm.h): may a metadata call that blocked on this filesystem attach the detector's
 * syscall hooks?  Not while its verdict says prefetch would not be started there (no_gain before
 * its re-probe, fast while trusted) nor while its breaker is open; a filesystem never seen, or
 * one due for a re-probe, yes.  Looks up by device and magic (any mount); creates nothing.
 */
enum pol_arm { POL_ARM_YES, POL_ARM_FAST, POL_ARM_NO_GAIN, POL_ARM_HUNG };
enum pol_arm policy_arm_verdict(const struct policy *p, uint32_t dev_major, uint32_t dev_minor,
				uint64_t magic, uint64_t now);

/* Whether the stats on this filesystem are judged fast, trusted still or not (the sentinel's
 * brief spells of blocking do not overturn that: arm_overturns_fast). */
/* Does listing ahead of walkers pay on this filesystem (its listing verdict)? */
bool policy_lists_pay(const struct policy *p, uint32_t dev_major, uint32_t dev_minor,
		      uint64_t magic);
bool policy_judged_fast(const struct policy *p, uint32_t dev_major, uint32_t dev_minor,
			uint64_t magic);

/*
 * A metadata call blocked on this filesystem (the sentinel's signal): evidence that outweighs an
 * earlier `fast` (issue 24 item 2: a verdict reached at the top of a tree, warm, does not hold
 * for its cold leaves).  A trusted FAST verdict, of stats or of listings, is forgotten so that
 * the next scan there is probed again and a walk may list ahead (its process is unmuted by the
 * caller).  NO_GAIN stays: prefetch was tried there while calls blocked, and did not pay.
 * Looks up by device and magic; creates nothing.  Returns whether a verdict was cleared.
 */
bool policy_blocked(struct policy *p, uint32_t dev_major, uint32_t dev_minor, uint64_t magic,
		    uint64_t now);

/*
 * Where the cost is, within a walk (issue 24 item 2): a verdict reached on one directory does not
 * decide a tree.  The top of a tree is directories, whose inodes are cached or cheap; its leaves
 * hold the files, whose stats may each wait for the disk or the server.  A walk that lists only
 * because its program's stats were judged fast (at its top) keeps, per depth below its top,
 * whether fetching the entries of the directories at that depth pays: unknown (list only, as
 * judged at the top) until the program's stats block there (the sentinel's signal: a blocked
 * call outweighs an earlier `fast`), then it pays at that depth only.  Deeper levels than
 * POL_WALK_DEPTHS - 1 share the last entry.  A walk that lists only because prefetching did not
 * pay there (no_gain) or where lookups serialize is not judged again by a blocked stat: stats
 * block there all the time, and per-entry lookups were found to do harm.
 */
#define POL_WALK_DEPTHS 16
struct pol_depths {
	uint8_t v[POL_WALK_DEPTHS]; /* enum pol_verdict: POL_UNKNOWN or POL_PAYS */
};
enum pol_fetch {
	POL_FETCH_LIST,    /* list the directory only (DIRAHEAD_DIR_LIST_ONLY) */
	POL_FETCH_ENTRIES, /* list it and fetch every entry's attributes */
};
/* May a list-only walk on fs be judged again per depth by its program's blocked stats?
 * lookups_serialize: what the kernel says of it (fsknow.h, FSKNOW_NO_LOOKUPS). */
bool policy_walk_rejudgeable(const struct pol_fs *fs, bool lookups_serialize);
/* What a walk does with a directory at `depth` below its top. */
enum pol_fetch policy_walk_fetch(const struct pol_depths *d, bool list_only, unsigned depth);
/* The program's stat blocked in a directory at `depth`: its entries pay from now on.  Returns
 * whether that changed the depth's verdict. */
bool policy_walk_blocked(struct pol_depths *d, unsigned depth);
/* Does any depth fetch entries (the walk is more than a listing walk)? */
bool policy_walk_fetches(const struct pol_depths *d);
/* The walk was re-rooted `up` levels above its top: the same directories are deeper now. */
void policy_depths_shift(struct pol_depths *d, unsigned up);

/* What the kernel said of a filesystem (DIRAHEAD_FSI_*, from a SCAN or a sentinel event), kept
 * with it once known, for the events that cannot say it (a run of stats by path, resolved by the
 * daemon); policy_fsinfo(): 0 if not known.  The entry of that device is made (mount mnt_id)
 * only if there is none: a sentinel event (mnt_id 0) never replaces a mount's entry. */
void policy_note_fsinfo(struct policy *p, uint32_t dev_major, uint32_t dev_minor, uint64_t magic,
			uint64_t mnt_id, uint32_t fsinfo, uint64_t now);
uint32_t policy_fsinfo(const struct policy *p, uint32_t dev_major, uint32_t dev_minor,
		       uint64_t magic);

/* Every remembered filesystem, most recently used first. */
void policy_foreach(struct policy *p, void (*fn)(const struct pol_fs *, void *), void *ctx);
/* The measured CPU per prefetched entry (all filesystems), or the configured prior. */
double policy_entry_cost_ns(const struct policy *p);

/*
 * Time saved (issue 25): the program time prefetch saved, estimated from the cost model's own
 * figures, never claimed beyond them.  Pure: figures in, seconds out.
 *
 * What the requests the program used waited (struct pol_waits, one per scan or walk, and one
 * for a walk's listings; the share of them it used) bounds a gain twice:
 *   - with prefetch the program took at least the time they were in flight (busy_ns): one that
 *     outruns the prefetch waits for it, which its cost per stat with prefetch does not show;
 *     so n x before - max(n x after, in flight);
 *   - it could not have saved more than it would have waited for them.  On a filesystem whose
 *     entries share their reads (a block device's inode table or cluster:
 *     policy_reads_shared()), the program on its own waits for each block once, and our
 *     requests in parallel wait for the same reads at once: their time in flight.  Elsewhere
 *     (FUSE, a network filesystem) each stat is its own round trip: the sum of the latencies.
 *     Listings by the walk's listings' time in flight (one queue), but on a block device
 *     by the sum of their latencies (policy_saved_walk_s).
 * Where the first stats of a directory (the probe) each read a block of their own, "before x
 * stats" overstated the saving tenfold (a tree on a slow block device) and more (62 s claimed
 * for a 1.6 s ls -l).
 *
 * policy_saved_scan_s(): a scan's program made `used` stats while prefetched (hits and late:
 * the entry fetched or in flight); each saved what a stat cost it without prefetch less what it
 * cost with.  The figures are the scan's own last pay-off judgment where it had one
 * (judged_before_ns > 0, judged_after_ns >= 0: the probe or the control stretch against the
 * stretch with prefetch), else the filesystem's remembered ones (before_ns, after_ns: earlier
 * scans' judgments), else the cost of the stats that started prefetch on the filesystem
 * (probed_ns: a scan or walk of small directories, each done before a judgment, with a
 * prefetched stat taken to wait for nothing), else there are none and it saved 0: nothing is
 * claimed that was not measured.  Negative where the figures say prefetch cost the program time (a no_gain scan):
 * an honest estimate, counted as such (the bound caps a gain only).
 *
 * policy_saved_walk_s(): a walk listed `listed_ahead` directories before its program did; each
 * saved the program's listing of a directory on its own (its own first listings, else the
 * daemon's first getdents) less its listing of one listed ahead (list.own_ns or list.first_ns,
 * list.ahead_ns), bounded by what the walk's listings waited (`lists`); on a block device
 * (shared), which reads directories in parallel, by the sum of their latencies instead (each
 * directory a read of its own; the program stats while the walk lists ahead).  Its `entries_used`
 * prefetched entries in directories the program listed count as stats with the filesystem's
 * remembered figures, as a scan's without its own (a walk's directories are never a scan's:
 * those are skipped as walked),
 * bounded by what its requests waited (`waits`).  0 for what has no figures.
 */
/* What a scan's or walk's requests waited: their count, the sum of their latencies, and the wall
 * time with at least one of them in flight (busy_ns, the union of their intervals, taken in the
 * order they complete).  policy_waits_add(): one request completed at done_ns after latency_ns. */
#define POL_UNIT_BITS 4096
struct pol_waits {
	uint64_t n;
	double lat_sum_ns, busy_ns;
	uint64_t busy_end_ns;
	/* Where entries share their reads and the filesystem says how many (policy_read_unit):
	 * the distinct units of inodes read together that its requests fetched (counted in a
	 * bitmap: linear counting, good to some 30,000 units). */
	uint8_t units[POL_UNIT_BITS / 8];
};
void policy_waits_add(struct pol_waits *w, uint64_t done_ns, uint64_t latency_ns);
/* Inodes one read brings in on this filesystem, as a program on its own waits for them (xfs:
 * its inode cluster, 32; ext4: 128, its blocks of 16 and their readahead), 0 where not known
 * (btrfs, FUSE). */
uint64_t policy_read_unit(uint64_t magic);
/* A request fetched inode `ino`, on a filesystem whose reads bring in `unit` inodes
 * (policy_read_unit, not 0). */
void policy_waits_read(struct pol_waits *w, uint64_t ino, uint64_t unit);
/* The distinct units those requests read, 0 where not known (none noted, the bitmap full). */
double policy_waits_units(const struct pol_waits *w);
/* Do the entries of a filesystem share their reads (inode blocks of a block device)? */
bool policy_reads_shared(uint64_t magic, uint32_t dev_major);
/* Does one statx read an entry's neighbours in inode order too (a block device's filesystem,
 * not FUSE): the engine then sends one request per inode group (DIRAHEAD_DIR_SHARED_READS), so
 * that its requests in flight are distinct reads, not 16 waiting on one cluster. */
bool policy_inode_groups(uint64_t magic, uint32_t dev_major);
/* The entries a scan's window of `window` requests spans: Lustre's window counts requests, and
 * where one request reads an inode group (grouped), 8 entries ahead would be half a read ahead.
 * As many entries a request as its `requests` finished so far have fetched (`entries`, with
 * those read with them; a directory in hash order, ext4's, has few neighbours next to each
 * other), a whole group until one has finished. */
uint64_t policy_window_reach(uint64_t window, bool grouped, uint64_t entries, uint64_t requests);
/* The most a scan's window may grow to, in requests: window_max, but twice the stretch a judgment
 * takes (gain_stats) until one in this scan (scan_paid) or the filesystem's verdict says that
 * prefetch pays.  The window doubles on every progress event whose stats were fetched, and
 * where the program's stats are slow whether fetched or not (nothing the daemon looks up is
 * kept: entry timeout 0), it reached 1,024 ahead before the first stretch was judged, and the
 * control that judgment asked for waited for the program to pass all of it: 2,000 entries of
 * 2,000 fetched for a scan that ended no_gain (policy-nogain, beside three busy loops). */
unsigned policy_window_max(const struct policy *p, const struct pol_fs *fs, bool scan_paid);
/* What the program could have waited for `used` of the requests in w, in seconds. */
double policy_waits_bound_s(const struct pol_waits *w, uint64_t used, bool shared);
/* *measured (may be NULL): whether any figures stood behind the estimate. */
double policy_saved_scan_s(const struct pol_fs *fs, double judged_before_ns,
			   double judged_after_ns, uint64_t used, const struct pol_waits *waits,
			   bool shared, bool *measured);
double policy_saved_walk_s(const struct pol_fs *fs, uint64_t listed_ahead, uint64_t entries_used,
			   const struct pol_waits *waits, const struct pol_waits *lists, bool shared,
			   bool *measured);

/*
 * Memory across restarts (persist.h).  A filesystem's judgment in a form that outlives the
 * process: times as ages and remaining delays (CLOCK_MONOTONIC does not survive a reboot), no
 * counters, no breaker.  policy_export() is false for a filesystem judged nothing yet.
 * policy_import() puts it back for the device the filesystem is mounted on now, adoptable by the
 * first mount of that device and magic the detector reports (its mount id is not known before);
 * the verdict counts as given now (a restored fast verdict is trusted for the usual while), the
 * re-probe delays keep what was left of them, bounded by reprobe_s x their backoff.
 */
#define POL_MNT_ADOPT UINT64_MAX
struct pol_memory {
	uint64_t magic;
	enum pol_verdict verdict;
	unsigned depth, backoff;
	uint64_t reprobe_in_ns;   /* NO_GAIN: re-probe after this */
	double no_gain_cost_ns, before_ns, after_ns, cost_ns, pf_lat_ns;
	enum pol_verdict list_verdict;
	unsigned list_backoff;
	uint64_t list_reprobe_in_ns;
	double list_wall_ns, list_cpu_ns, list_first_ns, list_ahead_ns, list_own_ns;
	/* FAST: re-judgments that found it fast again back off (policy_blocked): carried over a
	 * restart, or a daemon restarted often would re-arm on every warm filesystem's first sleep */
	unsigned fast_backoff;    /* 0, or 2 ... 64 */
	uint64_t rejudge_in_ns;   /* blocked calls leave it fast for this long yet */
};
bool policy_export(const struct pol_fs *fs, uint64_t now, struct pol_memory *m);
/* NULL if the memory is out of range (persist.c validates first; this asserts nothing). */
struct pol_fs *policy_import(struct policy *p, uint32_t dev_major, uint32_t dev_minor,
			     const struct pol_memory *m, uint64_t now);
/* Is the memory's every field in its range (a state file is input like any other)? */
bool policy_memory_valid(const struct pol_memory *m);

#endif
