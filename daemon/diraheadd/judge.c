/* SPDX-License-Identifier: LGPL-2.1-or-later OR BSD-2-Clause */
/* The judge: the start rule, the probe and the pay-off rule, returning verdicts (judge.h). */
#include "judge.h"

#include <assert.h>

#include "fsknow.h"
#include "log.h"

/* Confirming stats this many times slower than the start rule's threshold have the probe timed
 * from its start (below it, the probe's rate decides first). */
#define TIME_AT_ONCE 4.0
/* Probe stretches a timed probe may wait for its stats to be timed before the rate decides. */
#define PROBE_ROUNDS_MAX 4
/* Probe stretches by rate alone before a little slow one is timed. */
#define RATE_ROUNDS_MAX 2
/* A first judgment that prefetch pays by less than this, on a filesystem where it has not paid
 * yet, is checked against a control stretch first: the probe (a few stats, right after the
 * listing, where programs do their one-off work and some filesystems their own) can overstate
 * the program's cost without prefetch by as much (measured on sshfs: 234 us per stat probed,
 * 82 us on average over the whole `ls -l`). */
#define CONTROL_FACTOR 4.0

static const struct judge_verdict wait = { .act = JUDGE_WAIT };

static struct pol_fs *fs_of(const struct judge_who *w)
{
	return w->fs(w->ctx);
}

/* The probe's rate is slow enough that only timing its stats can tell (else it decides alone). */
static bool rate_needs_timing(const struct judge_who *w, const struct pol_cost *c)
{
	return !(c->gap_ns >= 0 && c->gap_ns < TIME_AT_ONCE * policy_threshold_ns(w->pol, fs_of(w)));
}

struct judge_verdict judge_start(struct judge *j, const struct judge_who *w,
				 const struct dirahead_event *ev)
{
	struct judge_verdict v = { .act = JUDGE_START };
	pol_sample_of(&j->at_scan, ev);
	pol_cost_between(NULL, &j->at_scan, &j->before);
	if (!policy_enabled(w->pol))
		return v;
	struct pol_fs *fs = fs_of(w);
	enum pol_action act = policy_on_scan(w->pol, fs, &j->before, w->now_ns);
	if (act == POL_SKIP_FAST || act == POL_SKIP_NO_GAIN) {
		v.act = act == POL_SKIP_FAST ? JUDGE_FAST : JUDGE_NO_GAIN;
		return v;
	}
	/* Where the listing brought the attributes (FUSE readdirplus), a stat may wait for nothing
	 * whatever prefetch did before: start only on this scan's evidence (the probe) */
	if (act == POL_START && fsknow_entries(ev->fsinfo) == FSKNOW_PROBE_FIRST)
		act = POL_PROBE;
	/* Started at once (the filesystem pays): one or two confirming stats are a poor baseline
	 * for the pay-off rule; what programs took per stat here before is better. */
	if (act == POL_START && fs->before_ns > 0)
		j->before.gap_ns = fs->before_ns;
	if (act == POL_PROBE) {
		/* Time the probe's stats only if the progress rate cannot tell: a program that is
		 * quick between its stats has fast stats, whatever else it does.  Timing costs every
		 * syscall on the machine while attached, and the few confirming stats right after a
		 * listing or at a program's start are its slowest: up to TIME_AT_ONCE times the
		 * threshold, the probe's own rate decides first (judge_probe times a probe it leaves
		 * undecided). */
		v.act = JUDGE_PROBE;
		v.want_timing = rate_needs_timing(w, &j->before);
	}
	return v;
}

/* Another probe stretch from now. */
static struct judge_verdict probe_again(struct judge *j, const struct pol_sample *now, bool timed)
{
	struct judge_verdict v = wait;
	v.want_timing = timed;
	j->at_scan = *now;
	j->interleaved = false;
	return v;
}

