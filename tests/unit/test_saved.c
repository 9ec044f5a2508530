/* SPDX-License-Identifier: LGPL-2.1-or-later OR BSD-2-Clause */
/*
 * daemon/diraheadd/policy.c: the time saved estimate (policy_saved_scan_s, policy_saved_walk_s).
 * Figures in, seconds out: (cost without - cost with) x the stats (listings) made with prefetch;
 * the scan's own judgment before the filesystem's remembered figures, then the cost of the stats
 * that started prefetch there; nothing claimed (0, not measured) where nothing was measured;
 * negative where the figures say prefetch cost time; never more than what the program could
 * have waited for the requests it used (policy_waits_bound_s).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "policy.h"

static void near(double got, double want)
{
	double d = got > want ? got - want : want - got, w = want < 0 ? -want : want;
	if (d > 1e-9 + 1e-9 * w)
		fail_msg("got %.12f, want %.12f", got, want);
}

/* Requests that bound nothing (long latencies, never in flight while the program ran): the
 * cases of the model itself. */
static const struct pol_waits lots = { .n = 1000000, .lat_sum_ns = 1e15, .busy_ns = 0 };
#define W (&lots)

/* A scan judged: 500 us a stat on its own, 20 us with prefetch, 5,000 stats fetched or in
 * flight: 2.4 s. */
static void test_scan_judged(void **state)
{
	struct pol_fs fs = { 0 };
	bool m = false;
	(void)state;
	near(policy_saved_scan_s(&fs, 500e3, 20e3, 5000, W, false, &m), 2.4);
	assert_true(m);
	/* its own judgment comes before the filesystem's memory */
	fs.before_ns = 100e3;
	fs.after_ns = 90e3;
	near(policy_saved_scan_s(&fs, 500e3, 20e3, 5000, W, false, &m), 2.4);
	/* a judged cost with prefetch of 0 is a figure */
	near(policy_saved_scan_s(&fs, 500e3, 0, 1000, W, false, &m), 0.5);
	assert_true(m);
	/* no stats made with prefetch: measured, nothing saved */
	near(policy_saved_scan_s(&fs, 500e3, 20e3, 0, W, false, &m), 0);
	assert_true(m);
	/* the measured flag is optional */
	near(policy_saved_scan_s(NULL, 500e3, 20e3, 10, W, false, NULL), 0.0048);
}

/* A scan judged no_gain: its program was slower with prefetch, and that is what it says. */
static void test_scan_negative(void **state)
{
	bool m = false;
	(void)state;
	near(policy_saved_scan_s(NULL, 10e3, 12e3, 1000, W, false, &m), -0.002);
	assert_true(m);
}

/* Not judged itself: the filesystem's remembered figures, where both sides were judged there;
 * else nothing. */
static void test_scan_remembered(void **state)
{
	struct pol_fs fs = { 0 };
	bool m = true;
	(void)state;
	near(policy_saved_scan_s(&fs, 0, 0, 5000, W, false, &m), 0);
	assert_false(m);
	/* a fast probe remembers the cost before only: no figure with prefetch, no claim */
	fs.before_ns = 300e3;
	near(policy_saved_scan_s(&fs, 0, 0, 5000, W, false, &m), 0);
	assert_false(m);
	fs.after_ns = 50e3;
	near(policy_saved_scan_s(&fs, 0, 0, 4000, W, false, &m), 1.0);
	assert_true(m);
	/* no filesystem known, nothing judged */
	m = true;
	near(policy_saved_scan_s(NULL, 0, 0, 4000, W, false, &m), 0);
	assert_false(m);
	/* a half judgment (no cost before) is none */
	near(policy_saved_scan_s(NULL, 0, 10e3, 4000, W, false, &m), 0);
	assert_false(m);
}

/* A walk: its listings ahead against the program's own (else the daemon's first getdents), and
 * the entries it fetched for the program at the filesystem's judged per-stat figures. */
