/* SPDX-License-Identifier: LGPL-2.1-or-later OR BSD-2-Clause */
/*
 * daemon/diraheadd/stats.c.  dd_stats_summary: the periodic log line at the default level says
 * what the counters did between two snapshots, names the reasons that moved and no others, and
 * is empty when nothing moved (an idle daemon logs nothing).  The statistics table: every counter
 * of struct dd_stats is declared by exactly one row, no JSON key or metric twice, each metric
 * with its type and help; the same of the filesystems' table; the values both renderings derive
 * (means, units) and the merged skip reason of the metric.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "policy.h"
#include "stats.h"

static void test_nothing(void **state)
{
	struct dd_stats a = { 0 }, b = { 0 };
	char buf[512] = "x";
	(void)state;
	assert_int_equal(dd_stats_summary(&b, &a, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "");
	/* counters the summary does not report do not make one */
	b.reloads_ok = 3;
	b.http_requests[DD_HTTP_OK] = 9;
	assert_int_equal(dd_stats_summary(&b, &a, buf, sizeof(buf)), 0);
}

static void test_deltas(void **state)
{
	struct dd_stats a = { 0 }, b;
	char buf[512];
	(void)state;
	a.scans_confirmed = 10;
	a.scans_ended[DD_END_COMPLETED] = 5;
	a.entries_prefetched = 1000;
	b = a;
	b.scans_confirmed += 4;
	b.scans_started += 3;
	b.scans_ended[DD_END_COMPLETED] += 2;
	b.scans_ended[DD_END_NO_GAIN] += 1;
	b.skips[DD_SKIP_FAST] += 1;
	b.entries_prefetched += 500;
	b.hits += 480;
	b.misses += 7;
	size_t n = dd_stats_summary(&b, &a, buf, sizeof(buf));
	assert_int_equal(n, strlen(buf));
	assert_string_equal(buf, "4 scans confirmed, 3 started, 3 ended (2 completed, 1 no_gain), "
				 "1 skipped (1 fast_stats); 500 entries prefetched, 480 hits, 7 misses");
	b.walks_started += 1;
	b.walks_ended[DD_END_EXITED] += 1;
	b.errors[DD_ERR_EIO] += 2;
	dd_stats_summary(&b, &a, buf, sizeof(buf));
	assert_string_equal(buf, "4 scans confirmed, 3 started, 3 ended (2 completed, 1 no_gain), "
				 "1 skipped (1 fast_stats); 1 walks started, 1 ended (1 process_exited); "
				 "500 entries prefetched, 480 hits, 7 misses, 2 errors (2 eio)");
}

/* Time saved in the summary: net seconds over the scans (and walks) with an estimate, and the
 * daemon's CPU over the period; booked by dd_stats_saved, by filesystem type, gains and losses
 * apart. */
static void test_saved(void **state)
{
	struct dd_stats a = { 0 }, b = { 0 };
	struct pol_fs fs = { 0 };
	char buf[512];
	(void)state;
	a.cpu_s = 1.0;
	b = a;
	b.scans_ended[DD_END_COMPLETED] = 3;
	dd_stats_saved(&b, &fs, "fuse", 12.0, true, false);
	dd_stats_saved(&b, &fs, "fuse", 0.5, true, false);
	dd_stats_saved(&b, NULL, "ext4", -0.1, true, false);
	dd_stats_saved(&b, &fs, "fuse", 0, false, false); /* unjudged: not booked */
	b.cpu_s = 1.3;
	assert_int_equal(b.saved_scans, 3);
	assert_true(b.saved_s > 12.3999 && b.saved_s < 12.4001);
	assert_true(fs.saved_s > 12.4999 && fs.saved_s < 12.5001);
	assert_string_equal(b.saved_by[0].fstype, "fuse");
	assert_true(b.saved_by[0].gained > 12.4999 && b.saved_by[0].lost == 0);
	assert_string_equal(b.saved_by[1].fstype, "ext4");
	assert_true(b.saved_by[1].gained == 0 && b.saved_by[1].lost > 0.0999);
	dd_stats_summary(&b, &a, buf, sizeof(buf));
	assert_non_null(strstr(buf, "; saved programs 12.4 s over 3 scans, using 0.3 s of CPU"));
	dd_stats_saved(&b, NULL, "fuse", 1.0, true, true);
	dd_stats_summary(&b, &a, buf, sizeof(buf));
	assert_non_null(strstr(buf, "; saved programs 13.4 s over 3 scans and 1 walks, using 0.3 s"));
	/* more types than slots: the last takes the rest, as "other" */
	for (int i = 0; i < DD_SAVED_TYPES + 3; i++) {
		static char names[DD_SAVED_TYPES + 3][8];
		snprintf(names[i], sizeof(names[i]), "t%d", i);
		dd_stats_saved(&b, NULL, names[i], 1.0, true, false);
	}
	assert_string_equal(b.saved_by[DD_SAVED_TYPES - 1].fstype, "other");
	dd_stats_saved(&b, NULL, NULL, 1.0, true, false);
	assert_string_equal(b.saved_by[DD_SAVED_TYPES - 1].fstype, "other");
}