struct judge_verdict judge_probe(struct judge *j, const struct judge_who *w,
				 const struct dirahead_event *ev, struct pol_cost *cost)
{
	struct pol_sample now;
	pol_sample_of(&now, ev);
	/* the stretch after the SCAN event: sys_enter timing is attached from then on */
	pol_cost_between(&j->at_scan, &now, cost);
	if (cost->lat_ns < 0 && cost->gap_ns < 0)
		pol_cost_between(NULL, &now, cost);
	if (j->interleaved)
		cost->gap_ns = -1; /* a walk below it, not the cost of its stats */
	/* untimed, and the rate does not say "fast" */
	bool undecided = cost->lat_ns < 0 &&
			 (cost->gap_ns < 0 || cost->gap_ns >= policy_threshold_ns(w->pol, fs_of(w)));
	/* a little slow: a stretch the program was off the CPU for (a small machine, the daemon
	 * busy with this very scan) looks so too; another stretch by rate first */
	if (undecided && !j->timed_probe && !rate_needs_timing(w, cost) &&
	    j->rate_rounds++ < RATE_ROUNDS_MAX)
		return probe_again(j, &now, false);
	/* slow between stats, but are the stats slow?  Probe once more, timed. */
	if (undecided && !j->timed_probe)
		return probe_again(j, &now, true);
	if (undecided && j->probe_rounds < PROBE_ROUNDS_MAX) {
		/* Timing is attached while the program runs on, and its events queue meanwhile:
		 * stretches made before the tracepoint was live say nothing, and a rate alone over
		 * a few stats overstates (its first stats after a listing are its slowest).  Wait
		 * for timed ones, a few stretches made since the attach at most. */
		if (ev->stat_last_ns < j->timed_from_ns)
			j->at_scan = now;
		else
			j->probe_rounds++;
		return wait;
	}
	return (struct judge_verdict){ .act = JUDGE_DECIDE };
}

struct judge_verdict judge_after_probe(struct judge *j, const struct judge_who *w,
				       const struct pol_cost *cost, uint64_t probe_timed)
{
	struct pol_fs *fs = fs_of(w);
	bool fast = policy_after_probe(w->pol, fs, cost, w->now_ns) == POL_SKIP_FAST;
	log_debug("scan of %s by pid %u: stats cost %.1f us timed, %.1f us apart (%llu timed), "
		  "prefetch pays above %.1f us: %s",
		  w->path, w->tgid, cost->lat_ns / 1e3, cost->gap_ns / 1e3,
		  (unsigned long long)probe_timed, policy_threshold_ns(w->pol, fs) / 1e3,
		  fast ? "fast" : "start");
	if (fast)
		return (struct judge_verdict){ .act = JUDGE_FAST };
	j->before = *cost;
	return (struct judge_verdict){ .act = JUDGE_START };
}

/* A judgment made: in the verdict for the stats, and in the log unless `quiet` (a stretch that
 * pays again at the same depth: one line every 64 stats, 300 for a 20,000-entry scan, filled the
 * log's rate limit and hid the lines that say what was decided). */
static void judged(struct judge_verdict *v, const struct judge_who *w,
		   const struct pol_cost *before, const struct pol_cost *after, bool ok,
		   const char *what, bool quiet)
{
	double b, a;
	policy_judged_costs(before, after, &b, &a);
	if (b > 0 && a >= 0) {
		v->judged = true;
		v->before_s = b / 1e9;
		v->after_s = a / 1e9;
	}
	if (quiet)
		return;
	log_debug("scan of %s by pid %u: stats cost %.1f us %s, %.1f us with prefetch: %s, depth %u",
		  w->path, w->tgid, b / 1e3, what, a / 1e3, ok ? "pays" : "no gain",
		  policy_depth(w->pol, fs_of(w)));
}

/* The control stretch: the program without prefetch, measured now, against the stretch with
 * prefetch just before it.  The verdict once measured (it pays until then). */
