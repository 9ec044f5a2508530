/* SPDX-License-Identifier: LGPL-2.1-or-later OR BSD-2-Clause */
/*
 * daemon/diraheadd/policy.c: the time saved estimate (policy_saved_scan_s, policy_saved_walk_s).
 * Figures in, seconds out: (cost without - cost with) x the stats (listings) made with prefetch;
 * the scan's own judgment before the filesystem's remembered figures; nothing claimed (0, not
 * measured) where nothing was judged; negative where the figures say prefetch cost time.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "policy.h"

static void near(double got, double want)
{
	double d = got > want ? got - want : want - got, w = want < 0 ? -want : want;
	if (d > 1e-9 + 1e-9 * w)
		fail_msg("got %.12f, want %.12f", got, want);
}

/* A scan judged: 500 us a stat on its own, 20 us with prefetch, 5,000 stats fetched or in
 * flight: 2.4 s. */
static void test_scan_judged(void **state)
{
	struct pol_fs fs = { 0 };
	bool m = false;
	(void)state;
	near(policy_saved_scan_s(&fs, 500e3, 20e3, 5000, &m), 2.4);
	assert_true(m);
	/* its own judgment comes before the filesystem's memory */
	fs.before_ns = 100e3;
	fs.after_ns = 90e3;
	near(policy_saved_scan_s(&fs, 500e3, 20e3, 5000, &m), 2.4);
	/* a judged cost with prefetch of 0 is a figure */
	near(policy_saved_scan_s(&fs, 500e3, 0, 1000, &m), 0.5);
	assert_true(m);
	/* no stats made with prefetch: measured, nothing saved */
	near(policy_saved_scan_s(&fs, 500e3, 20e3, 0, &m), 0);
	assert_true(m);
	/* the measured flag is optional */
	near(policy_saved_scan_s(NULL, 500e3, 20e3, 10, NULL), 0.0048);
}

/* A scan judged no_gain: its program was slower with prefetch, and that is what it says. */
static void test_scan_negative(void **state)
{
	bool m = false;
	(void)state;
	near(policy_saved_scan_s(NULL, 10e3, 12e3, 1000, &m), -0.002);
	assert_true(m);
}

/* Not judged itself: the filesystem's remembered figures, where both sides were judged there;
 * else nothing. */
static void test_scan_remembered(void **state)
{
	struct pol_fs fs = { 0 };
	bool m = true;
	(void)state;
	near(policy_saved_scan_s(&fs, 0, 0, 5000, &m), 0);
	assert_false(m);
	/* a fast probe remembers the cost before only: no figure with prefetch, no claim */
	fs.before_ns = 300e3;
	near(policy_saved_scan_s(&fs, 0, 0, 5000, &m), 0);
	assert_false(m);
	fs.after_ns = 50e3;
	near(policy_saved_scan_s(&fs, 0, 0, 4000, &m), 1.0);
	assert_true(m);
	/* no filesystem known, nothing judged */
	m = true;
	near(policy_saved_scan_s(NULL, 0, 0, 4000, &m), 0);
	assert_false(m);
	/* a half judgment (no cost before) is none */
	near(policy_saved_scan_s(NULL, 0, 10e3, 4000, &m), 0);
	assert_false(m);
}

/* A walk: its listings ahead against the program's own (else the daemon's first getdents), and
 * the entries it fetched for the program at the filesystem's judged per-stat figures. */
static void test_walk(void **state)
{
	struct pol_fs fs = { 0 };
	bool m = true;
	(void)state;
	near(policy_saved_walk_s(&fs, 100, 1000, &m), 0);
	assert_false(m);
	near(policy_saved_walk_s(NULL, 100, 1000, &m), 0);
	assert_false(m);
	/* listings: 2 ms on its own, 0.5 ms listed ahead, 100 listed ahead: 0.15 s */
	fs.list.own_ns = 2e6;
	fs.list.ahead_ns = 0.5e6;
	near(policy_saved_walk_s(&fs, 100, 1000, &m), 0.15);
	assert_true(m);
	/* no own listings timed: the daemon's first getdents is the reference */
	fs.list.own_ns = 0;
	fs.list.first_ns = 1.5e6;
	near(policy_saved_walk_s(&fs, 100, 0, &m), 0.1);
	/* and the stats it served: 1000 entries at (300 - 50) us */
	fs.before_ns = 300e3;
	fs.after_ns = 50e3;
	near(policy_saved_walk_s(&fs, 100, 1000, &m), 0.1 + 0.25);
	/* listings that were no faster ahead: negative, as measured */
	fs.list.ahead_ns = 2e6;
	near(policy_saved_walk_s(&fs, 100, 0, &m), -0.05);
	assert_true(m);
	/* stats only: no listing ahead was timed */
	fs.list = (struct pol_list){ 0 };
	near(policy_saved_walk_s(&fs, 100, 400, &m), 0.1);
	assert_true(m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_scan_judged),
		cmocka_unit_test(test_scan_negative),
		cmocka_unit_test(test_scan_remembered),
		cmocka_unit_test(test_walk),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
