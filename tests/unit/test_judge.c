/* SPDX-License-Identifier: LGPL-2.1-or-later OR BSD-2-Clause */
/*
 * The pay-off rule (daemon/diraheadd/judge.c) over the cost model, driven with the PROGRESS
 * events a scan would get: its control stretch, and the stretch after the control where the
 * control came out cheaper than the stretch with prefetch before it (stats that get cheaper as
 * a scan goes on: a cold xfs directory, whose inode clusters serve many entries each).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "judge.h"

#define SEC 1000000000ull
#define T0 (1000 * SEC)
#define US 1000ull
#define XFS 0x58465342ull

struct fixture {
	struct policy *pol;
	struct pol_fs *fs;
	struct judge j;
	struct judge_who who;
	struct judge_scan scan;
	uint64_t stats, t; /* the program's stats so far, and when its last one was */
};

static struct pol_fs *fs_of(const void *ctx)
{
	return ((const struct fixture *)ctx)->fs;
}

static int setup(void **state)
{
	struct dd_config c = {
		.depth_per_scan = 64, .depth_total = 128, .policy_enabled = true, .probe_stats = 8,
		.start_factor = 4.0, .entry_cost_us = 10, .gain_stats = 64, .min_gain = 1.3,
		.reprobe_s = 60, .mute_ms = 2000, .depth_min = 4, .max_filesystems = 256,
	};
	struct fixture *f = calloc(1, sizeof(*f));
	assert_non_null(f);
	f->pol = policy_new(&c);
	assert_non_null(f->pol);
	f->fs = policy_fs(f->pol, 7, 1, XFS, T0);
	f->who = (struct judge_who){ .pol = f->pol, .fs = fs_of, .ctx = f, .path = "/d", .tgid = 1,
				     .now_ns = T0 };
	f->scan = (struct judge_scan){ .room = true, .depth = 64, .min_gain = 1.3 };
	f->t = T0;
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;
	policy_free(f->pol);
	free(f);
	return 0;
}

/* N more stats of the program, each GAP_US after the last, then its PROGRESS event. */
static struct judge_verdict stats(struct fixture *f, unsigned n, uint64_t gap_us)
{
	f->stats += n;
	f->t += n * gap_us * US;
	f->scan.app_pos = f->stats;
	if (f->scan.limit < f->stats + 64 && !judge_holds(&f->j))
		f->scan.limit = f->stats + 64; /* the window a depth ahead, unless held */
	f->scan.completed = f->scan.limit;
	struct dirahead_event ev = { .stats = f->stats, .stat_first_ns = T0, .stat_last_ns = f->t };
	f->who.now_ns = f->t;
	return judge_payoff(&f->j, &f->who, &ev, &f->scan);
}

/* A probe at 560 us a stat (a cold xfs `ls -l`'s first stats), a first stretch with prefetch at
 * 210 us (a modest gain: a control first), then the control: CONTROL_US a stat on its own. */
static void to_control(struct fixture *f, uint64_t control_us)
{
	f->stats = 8;
	f->j.before = (struct pol_cost){ .lat_ns = -1, .gap_ns = 560 * US, .gap_n = 8 };
	assert_int_equal(stats(f, 1, 560).act, JUDGE_WAIT); /* opens the stretch */
	assert_true(f->j.judging);
	assert_int_equal(stats(f, 64, 210).act, JUDGE_WAIT);
	assert_int_equal(f->j.control, JUDGE_CTL_WAIT);
	while (f->j.control == JUDGE_CTL_WAIT) /* through what was fetched */
		assert_int_equal(stats(f, 16, 20).act, JUDGE_WAIT);
	assert_int_equal(f->j.control, JUDGE_CTL_MEASURE);
	stats(f, JUDGE_CONTROL_STATS, control_us);
	assert_int_equal(f->j.control, JUDGE_CTL_DONE);
}

/* The control at 31 us against 210 us with prefetch before it: no verdict yet, the filesystem's
 * verdict untouched; the stretch after it, once the window is ahead again, at 20 us against the
 * control's 31: pays. */
static void test_recheck_pays(void **state)
{
	struct fixture *f = *state;
	to_control(f, 31);
	assert_true(f->j.ctl_recheck);
	assert_int_equal(f->fs->verdict, POL_UNKNOWN);
	assert_int_equal(stats(f, 32, 200).act, JUDGE_WAIT); /* the window getting ahead: not judged */
	assert_int_equal(stats(f, 40, 200).act, JUDGE_WAIT);
	assert_int_equal(f->fs->verdict, POL_UNKNOWN);
	assert_int_equal(stats(f, 64, 20).act, JUDGE_WAIT);
	assert_int_equal(f->fs->verdict, POL_PAYS);
	assert_false(f->j.ctl_recheck);
}

/* The same, with the stretch after the control no cheaper than it: no gain. */
static void test_recheck_no_gain(void **state)
{
	struct fixture *f = *state;
	to_control(f, 31);
	stats(f, 72, 31);
	assert_int_equal(stats(f, 64, 30).act, JUDGE_NO_GAIN);
	assert_int_equal(f->fs->verdict, POL_NO_GAIN);
}

