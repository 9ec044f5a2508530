/* SPDX-License-Identifier: LGPL-2.1-or-later OR BSD-2-Clause */
/* The decision log: a ring of the last decisions, each rendered in words (decisions.h). */
#include "decisions.h"

#include <assert.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "monoclock.h"
#include "policy.h"

const char *const dec_kind_names[] = {
	[DEC_STARTED] = "started", [DEC_SKIPPED] = "skipped", [DEC_ENDED] = "ended",
};

/* One ring for the daemon: decisions come from the event loop only.  Slots are taken out of
 * order (a user over its share reuses its own oldest): seq keeps the order. */
static struct decision ring[DECISIONS_MAX];
static uint64_t ring_seq;

/* A time per stat, readable: "4.2 µs", "480 µs", "1.3 ms". */
static const char *dur(char *buf, size_t size, double ns)
{
	double us = ns / 1e3;
	if (us < 10)
		snprintf(buf, size, "%.1f µs", us);
	else if (us < 10000)
		snprintf(buf, size, "%.0f µs", us);
	else
		snprintf(buf, size, "%.1f ms", us / 1e3);
	return buf;
}

struct out {
	char *p;
	size_t left;
};

static void put(struct out *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(struct out *o, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(o->p, o->left, fmt, ap);
	va_end(ap);
	size_t w = n < 0 ? 0 : (size_t)n >= o->left ? o->left - 1 : (size_t)n;
	o->p += w;
	o->left -= w;
}

/* "its stats took X, a prefetched entry costs Y here", as far as they are known. */
static void put_costs(struct out *o, const struct dec_nums *n, const char *sep)
{
	char a[32], b[32];
	if (n->cost_ns >= 0)
		put(o, "%sits %s took %s", sep, n->probed ? "probed stats" : "stats",
		    dur(a, sizeof(a), n->cost_ns));
	if (n->entry_ns >= 0)
		put(o, "%sa prefetched entry costs %s here", n->cost_ns >= 0 ? ", " : sep,
		    dur(b, sizeof(b), n->entry_ns));
	if (n->threshold_ns >= 0 && n->entry_ns >= 0 && n->threshold_ns != n->entry_ns)
		put(o, " (prefetch pays above %s)", dur(a, sizeof(a), n->threshold_ns));
}

/* What prefetch would have saved, from the figures the cost model has (dry run). */
static void put_estimate(struct out *o, const struct dec_nums *n)
{
	char a[32];
	if (n->cost_ns < 0)
		return;
	double with = n->with_ns >= 0 ? n->with_ns : 0;
	if (n->cost_ns > with)
		put(o, "; estimate: %s%s saved a stat", n->with_ns >= 0 ? "about " : "up to ",
		    dur(a, sizeof(a), n->cost_ns - with));
}

static void render_dry_run(struct out *o, const struct dec_nums *n)
{
	if (n->cost_ns >= 0 && n->threshold_ns >= 0 && n->cost_ns < n->threshold_ns) {
		put(o, "would have probed it first (dry run)");
		put_costs(o, n, ": ");
		return;
	}
	put(o, "would have prefetched (dry run)");
	put_costs(o, n, ": ");
	put_estimate(o, n);
}

/* "; saved it about 1.2 s" where an estimate stands behind it (policy_saved_scan_s). */
static void put_saved(struct out *o, const struct dec_nums *n)
{
	if (n->has_saved)
		put(o, "; saved it about %.3f s", n->saved_s);
}

static void render_scan_end(struct out *o, const struct decision *d)
{
	const struct dec_nums *n = &d->n;
	char a[32], b[32];
	put(o, "ended %s", d->reason);
	if (!strcmp(d->reason, "no_gain") && n->cost_ns > 0 && n->with_ns >= 0) {
		double with = n->with_ns > 1 ? n->with_ns : 1;
		put(o, ": %.1fx after %llu stats, %.1fx needed (%s a stat on its own, %s with prefetch)",
		    n->cost_ns / with, (unsigned long long)n->stats, n->min_gain,
		    dur(a, sizeof(a), n->cost_ns), dur(b, sizeof(b), n->with_ns));
		put_saved(o, n);
		return;
	}
	put(o, ": %llu prefetched, %llu hits, %llu misses over %llu stats",
	    (unsigned long long)n->prefetched, (unsigned long long)n->hits,
	    (unsigned long long)n->misses, (unsigned long long)n->stats);
	if (n->cost_ns > 0 && n->with_ns >= 0)
		put(o, " (%s a stat on its own, %s with prefetch)", dur(a, sizeof(a), n->cost_ns),
		    dur(b, sizeof(b), n->with_ns));
	put_saved(o, n);
}

static void render_walk(struct out *o, const struct decision *d)
{
	const struct dec_nums *n = &d->n;
	char a[32], b[32];
	if (d->kind == DEC_STARTED && !strcmp(d->reason, "fetch-depth")) {
		put(o, "its stats blocked below the walk's top: fetching the entries at that depth");
		return;
	}
	if (d->kind == DEC_STARTED) {
		put(o, "started a walk: %s the tree ahead of it",
		    strcmp(d->reason, "list") ? "listing and prefetching" : "listing (only)");
		return;
	}
	put(o, "%s %s", dec_kind_names[d->kind], d->reason);
	if (d->kind != DEC_ENDED)
		return;
	if (n->cost_ns > 0 && n->with_ns >= 0)
		put(o, ": its listings took %s listed ahead, %s on its own", dur(a, sizeof(a), n->with_ns),
		    dur(b, sizeof(b), n->cost_ns));
	put(o, "%s%llu directories listed by it, %llu entries prefetched",
	    n->cost_ns > 0 && n->with_ns >= 0 ? "; " : ": ", (unsigned long long)n->stats,
	    (unsigned long long)n->prefetched);
	put_saved(o, n);
}

void decisions_render(struct decision *d)
{
	struct out o = { d->text, sizeof(d->text) };
	const struct dec_nums *n = &d->n;
	char a[32], b[32];
	d->text[0] = '\0';
	if (d->what == DEC_WALK) {
		render_walk(&o, d);
	} else if (d->kind == DEC_ENDED) {
		render_scan_end(&o, d);
	} else if (n->dry_run) {
		render_dry_run(&o, n);
	} else if (d->kind == DEC_STARTED) {
		put(&o, "started%s", n->probed ? " after a probe" : "");
		if (n->cost_ns < 0 && n->entry_ns < 0)
			put(&o, " (the cost model is off)");
		put_costs(&o, n, ": ");
	} else if (!strcmp(d->reason, "fs_no_gain")) {
		put(&o, "skipped fs_no_gain: prefetch did not pay on this filesystem lately");
		if (n->cost_ns >= 0)
			put(&o, "; its stats took %s", dur(a, sizeof(a), n->cost_ns));
		if (n->with_ns >= 0)
			put(&o, "%s%s with prefetch here", n->cost_ns >= 0 ? ", " : "; programs' stats took ",
			    dur(b, sizeof(b), n->with_ns));
		if (n->reprobe_s >= 0)
			put(&o, "; probed again in %.0f s", n->reprobe_s);
	} else {
		put(&o, "skipped %s", d->reason);
		put_costs(&o, n, ": ");
	}
}

struct dec_nums decisions_start_nums(const struct policy *p, const struct pol_fs *fs,
				     const struct pol_cost *c, double start_factor, bool probed,
				     uint64_t now_ns)
{
	struct dec_nums n = DEC_NUMS_INIT;
	n.probed = probed;
	n.cost_ns = c->lat_ns >= 0 ? c->lat_ns : c->gap_ns; /* as the policy weighs it */
	if (!policy_enabled(p))
		return n;
	n.threshold_ns = policy_threshold_ns(p, fs);
	n.entry_ns = start_factor > 0 ? n.threshold_ns / start_factor : policy_entry_cost_ns(p);
	if (fs->after_ns > 0)
		n.with_ns = fs->after_ns;
	if (fs->verdict == POL_NO_GAIN && fs->reprobe_ns > now_ns)
		n.reprobe_s = (double)(fs->reprobe_ns - now_ns) / 1e9;
	return n;
}

/* Scans that ran, or that a probe refused, and walks: what `log_level = info` shows. */
static bool worth_logging(const struct decision *d)
{
	return d->kind != DEC_SKIPPED || d->n.probed || d->n.dry_run;
}

/* At info no line names a directory (dirahead.conf(5)): the process does, and `diraheadctl
 * explain PID` tells root and the [control] group the rest; at debug the directory too. */
static void log_decision(const struct decision *d)
{
	bool names = log_get_level() >= LOG_DEBUG;
	char f_pid[32], f_comm[48], f_dir[DIRAHEAD_PATH_LEN + 16], f_why[64];
	const char *fields[] = { f_pid, f_comm, f_why, names ? f_dir : NULL, NULL };
	snprintf(f_pid, sizeof(f_pid), "DIRAHEAD_PID=%u", d->pid);
	snprintf(f_comm, sizeof(f_comm), "DIRAHEAD_COMM=%s", d->comm);
	snprintf(f_dir, sizeof(f_dir), "DIRAHEAD_DIR=%s", d->dir);
	snprintf(f_why, sizeof(f_why), "DIRAHEAD_DECISION=%s %s", dec_kind_names[d->kind], d->reason);
	log_fields(LOG_INFO, fields, "%s%s%s by pid %u (%s): %s", d->what == DEC_WALK ? "walk" : "scan",
		   names ? " of " : "", names ? d->dir : "", d->pid, d->comm, d->text);
}

/* The slot a decision of uid goes to: its own oldest when it holds its share already, else an
 * empty one, else the oldest of all. */
static struct decision *slot_for(uint32_t uid)
{
	struct decision *oldest = NULL, *own = NULL, *empty = NULL;
	unsigned mine = 0;
	for (unsigned i = 0; i < DECISIONS_MAX; i++) {
		struct decision *d = &ring[i];
		if (!d->seq) {
			if (!empty)
				empty = d;
			continue;
		}
		if (!oldest || d->seq < oldest->seq)
			oldest = d;
		if (d->uid == uid) {
			mine++;
			if (!own || d->seq < own->seq)
				own = d;
		}
	}
	if (mine >= DECISIONS_PER_USER)
		return own;
	return empty ? empty : oldest;
}

void decisions_add(enum dec_kind kind, enum dec_what what, uint32_t pid, uint32_t uid,
		   const char *comm, const char *dir, const char *reason, const struct dec_nums *n)
{
	static const struct dec_nums none = DEC_NUMS_INIT;
	struct decision *d = slot_for(uid);
	assert(reason && d);
	*d = (struct decision){ .seq = ++ring_seq, .wall_us = wall_us(), .pid = pid, .uid = uid,
				.kind = kind, .what = what, .n = n ? *n : none };
	snprintf(d->comm, sizeof(d->comm), "%.*s", DIRAHEAD_COMM_LEN, comm ? comm : "");
	snprintf(d->dir, sizeof(d->dir), "%.*s", DIRAHEAD_PATH_LEN - 1, dir ? dir : "");
	snprintf(d->reason, sizeof(d->reason), "%s", reason);
	decisions_render(d);
	if (worth_logging(d))
		log_decision(d);
}

static int by_seq(const void *a, const void *b)
{
	const struct decision *x = *(const struct decision *const *)a;
	const struct decision *y = *(const struct decision *const *)b;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

void decisions_foreach(uint32_t pid, void (*fn)(const struct decision *, void *), void *ctx)
{
	const struct decision *kept[DECISIONS_MAX];
	unsigned n = 0;
	for (unsigned i = 0; i < DECISIONS_MAX; i++)
		if (ring[i].seq && (!pid || ring[i].pid == pid))
			kept[n++] = &ring[i];
	qsort(kept, n, sizeof(kept[0]), by_seq);
	for (unsigned i = 0; i < n; i++)
		fn(kept[i], ctx);
}

void decisions_clear(void)
{
	for (unsigned i = 0; i < DECISIONS_MAX; i++)
		ring[i].seq = 0;
	ring_seq = 0;
}