static const struct pol_waits some = { .n = 100, .lat_sum_ns = 1e12, .busy_ns = 0.05e9 };
static void test_walk(void **state)
{
	struct pol_fs fs = { 0 };
	bool m = true;
	(void)state;
	near(policy_saved_walk_s(&fs, 100, 1000, W, &some, false, &m), 0);
	assert_false(m);
	near(policy_saved_walk_s(NULL, 100, 1000, W, &some, false, &m), 0);
	assert_false(m);
	/* listings: 2 ms on its own, 0.5 ms listed ahead, 100 listed ahead: 0.15 s by the model,
	 * but the walk's listings were in flight 0.05 s: no more saved than that */
	fs.list.own_ns = 2e6;
	fs.list.ahead_ns = 0.5e6;
	near(policy_saved_walk_s(&fs, 100, 1000, W, &some, false, &m), 0.05);
	assert_true(m);
	near(policy_saved_walk_s(&fs, 100, 1000, W, W, false, &m), 0); /* none in flight: none */
	/* no own listings timed: the daemon's first getdents is the reference */
	fs.list.own_ns = 0;
	fs.list.first_ns = 1.5e6;
	near(policy_saved_walk_s(&fs, 10, 0, W, &some, false, &m), 0.005);
	/* and the stats it served: 1000 entries at (300 - 50) us */
	fs.before_ns = 300e3;
	fs.after_ns = 50e3;
	near(policy_saved_walk_s(&fs, 10, 1000, W, &some, false, &m), 0.005 + 0.25);
	/* listings that were no faster ahead: negative, as measured */
	fs.list.ahead_ns = 2e6;
	near(policy_saved_walk_s(&fs, 100, 0, W, &some, false, &m), -0.05);
	assert_true(m);
	/* stats only: no listing ahead was timed */
	fs.list = (struct pol_list){ 0 };
	near(policy_saved_walk_s(&fs, 100, 400, W, &some, false, &m), 0.1);
	assert_true(m);
}

/* What the requests waited: the busy time is the union of their intervals, in the order they
 * complete; the latencies add up. */
static void test_waits(void **state)
{
	struct pol_waits w = { 0 };
	(void)state;
	policy_waits_add(&w, 1000, 500);  /* [500, 1000] */
	policy_waits_add(&w, 1200, 600);  /* [600, 1200]: 200 more */
	policy_waits_add(&w, 3000, 1000); /* [2000, 3000] */
	assert_int_equal(w.n, 3);
	near(w.lat_sum_ns, 2100);
	near(w.busy_ns, 1700);
	/* the bound counts the share of the requests the program used */
	near(policy_waits_bound_s(&w, 3, true), 1700e-9);
	near(policy_waits_bound_s(&w, 3, false), 2100e-9);
	near(policy_waits_bound_s(&w, 30, false), 2100e-9);
	near(policy_waits_bound_s(&w, 1, true), 1700e-9 / 3);
	near(policy_waits_bound_s(NULL, 3, true), 0);
	near(policy_waits_bound_s(&w, 0, true), 0);
	assert_true(policy_reads_shared(0xef53, 7));        /* ext4 on a loop device */
	assert_true(policy_reads_shared(0x9123683E, 0));    /* btrfs: anonymous device numbers */
	assert_false(policy_reads_shared(0x65735546, 0));   /* FUSE */
}

/* ext4-cold-dir100k, ls -l: the probe's stats each read an inode-table block of their own
 * (620 us), the next ones mostly share blocks already read; 100,000 stats x (620 - 10) us
 * claimed 61 s for a 1.6 s run (the old estimate).  Its requests were in flight 1.2 s: on a
 * block device, that is what the program could have waited. */
static void test_scan_block_bound(void **state)
{
	struct pol_waits w = { .n = 100000, .lat_sum_ns = 4e9, .busy_ns = 1.2e9 };
	bool m = false;
	(void)state;
	double s = policy_saved_scan_s(NULL, 620e3, 10e3, 100000, &w, true, &m);
	assert_true(m);
	near(s, 1.2);
	/* only the share it used: half the entries, half the busy time */
	near(policy_saved_scan_s(NULL, 620e3, 10e3, 50000, &w, true, &m), 0.6);
	/* a FUSE filesystem: each stat its own round trip, the latencies bound it */
	near(policy_saved_scan_s(NULL, 620e3, 10e3, 100000, &w, false, &m), 4.0);
	/* under the bound, the model's figure stands */
	near(policy_saved_scan_s(NULL, 30e3, 20e3, 100000, &w, true, &m), 1.0);
	/* a loss is not bounded */
	near(policy_saved_scan_s(NULL, 10e3, 20e3, 100000, &w, true, &m), -1.0);
	/* nothing fetched: nothing saved, whatever the figures */
	struct pol_waits none = { 0 };
	near(policy_saved_scan_s(NULL, 620e3, 10e3, 1000, &none, true, &m), 0);
	near(policy_saved_scan_s(NULL, 620e3, 10e3, 1000, NULL, false, &m), 0);
}

/* slowblk-xfs-cold-tree300x50, find -ls: the walk's 15,250 entries at the probe's 545 us less
 * 15 us claimed 8.1 s (the old estimate), 0.49 s measured.  Its requests were in flight 0.14 s,
 * its listings 0.1 s of the 294 it listed ahead (0.6 ms each on their own, 15 us ahead). */
