/* SPDX-License-Identifier: LGPL-2.1-or-later OR BSD-2-Clause */
/*
 * da_stats_summary (daemon/diraheadd/stats.c): the periodic log line at the default level says
 * what the counters did between two snapshots, names the reasons that moved and no others, and
 * is empty when nothing moved (an idle daemon logs nothing).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "stats.h"

static void test_nothing(void **state)
{
	struct da_stats a = { 0 }, b = { 0 };
	char buf[512] = "x";
	(void)state;
	assert_int_equal(da_stats_summary(&b, &a, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "");
	/* counters the summary does not report do not make one */
	b.reloads_ok = 3;
	b.http_requests[DA_HTTP_OK] = 9;
	assert_int_equal(da_stats_summary(&b, &a, buf, sizeof(buf)), 0);
}

static void test_deltas(void **state)
{
	struct da_stats a = { 0 }, b;
	char buf[512];
	(void)state;
	a.scans_confirmed = 10;
	a.scans_ended[DA_END_COMPLETED] = 5;
	a.entries_prefetched = 1000;
	b = a;
	b.scans_confirmed += 4;
	b.scans_started += 3;
	b.scans_ended[DA_END_COMPLETED] += 2;
	b.scans_ended[DA_END_NO_GAIN] += 1;
	b.skips[DA_SKIP_FAST] += 1;
	b.entries_prefetched += 500;
	b.hits += 480;
	b.misses += 7;
	size_t n = da_stats_summary(&b, &a, buf, sizeof(buf));
	assert_int_equal(n, strlen(buf));
	assert_string_equal(buf, "4 scans confirmed, 3 started, 3 ended (2 completed, 1 no_gain), "
				 "1 skipped (1 fast_stats); 500 entries prefetched, 480 hits, 7 misses");
	b.walks_started += 1;
	b.walks_ended[DA_WALK_END_EXITED] += 1;
	b.errors[DA_ERR_EIO] += 2;
	da_stats_summary(&b, &a, buf, sizeof(buf));
	assert_string_equal(buf, "4 scans confirmed, 3 started, 3 ended (2 completed, 1 no_gain), "
				 "1 skipped (1 fast_stats); 1 walks started, 1 ended (1 process_exited); "
				 "500 entries prefetched, 480 hits, 7 misses, 2 errors (2 eio)");
}

static void test_small_buffer(void **state)
{
	struct da_stats a = { 0 }, b = { 0 };
	char buf[16];
	(void)state;
	b.scans_confirmed = 123456;
	size_t n = da_stats_summary(&b, &a, buf, sizeof(buf));
	assert_int_equal(n, strlen(buf));
	assert_true(n < sizeof(buf));
	assert_memory_equal(buf, "123456 scans co", 15);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_nothing),
		cmocka_unit_test(test_deltas),
		cmocka_unit_test(test_small_buffer),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
