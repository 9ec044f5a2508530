/* SPDX-License-Identifier: LGPL-2.1-or-later OR BSD-2-Clause */
/* The statistics: reason names, the table of every statistic, the latency histogram and the
 * periodic summary line (stats.h). */
#include "stats.h"

#include <assert.h>
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>

#include "policy.h"

#define X_NAME(e, s) s,
#define X_END(e, s, who) [DD_END_##e] = s,
const char *const dd_end_reason_names[DD_END_MAX] = { DD_END_REASONS(X_END) };
#undef X_END
#define X_END(e, s, who) [DD_END_##e] = (who) & DD_ENDS_SCAN ? s : NULL,
const char *const dd_scan_end_names[DD_END_MAX] = { DD_END_REASONS(X_END) };
#undef X_END
#define X_END(e, s, who) [DD_END_##e] = (who) & DD_ENDS_WALK ? s : NULL,
const char *const dd_walk_end_names[DD_END_MAX] = { DD_END_REASONS(X_END) };
#undef X_END
const char *const dd_skip_reason_names[DD_SKIP_MAX] = { DD_SKIP_REASONS(X_NAME) };
#undef X_NAME
const char *const dd_err_class_names[DD_ERR_MAX] = { "enoent", "eacces", "eio", "other" };
#define X_NAME(e, s) s,
const char *const dd_http_result_names[DD_HTTP_MAX] = { DD_HTTP_RESULTS(X_NAME) };
#undef X_NAME

enum dd_err_class dd_err_class_of(int err)
{
	switch (err) {
	case ENOENT:
	case ENOTDIR:
	case ESTALE:
		return DD_ERR_ENOENT; /* raced with a delete or rename: harmless */
	case EACCES:
	case EPERM:
		return DD_ERR_EACCES;
	case EIO:
	case ETIMEDOUT:
	case ENOTCONN:
		return DD_ERR_EIO;
	default:
		return DD_ERR_OTHER;
	}
}

/* The table.  V: a field of the view, S: a counter of struct dd_stats, D: a detector counter. */
#define V(f) offsetof(struct dd_stats_view, f)
#define S(f) V(s.f)
#define D(i) V(det[i])
#define COUNTER(key, name, field, text)                                                            \
	{ .shape = DD_STAT_VALUE, .json = key, .metric = name, .type = "counter", .help = text,     \
	  .off = field, .json_off = field }
#define GAUGE(key, name, field, text)                                                              \
	{ .shape = DD_STAT_VALUE, .json = key, .metric = name, .type = "gauge", .help = text,       \
	  .off = field, .json_off = field }
#define JSON_ONLY(key, field) { .shape = DD_STAT_VALUE, .json = key, .off = field, .json_off = field }
#define REASONS(key, name, lab, field, nm, count, text)                                            \
	.shape = DD_STAT_REASONS, .json = key, .metric = name, .type = "counter", .help = text,     \
	.label = lab, .off = field, .json_off = field, .names = nm, .n = count
#define PARTS(name, typ, lab, text)                                                                \
	.shape = DD_STAT_PARTS, .metric = name, .type = typ, .help = text, .label = lab
#define PART(key, lab, field) { key, lab, field, field }
#define HOOK(h) { .shape = DD_STAT_HOOK, .hook = h }