static void test_walk_block_bound(void **state)
{
	struct pol_fs fs = { .before_ns = 545e3, .after_ns = 15e3 };
	struct pol_waits w = { .n = 15300, .lat_sum_ns = 8e9, .busy_ns = 0.14e9 };
	struct pol_waits l = { .n = 300, .lat_sum_ns = 0.4e9, .busy_ns = 0.1e9 };
	bool m = false;
	(void)state;
	fs.list.first_ns = 600e3;
	fs.list.ahead_ns = 15e3;
	double s = policy_saved_walk_s(&fs, 294, 15250, &w, &l, true, &m);
	assert_true(m);
	/* on its own: its listings' cost, and its entries' with prefetch plus what their
	 * requests waited (the bound); with prefetch: the entries' cost, the longer of the two
	 * times in flight being shorter (they were in flight at once: the old estimate took both,
	 * 0.22 s) */
	double ew = 15e-6 * 15250, lw = 15e-6 * 294;
	near(s, 600e-6 * 294 + (ew + 0.14 * 15250 / 15300) - (lw + ew));
	assert_true(s < 0.5);
	/* a walk that listed only: its listings alone */
	near(policy_saved_walk_s(&fs, 294, 0, &w, &l, true, &m), 600e-6 * 294 - 0.1 * 294 / 300);
	/* slowblk-ext4-cold-tree10x30x50, du -s (a walk that lists only): the program's own
	 * listings took 729 us each, one listed ahead 20 us; 0.17-0.2 s measured saved for 273
	 * listed ahead.  The walk's listings, in parallel, were in flight 0.09 s: bounded by
	 * that, the estimate was 41-63% of the measured.  On a block device the program's own
	 * figure stands; on FUSE (not shared: one queue) the bound still holds. */
	struct pol_waits l2 = { .n = 280, .lat_sum_ns = 0.5e9, .busy_ns = 0.09e9 };
	fs.list.own_ns = 729e3;
	fs.list.ahead_ns = 20e3;
	near(policy_saved_walk_s(&fs, 273, 0, &w, &l2, true, &m), (729e-6 - 20e-6) * 273);
	near(policy_saved_walk_s(&fs, 273, 0, &w, &l2, false, &m), 0.09 * 273 / 280);
	/* each directory a read of its own: no more than the walk's listings waited, each */
	l2.lat_sum_ns = 0.15e9;
	near(policy_saved_walk_s(&fs, 273, 0, &w, &l2, true, &m), 0.15 * 273 / 280 - 20e-6 * 273);
	/* no faster ahead: a loss, as measured */
	fs.list.ahead_ns = 800e3;
	near(policy_saved_walk_s(&fs, 273, 0, &w, &l2, true, &m), (729e-6 - 800e-6) * 273);
}

/* sshfs-250us tree200x50, du -s (a walk that lists only): the daemon's own first getdents took
 * 3.6 ms at once with others, 65 us for the program ahead; 196 x 3.5 ms claimed 0.7 s (the old
 * estimate) against 0.2 s measured.  Its listings were in flight 0.38 s: the program, listing
 * after them, waited that long at least. */
static void test_walk_listing_bound(void **state)
{
	struct pol_fs fs = { 0 };
	struct pol_waits l = { .n = 199, .lat_sum_ns = 1.4e9, .busy_ns = 0.38e9 };
	bool m = false;
	(void)state;
	fs.list.first_ns = 3.6e6;
	fs.list.ahead_ns = 65e3;
	near(policy_saved_walk_s(&fs, 196, 0, W, &l, false, &m), 196 * 3.6e-3 - 0.38 * 196 / 199);
	assert_true(m);
}

/* slowfs-200us-usrinclude, find -ls: small directories, each done before a judgment, so the
 * filesystem had no judged figures and the walk's 9,000 entries counted for nothing (0.03 s
 * estimated, 1.9 s measured).  The stats that started prefetch there cost 250 us each, and a
 * prefetched stat waits for nothing. */
static void test_walk_probed(void **state)
{
	struct pol_fs fs = { .probed_ns = 250e3 };
	bool m = false;
	(void)state;
	near(policy_saved_walk_s(&fs, 0, 9000, W, W, false, &m), 2.25);
	assert_true(m);
	/* a scan without a judgment of its own, likewise */
	near(policy_saved_scan_s(&fs, 0, 0, 40, W, false, &m), 0.01);
	assert_true(m);
	/* judged figures come first */
	fs.before_ns = 300e3;
	fs.after_ns = 100e3;
	near(policy_saved_walk_s(&fs, 0, 9000, W, W, false, &m), 1.8);
}

