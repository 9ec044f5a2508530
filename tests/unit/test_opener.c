/* SPDX-License-Identifier: LGPL-2.1-or-later OR BSD-2-Clause */
/*
 * The openers (daemon/diraheadd/opener.c): a user has at most per_user jobs, stuck ones included
 * (-EUSERS past that); stuck jobs count per filesystem (per user while the filesystem is not
 * known) and no longer hold the pool, so another user's job still runs.  A "stuck" job blocks on
 * a pipe until the test writes to it, as an open on a hung filesystem would.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "opener.h"

static int hang[2];       /* a job reading it waits until the test writes */
static int runs, dones, discards;

static void run_hang(void *arg)
{
	char c;
	(void)arg;
	__atomic_add_fetch(&runs, 1, __ATOMIC_SEQ_CST);
	if (read(hang[0], &c, 1) < 0) {
		/* the test failed: nothing to wait for */
	}
}

static void run_quick(void *arg)
{
	(void)arg;
	__atomic_add_fetch(&runs, 1, __ATOMIC_SEQ_CST);
}

static void on_done(void *arg)
{
	(void)arg;
	dones++;
}

static void on_discard(void *arg)
{
	(void)arg;
	__atomic_add_fetch(&discards, 1, __ATOMIC_SEQ_CST);
}

static void sleep_ms(int ms)
{
	struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L };
	nanosleep(&ts, NULL);
}

/* Runs the loop until `n` jobs are done (fails after 10 s). */
static void loop_until_done(sd_event *loop, int n)
{
	for (int i = 0; i < 1000 && dones < n; i++)
		sd_event_run(loop, 10000);
	assert_int_equal(dones, n);
}

static void wait_running(int n)
{
	for (int i = 0; i < 1000 && __atomic_load_n(&runs, __ATOMIC_SEQ_CST) < n; i++)
		sleep_ms(10);
	assert_int_equal(__atomic_load_n(&runs, __ATOMIC_SEQ_CST), n);
}

static void test_shares(void **state)
{
	(void)state;
	sd_event *loop;
	assert_int_equal(sd_event_new(&loop), 0);
	assert_int_equal(pipe(hang), 0);
	/* 2 threads, 1 job per user, stuck after 20 ms */
	struct opener *o = opener_new(loop, 2, 1, 20);
	assert_non_null(o);

	/* user 1: a run by path (filesystem not known) that hangs; a second job is refused */
	assert_int_equal(opener_run(o, 0, 0, 1, run_hang, on_done, on_discard, NULL), 0);
	assert_int_equal(opener_run(o, 0, 0, 1, run_quick, on_done, on_discard, NULL), -EUSERS);
	/* user 2: a scan on 8:1 that hangs */
	assert_int_equal(opener_run(o, 8, 1, 2, run_hang, on_done, on_discard, NULL), 0);
	wait_running(2);
	sleep_ms(60); /* both stuck now */
	assert_int_equal(opener_stuck(o), 2);
	assert_int_equal(opener_stuck_on(o, 8, 1, 99), 1);   /* the filesystem's, whoever's */
	assert_int_equal(opener_stuck_on(o, 8, 2, 2), 0);
	assert_int_equal(opener_stuck_on(o, 0, 0, 1), 1);    /* user 1's unknown filesystem */
	assert_int_equal(opener_stuck_on(o, 0, 0, 2), 0);
	/* still their users' until they return */
	assert_int_equal(opener_run(o, 0, 0, 1, run_quick, on_done, on_discard, NULL), -EUSERS);
	assert_int_equal(opener_run(o, 9, 1, 2, run_quick, on_done, on_discard, NULL), -EUSERS);

	/* user 3: the two stuck jobs hold no thread of the pool: this one runs and is done */
	assert_int_equal(opener_run(o, 9, 1, 3, run_quick, on_done, on_discard, NULL), 0);
	loop_until_done(loop, 1);

	/* the hung ones return: done, and their users may run jobs again */
	assert_int_equal(write(hang[1], "xx", 2), 2);
	loop_until_done(loop, 3);
	assert_int_equal(opener_stuck(o), 0);
	assert_int_equal(opener_run(o, 0, 0, 1, run_quick, on_done, on_discard, NULL), 0);
	loop_until_done(loop, 4);
	assert_int_equal(discards, 0);
	opener_free(o);
	close(hang[0]);
	close(hang[1]);
	sd_event_unref(loop);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_shares),
	};
	return cmocka_run_group_tests_name("opener", tests, NULL, NULL);
}
