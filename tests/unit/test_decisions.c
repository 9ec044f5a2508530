/* SPDX-License-Identifier: LGPL-2.1-or-later OR BSD-2-Clause */
/*
 * The decision log (daemon/diraheadd/decisions.c): each decision rendered in words with its
 * numbers, the ring keeping the newest DECISIONS_MAX oldest first, the filter by process.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "decisions.h"
#include "log.h"

static const struct decision *last;
static unsigned seen;
static void keep(const struct decision *d, void *ctx)
{
	(void)ctx;
	last = d;
	seen++;
}

/* The text of the one decision recorded. */
static const char *one(enum dec_kind kind, enum dec_what what, const char *reason,
		       const struct dec_nums *n)
{
	decisions_clear();
	decisions_add(kind, what, 42, 1000, "ls", "/srv/data", reason, n);
	seen = 0;
	decisions_foreach(0, keep, NULL);
	assert_int_equal(seen, 1);
	return last->text;
}

static void test_words(void **state)
{
	(void)state;
	struct dec_nums n = DEC_NUMS_INIT;
	n.cost_ns = 4000, n.entry_ns = 11000, n.threshold_ns = 16500, n.probed = true;
	assert_string_equal(one(DEC_SKIPPED, DEC_SCAN, "fast_stats", &n),
			    "skipped fast_stats: its probed stats took 4.0 µs, a prefetched entry "
			    "costs 11 µs here (prefetch pays above 16 µs)");
	n = (struct dec_nums)DEC_NUMS_INIT;
	n.cost_ns = 480000, n.entry_ns = 12000, n.threshold_ns = 12000, n.probed = true;
	assert_string_equal(one(DEC_STARTED, DEC_SCAN, "prefetch", &n),
			    "started after a probe: its probed stats took 480 µs, a prefetched entry "
			    "costs 12 µs here");
	n = (struct dec_nums)DEC_NUMS_INIT;
	n.cost_ns = 110000, n.with_ns = 100000, n.min_gain = 1.3, n.stats = 64;
	assert_string_equal(one(DEC_ENDED, DEC_SCAN, "no_gain", &n),
			    "ended no_gain: 1.1x after 64 stats, 1.3x needed (110 µs a stat on its "
			    "own, 100 µs with prefetch)");
	n = (struct dec_nums)DEC_NUMS_INIT;
	n.prefetched = 2000, n.hits = 1990, n.misses = 3, n.stats = 2000;
	assert_string_equal(one(DEC_ENDED, DEC_SCAN, "completed", &n),
			    "ended completed: 2000 prefetched, 1990 hits, 3 misses over 2000 stats");
	assert_string_equal(one(DEC_SKIPPED, DEC_SCAN, "busy", NULL), "skipped busy");
	n = (struct dec_nums)DEC_NUMS_INIT;
	n.reprobe_s = 12, n.with_ns = 470000, n.cost_ns = 480000;
	assert_string_equal(one(DEC_SKIPPED, DEC_SCAN, "fs_no_gain", &n),
			    "skipped fs_no_gain: prefetch did not pay on this filesystem lately; its "
			    "stats took 480 µs, 470 µs with prefetch here; probed again in 12 s");
	assert_string_equal(one(DEC_STARTED, DEC_WALK, "list", NULL),
			    "started a walk: listing (only) the tree ahead of it");
}

static void test_dry_run(void **state)
{
	(void)state;
	struct dec_nums n = DEC_NUMS_INIT;
	n.dry_run = true, n.cost_ns = 1000000, n.entry_ns = 10000, n.threshold_ns = 15000;
	assert_string_equal(one(DEC_SKIPPED, DEC_SCAN, "dry_run", &n),
			    "would have prefetched (dry run): its stats took 1000 µs, a prefetched "
			    "entry costs 10 µs here (prefetch pays above 15 µs); estimate: up to "
			    "1000 µs saved a stat");
	n.with_ns = 20000;
	assert_non_null(strstr(one(DEC_SKIPPED, DEC_SCAN, "dry_run", &n),
				"; estimate: about 980 µs saved a stat"));
	n.cost_ns = 5000;
	assert_non_null(strstr(one(DEC_SKIPPED, DEC_SCAN, "dry_run", &n),
				"would have probed it first (dry run): its stats took 5.0 µs"));
	n = (struct dec_nums)DEC_NUMS_INIT;
	n.dry_run = true;
	assert_string_equal(one(DEC_SKIPPED, DEC_SCAN, "dry_run", &n), "would have prefetched (dry run)");
}