const struct dd_stat_row dd_stat_rows[] = {
	HOOK(DD_STAT_HOOK_BUILD_INFO),
	COUNTER("listings", "dirahead_listings_total", D(DIRAHEAD_CNT_LISTINGS),
		"Directory listings seen by the BPF detector."),
	COUNTER("scans_confirmed", "dirahead_scans_confirmed_total", S(scans_confirmed),
		"Scans confirmed: a listing followed by stats of the directory's entries."),
	COUNTER("scans_unlisted", "dirahead_scans_unlisted_total", S(scans_unlisted),
		"Scans confirmed without a listing: stats of many names of one directory in a row."),
	JSON_ONLY("scans_started", S(scans_started)),
	{ REASONS("scans_ended", "dirahead_scans_ended_total", "reason", S(scans_ended),
		  dd_scan_end_names, DD_END_MAX, "Scans ended, by reason (completed or why aborted).") },
	/* Every local user may read the metrics page: "mismatch" (something other than the directory
	 * opened) next to "open_failed" would tell whether another user's path exists.  Both are
	 * open_failed there; `diraheadctl stats` (root or the control group) tells them apart. */
	{ REASONS("skips", "dirahead_skips_total", "reason", S(skips), dd_skip_reason_names, DD_SKIP_MAX,
		  "Confirmed scans not prefetched, by reason."),
	  .merge = true, .hidden = DD_SKIP_MISMATCH, .into = DD_SKIP_OPEN_FAILED },
	COUNTER("entries_prefetched", "dirahead_entries_prefetched_total", S(entries_prefetched),
		"Entries whose attributes were prefetched."),
	COUNTER("entries_grouped", "dirahead_entries_grouped_total", S(entries_grouped),
		"Entries prefetched by the request of a neighbour in their inode block (counted in "
		"entries_prefetched too)."),
	COUNTER("hits", "dirahead_hits_total", S(hits), "Application stats that found the entry prefetched."),
	JSON_ONLY("late", S(late)),
	COUNTER("misses", "dirahead_misses_total", S(misses),
		"Application stats that got ahead of the prefetch."),
	{ REASONS("errors", "dirahead_errors_total", "class", S(errors), dd_err_class_names, DD_ERR_MAX,
		  "Prefetch requests that failed, by errno class.") },
	JSON_ONLY("stats_matched", D(DIRAHEAD_CNT_STATS_MATCHED)),
	JSON_ONLY("bpf_events", D(DIRAHEAD_CNT_EVENTS)),
	COUNTER("bpf_events_lost", "dirahead_bpf_events_lost_total", D(DIRAHEAD_CNT_EVENTS_LOST),
		"BPF events dropped because the ring buffer was full."),
	COUNTER("bpf_table_full", "dirahead_bpf_table_full_total", D(DIRAHEAD_CNT_TABLE_FULL),
		"Listings the BPF detector did not track because its process or scan table was full."),
	COUNTER("bpf_user_full", "dirahead_bpf_user_full_total", D(DIRAHEAD_CNT_USER_FULL),
		"Listings the BPF detector did not track because their uid held its share of the tables."),
	JSON_ONLY("progress_events", S(progress_events)),
	{ PARTS("dirahead_config_reloads_total", "counter", "result", "Configuration reloads, by result."),
	  .part = { PART("reloads_ok", "success", S(reloads_ok)),
		    PART("reloads_failed", "failure", S(reloads_failed)) } },
	{ REASONS(NULL, "dirahead_metrics_requests_total", "result", S(http_requests),
		  dd_http_result_names, DD_HTTP_MAX,
		  "Requests to the metrics endpoint, by result (bad_host: refused for a foreign Host header, as DNS rebinding sends; forbidden: outside the control group), and connections refused at a limit or closed too slow.") },
	HOOK(DD_STAT_HOOK_PREFETCH_LATENCY),
	HOOK(DD_STAT_HOOK_APP_LATENCY),
	GAUGE("active_scans", "dirahead_active_scans", V(active_scans), "Scans being prefetched now."),
	GAUGE("requests_in_flight", "dirahead_requests_in_flight", V(requests_in_flight),
	      "Prefetch requests in flight now."),
	/* tree-ahead */
	COUNTER("walks_started", "dirahead_walks_started_total", S(walks_started),
		"Walks started: tree-ahead for a process descending from a directory it scanned."),
	COUNTER("walks_list_only", "dirahead_walks_listing_only_total", S(walks_list_only),
		"Walks that listed only (the program's stats need no prefetch), started so or turned so."),
	COUNTER("walks_ahead_only", "dirahead_walks_ahead_only_total", S(walks_ahead_only),
		"Walks that fetched only in directories ahead of the program (lookups serialize there)."),
	COUNTER("walks_by_runs", "dirahead_walks_by_runs_total", S(walks_by_runs),
		"Walks that followed a program's runs of stats by name (it listed nothing)."),
	COUNTER("walk_candidates", "dirahead_walk_candidates_total", S(walk_candidates),
		"Processes watched for a walk after their scan was skipped (fast stats, no gain)."),
	COUNTER("walk_entries_used", "dirahead_walk_entries_used_total", S(walk_entries_used),
		"Entries walks fetched in directories the program then listed."),
	{ REASONS("walks_ended", "dirahead_walks_ended_total", "reason", S(walks_ended),
		  dd_walk_end_names, DD_END_MAX, "Walks ended, by reason.") },
	GAUGE("active_walks", "dirahead_active_walks", V(active_walks), "Walks running now."),
	GAUGE("openers_stuck", "dirahead_openers_stuck", V(openers_stuck),
	      "Openers (of scans' and walks' directories) running for over a second now: on a hung filesystem."),
	JSON_ONLY("walk_listings", S(walk_listings)),
	{ PARTS("dirahead_walk_dirs_total", "counter", "outcome",
		"Directories of walks: listed by the walk (opened), then listed by the program after the walk (ahead) or before it (late), or passed over by the program (skipped)."),
	  .part = { PART("walk_dirs_opened", "opened", S(walk_dirs_opened)),
		    PART("walk_dirs_ahead", "ahead", S(walk_dirs_ahead)),
		    PART("walk_dirs_late", "late", S(walk_dirs_late)),
		    PART("walk_dirs_skipped", "skipped", S(walk_dirs_skipped)) } },
	COUNTER("walk_not_entered", "dirahead_walk_not_entered_total", S(walk_not_entered),
		"Subdirectories a walk did not enter: mount points, automount points, or failures to open."),
	COUNTER("walk_depths_rejudged", "dirahead_walk_depths_rejudged_total", S(walk_depths_rejudged),
		"Depths of walks that listed only (the stats at their top were fast) where the program's stats then blocked: the walk fetches the entries there from then on."),
	COUNTER("walk_dirs_refetched", "dirahead_walk_dirs_refetched_total", S(walk_dirs_refetched),
		"Directories a walk had listed only, ahead of the program, whose entries it fetched once their depth was judged to pay."),
	/* the cost model */
	COUNTER("scans_muted", "dirahead_scans_muted_total", S(scans_muted),
		"Scans the cost model muted in BPF (prefetch would not pay): the process's further listings on that filesystem go untracked for mute_ms."),
	{ PARTS("dirahead_scan_orders_learnt_total", "counter", "order",
		"Scans whose program stats in another order than readdir's (gnulib fts sorts above 10,000 entries by inode), fetched in that order."),
	  .part = { PART("order_inode", "inode", S(orders_learnt[0])),
		    PART("order_name", "name", S(orders_learnt[1])) } },
	COUNTER("entries_wasted", "dirahead_entries_wasted_total", S(entries_wasted),
		"Entries prefetched for scans that ended without the program using them."),
	COUNTER("payoff_judgments", "dirahead_payoff_judgments_total", S(judged),
		"Pay-off judgments: stretches of gain_stats stats compared with the program's cost before prefetch."),
	/* the metric sums over judgments, the JSON shows their mean */
	{ PARTS("dirahead_payoff_app_stat_seconds_total", "counter", "phase",
		"Sum over pay-off judgments of the program's mean cost per stat, before and with prefetch (divide by dirahead_payoff_judgments_total)."),
	  .f64 = true,
	  .part = { { "app_stat_us_before", "before", S(judged_before_s), V(app_stat_us_before) },
		    { "app_stat_us_prefetch", "prefetch", S(judged_after_s), V(app_stat_us_prefetch) } } },
	{ .shape = DD_STAT_VALUE, .json = "entry_cost_us", .metric = "dirahead_entry_cost_seconds",
	  .type = "gauge", .f64 = true, .off = V(entry_cost_s), .json_off = V(entry_cost_us),
	  .help = "The daemon's CPU time per prefetched entry (measured; the configured prior until then)." },
	/* time saved, and what it cost: the metric by filesystem type (a hook), the JSON's total */
	{ .shape = DD_STAT_VALUE, .json = "saved_seconds", .f64 = true, .off = S(saved_s),
	  .json_off = S(saved_s) },
	JSON_ONLY("saved_scans", S(saved_scans)),
	JSON_ONLY("saved_walks", S(saved_walks)),
	HOOK(DD_STAT_HOOK_SAVED),
	{ .shape = DD_STAT_VALUE, .json = "daemon_cpu_seconds",
	  .metric = "dirahead_daemon_cpu_seconds_total", .type = "counter", .f64 = true,
	  .off = S(cpu_s), .json_off = S(cpu_s),
	  .help = "CPU time of the daemon process (every thread, user and system; not its BPF programs', counted in the programs they run in)." },
	/* [budget]: requests per second per filesystem */
	COUNTER("budget_granted", "dirahead_budget_granted_total", S(budget_granted),
		"Prefetch requests the [budget] rules let go to the filesystems they hold."),
	COUNTER("budget_held_back", "dirahead_budget_held_back_total", S(budget_held_back),
		"Prefetch requests the [budget] rules held back: entries the program reached first and stat'ed itself (never sent)."),
	HOOK(DD_STAT_HOOK_ARM),
	HOOK(DD_STAT_HOOK_FILESYSTEMS),
	HOOK(DD_STAT_HOOK_PROGRAMS),
};
const size_t dd_stat_nrows = sizeof(dd_stat_rows) / sizeof(dd_stat_rows[0]);

