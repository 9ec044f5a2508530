/* SPDX-License-Identifier: LGPL-2.1-or-later OR BSD-2-Clause */
/*
 * The decision log (`diraheadctl explain`): the last DECISIONS_MAX decisions the daemon acted on
 * (a scan or walk started, skipped or ended), each with its reason code and the numbers the cost
 * model decided by, rendered in words once, when recorded ("skipped fast_stats: its stats took
 * 4 us, a prefetched entry costs 11 us here").  A bounded ring in memory: the oldest go first.
 * Fed by the one place each decision is acted on (scan.c, walk.c); the numbers are the judge's
 * and the policy's, never recomputed here.  Decisions about scans that ran, or were refused
 * after a probe, are logged at info too (the log's rate limit applies).  One user's decisions
 * fill at most DECISIONS_PER_USER of the ring: beyond that its own oldest go, so a user who
 * floods it (thousands of tiny scans) cannot push out what root needs to see of the others.
 */
#ifndef DIRAHEAD_DECISIONS_H
#define DIRAHEAD_DECISIONS_H

#include <stdbool.h>
#include <stdint.h>
#include "dirahead_event.h"

#define DECISIONS_MAX 256
#define DECISIONS_PER_USER (DECISIONS_MAX / 4)
#define DECISION_TEXT_LEN 200

enum dec_kind { DEC_STARTED, DEC_SKIPPED, DEC_ENDED };
enum dec_what { DEC_SCAN, DEC_WALK };

/* The numbers behind a decision; a time < 0 (or a count 0) is not known. */
struct dec_nums {
	double cost_ns;      /* the program's time per stat (per listing, for a walk) on its own */
	double with_ns;      /* ... with prefetch (judged), or with a listing ahead */
	double entry_ns;     /* what a prefetched entry costs the daemon there */
	double threshold_ns; /* prefetch pays above this (start_factor x entry_ns) */
	double min_gain;     /* the gain the pay-off rule needs */
	double reprobe_s;    /* fs_no_gain: probed again in this long */
	uint64_t stats;      /* the program's stats (listings, for a walk) so far */
	uint64_t prefetched, hits, misses;
	bool probed;         /* the start rule probed it first */
	bool dry_run;        /* nothing was fetched: what it would have done */
	bool has_saved;      /* ended: saved_s is the estimate of the time it saved the program */
	double saved_s;      /* (policy_saved_scan_s, _walk_s) */
};
#define DEC_NUMS_INIT { .cost_ns = -1, .with_ns = -1, .entry_ns = -1, .threshold_ns = -1, \
			.reprobe_s = -1 }

struct decision {
	uint64_t seq;        /* order of recording; 0: the slot is empty */
	uint64_t wall_us;    /* CLOCK_REALTIME */
	uint32_t pid;
	uint32_t uid;        /* the program's effective uid: its share of the ring */
	enum dec_kind kind;
	enum dec_what what;
	char comm[DIRAHEAD_COMM_LEN + 1];
	char dir[DIRAHEAD_PATH_LEN];
	char reason[32];     /* the skip or end reason's name; "prefetch" or "list" when started */
	struct dec_nums n;
	char text[DECISION_TEXT_LEN]; /* the reason in words, with the numbers */
};

extern const char *const dec_kind_names[];

struct policy;
struct pol_fs;
struct pol_cost;
/* The start rule's numbers for a scan whose stats cost c (the judge's figure) on fs: its cost,
 * what an entry costs there (threshold / start_factor), the threshold, the cost with prefetch
 * remembered there (the dry run's estimate), when a no_gain filesystem is probed again. */
struct dec_nums decisions_start_nums(const struct policy *p, const struct pol_fs *fs,
				     const struct pol_cost *c, double start_factor, bool probed,
				     uint64_t now_ns);

/* Records one decision: kind, the process and its effective uid, its directory (the top of a
 * walk), the reason name. */
void decisions_add(enum dec_kind kind, enum dec_what what, uint32_t pid, uint32_t uid,
		   const char *comm, const char *dir, const char *reason, const struct dec_nums *n);
/* Renders d's reason in words into d->text (decisions_add does; exposed for the unit test). */
void decisions_render(struct decision *d);
/* Every decision kept, oldest first; pid 0: all of them. */
void decisions_foreach(uint32_t pid, void (*fn)(const struct decision *, void *), void *ctx);
/* Forgets them all (the unit test). */
void decisions_clear(void);

#endif