static void test_ring(void **state)
{
	(void)state;
	decisions_clear();
	for (unsigned i = 1; i <= DECISIONS_MAX + 10; i++) {
		char dir[32];
		snprintf(dir, sizeof(dir), "/d%u", i);
		/* one user per decision: the ring's own order, no share applies */
		decisions_add(DEC_SKIPPED, DEC_SCAN, i % 2 ? 7 : 8, 10000 + i, "x", dir, "busy", NULL);
	}
	seen = 0;
	decisions_foreach(0, keep, NULL);
	assert_int_equal(seen, DECISIONS_MAX);
	char want[32];
	snprintf(want, sizeof(want), "/d%u", DECISIONS_MAX + 10);
	assert_string_equal(last->dir, want); /* newest last */
	seen = 0;
	decisions_foreach(7, keep, NULL);
	assert_int_equal(seen, DECISIONS_MAX / 2);
	assert_int_equal(last->pid, 7);
	seen = 0;
	decisions_foreach(9, keep, NULL);
	assert_int_equal(seen, 0);
	/* a name as long as a path may be is cut, never overruns */
	char longdir[DIRAHEAD_PATH_LEN * 2];
	memset(longdir, 'a', sizeof(longdir) - 1);
	longdir[sizeof(longdir) - 1] = '\0';
	decisions_add(DEC_SKIPPED, DEC_SCAN, 1, 0, "0123456789abcdefXYZ", longdir, "busy", NULL);
	decisions_foreach(1, keep, NULL);
	assert_int_equal(strlen(last->dir), DIRAHEAD_PATH_LEN - 1);
	assert_int_equal(strlen(last->comm), DIRAHEAD_COMM_LEN);
}

/* A user flooding the ring (uid 666: thousands of tiny scans) keeps DECISIONS_PER_USER of it:
 * what the others did before and after stays, in the order it was recorded. */
static void test_user_share(void **state)
{
	(void)state;
	decisions_clear();
	char dir[32];
	for (unsigned i = 1; i <= 20; i++) {
		snprintf(dir, sizeof(dir), "/before%u", i);
		decisions_add(DEC_SKIPPED, DEC_SCAN, 100 + i, 1000 + i % 2, "victim", dir, "busy", NULL);
	}
	for (unsigned i = 1; i <= 5000; i++) {
		snprintf(dir, sizeof(dir), "/flood%u", i);
		decisions_add(DEC_SKIPPED, DEC_SCAN, 6666, 666, "flood", dir, "busy", NULL);
	}
	decisions_add(DEC_ENDED, DEC_SCAN, 200, 0, "root-ls", "/after", "completed", NULL);
	seen = 0;
	decisions_foreach(6666, keep, NULL);
	assert_int_equal(seen, DECISIONS_PER_USER);
	assert_string_equal(last->dir, "/flood5000"); /* the flooder's newest kept */
	seen = 0;
	decisions_foreach(0, keep, NULL);
	assert_int_equal(seen, 20 + DECISIONS_PER_USER + 1);
	assert_string_equal(last->dir, "/after"); /* newest last */
	seen = 0;
	decisions_foreach(101, keep, NULL);
	assert_int_equal(seen, 1);
	assert_string_equal(last->dir, "/before1");
	/* the others fill the rest, their oldest going first as before */
	for (unsigned i = 1; i <= DECISIONS_MAX; i++) {
		snprintf(dir, sizeof(dir), "/other%u", i);
		decisions_add(DEC_SKIPPED, DEC_SCAN, 300, 2000 + i, "other", dir, "busy", NULL);
	}
	seen = 0;
	decisions_foreach(0, keep, NULL);
	assert_int_equal(seen, DECISIONS_MAX);
	seen = 0;
	decisions_foreach(101, keep, NULL);
	assert_int_equal(seen, 0);
}

int main(void)
{
	log_setup(LOG_WARNING); /* the info lines are not this test's */
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_words),
		cmocka_unit_test(test_dry_run),
		cmocka_unit_test(test_ring),
		cmocka_unit_test(test_user_share),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