#define FS(f) offsetof(struct pol_fs, f)
const struct dd_fs_row dd_fs_rows[] = {
	{ DD_FS_VERDICT, "dirahead_filesystem_verdict", "gauge",
	  "The cost model's verdict per filesystem (1 for the current one): unknown, pays, no_gain, fast.",
	  "verdict", { { "verdict", NULL, FS(verdict) } } },
	{ DD_FS_UINT, "dirahead_filesystem_depth", "gauge",
	  "Prefetch requests in flight per scan learned for the filesystem (0: not yet).", NULL,
	  { { "depth", NULL, FS(depth) } } },
	{ DD_FS_NS, "dirahead_filesystem_app_stat_seconds", "gauge",
	  "Moving average of the programs' cost per stat on the filesystem, before and with prefetch.",
	  "phase", { { "app_stat_us_before", "before", FS(before_ns) },
		     { "app_stat_us_prefetch", "prefetch", FS(after_ns) } } },
	{ DD_FS_NS, "dirahead_filesystem_entry_cost_seconds", "gauge",
	  "Moving average of the daemon's CPU per prefetched entry on the filesystem (0: not measured).",
	  NULL, { { "entry_cost_us", NULL, FS(cost_ns) } } },
	{ DD_FS_U64, NULL, NULL, NULL, NULL, { { "scans", NULL, FS(scans) } } },
	{ DD_FS_U64, "dirahead_filesystem_decisions_total", "counter",
	  "The cost model's decisions per filesystem.", "decision",
	  { { "gained", "gained", FS(gained) }, { "no_gain", "no_gain", FS(no_gain) },
	    { "skipped_fast", "skipped_fast", FS(skipped_fast) },
	    { "skipped_no_gain", "skipped_no_gain", FS(skipped_no_gain) },
	    { "reprobes", "reprobed", FS(reprobes) } } },
	/* tree-ahead's listings there */
	{ DD_FS_VERDICT, "dirahead_filesystem_listing_verdict", "gauge",
	  "Whether listing ahead of walkers pays per filesystem (1 for the current one): unknown, pays, no_gain, fast.",
	  "verdict", { { "list_verdict", NULL, FS(list.verdict) } } },
	{ DD_FS_NS, "dirahead_filesystem_listing_seconds", "gauge",
	  "Moving averages of a directory listing on the filesystem: the daemon's (wall and CPU time), the programs' of directories listed ahead of them and of those they came to first.",
	  "by", { { "list_us_daemon", "daemon", FS(list.wall_ns) },
		  { "list_us_daemon_cpu", "daemon_cpu", FS(list.cpu_ns) },
		  { "list_us_ahead", "program_ahead", FS(list.ahead_ns) },
		  { "list_us_own", "program_own", FS(list.own_ns) } } },
	/* by filesystem type in the metric (dirahead_saved_seconds_total): an entry here goes
	 * when evicted or remounted, a counter must not */
	{ DD_FS_SECONDS, NULL, NULL, NULL, NULL, { { "saved_seconds", NULL, FS(saved_s) } } },
};
const size_t dd_fs_nrows = sizeof(dd_fs_rows) / sizeof(dd_fs_rows[0]);

