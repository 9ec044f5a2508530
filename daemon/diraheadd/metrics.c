/* SPDX-License-Identifier: LGPL-2.1-or-later OR BSD-2-Clause */
/* The metrics page in Prometheus text: the rows of the statistics table (stats.h) as families,
 * and the sections the table leaves to it (histograms, arming, filesystems, BPF programs). */
#include "metrics.h"

#include <assert.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arm.h"
#include "daemon.h"
#include "detector.h"
#include "fsmagic.h"
#include "policy.h"
#include "scan.h"
#include "statsview.h"

/* The application stat latency buckets exported: le = 2^k ns for k in this range. */
#define APP_LAT_LE_MIN 8
#define APP_LAT_LE_MAX 32

static void head(FILE *f, const char *name, const char *type, const char *help)
{
	fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

struct fs_ctx {
	FILE *f;
	const struct dd_fs_row *r;
};

/* Row r's samples of one remembered filesystem; labels device ("MAJOR:MINOR", as
 * /proc/self/mountinfo shows it) and fstype, never a path. */
static void fs_line(const struct pol_fs *fs, void *ctx)
{
	struct fs_ctx *c = ctx;
	const struct dd_fs_row *r = c->r;
	const char *type = fsmagic_name(fs->magic);
	char lab[96];
	snprintf(lab, sizeof(lab), "device=\"%u:%u\",fstype=\"%s\"", fs->dev_major, fs->dev_minor,
		 type ? type : "unknown");
	for (int i = 0; i < DD_STAT_PARTS_MAX && r->field[i].json; i++) {
		const struct dd_fs_field *fd = &r->field[i];
		const void *at = (const char *)fs + fd->off;
		if (r->kind == DD_FS_VERDICT) {
			for (int v = 0; v < POL_VERDICT_MAX; v++)
				fprintf(c->f, "%s{%s,%s=\"%s\"} %d\n", r->metric, lab, r->label,
					pol_verdict_names[v], *(const enum pol_verdict *)at == (enum pol_verdict)v);
			continue;
		}
		fprintf(c->f, "%s{%s", r->metric, lab);
		if (fd->label)
			fprintf(c->f, ",%s=\"%s\"", r->label, fd->label);
		if (r->kind == DD_FS_UINT)
			fprintf(c->f, "} %u\n", *(const unsigned *)at);
		else if (r->kind == DD_FS_U64)
			fprintf(c->f, "} %llu\n", (unsigned long long)*(const uint64_t *)at);
		else if (r->kind == DD_FS_SECONDS)
			fprintf(c->f, "} %.9f\n", *(const double *)at);
		else
			fprintf(c->f, "} %.9f\n", *(const double *)at / 1e9);
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

static void build_info(FILE *f, struct daemon *d)
{
	head(f, "dirahead_build_info", "gauge", "Build information; the value is always 1.");
	fprintf(f, "dirahead_build_info{version=\"%s\",engine=\"%s\"} 1\n", DIRAHEAD_VERSION,
		scan_mgr_backend(d->mgr));
}

static void prefetch_latency(FILE *f, const struct dd_stats *s)
{
	unsigned long long cum = 0;
	head(f, "dirahead_prefetch_latency_seconds", "histogram",
	     "Time from submitting a prefetch request to its completion.");
	for (int i = 0; i < DD_LAT_BUCKETS; i++) {
		cum += s->lat_bucket[i];
		fprintf(f, "dirahead_prefetch_latency_seconds_bucket{le=\"%g\"} %llu\n", dd_latency_bounds[i], cum);
	}
	cum += s->lat_bucket[DD_LAT_BUCKETS];
	fprintf(f, "dirahead_prefetch_latency_seconds_bucket{le=\"+Inf\"} %llu\n", cum);
	fprintf(f, "dirahead_prefetch_latency_seconds_sum %.9f\n", s->lat_sum_s);
	fprintf(f, "dirahead_prefetch_latency_seconds_count %llu\n", cum);
}

/* BPF's log2 slots (slot k: at most 2^k ns) as cumulative buckets from 256 ns (below the fastest
 * stat, ~1 us here) to 4.3 s (a hung server); beyond them, +Inf. */
static void app_latency(FILE *f, struct daemon *d)
{
	struct detector_app_lat al = { 0 };
	unsigned long long cum = 0;
	detector_app_lat(d->det, &al);
	head(f, "dirahead_app_stat_latency_seconds", "histogram",
	     "Duration of the applications' successful stat calls on entries of directories they listed.");
	for (int k = 0; k < DIRAHEAD_APP_LAT_SLOTS; k++) {
		cum += al.slot[k];
		if (k >= APP_LAT_LE_MIN && k <= APP_LAT_LE_MAX)
			fprintf(f, "dirahead_app_stat_latency_seconds_bucket{le=\"%.10g\"} %llu\n",
				(double)(1ull << k) / 1e9, cum);
	}
	fprintf(f, "dirahead_app_stat_latency_seconds_bucket{le=\"+Inf\"} %llu\n", cum);
	fprintf(f, "dirahead_app_stat_latency_seconds_sum %.9f\n", (double)al.sum_ns / 1e9);
	fprintf(f, "dirahead_app_stat_latency_seconds_count %llu\n", cum);
}

static void arming(FILE *f, struct daemon *d)
{
	struct arm_stats a;
	if (!d->arm)
		return;
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

static void filesystems(FILE *f, struct daemon *d)
{
	unsigned nfs = 0;
	policy_foreach(scan_mgr_policy(d->mgr), count_fs, &nfs);
	for (size_t i = 0; i < dd_fs_nrows && nfs; i++) { /* no family without samples */
		struct fs_ctx c = { f, &dd_fs_rows[i] };
		if (!c.r->metric)
			continue;
		head(f, c.r->metric, c.r->type, c.r->help);
		policy_foreach(scan_mgr_policy(d->mgr), fs_line, &c);
	}
}

static void programs(FILE *f, struct daemon *d)
{
	struct detector_prog_stat ps[33];
	int n = detector_prog_stats(d->det, ps, 32);
	assert(n >= 0); /* a count of programs, never an error */
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
}

/* The filesystem types of the series: those with an estimate (dd_stats_saved's slots, which
 * outlive the cost model's entries), then those of the filesystems the cost model knows, at 0,
 * so that a dashboard has the series before the first estimate (no family without samples:
 * strict parsers refuse one). */
struct saved_types {
	const char *t[DD_SAVED_TYPES * 2];
	unsigned n;
};

static void saved_type_add(struct saved_types *st, const char *type)
{
	for (unsigned i = 0; i < st->n; i++)
		if (!strcmp(st->t[i], type))
			return;
	if (st->n < sizeof(st->t) / sizeof(st->t[0]))
		st->t[st->n++] = type;
}

static void saved_type_fs(const struct pol_fs *fs, void *ctx)
{
	const char *type = fsmagic_name(fs->magic);
	saved_type_add(ctx, type ? type : "unknown");
}

static double saved_of(const struct dd_stats *s, const char *type, bool lost)
{
	for (int i = 0; i < DD_SAVED_TYPES && s->saved_by[i].fstype; i++)
		if (!strcmp(s->saved_by[i].fstype, type))
			return lost ? s->saved_by[i].lost : s->saved_by[i].gained;
	return 0;
}

/* Time saved by filesystem type (dd_stats_saved): a counter per type, kept by the stats. */
static void saved(FILE *f, struct daemon *d, const struct dd_stats *s)
{
	struct saved_types st = { .n = 0 };
	for (int i = 0; i < DD_SAVED_TYPES && s->saved_by[i].fstype; i++)
		saved_type_add(&st, s->saved_by[i].fstype);
	policy_foreach(scan_mgr_policy(d->mgr), saved_type_fs, &st);
	if (!st.n)
		return;
	head(f, "dirahead_saved_seconds_total", "counter",
	     "Program time saved by prefetch, estimated from the cost model's figures (cost per stat or listing without prefetch less with it, times the stats and listings made with it), by filesystem type: the scans and walks that saved time.");
	for (unsigned i = 0; i < st.n; i++)
		fprintf(f, "dirahead_saved_seconds_total{fstype=\"%s\"} %.6f\n", st.t[i],
			saved_of(s, st.t[i], false));
	head(f, "dirahead_lost_seconds_total", "counter",
	     "Program time prefetch cost, estimated like dirahead_saved_seconds_total, by filesystem type: the scans and walks that were slower with it (net saved = saved - lost).");
	for (unsigned i = 0; i < st.n; i++)
		fprintf(f, "dirahead_lost_seconds_total{fstype=\"%s\"} %.6f\n", st.t[i],
			saved_of(s, st.t[i], true));
}

static void hook(FILE *f, struct daemon *d, const struct dd_stats_view *v, enum dd_stat_hook h)
{
	switch (h) {
	case DD_STAT_HOOK_BUILD_INFO:
		build_info(f, d);
		break;
	case DD_STAT_HOOK_PREFETCH_LATENCY:
		prefetch_latency(f, &v->s);
		break;
	case DD_STAT_HOOK_APP_LATENCY:
		app_latency(f, d);
		break;
	case DD_STAT_HOOK_ARM:
		arming(f, d);
		break;
	case DD_STAT_HOOK_FILESYSTEMS:
		filesystems(f, d);
		break;
	case DD_STAT_HOOK_PROGRAMS:
		programs(f, d);
		break;
	case DD_STAT_HOOK_SAVED:
		saved(f, d, &v->s);
		break;
	}
}

/* One value of a family: "NAME{LABEL="VALUE"} N" (no label: "NAME N"). */
static void sample(FILE *f, const struct dd_stat_row *r, const char *lab, const struct dd_stats_view *v,
		   size_t off)
{
	fputs(r->metric, f);
	if (lab)
		fprintf(f, "{%s=\"%s\"}", r->label, lab);
	if (r->f64)
		fprintf(f, " %.9f\n", dd_stat_f64(v, off));
	else
		fprintf(f, " %llu\n", (unsigned long long)dd_stat_u64(v, off));
}

/* One row of the statistics table (stats.h) as its metric family. */
static void row(FILE *f, struct daemon *d, const struct dd_stat_row *r, const struct dd_stats_view *v)
{
	uint64_t n;
	if (r->shape == DD_STAT_HOOK) {
		hook(f, d, v, r->hook);
		return;
	}
	if (!r->metric)
		return; /* in the JSON only */
	assert(r->type && r->help && (r->shape == DD_STAT_VALUE || r->label));
	head(f, r->metric, r->type, r->help);
	switch (r->shape) {
	case DD_STAT_VALUE:
		sample(f, r, NULL, v, r->off);
		break;
	case DD_STAT_REASONS:
		for (int i = 0; i < r->n; i++)
			if (dd_stat_reason_metric(r, v, i, &n))
				fprintf(f, "%s{%s=\"%s\"} %llu\n", r->metric, r->label, r->names[i],
					(unsigned long long)n);
		break;
	case DD_STAT_PARTS:
		for (int i = 0; i < DD_STAT_PARTS_MAX && r->part[i].label; i++)
			sample(f, r, r->part[i].label, v, r->part[i].off);
		break;
	case DD_STAT_HOOK:
		break;
	}
}

char *metrics_text(struct daemon *d)
{
	char *out = NULL;
	size_t len = 0;
	struct dd_stats_view v;
	FILE *f = open_memstream(&out, &len);
	if (!f)
		return NULL;
	statsview_read(d, &v);
	for (size_t i = 0; i < dd_stat_nrows; i++)
		row(f, d, &dd_stat_rows[i], &v);
	if (fclose(f) != 0) {
		free(out);
		return NULL;
	}
	return out;
}
