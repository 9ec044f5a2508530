/* SPDX-License-Identifier: LGPL-2.1-or-later OR BSD-2-Clause */
/*
 * The judge: whether prefetching a scan pays, over the cost model (policy.h, pure and
 * clock-injected).  The start rule at the SCAN event, the probe (its stats timed or its
 * progress rate, before anything is fetched), and the pay-off rule while prefetching (the
 * program's stats with prefetch against without, with a control stretch without prefetch where
 * a first gain is modest, and the stretch after the control judged against it where the
 * control came out cheaper).  Each returns a verdict; scan.c acts on it (starts, drops, ends
 * the scan, asks BPF for events, attaches timing, sets the engine's depth).  struct judge is a
 * scan's judgment state, kept in the scan and changed only here.
 */
#ifndef DIRAHEAD_JUDGE_H
#define DIRAHEAD_JUDGE_H

#include <stdbool.h>
#include <stdint.h>
#include "dirahead_event.h"
#include "policy.h"

/* A control stretch (judge_payoff): the window is held until the program has passed it, then
 * JUDGE_CONTROL_STATS of its stats are measured without prefetch. */
enum judge_control { JUDGE_CTL_NONE, JUDGE_CTL_WAIT, JUDGE_CTL_MEASURE, JUDGE_CTL_DONE };
#define JUDGE_CONTROL_STATS 32

struct judge {
	struct pol_sample at_scan;  /* the probe's stretch began here (the SCAN event at first) */
	struct pol_sample judge_from; /* start of the stretch being judged (valid if judging) */
	uint64_t late_from;         /* the scan's late entries at judge_from */
	bool judging, judged;
	/* the program listed another directory since the stretch began (a walker descending from
	 * here): the time between this scan's stats is then its walk below, not a stat's cost */
	bool interleaved;
	bool timed_probe;           /* the probe runs (again) with stat timing on */
	unsigned probe_rounds;      /* probe stretches waited for timed stats */
	unsigned rate_rounds;       /* probe stretches by rate before timing */
	uint64_t timed_from_ns;     /* when timing was (known to be) attached for it */
	struct pol_cost before;     /* the program's cost without prefetch */
	enum judge_control control;
	uint64_t ctl_limit;         /* the window held (JUDGE_CTL_WAIT) */
	struct pol_sample ctl_from; /* the control stretch began here (JUDGE_CTL_MEASURE) */
	struct pol_cost ctl_after;  /* the stretch with prefetch it is compared with */
	double ctl_late;
	/* the control showed no gain over the stretch before it: the stretch after it is judged
	 * against the control instead (before holds it) */
	bool ctl_recheck;
	uint64_t recheck_pos;       /* ... from where the window is a depth ahead again (0: is) */
	uint64_t first_pos;         /* the first stretch starts once the program is past the
				     * window prefetch opened with (0: it is) */
	bool paid;                  /* the last judgment of this scan found that prefetch pays */
};

/* Who is judged: the cost model, the scan's filesystem (looked up when needed), for the log. */
struct judge_who {
	struct policy *pol;
	struct pol_fs *(*fs)(const void *ctx);
	const void *ctx;
	const char *path;
	uint32_t tgid;
	uint64_t now_ns;
};

enum judge_act {
	JUDGE_WAIT,       /* no verdict yet: go on as now */
	JUDGE_PROBE,      /* (start rule) time the program's stats first: judge_probe */
	JUDGE_START,      /* prefetch */
	JUDGE_FAST,       /* its stats are fast already: leave it alone (DD_SKIP_FAST) */
	JUDGE_NO_GAIN,    /* prefetch does not pay (there, or for this scan) */
	JUDGE_DECIDE,     /* (probe) the stretch is judged: judge_after_probe, unless a walk has it */
};
enum judge_step { JUDGE_STEP_KEEP, JUDGE_STEP_PROGRESS, JUDGE_STEP_CONTROL };

struct judge_verdict {
	enum judge_act act;
	bool want_timing;           /* time the program's stats (hooks.h) */
	enum judge_step step;       /* when BPF reports progress next */
	unsigned depth;             /* the directory's engine depth from now (0: unchanged) */
	bool reset_misses;          /* consecutive misses start afresh (a control stretch ended) */
	bool judged;                /* a judgment was made: counted with before_s and after_s */
	double before_s, after_s;
};

/* The start rule at the SCAN event (j zeroed): JUDGE_START, _PROBE (want_timing if only the
 * stats' timing can tell), _FAST or _NO_GAIN. */
struct judge_verdict judge_start(struct judge *j, const struct judge_who *w,
				 const struct dirahead_event *ev);
/* The probe's PROGRESS event: _WAIT (another stretch, maybe timed) or _DECIDE (*cost). */
struct judge_verdict judge_probe(struct judge *j, const struct judge_who *w,
				 const struct dirahead_event *ev, struct pol_cost *cost);
/* The probe decided: _START or _FAST. */
struct judge_verdict judge_after_probe(struct judge *j, const struct judge_who *w,
				       const struct pol_cost *cost, uint64_t probe_timed);

/* What the pay-off rule sees of the scan. */
struct judge_scan {
	uint64_t late, completed;   /* entries late and fetched so far */
	uint64_t app_pos, limit;    /* where the program is, how far the window goes */
	bool room;                  /* the directory goes on well past the window */
	unsigned depth;             /* the engine depth it has */
	double min_gain;
	bool final;                 /* its END: a last judgment if it was too short for one */
	bool grouped;               /* one request reads an inode group (a block device) */
};
/* Room for a control stretch: the directory goes on past the window (`limit`; eof: all of it
 * read, `read` entries) by the control and a judged stretch after it.  A control with less than
 * gain_stats stats behind it judges nothing and costs its stats: a 300-entry directory on a busy
 * machine was looked up 364 times by its program beside the prefetch, against 1,209 alone. */
static inline bool judge_control_room(bool eof, uint64_t read, uint64_t limit, unsigned gain_stats)
{
	return !eof || read > limit + JUDGE_CONTROL_STATS + gain_stats;
}
/* The pay-off rule, on each PROGRESS while prefetching: _WAIT (pays, or not judged yet) or
 * _NO_GAIN. */
struct judge_verdict judge_payoff(struct judge *j, const struct judge_who *w,
				  const struct dirahead_event *ev, const struct judge_scan *s);
/* The window is held for a control stretch (the program on its own, on purpose). */
static inline bool judge_holds(const struct judge *j)
{
	return j->control == JUDGE_CTL_WAIT || j->control == JUDGE_CTL_MEASURE;
}

#endif