void dd_stats_view_derive(struct dd_stats_view *v)
{
	const struct dd_stats *s = &v->s;
	v->app_stat_us_before = s->judged ? s->judged_before_s * 1e6 / (double)s->judged : 0;
	v->app_stat_us_prefetch = s->judged ? s->judged_after_s * 1e6 / (double)s->judged : 0;
	v->entry_cost_us = v->entry_cost_ns / 1e3;
	v->entry_cost_s = v->entry_cost_ns / 1e9;
}

bool dd_stat_reason_metric(const struct dd_stat_row *r, const struct dd_stats_view *v, int i,
			   uint64_t *out)
{
	assert(r->shape == DD_STAT_REASONS && i >= 0 && i < r->n);
	if (!r->names[i] || (r->merge && i == r->hidden))
		return false;  /* a reason of the family that never ends this kind, or merged */
	*out = dd_stat_u64(v, r->off + (size_t)i * sizeof(uint64_t));
	if (r->merge && i == r->into)
		*out += dd_stat_u64(v, r->off + (size_t)r->hidden * sizeof(uint64_t));
	return true;
}

const double dd_latency_bounds[DD_LAT_BUCKETS] = { 1e-5, 5e-5, 1e-4, 2.5e-4, 5e-4, 1e-3, 2.5e-3,
						   5e-3, 1e-2, 5e-2, 0.25, 1.0 };