static struct judge_verdict control(struct judge *j, const struct judge_who *w,
				    const struct pol_sample *now, const struct judge_scan *s)
{
	struct judge_verdict v = wait;
	if (s->final)
		return v;
	if (j->control == JUDGE_CTL_WAIT) {
		if (s->app_pos <= j->ctl_limit)
			return v; /* still in what was fetched */
		j->control = JUDGE_CTL_MEASURE;
		j->ctl_from = *now;
		v.step = JUDGE_STEP_CONTROL;
		return v;
	}
	if (now->stats < j->ctl_from.stats + JUDGE_CONTROL_STATS)
		return v;
	struct pol_cost before;
	pol_cost_between(&j->ctl_from, now, &before);
	j->control = JUDGE_CTL_DONE;
	v.reset_misses = true;
	v.step = JUDGE_STEP_PROGRESS;
	double b, a;
	policy_judged_costs(&before, &j->ctl_after, &b, &a);
	if (b >= 0 && a > 0 && !policy_gains(w->pol, b, a)) {
		/* Stats get cheaper as a scan goes on where entries share blocks: one inode cluster
		 * read serves many entries (a cold xfs `ls -l` of 20,000 files on its own: 431 us a
		 * stat over stats 8-72, 63 us by the 300th).  The stretch with prefetch came before
		 * this control, at its dearer stage: judge the next one against the control, like
		 * with like (there prefetch had halved the program's cost; set against the control
		 * it read as 0.3x). */
		log_debug("scan of %s by pid %u: stats cost %.1f us without prefetch (control), "
			  "%.1f us with prefetch before it: judged again on the next stretch",
			  w->path, w->tgid, b / 1e3, a / 1e3);
		j->before = before;
		j->ctl_recheck = true;
		j->recheck_pos = s->app_pos + s->depth;
		j->judge_from = *now;
		j->late_from = s->late;
		j->interleaved = false;
		v.want_timing = before.lat_ns >= 0;
		return v;
	}
	bool ok = policy_judge(w->pol, fs_of(w), &before, &j->ctl_after, j->ctl_late, false,
			       w->now_ns);
	judged(&v, w, &before, &j->ctl_after, ok, "without prefetch (control)", false);
	j->before = before;
	j->judged = true;
	j->paid = ok;
	j->judge_from = *now;
	j->late_from = s->late;
	v.act = ok ? JUDGE_WAIT : JUDGE_NO_GAIN;
	return v;
}

/* A modest gain, against a probe, on a filesystem where prefetch has not paid yet: measure the
 * program without prefetch first (a probe that overstates only ever makes prefetch look better:
 * no gain stands).  On the re-probe of a filesystem judged no_gain, a gain of any size: its
 * probe is a few stats, and a program kept off the CPU for a scheduler slice during them (two
 * busy loops on two cores) read 4.8 ms a stat against 0.64 ms with prefetch, undoing a verdict
 * that a control stretch of 32 stats would have kept.  And a gain of any size where the
 * program's stats with prefetch still take half as long as one of the daemon's requests here:
 * they are not served from what was fetched, so the probe's figure is the gain (a FUSE mount
 * caching nothing, beside two busy loops: 3.6 ms probed, 976 us with prefetch, which read as
 * 4.2x; where prefetch serves, its stats take 5-90 us against 0.5 ms requests). */
static bool wants_control(const struct judge *j, const struct pol_fs *fs, double b, double a,
			  const struct judge_scan *s)
{
	bool unserved = fs->pf_lat_ns > 0 && 2 * a >= fs->pf_lat_ns;
	bool check = b < CONTROL_FACTOR * a || fs->verdict == POL_NO_GAIN || unserved;
	return !j->judged && !s->final && j->control == JUDGE_CTL_NONE && fs->verdict != POL_PAYS &&
	       b > 0 && a >= 0 && b >= s->min_gain * a && check && s->room && !j->interleaved;
}

/* A stretch without gain in a scan whose last stretch paid: measure the program without prefetch
 * before ending it.  One stretch of 64 stats is a few tens of milliseconds, and a machine that
 * stalls for that long (the daemon or the filesystem's server off the CPU) makes it look like no
 * gain: a cold `ls -l` of 12,000 entries on a 200 us FUSE mount paid over 33 stretches (30 us a
 * stat against 300 us) and was ended by the 34th (499 us against 469 us), the program left to
 * look up the rest itself.  A stall shows in the control too, and the stretch after it is judged
 * against the control (as after any control without gain); a filesystem that stopped paying
 * fails that one as well. */
static bool wants_confirmation(const struct judge *j, const struct policy *pol, double b, double a,
			       const struct judge_scan *s)
{
	return j->paid && !j->ctl_recheck && !s->final && s->room && !j->interleaved && b > 0 &&
	       a >= 0 && !policy_gains(pol, b, a);
}

/* A control stretch, against the stretch with prefetch just measured: the window is held until
 * the program has passed it (control()). */
static void ask_control(struct judge *j, const struct judge_scan *s, const struct pol_cost *after,
			double late)
{
	j->control = JUDGE_CTL_WAIT;
	j->ctl_limit = s->limit;
	j->ctl_after = *after;
	j->ctl_late = late;
}