static void test_small_buffer(void **state)
{
	struct dd_stats a = { 0 }, b = { 0 };
	char buf[16];
	(void)state;
	b.scans_confirmed = 123456;
	size_t n = dd_stats_summary(&b, &a, buf, sizeof(buf));
	assert_int_equal(n, strlen(buf));
	assert_true(n < sizeof(buf));
	assert_memory_equal(buf, "123456 scans co", 15);
}

static bool seen(const char **names, int *n, const char *name)
{
	for (int i = 0; i < *n; i++)
		if (!strcmp(names[i], name))
			return true;
	names[(*n)++] = name;
	return false;
}

/* Each 8-byte field of struct dd_stats at off..off+count*8, counted once for row r. */
static void mark(int *rows_of, int *last_row, size_t r, size_t off, int count)
{
	const size_t s0 = offsetof(struct dd_stats_view, s);
	if (off < s0 || off >= s0 + sizeof(struct dd_stats))
		return;
	for (int i = 0; i < count; i++) {
		size_t slot = (off - s0) / 8 + (size_t)i;
		if (last_row[slot] != (int)r)
			rows_of[slot]++;
		last_row[slot] = (int)r;
	}
}

static void test_table(void **state)
{
	enum { SLOTS = sizeof(struct dd_stats) / 8 };
	static const char *keys[256], *metrics[256];
	int nkeys = 0, nmetrics = 0, rows_of[SLOTS] = { 0 }, last_row[SLOTS];
	(void)state;
	assert_int_equal(sizeof(struct dd_stats) % 8, 0);
	for (int i = 0; i < SLOTS; i++)
		last_row[i] = -1;
	for (size_t i = 0; i < dd_stat_nrows; i++) {
		const struct dd_stat_row *r = &dd_stat_rows[i];
		if (r->shape == DD_STAT_HOOK)
			continue;
		assert_true(r->json || r->metric || r->shape == DD_STAT_PARTS);
		if (r->json)
			assert_false(seen(keys, &nkeys, r->json));
		if (r->metric) {
			assert_false(seen(metrics, &nmetrics, r->metric));
			assert_memory_equal(r->metric, "dirahead_", 9);
			assert_true(r->help && r->help[0]);
			assert_true(!strcmp(r->type, "counter") || !strcmp(r->type, "gauge"));
			/* Prometheus: counters end in _total, gauges do not */
			size_t len = strlen(r->metric);
			assert_int_equal(!strcmp(r->type, "counter"), len > 6 && !strcmp(r->metric + len - 6, "_total"));
			assert_true(r->shape == DD_STAT_VALUE || r->label);
		}
		switch (r->shape) {
		case DD_STAT_VALUE:
			mark(rows_of, last_row, i, r->off, 1);
			mark(rows_of, last_row, i, r->json_off, 1);
			break;
		case DD_STAT_REASONS:
			assert_true(r->n > 0 && r->names);
			mark(rows_of, last_row, i, r->off, r->n);
			break;
		case DD_STAT_PARTS:
			assert_non_null(r->part[0].label);
			for (int p = 0; p < DD_STAT_PARTS_MAX && r->part[p].label; p++) {
				if (r->part[p].json)
					assert_false(seen(keys, &nkeys, r->part[p].json));
				mark(rows_of, last_row, i, r->part[p].off, 1);
				mark(rows_of, last_row, i, r->part[p].json_off, 1);
			}
			break;
		case DD_STAT_HOOK:
			break;
		}
	}
	/* the latency histogram is a section of its own (a hook); every other field is one row's */
	for (size_t slot = 0; slot < offsetof(struct dd_stats, lat_bucket) / 8; slot++)
		assert_int_equal(rows_of[slot], 1);
}