/* A control dearer than the stretch with prefetch (by min_gain) decides at once: pays. */
static void test_control_pays(void **state)
{
	struct fixture *f = *state;
	to_control(f, 400);
	assert_false(f->j.ctl_recheck);
	assert_int_equal(f->fs->verdict, POL_PAYS);
}

/* A probe at 4.8 ms a stat, then a first stretch with prefetch at 640 us (7.5x). */
static void probed_then_640(struct fixture *f)
{
	f->stats = 8;
	f->j.before = (struct pol_cost){ .lat_ns = -1, .gap_ns = 4800 * US, .gap_n = 8 };
	assert_int_equal(stats(f, 1, 640).act, JUDGE_WAIT);
	assert_int_equal(stats(f, 64, 640).act, JUDGE_WAIT);
}

/* A control stretch asked: the control as dear as the stretch with prefetch (the filesystem's
 * verdict still `meanwhile`), and the next stretch too: no gain. */
static void control_no_gain(struct fixture *f, enum pol_verdict meanwhile)
{
	assert_int_equal(f->j.control, JUDGE_CTL_WAIT);
	assert_int_equal(f->fs->verdict, meanwhile);
	while (f->j.control == JUDGE_CTL_WAIT)
		assert_int_equal(stats(f, 16, 640).act, JUDGE_WAIT);
	stats(f, JUDGE_CONTROL_STATS, 640);
	assert_int_equal(f->j.control, JUDGE_CTL_DONE);
	assert_true(f->j.ctl_recheck);
	assert_int_equal(f->fs->verdict, meanwhile);
	stats(f, 72, 640);
	assert_int_equal(stats(f, 64, 640).act, JUDGE_NO_GAIN);
	assert_int_equal(f->fs->verdict, POL_NO_GAIN);
}

/* The re-probe of a filesystem judged no_gain, whose probe caught the program off the CPU (4.8 ms
 * a stat against 640 us with prefetch, 7.5x): not taken at its word, a control stretch first;
 * no gain again. */
static void test_reprobe_control(void **state)
{
	struct fixture *f = *state;
	f->fs->verdict = POL_NO_GAIN;
	probed_then_640(f);
	control_no_gain(f, POL_NO_GAIN);
}

/* The same gain on a filesystem not judged yet is taken at once (a cold disk's first stats, its
 * requests 2 ms each: the program's stats with prefetch take a third of one). */
static void test_large_gain_pays(void **state)
{
	struct fixture *f = *state;
	f->fs->pf_lat_ns = 2000 * US;
	probed_then_640(f);
	assert_int_equal(f->j.control, JUDGE_CTL_NONE);
	assert_int_equal(f->fs->verdict, POL_PAYS);
}

/* The same gain where the daemon's requests take 500 us: the program's stats with prefetch (640
 * us) are not served from what it fetched, and the probe alone says it pays: a control first. */
static void test_large_gain_unserved(void **state)
{
	struct fixture *f = *state;
	f->fs->pf_lat_ns = 500 * US;
	probed_then_640(f);
	control_no_gain(f, POL_UNKNOWN);
}

/* On a filesystem judged to pay, the first stretch is measured once the program is past the
 * window prefetch opened with: in it the program stats what is being fetched for the first time
 * (find -ls of 20,000 files on a 0.5 ms xfs volume: 580 us a stat there against 540 us probed,
 * which ended the scan no_gain; 6-10 us a stat past it). */
static void test_first_stretch_past_window(void **state)
{
	struct fixture *f = *state;
	f->fs->verdict = POL_PAYS;
	f->stats = 10;
	f->j.before = (struct pol_cost){ .lat_ns = -1, .gap_ns = 540 * US, .gap_n = 8 };
	assert_int_equal(stats(f, 1, 540).act, JUDGE_WAIT); /* opens the stretch */
	assert_true(f->j.judging);
	assert_int_equal(stats(f, 71, 580).act, JUDGE_WAIT); /* through the first window */
	assert_false(f->j.judged);
	assert_int_equal(stats(f, 64, 8).act, JUDGE_WAIT);
	assert_true(f->j.judged);
	assert_int_equal(f->fs->verdict, POL_PAYS);
}

/* The same on a block device not judged yet (a fresh mount: one request reads a group, the
 * program's first stats wait on the groups' first reads); on FUSE not judged yet the first
 * stretch is judged at once, as before (a control guards a modest gain there). */
static void test_first_stretch_grouped(void **state)
{
	struct fixture *f = *state;
	f->scan.grouped = true;
	f->stats = 10;
	f->j.before = (struct pol_cost){ .lat_ns = -1, .gap_ns = 540 * US, .gap_n = 8 };
	assert_int_equal(stats(f, 1, 540).act, JUDGE_WAIT);
	assert_int_equal(stats(f, 71, 580).act, JUDGE_WAIT);
	assert_false(f->j.judged);
	assert_int_equal(stats(f, 64, 8).act, JUDGE_WAIT);
	assert_true(f->j.judged);
	assert_int_equal(f->fs->verdict, POL_PAYS);
}