void dd_stats_latency(struct dd_stats *s, uint64_t ns)
{
	double v = (double)ns / 1e9;
	int i = 0;
	while (i < DD_LAT_BUCKETS && v > dd_latency_bounds[i])
		i++;
	s->lat_bucket[i]++;
	s->lat_count++;
	s->lat_sum_s += v;
}

void dd_stats_saved(struct dd_stats *st, struct pol_fs *fs, const char *type, double s,
		    bool had_figures, bool walk)
{
	if (!had_figures)
		return; /* nothing measured, nothing claimed (s is 0) */
	if (walk)
		st->saved_walks++;
	else
		st->saved_scans++;
	st->saved_s += s;
	if (fs)
		fs->saved_s += s;
	if (!type)
		type = "unknown";
	int i = 0;
	while (i < DD_SAVED_TYPES - 1 && st->saved_by[i].fstype && strcmp(st->saved_by[i].fstype, type))
		i++;
	if (i == DD_SAVED_TYPES - 1 && (!st->saved_by[i].fstype || strcmp(st->saved_by[i].fstype, type)))
		type = "other"; /* the last slot takes whatever finds no room */
	st->saved_by[i].fstype = type;
	if (s >= 0)
		st->saved_by[i].gained += s;
	else
		st->saved_by[i].lost -= s;
}