/* The first event once something is fetched opens the first stretch (a directory read whole
 * before its first fetch, to sort it, is no stretch of prefetch yet).  On a filesystem judged to
 * pay it is measured from where the program has passed the window prefetch opened with: before
 * that the program stats what is being fetched for the first time, and pays for it as if alone
 * (find -ls of 20,000 files on a 0.5 ms xfs volume: 580 us a stat over the first 71, 540 us
 * probed, and the scan was ended no_gain; 6-10 us a stat once ahead). */
static struct judge_verdict open_stretch(struct judge *j, const struct pol_sample *now,
					 const struct judge_scan *s, bool pays)
{
	struct judge_verdict v = wait;
	if (!s->completed)
		return v;
	/* Where the filesystem already pays (no control stretch guards the first one there) or one
	 * request reads a group (a block device: the program's first stats wait on the groups'
	 * first reads).  Elsewhere a modest gain gets a control, and delaying the first judgment
	 * would leave scans of small directories on FUSE (runs of 50 stats by name, whose window
	 * opens at 32) unjudged, each later one probed (daemon-unlisted: 3 of 5 failed). */
	j->first_pos = (pays || s->grouped) && s->limit > s->app_pos ? s->limit : 0;
	j->judging = true;
	j->judge_from = *now;
	j->late_from = s->late;
	j->interleaved = false;
	v.want_timing = j->before.lat_ns >= 0; /* time the stretch too: like with like */
	return v;
}

struct judge_verdict judge_payoff(struct judge *j, const struct judge_who *w,
				  const struct dirahead_event *ev, const struct judge_scan *s)
{
	struct pol_sample now;
	pol_sample_of(&now, ev);
	if (judge_holds(j))
		return control(j, w, &now, s);
	if (!j->judging)
		return open_stretch(j, &now, s, fs_of(w)->verdict == POL_PAYS);
	if (j->first_pos && !s->final) {
		if (s->app_pos >= j->first_pos)
			j->first_pos = 0;
		j->judge_from = now;
		j->late_from = s->late;
		return wait;
	}
	if (j->ctl_recheck && j->recheck_pos && !s->final) {
		/* the window getting ahead of the program again after the control: the stretch
		 * starts at the first event past it */
		if (s->app_pos >= j->recheck_pos)
			j->recheck_pos = 0;
		j->judge_from = now;
		j->late_from = s->late;
		return wait;
	}
	uint64_t n = now.stats - j->judge_from.stats, need = policy_gain_stats(w->pol);
	if (n < need && !(s->final && !j->judged && n >= need / 4))
		return wait;
	struct pol_cost after, before = j->before;
	pol_cost_between(&j->judge_from, &now, &after);
	if (j->interleaved)
		after.gap_ns = before.gap_ns = -1; /* its walk below, not its stats: durations only */
	double late = n ? (double)(s->late - j->late_from) / (double)n : 0;
	struct pol_fs *fs = fs_of(w);
	double b, a;
	policy_judged_costs(&before, &after, &b, &a);
	if (wants_control(j, fs, b, a, s)) {
		ask_control(j, s, &after, late);
		log_debug("scan of %s by pid %u: stats cost %.1f us probed, %.1f us with prefetch: "
			  "a control stretch without prefetch first", w->path, w->tgid, b / 1e3, a / 1e3);
		return wait;
	}
	if (wants_confirmation(j, w->pol, b, a, s)) {
		ask_control(j, s, &after, late);
		j->paid = false;
		log_debug("scan of %s by pid %u: stats cost %.1f us before, %.1f us with prefetch, "
			  "after it paid: a control stretch without prefetch first", w->path, w->tgid,
			  b / 1e3, a / 1e3);
		return wait;
	}
	struct judge_verdict v = wait;
	bool ok = policy_judge(w->pol, fs, &before, &after, late, n < need, w->now_ns);
	judged(&v, w, &before, &after, ok, j->ctl_recheck ? "without prefetch (control)" : "before",
	       ok && j->paid && policy_depth(w->pol, fs) == s->depth);
	j->ctl_recheck = false;
	j->judged = true;
	j->paid = ok;
	j->judge_from = now;
	j->late_from = s->late;
	j->interleaved = false;
	v.want_timing = ok && j->before.lat_ns >= 0;
	unsigned depth = policy_depth(w->pol, fs);
	if (ok && depth != s->depth)
		v.depth = depth;
	v.act = ok ? JUDGE_WAIT : JUDGE_NO_GAIN;
	return v;
}