static void test_first_stretch_fuse(void **state)
{
	struct fixture *f = *state;
	f->stats = 10;
	f->j.before = (struct pol_cost){ .lat_ns = -1, .gap_ns = 540 * US, .gap_n = 8 };
	assert_int_equal(stats(f, 1, 540).act, JUDGE_WAIT);
	assert_int_equal(stats(f, 71, 580).act, JUDGE_NO_GAIN);
}

/* A scan on a filesystem that pays: its first stretch past the window at 30 us a stat against
 * 300 us before. */
static void to_paying(struct fixture *f)
{
	f->fs->verdict = POL_PAYS;
	f->stats = 10;
	f->j.before = (struct pol_cost){ .lat_ns = -1, .gap_ns = 300 * US, .gap_n = 8 };
	assert_int_equal(stats(f, 1, 300).act, JUDGE_WAIT);
	assert_int_equal(stats(f, 64, 300).act, JUDGE_WAIT); /* through the first window */
	assert_int_equal(stats(f, 64, 30).act, JUDGE_WAIT);
	assert_true(f->j.judged);
	assert_true(f->j.paid);
}

/* Then one stretch without gain, the machine stalled through it (a 12,000-entry `ls -l` on a busy
 * CI machine: 499 us a stat against 469 us, after 33 stretches that paid): not ended, a control
 * first; the control stalled too, and the stretch after it pays again. */
static void test_stall_after_paying(void **state)
{
	struct fixture *f = *state;
	to_paying(f);
	assert_int_equal(stats(f, 64, 499).act, JUDGE_WAIT);
	assert_int_equal(f->j.control, JUDGE_CTL_WAIT);
	assert_int_equal(f->fs->verdict, POL_PAYS);
	while (f->j.control == JUDGE_CTL_WAIT) /* through what was fetched */
		assert_int_equal(stats(f, 16, 20).act, JUDGE_WAIT);
	assert_int_equal(stats(f, JUDGE_CONTROL_STATS, 470).act, JUDGE_WAIT);
	assert_int_equal(f->j.control, JUDGE_CTL_DONE);
	assert_true(f->j.ctl_recheck);
	assert_int_equal(stats(f, 72, 200).act, JUDGE_WAIT); /* the window ahead again */
	assert_int_equal(stats(f, 64, 30).act, JUDGE_WAIT);
	assert_true(f->j.paid);
	assert_int_equal(f->fs->verdict, POL_PAYS);
	assert_int_equal(f->fs->no_gain, 0);
}

/* A filesystem that stopped paying: the control as dear as the stretch with prefetch, and the
 * stretch after it too: ended no_gain (one control's delay, not more). */
static void test_stopped_paying(void **state)
{
	struct fixture *f = *state;
	to_paying(f);
	assert_int_equal(stats(f, 64, 500).act, JUDGE_WAIT);
	assert_int_equal(f->j.control, JUDGE_CTL_WAIT);
	while (f->j.control == JUDGE_CTL_WAIT)
		stats(f, 16, 500);
	stats(f, JUDGE_CONTROL_STATS, 500);
	assert_true(f->j.ctl_recheck);
	stats(f, 72, 500);
	assert_int_equal(stats(f, 64, 500).act, JUDGE_NO_GAIN);
	assert_int_equal(f->fs->no_gain, 1);
}

/* Room for a control: a control and a judged stretch past the window, or the directory not read
 * to its end yet. */
static void test_control_room(void **state)
{
	(void)state;
	assert_true(judge_control_room(false, 100, 200, 64));   /* more to read */
	assert_true(judge_control_room(true, 12000, 200, 64));
	/* 280 entries, the window at 192: a control to 224 would leave 56, fewer than a stretch */
	assert_false(judge_control_room(true, 280, 192, 64));
	assert_false(judge_control_room(true, 288, 192, 64));   /* exactly 32 + 64 */
	assert_true(judge_control_room(true, 289, 192, 64));
	assert_true(judge_control_room(true, 280, 192, 16));    /* shorter stretches judged */
	/* the old rule's room (two controls past the window) was not enough */
	assert_false(judge_control_room(true, 192 + 2 * JUDGE_CONTROL_STATS + 1, 192, 64));
}

int main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
	const struct CMUnitTest tests[] = {
		T(test_recheck_pays),
		T(test_recheck_no_gain),
		T(test_control_pays),
		T(test_reprobe_control),
		T(test_large_gain_pays),
		T(test_large_gain_unserved),
		T(test_first_stretch_past_window),
		T(test_first_stretch_grouped),
		T(test_first_stretch_fuse),
		T(test_stall_after_paying),
		T(test_stopped_paying),
		cmocka_unit_test(test_control_room),
	};
	return cmocka_run_group_tests_name("judge", tests, NULL, NULL);
}