double dd_process_cpu_s(void)
{
	struct rusage ru;
	if (getrusage(RUSAGE_SELF, &ru) != 0)
		return 0;
	return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
	       (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

struct out {
	char *buf;
	size_t len, pos;
};

static void put(struct out *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(struct out *o, const char *fmt, ...)
{
	va_list ap;
	if (o->pos >= o->len)
		return;
	va_start(ap, fmt);
	int n = vsnprintf(o->buf + o->pos, o->len - o->pos, fmt, ap);
	va_end(ap);
	if (n > 0)
		o->pos += (size_t)n < o->len - o->pos ? (size_t)n : o->len - o->pos - 1;
}

static uint64_t sum(const uint64_t *v, int n)
{
	uint64_t t = 0;
	for (int i = 0; i < n; i++)
		t += v[i];
	return t;
}

/* ", N what (n1 reason1, n2 reason2)" with the reasons that moved */
static void put_reasons(struct out *o, const char *what, const uint64_t *now, const uint64_t *prev,
			const char *const *names, int n)
{
	bool first = true;
	put(o, ", %llu %s", (unsigned long long)(sum(now, n) - sum(prev, n)), what);
	for (int i = 0; i < n; i++) {
		if (now[i] == prev[i] || !names[i])
			continue;
		put(o, "%s%llu %s", first ? " (" : ", ", (unsigned long long)(now[i] - prev[i]), names[i]);
		first = false;
	}
	if (!first)
		put(o, ")");
}

size_t dd_stats_summary(const struct dd_stats *now, const struct dd_stats *prev, char *buf, size_t len)
{
	struct out o = { buf, len, 0 };
	uint64_t d_err = sum(now->errors, DD_ERR_MAX) - sum(prev->errors, DD_ERR_MAX);
	bool walks = now->walks_started != prev->walks_started ||
		     sum(now->walks_ended, DD_END_MAX) != sum(prev->walks_ended, DD_END_MAX);
	if (len)
		buf[0] = '\0';
	if (now->scans_confirmed == prev->scans_confirmed && now->scans_started == prev->scans_started &&
	    sum(now->scans_ended, DD_END_MAX) == sum(prev->scans_ended, DD_END_MAX) &&
	    sum(now->skips, DD_SKIP_MAX) == sum(prev->skips, DD_SKIP_MAX) && !walks &&
	    now->entries_prefetched == prev->entries_prefetched && now->hits == prev->hits &&
	    now->misses == prev->misses && !d_err)
		return 0;
	put(&o, "%llu scans confirmed, %llu started",
	    (unsigned long long)(now->scans_confirmed - prev->scans_confirmed),
	    (unsigned long long)(now->scans_started - prev->scans_started));
	put_reasons(&o, "ended", now->scans_ended, prev->scans_ended, dd_scan_end_names, DD_END_MAX);
	put_reasons(&o, "skipped", now->skips, prev->skips, dd_skip_reason_names, DD_SKIP_MAX);
	if (walks) {
		put(&o, "; %llu walks started", (unsigned long long)(now->walks_started - prev->walks_started));
		put_reasons(&o, "ended", now->walks_ended, prev->walks_ended, dd_walk_end_names, DD_END_MAX);
	}
	put(&o, "; %llu entries prefetched, %llu hits, %llu misses",
	    (unsigned long long)(now->entries_prefetched - prev->entries_prefetched),
	    (unsigned long long)(now->hits - prev->hits), (unsigned long long)(now->misses - prev->misses));
	if (d_err)
		put_reasons(&o, "errors", now->errors, prev->errors, dd_err_class_names, DD_ERR_MAX);
	uint64_t d_scans = now->saved_scans - prev->saved_scans, d_walks = now->saved_walks - prev->saved_walks;
	if (d_scans || d_walks) {
		put(&o, "; saved programs %.1f s over %llu scans", now->saved_s - prev->saved_s,
		    (unsigned long long)d_scans);
		if (d_walks)
			put(&o, " and %llu walks", (unsigned long long)d_walks);
		put(&o, ", using %.1f s of CPU", now->cpu_s - prev->cpu_s);
	}
	return o.pos;
}
