/* SPDX-License-Identifier: LGPL-2.1-or-later OR BSD-2-Clause */
#include "metrics.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "arm.h"
#include "daemon.h"
#include "detector.h"
#include "fsmagic.h"
#include "policy.h"
#include "scan.h"

/* The application stat latency buckets exported: le = 2^k ns for k in this range. */
#define APP_LAT_LE_MIN 8
#define APP_LAT_LE_MAX 32

static void head(FILE *f, const char *name, const char *type, const char *help)
{
	fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

struct fs_ctx {
	FILE *f;
	int what;
};

/* One metric family over every remembered filesystem; labels device ("MAJOR:MINOR", as
 * /proc/self/mountinfo shows it) and fstype, never a path. */
static void fs_line(const struct pol_fs *fs, void *ctx)
{
	struct fs_ctx *c = ctx;
	const char *type = fsmagic_name(fs->magic);
	char lab[96];
	snprintf(lab, sizeof(lab), "device=\"%u:%u\",fstype=\"%s\"", fs->dev_major, fs->dev_minor,
		 type ? type : "unknown");
	switch (c->what) {
	case 0:
		for (int v = 0; v < POL_VERDICT_MAX; v++)
			fprintf(c->f, "dirahead_filesystem_verdict{%s,verdict=\"%s\"} %d\n", lab,
				pol_verdict_names[v], fs->verdict == (enum pol_verdict)v);
		break;
	case 1:
		fprintf(c->f, "dirahead_filesystem_depth{%s} %u\n", lab, fs->depth);
		break;
	case 2:
		fprintf(c->f, "dirahead_filesystem_app_stat_seconds{%s,phase=\"before\"} %.9f\n", lab,
			fs->before_ns / 1e9);
		fprintf(c->f, "dirahead_filesystem_app_stat_seconds{%s,phase=\"prefetch\"} %.9f\n", lab,
			fs->after_ns / 1e9);
		break;
	case 3:
		fprintf(c->f, "dirahead_filesystem_entry_cost_seconds{%s} %.9f\n", lab, fs->cost_ns / 1e9);
		break;
	case 4: {
		const struct { const char *n; uint64_t v; } o[] = {
			{ "gained", fs->gained }, { "no_gain", fs->no_gain },
			{ "skipped_fast", fs->skipped_fast }, { "skipped_no_gain", fs->skipped_no_gain },
			{ "reprobed", fs->reprobes },
		};
		for (size_t i = 0; i < sizeof(o) / sizeof(o[0]); i++)
			fprintf(c->f, "dirahead_filesystem_decisions_total{%s,decision=\"%s\"} %llu\n", lab,
				o[i].n, (unsigned long long)o[i].v);
		break;
	}
	case 5:
		for (int v = 0; v < POL_VERDICT_MAX; v++)
			fprintf(c->f, "dirahead_filesystem_listing_verdict{%s,verdict=\"%s\"} %d\n", lab,
				pol_verdict_names[v], fs->list.verdict == (enum pol_verdict)v);
		break;
	case 6: {
		const struct { const char *n; double v; } o[] = {
			{ "daemon", fs->list.wall_ns }, { "daemon_cpu", fs->list.cpu_ns },
			{ "program_ahead", fs->list.ahead_ns }, { "program_own", fs->list.own_ns },
		};
		for (size_t i = 0; i < sizeof(o) / sizeof(o[0]); i++)
			fprintf(c->f, "dirahead_filesystem_listing_seconds{%s,by=\"%s\"} %.9f\n", lab,
				o[i].n, o[i].v / 1e9);
		break;
	}
	}
}

static void count_fs(const struct pol_fs *fs, void *ctx)
{
	(void)fs;
	++*(unsigned *)ctx;
}

static void one(FILE *f, const char *name, const char *type, const char *help, unsigned long long v)
{
	head(f, name, type, help);
	fprintf(f, "%s %llu\n", name, v);
}

char *metrics_text(struct daemon *d)
{
	char *out = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&out, &len);
	if (!f)
		return NULL;
	struct da_stats *s = &d->stats;
	struct detector_counters dc = { 0 };
	detector_counters(d->det, &dc);

	head(f, "dirahead_build_info", "gauge", "Build information; the value is always 1.");
	fprintf(f, "dirahead_build_info{version=\"%s\",engine=\"%s\"} 1\n", DIRAHEAD_VERSION,
		scan_mgr_backend(d->mgr));
	one(f, "dirahead_listings_total", "counter", "Directory listings seen by the BPF detector.",
	    dc.v[DIRAHEAD_CNT_LISTINGS]);
	one(f, "dirahead_scans_confirmed_total", "counter",
	    "Scans confirmed: a listing followed by stats of the directory's entries.", s->scans_confirmed);
	one(f, "dirahead_scans_unlisted_total", "counter",
	    "Scans confirmed without a listing: stats of many names of one directory in a row.",
	    s->scans_unlisted);
	head(f, "dirahead_scans_ended_total", "counter", "Scans ended, by reason (completed or why aborted).");
	for (int i = 0; i < DA_END_MAX; i++)
		fprintf(f, "dirahead_scans_ended_total{reason=\"%s\"} %llu\n", da_end_reason_names[i],
			(unsigned long long)s->scans_ended[i]);
	head(f, "dirahead_skips_total", "counter", "Confirmed scans not prefetched, by reason.");
	/* Every local user may read this page: "mismatch" (something other than the directory
	 * opened) next to "open_failed" would tell whether another user's path exists.  Both
	 * are open_failed here; `diraheadctl stats` (root or the control group) tells them apart. */
	for (int i = 0; i < DA_SKIP_MAX; i++)
		if (i != DA_SKIP_MISMATCH)
			fprintf(f, "dirahead_skips_total{reason=\"%s\"} %llu\n", da_skip_reason_names[i],
				(unsigned long long)(s->skips[i] +
						     (i == DA_SKIP_OPEN_FAILED ? s->skips[DA_SKIP_MISMATCH] : 0)));
	one(f, "dirahead_entries_prefetched_total", "counter", "Entries whose attributes were prefetched.",
	    s->entries_prefetched);
	one(f, "dirahead_hits_total", "counter", "Application stats that found the entry prefetched.", s->hits);
	one(f, "dirahead_misses_total", "counter", "Application stats that got ahead of the prefetch.", s->misses);
	head(f, "dirahead_errors_total", "counter", "Prefetch requests that failed, by errno class.");
	for (int i = 0; i < DA_ERR_MAX; i++)
		fprintf(f, "dirahead_errors_total{class=\"%s\"} %llu\n", da_err_class_names[i],
			(unsigned long long)s->errors[i]);
	one(f, "dirahead_bpf_events_lost_total", "counter", "BPF events dropped because the ring buffer was full.",
	    dc.v[DIRAHEAD_CNT_EVENTS_LOST]);
	one(f, "dirahead_bpf_table_full_total", "counter",
	    "Listings the BPF detector did not track because its process or scan table was full.",
	    dc.v[DIRAHEAD_CNT_TABLE_FULL]);
	one(f, "dirahead_bpf_user_full_total", "counter",
	    "Listings the BPF detector did not track because their uid held its share of the tables.",
	    dc.v[DIRAHEAD_CNT_USER_FULL]);
	head(f, "dirahead_config_reloads_total", "counter", "Configuration reloads, by result.");
	fprintf(f, "dirahead_config_reloads_total{result=\"success\"} %llu\n", (unsigned long long)s->reloads_ok);
	fprintf(f, "dirahead_config_reloads_total{result=\"failure\"} %llu\n", (unsigned long long)s->reloads_failed);
	head(f, "dirahead_metrics_requests_total", "counter",
	     "Requests to the metrics endpoint, by result (bad_host: refused for a foreign Host header, as DNS rebinding sends; forbidden: outside the control group), and connections refused at a limit or closed too slow.");
	for (int i = 0; i < DA_HTTP_MAX; i++)
		fprintf(f, "dirahead_metrics_requests_total{result=\"%s\"} %llu\n", da_http_result_names[i],
			(unsigned long long)s->http_requests[i]);
	head(f, "dirahead_prefetch_latency_seconds", "histogram",
	     "Time from submitting a prefetch request to its completion.");
	unsigned long long cum = 0;
	for (int i = 0; i < DA_LAT_BUCKETS; i++) {
		cum += s->lat_bucket[i];
		fprintf(f, "dirahead_prefetch_latency_seconds_bucket{le=\"%g\"} %llu\n", da_latency_bounds[i], cum);
	}
	cum += s->lat_bucket[DA_LAT_BUCKETS];
	fprintf(f, "dirahead_prefetch_latency_seconds_bucket{le=\"+Inf\"} %llu\n", cum);
	fprintf(f, "dirahead_prefetch_latency_seconds_sum %.9f\n", s->lat_sum_s);
	fprintf(f, "dirahead_prefetch_latency_seconds_count %llu\n", cum);
	/* BPF's log2 slots (slot k: at most 2^k ns) as cumulative buckets from 256 ns (below the
	 * fastest stat, ~1 us here) to 4.3 s (a hung server); beyond them, +Inf. */
	struct detector_app_lat al = { 0 };
	detector_app_lat(d->det, &al);
	head(f, "dirahead_app_stat_latency_seconds", "histogram",
	     "Duration of the applications' successful stat calls on entries of directories they listed.");
	cum = 0;
	for (int k = 0; k < DIRAHEAD_APP_LAT_SLOTS; k++) {
		cum += al.slot[k];
		if (k >= APP_LAT_LE_MIN && k <= APP_LAT_LE_MAX)
			fprintf(f, "dirahead_app_stat_latency_seconds_bucket{le=\"%.10g\"} %llu\n",
				(double)(1ull << k) / 1e9, cum);
	}
	fprintf(f, "dirahead_app_stat_latency_seconds_bucket{le=\"+Inf\"} %llu\n", cum);
	fprintf(f, "dirahead_app_stat_latency_seconds_sum %.9f\n", (double)al.sum_ns / 1e9);
	fprintf(f, "dirahead_app_stat_latency_seconds_count %llu\n", cum);
	one(f, "dirahead_walks_started_total", "counter",
	    "Walks started: tree-ahead for a process descending from a directory it scanned.", s->walks_started);
	head(f, "dirahead_walks_ended_total", "counter", "Walks ended, by reason.");
	for (int i = 0; i < DA_WALK_END_MAX; i++)
		fprintf(f, "dirahead_walks_ended_total{reason=\"%s\"} %llu\n", da_walk_end_reason_names[i],
			(unsigned long long)s->walks_ended[i]);
	one(f, "dirahead_walks_listing_only_total", "counter",
	    "Walks that listed only (the program's stats need no prefetch), started so or turned so.",
	    s->walks_list_only);
	one(f, "dirahead_walk_candidates_total", "counter",
	    "Processes watched for a walk after their scan was skipped (fast stats, no gain).",
	    s->walk_candidates);
	one(f, "dirahead_walk_entries_used_total", "counter",
	    "Entries walks fetched in directories the program then listed.", s->walk_entries_used);
	one(f, "dirahead_active_walks", "gauge", "Walks running now.", scan_mgr_walks(d->mgr));
	one(f, "dirahead_openers_stuck", "gauge",
	    "Openers (of scans' and walks' directories) running for over a second now: on a hung filesystem.",
	    scan_mgr_openers_stuck(d->mgr));
	head(f, "dirahead_walk_dirs_total", "counter",
	     "Directories of walks: listed by the walk (opened), then listed by the program after the walk (ahead) or before it (late), or passed over by the program (skipped).");
	fprintf(f, "dirahead_walk_dirs_total{outcome=\"opened\"} %llu\n", (unsigned long long)s->walk_dirs_opened);
	fprintf(f, "dirahead_walk_dirs_total{outcome=\"ahead\"} %llu\n", (unsigned long long)s->walk_dirs_ahead);
	fprintf(f, "dirahead_walk_dirs_total{outcome=\"late\"} %llu\n", (unsigned long long)s->walk_dirs_late);
	fprintf(f, "dirahead_walk_dirs_total{outcome=\"skipped\"} %llu\n", (unsigned long long)s->walk_dirs_skipped);
	one(f, "dirahead_walk_not_entered_total", "counter",
	    "Subdirectories a walk did not enter: mount points, automount points, or failures to open.",
	    s->walk_not_entered);
	head(f, "dirahead_scan_orders_learnt_total", "counter",
	     "Scans whose program stats in another order than readdir's (gnulib fts sorts above 10,000 entries by inode), fetched in that order.");
	fprintf(f, "dirahead_scan_orders_learnt_total{order=\"inode\"} %llu\n", (unsigned long long)s->orders_learnt[0]);
	fprintf(f, "dirahead_scan_orders_learnt_total{order=\"name\"} %llu\n", (unsigned long long)s->orders_learnt[1]);
	one(f, "dirahead_scans_muted_total", "counter",
	    "Scans the cost model muted in BPF (prefetch would not pay): the process's further listings on that filesystem go untracked for mute_ms.",
	    s->scans_muted);
	one(f, "dirahead_entries_wasted_total", "counter",
	    "Entries prefetched for scans that ended without the program using them.", s->entries_wasted);
	one(f, "dirahead_payoff_judgments_total", "counter",
	    "Pay-off judgments: stretches of gain_stats stats compared with the program's cost before prefetch.",
	    s->judged);
	head(f, "dirahead_payoff_app_stat_seconds_total", "counter",
	     "Sum over pay-off judgments of the program's mean cost per stat, before and with prefetch (divide by dirahead_payoff_judgments_total).");
	fprintf(f, "dirahead_payoff_app_stat_seconds_total{phase=\"before\"} %.9f\n", s->judged_before_s);
	fprintf(f, "dirahead_payoff_app_stat_seconds_total{phase=\"prefetch\"} %.9f\n", s->judged_after_s);
	head(f, "dirahead_entry_cost_seconds", "gauge",
	     "The daemon's CPU time per prefetched entry (measured; the configured prior until then).");
	fprintf(f, "dirahead_entry_cost_seconds %.9f\n", policy_entry_cost_ns(scan_mgr_policy(d->mgr)) / 1e9);
	static const struct { const char *name, *type, *help; } fsm[] = {
		{ "dirahead_filesystem_verdict", "gauge",
		  "The cost model's verdict per filesystem (1 for the current one): unknown, pays, no_gain, fast." },
		{ "dirahead_filesystem_depth", "gauge",
		  "Prefetch requests in flight per scan learned for the filesystem (0: not yet)." },
		{ "dirahead_filesystem_app_stat_seconds", "gauge",
		  "Moving average of the programs' cost per stat on the filesystem, before and with prefetch." },
		{ "dirahead_filesystem_entry_cost_seconds", "gauge",
		  "Moving average of the daemon's CPU per prefetched entry on the filesystem (0: not measured)." },
		{ "dirahead_filesystem_decisions_total", "counter",
		  "The cost model's decisions per filesystem." },
		{ "dirahead_filesystem_listing_verdict", "gauge",
		  "Whether listing ahead of walkers pays per filesystem (1 for the current one): unknown, pays, no_gain, fast." },
		{ "dirahead_filesystem_listing_seconds", "gauge",
		  "Moving averages of a directory listing on the filesystem: the daemon's (wall and CPU time), the programs' of directories listed ahead of them and of those they came to first." },
	};
	unsigned nfs = 0;
	policy_foreach(scan_mgr_policy(d->mgr), count_fs, &nfs);
	for (int w = 0; w < (int)(sizeof(fsm) / sizeof(fsm[0])) && nfs; w++) { /* no family without samples */
		struct fs_ctx c = { f, w };
		head(f, fsm[w].name, fsm[w].type, fsm[w].help);
		policy_foreach(scan_mgr_policy(d->mgr), fs_line, &c);
	}
	one(f, "dirahead_active_scans", "gauge", "Scans being prefetched now.", scan_mgr_active(d->mgr));
	one(f, "dirahead_requests_in_flight", "gauge", "Prefetch requests in flight now.", scan_mgr_inflight(d->mgr));

	if (d->arm) {
		struct arm_stats a;
		arm_get_stats(d->arm, &a);
		one(f, "dirahead_armed", "gauge",
		    "1 while the detector's syscall hooks are attached (on-block: while metadata calls block).",
		    a.armed);
		one(f, "dirahead_arms_total", "counter",
		    "Times a blocked metadata call attached the detector's syscall hooks.", a.arms);
		head(f, "dirahead_armed_seconds_total", "counter",
		     "Time the detector's syscall hooks were attached (every syscall of the machine pays then).");
		fprintf(f, "dirahead_armed_seconds_total %.3f\n", a.armed_s);
		head(f, "dirahead_sentinel_signals_total", "counter",
		     "Blocked metadata calls the sentinel reported, by what became of them (rate_limited: not sent, the process had reported lately).");
		for (int i = 0; i < ARM_SIG_MAX; i++)
			fprintf(f, "dirahead_sentinel_signals_total{reason=\"%s\"} %llu\n", arm_signal_names[i],
				(unsigned long long)a.signals[i]);
		fprintf(f, "dirahead_sentinel_signals_total{reason=\"rate_limited\"} %llu\n",
			(unsigned long long)a.rate_limited);
		fprintf(f, "dirahead_sentinel_signals_total{reason=\"lost\"} %llu\n", (unsigned long long)a.lost);
	}

	struct detector_prog_stat ps[33];
	int n = detector_prog_stats(d->det, ps, 32);
	if (n > 32)
		n = 32;
	uint32_t sid;
	bool sattached;
	if (arm_sentinel_prog(d->arm, &sid, &ps[n].run_cnt, &ps[n].run_time_ns, &sattached)) {
		ps[n].name = "dirahead_sentinel";
		ps[n].id = sid;
		ps[n].attached = sattached;
		n++;
	}
	int attached = 0;
	for (int i = 0; i < n; i++)
		attached += ps[i].attached;
	head(f, "dirahead_bpf_programs_attached", "gauge",
	     "BPF programs attached (the syscall hooks only while armed, stat timing only while scans happen).");
	fprintf(f, "dirahead_bpf_programs_attached %d\n", attached);
	head(f, "dirahead_bpf_program_runs_total", "counter",
	     "Runs of each BPF program (needs kernel.bpf_stats_enabled=1).");
	for (int i = 0; i < n; i++)
		fprintf(f, "dirahead_bpf_program_runs_total{program=\"%s\"} %llu\n", ps[i].name,
			(unsigned long long)ps[i].run_cnt);
	head(f, "dirahead_bpf_program_run_seconds_total", "counter",
	     "Time spent in each BPF program (needs kernel.bpf_stats_enabled=1).");
	for (int i = 0; i < n; i++)
		fprintf(f, "dirahead_bpf_program_run_seconds_total{program=\"%s\"} %.9f\n", ps[i].name,
			(double)ps[i].run_time_ns / 1e9);
	if (fclose(f) != 0) {
		free(out);
		return NULL;
	}
	return out;
}