/* The filesystems' table: keys and families once each, every field inside struct pol_fs. */
static void test_fs_table(void **state)
{
	static const char *keys[64], *metrics[64];
	int nkeys = 0, nmetrics = 0;
	(void)state;
	for (size_t i = 0; i < dd_fs_nrows; i++) {
		const struct dd_fs_row *r = &dd_fs_rows[i];
		assert_non_null(r->field[0].json);
		for (int k = 0; k < DD_STAT_PARTS_MAX && r->field[k].json; k++) {
			assert_false(seen(keys, &nkeys, r->field[k].json));
			assert_true(r->field[k].off < sizeof(struct pol_fs));
			/* a family's samples differ by their label, or it has one sample */
			if (r->metric && r->kind != DD_FS_VERDICT)
				assert_true(r->field[k].label ? r->label != NULL : k == 0 && !r->field[1].json);
		}
		if (!r->metric)
			continue;
		assert_false(seen(metrics, &nmetrics, r->metric));
		assert_memory_equal(r->metric, "dirahead_filesystem_", 20);
		assert_true(r->help && r->help[0]);
		size_t len = strlen(r->metric);
		assert_int_equal(!strcmp(r->type, "counter"), !strcmp(r->metric + len - 6, "_total"));
		assert_true(r->kind != DD_FS_VERDICT || r->label);
	}
	assert_true(seen(keys, &nkeys, "verdict") && seen(keys, &nkeys, "list_us_own"));
}

static void test_view(void **state)
{
	static struct dd_stats_view v;
	const struct dd_stat_row *skips = NULL;
	uint64_t n;
	(void)state;
	v.s.judged = 4;
	v.s.judged_before_s = 0.0004;
	v.s.judged_after_s = 0.0001;
	v.entry_cost_ns = 2500;
	dd_stats_view_derive(&v);
	assert_true(v.app_stat_us_before > 99.999 && v.app_stat_us_before < 100.001);
	assert_true(v.app_stat_us_prefetch > 24.999 && v.app_stat_us_prefetch < 25.001);
	assert_true(v.entry_cost_us > 2.4999 && v.entry_cost_us < 2.5001);
	assert_true(v.entry_cost_s > 2.4999e-6 && v.entry_cost_s < 2.5001e-6);
	v.s.judged = 0;
	dd_stats_view_derive(&v);
	assert_true(v.app_stat_us_before == 0 && v.app_stat_us_prefetch == 0);

	for (size_t i = 0; i < dd_stat_nrows; i++)
		if (dd_stat_rows[i].json && !strcmp(dd_stat_rows[i].json, "skips"))
			skips = &dd_stat_rows[i];
	assert_non_null(skips);
	v.s.skips[DD_SKIP_MISMATCH] = 3;
	v.s.skips[DD_SKIP_OPEN_FAILED] = 4;
	v.s.skips[DD_SKIP_SMALL] = 5;
	assert_false(dd_stat_reason_metric(skips, &v, DD_SKIP_MISMATCH, &n));
	assert_true(dd_stat_reason_metric(skips, &v, DD_SKIP_OPEN_FAILED, &n));
	assert_int_equal(n, 7);
	assert_true(dd_stat_reason_metric(skips, &v, DD_SKIP_SMALL, &n));
	assert_int_equal(n, 5);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_nothing),
		cmocka_unit_test(test_deltas),
		cmocka_unit_test(test_small_buffer),
		cmocka_unit_test(test_saved),
		cmocka_unit_test(test_table),
		cmocka_unit_test(test_fs_table),
		cmocka_unit_test(test_view),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