/* slowfs-200us-dir5k, ls -l: 254 us a stat on its own, 30 us with prefetch over the judged
 * stretch, 5,000 stats: 1.12 s by the model, 1.03 s measured (the old estimate claimed 1.27 s
 * for three such runs' worth of a tree: a program that outruns the requests waits for them,
 * which its cost "with" does not show).  Its requests were in flight 0.4 s: with prefetch it
 * took that long at least. */
static void test_scan_in_flight(void **state)
{
	struct pol_waits w = { .n = 5000, .lat_sum_ns = 5000 * 1.4e6, .busy_ns = 0.4e9 };
	bool m = false;
	(void)state;
	near(policy_saved_scan_s(NULL, 254e3, 30e3, 5000, &w, false, &m), 1.27 - 0.4);
	assert_true(m);
	/* requests in flight less than its stats cost with prefetch: the model stands */
	w.busy_ns = 0.1e9;
	near(policy_saved_scan_s(NULL, 254e3, 30e3, 5000, &w, false, &m), 1.12);
	/* in flight longer than it would have taken on its own: nothing saved */
	w.busy_ns = 2e9;
	near(policy_saved_scan_s(NULL, 254e3, 30e3, 5000, &w, false, &m), 0);
}

/* Reads shared by the inodes of a unit (xfs: clusters of 32): the program on its own waits for
 * each unit once, its probed cost per stat (each of its first stats read one); 64 requests in
 * parallel wait for many units at once, so their time in flight (the bound above) undercounted
 * what it would have waited.  slowblk-xfs-cold-dir20k, ls -l: 20,000 stats, 1,250 requests (one
 * per group of 16) for 625 clusters, 550 us a stat on its own, 10 us with prefetch, in flight
 * 0.15 s; 0.35 s measured. */
static void test_scan_units(void **state)
{
	struct pol_waits w = { 0 };
	bool m = false;
	(void)state;
	assert_int_equal(policy_read_unit(0x58465342), 32);      /* xfs */
	assert_int_equal(policy_read_unit(0xEF53), 128);         /* ext4 */
	assert_int_equal(policy_read_unit(0x65735546), 0);       /* FUSE */
	assert_int_equal(policy_read_unit(0x9123683E), 0);       /* btrfs: not known */
	near(policy_waits_units(&w), 0);
	for (uint64_t i = 0; i < 1250; i++) {
		policy_waits_add(&w, 1000000 + i * 120000, 600e3);
		policy_waits_read(&w, 4096 + i * 16, 32);
	}
	w.busy_ns = 0.15e9;
	/* 625 clusters, within linear counting's few percent */
	double units = policy_waits_units(&w);
	assert_true(units > 0.95 * 625 && units < 1.05 * 625);
	double s = policy_saved_scan_s(NULL, 550e3, 10e3, 20000, &w, true, &m);
	assert_true(m);
	near(s, units * 550e-6);       /* 0.2 + that on its own, 0.2 with prefetch */
	assert_true(s > 2 * 0.15);     /* the time in flight alone said 0.15 s */
	/* in flight longer than its stats took with prefetch: the program waited for them */
	w.busy_ns = 0.3e9;
	near(policy_saved_scan_s(NULL, 550e3, 10e3, 20000, &w, true, &m), units * 550e-6 - 0.1);
	/* a loss stays as estimated */
	near(policy_saved_scan_s(NULL, 5e3, 10e3, 20000, &w, true, &m), -0.1);
	/* FUSE: each stat its own round trip, units do not apply */
	w.busy_ns = 0.15e9;
	near(policy_saved_scan_s(NULL, 550e3, 10e3, 20000, &w, false, &m), w.lat_sum_ns / 1e9);
	/* a bitmap full (some 30,000 units and more): not counted, the time in flight bounds */
	memset(w.units, 0xff, sizeof(w.units));
	near(policy_waits_units(&w), 0);
	near(policy_saved_scan_s(NULL, 550e3, 10e3, 20000, &w, true, &m), 0.15);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_scan_judged),
		cmocka_unit_test(test_scan_negative),
		cmocka_unit_test(test_scan_remembered),
		cmocka_unit_test(test_walk),
		cmocka_unit_test(test_waits),
		cmocka_unit_test(test_scan_block_bound),
		cmocka_unit_test(test_scan_units),
		cmocka_unit_test(test_walk_block_bound),
		cmocka_unit_test(test_walk_listing_bound),
		cmocka_unit_test(test_walk_probed),
		cmocka_unit_test(test_scan_in_flight),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
