/* SPDX-License-Identifier: LGPL-2.1-or-later OR BSD-2-Clause */
/*
 * The cost model (daemon/diraheadd/policy.c), driven directly: it has no clock and no I/O, so
 * every test passes its own `now` and its own costs.  The start rule (probe, fast, pays), the
 * pay-off rule (verdicts, re-probe backoff, adaptive depth), the per-filesystem memory (LRU,
 * device reuse, reloads), the cost of a stretch, the daemon's measured cost per entry, and
 * tree-ahead's listing verdict.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "policy.h"

#define SEC 1000000000ull
#define T0 (1000 * SEC) /* any `now`; not 0, which no CLOCK_MONOTONIC reading is */
#define EXT4 0xef53ull
#define XFS 0x58465342ull
#define FUSE 0x65735546ull

/* What config.c's defaults set for the keys policy.c reads. */
static struct dd_config defaults(void)
{
	return (struct dd_config){
		.depth_per_scan = 64, .depth_total = 128, .policy_enabled = true, .probe_stats = 8,
		.start_factor = 4.0, .entry_cost_us = 10, .gain_stats = 64, .min_gain = 1.3,
		.reprobe_s = 60, .mute_ms = 2000, .depth_min = 4, .max_filesystems = 256,
	};
}

static struct pol_cost gap(double ns) { return (struct pol_cost){ .lat_ns = -1, .gap_ns = ns, .gap_n = 64 }; }
static struct pol_cost timed(double ns) { return (struct pol_cost){ .lat_ns = ns, .gap_ns = -1 }; }
static const struct pol_cost none = { .lat_ns = -1, .gap_ns = -1 };

static int setup(void **state)
{
	struct dd_config c = defaults();
	*state = policy_new(&c);
	return *state ? 0 : -1;
}

static int teardown(void **state)
{
	policy_free(*state);
	return 0;
}

/* A judgment whose program went from 100 us to 10 us per stat (pays), or barely moved. */
static bool judge_gain(struct policy *p, struct pol_fs *fs, double late, uint64_t now)
{
	struct pol_cost b = gap(100000), a = gap(10000);
	return policy_judge(p, fs, &b, &a, late, false, now);
}

static bool judge_no_gain(struct policy *p, struct pol_fs *fs, uint64_t now)
{
	struct pol_cost b = gap(10000), a = gap(9000); /* 1.11x < min_gain 1.3 */
	return policy_judge(p, fs, &b, &a, 0, false, now);
}

static void test_knobs(void **state)
{
	struct policy *p = *state;
	assert_true(policy_enabled(p));
	assert_int_equal(policy_probe_stats(p), 8);
	assert_int_equal(policy_gain_stats(p), 64);
	assert_int_equal(policy_mute_ms(p), 2000);
	/* unmeasured: the prior entry_cost_us, and start_factor times it */
	assert_float_equal(policy_entry_cost_ns(p), 10000, 1e-6);
	struct pol_fs *fs = policy_fs(p, 8, 1, EXT4, T0);
	assert_float_equal(policy_threshold_ns(p, fs), 40000, 1e-6);
	assert_int_equal(fs->verdict, POL_UNKNOWN);
	assert_int_equal(fs->backoff, 1);
	assert_string_equal(pol_verdict_names[POL_NO_GAIN], "no_gain");
	struct dd_config c = defaults();
	c.policy_enabled = false;
	policy_reconfigure(p, &c);
	assert_false(policy_enabled(p));
}

/* Nothing known: probe.  The probe's stats are cheaper than 4 x 10 us: skip as fast, and a
 * fast-looking scan there within 10 s is skipped at once; after that it is probed again. */
static void test_start_fast(void **state)
{
	struct policy *p = *state;
	struct pol_fs *fs = policy_fs(p, 8, 1, EXT4, T0);
	struct pol_cost c = gap(2000);
	assert_int_equal(policy_on_scan(p, fs, &c, T0), POL_PROBE);
	assert_int_equal(policy_after_probe(p, fs, &c, T0), POL_SKIP_FAST);
	assert_int_equal(fs->verdict, POL_FAST);
	assert_int_equal(fs->skipped_fast, 1);
	assert_float_equal(fs->before_ns, 2000, 1e-6);
	assert_int_equal(policy_on_scan(p, fs, &c, T0 + 9 * SEC), POL_SKIP_FAST);
	assert_int_equal(fs->skipped_fast, 2);
	/* a slow scan there is probed, not trusted to the fast verdict */
	struct pol_cost slow = gap(200000);
	assert_int_equal(policy_on_scan(p, fs, &slow, T0 + 9 * SEC), POL_PROBE);
	/* nor is a scan without a figure */
	assert_int_equal(policy_on_scan(p, fs, &none, T0 + 9 * SEC), POL_PROBE);
	assert_int_equal(policy_on_scan(p, fs, &c, T0 + 10 * SEC), POL_PROBE);
	assert_int_equal(fs->scans, 5);
	assert_int_equal(fs->skipped_fast, 2);
	/* timed durations count over the progress rate: slow gaps, fast stats */
	struct pol_cost both = { .lat_ns = 1000, .gap_ns = 500000 };
	assert_int_equal(policy_after_probe(p, fs, &both, T0 + 11 * SEC), POL_SKIP_FAST);
}

/* Probed stats at or above the threshold (or no figure at all): prefetch. */
static void test_start_slow(void **state)
{
	struct policy *p = *state;
	struct pol_fs *fs = policy_fs(p, 8, 1, EXT4, T0);
	struct pol_cost c = timed(100000);
	assert_int_equal(policy_on_scan(p, fs, &c, T0), POL_PROBE);
	assert_int_equal(policy_after_probe(p, fs, &c, T0), POL_START);
	assert_int_equal(fs->verdict, POL_UNKNOWN); /* only a judgment says whether it paid */
	assert_int_equal(fs->skipped_fast, 0);
	struct pol_cost at = gap(40000), below = gap(39999);
	assert_int_equal(policy_after_probe(p, fs, &at, T0), POL_START);
	assert_int_equal(policy_after_probe(p, fs, &none, T0), POL_START);
	assert_int_equal(policy_after_probe(p, fs, &below, T0), POL_SKIP_FAST);
}

/* A filesystem where prefetch paid: a slow scan starts at the SCAN event, a fast one is probed. */
static void test_pays_starts_at_once(void **state)
{
	struct policy *p = *state;
	struct pol_fs *fs = policy_fs(p, 8, 1, EXT4, T0);
	struct pol_cost slow = gap(100000), fast = gap(1000);
	assert_int_equal(policy_on_scan(p, fs, &slow, T0), POL_PROBE); /* not known yet */
	assert_true(judge_gain(p, fs, 0, T0 + SEC));
	assert_int_equal(fs->verdict, POL_PAYS);
	assert_int_equal(fs->gained, 1);
	assert_int_equal(policy_on_scan(p, fs, &slow, T0 + 2 * SEC), POL_START);
	assert_int_equal(policy_on_scan(p, fs, &fast, T0 + 2 * SEC), POL_PROBE);
	assert_int_equal(policy_on_scan(p, fs, &none, T0 + 2 * SEC), POL_PROBE);
	assert_float_equal(fs->before_ns, 100000, 1e-6);
	assert_float_equal(fs->after_ns, 10000, 1e-6);
}

/* Pays, and the program goes as fast as `depth` requests of the prefetch latency allow: double
 * the depth, up to depth_per_scan; a raise that doubled the latency is cut back to 3/4. */
static void test_depth_adapts(void **state)
{
	struct policy *p = *state;
	struct pol_fs *fs = policy_fs(p, 8, 1, EXT4, T0);
	assert_int_equal(policy_depth(p, fs), 32); /* nothing learned: half of depth_per_scan */
	policy_account_latency(fs, 500000);        /* first sample: taken as is */
	assert_float_equal(fs->pf_lat_ns, 500000, 1e-6);
	/* 10 us x 32 < 1.5 x 500 us: throughput-bound */
	assert_true(judge_gain(p, fs, 0, T0));
	assert_int_equal(fs->depth, 64);
	assert_int_equal(policy_depth(p, fs), 64);
	assert_float_equal(fs->raised_at_lat_ns, 500000, 1e-6);
	assert_true(judge_gain(p, fs, 0, T0 + SEC));
	assert_int_equal(fs->depth, 64); /* depth_per_scan */
	/* the filesystem answers 2x slower than at the raise: saturating, back to 3/4 */
	for (int i = 0; i < 30; i++)
		policy_account_latency(fs, 3000000);
	assert_true(fs->pf_lat_ns > 2 * 500000);
	assert_true(judge_gain(p, fs, 0, T0 + 2 * SEC));
	assert_int_equal(fs->depth, 48);
	assert_float_equal(fs->raised_at_lat_ns, 0, 1e-9);
}

static void test_depth_late_or_not_bound(void **state)
{
	struct policy *p = *state;
	/* no latency measured, no stat late: nothing says more depth would help */
	struct pol_fs *fs = policy_fs(p, 8, 1, EXT4, T0);
	assert_true(judge_gain(p, fs, 0.1, T0));
	assert_int_equal(fs->depth, 32);
	/* a fifth of the program's stats waited on entries in flight: more at once */
	assert_true(judge_gain(p, fs, 0.5, T0 + SEC));
	assert_int_equal(fs->depth, 64);
	/* slow program, fast filesystem: 100 us x 32 > 1.5 x 100 us, not raised */
	struct pol_fs *g = policy_fs(p, 8, 2, EXT4, T0);
	policy_account_latency(g, 100000);
	struct pol_cost b = gap(1000000), a = gap(100000);
	assert_true(policy_judge(p, g, &b, &a, 0, false, T0));
	assert_int_equal(g->depth, 32);
	assert_int_equal(g->verdict, POL_PAYS);
}

/* No gain: verdict no_gain, depth halved, skipped at SCAN until reprobe_s x backoff, the backoff
 * doubling per failure up to 16x; a gain resets it. */
static void test_no_gain_backoff(void **state)
{
	struct policy *p = *state;
	struct pol_fs *fs = policy_fs(p, 8, 1, EXT4, T0);
	struct pol_cost c = gap(10000);
	static const unsigned mult[] = { 1, 2, 4, 8, 16, 16 };
	static const unsigned depth[] = { 16, 8, 4, 4, 4, 4 }; /* from 32, never below depth_min */
	uint64_t now = T0;
	for (unsigned i = 0; i < sizeof(mult) / sizeof(mult[0]); i++) {
		assert_false(judge_no_gain(p, fs, now));
		assert_int_equal(fs->verdict, POL_NO_GAIN);
		assert_int_equal(fs->no_gain, i + 1);
		assert_int_equal(fs->depth, depth[i]);
		uint64_t until = now + mult[i] * 60 * SEC;
		assert_int_equal(fs->reprobe_ns, until);
		assert_float_equal(fs->no_gain_cost_ns, 10000, 1e-6);
		/* before: skipped at the SCAN event */
		assert_int_equal(policy_on_scan(p, fs, &c, until - 1), POL_SKIP_NO_GAIN);
		assert_int_equal(fs->skipped_no_gain, i + 1);
		/* from then on: probed again */
		assert_int_equal(policy_on_scan(p, fs, &c, until), POL_PROBE);
		assert_int_equal(fs->reprobes, i + 1);
		now = until + SEC;
	}
	assert_true(judge_gain(p, fs, 0, now));
	assert_int_equal(fs->backoff, 1);
	/* where it paid, one stretch without gain ends its scan but is no verdict; a gain in
	 * between clears the doubt; two in a row are */
	assert_false(judge_no_gain(p, fs, now));
	assert_int_equal(fs->verdict, POL_PAYS);
	assert_true(judge_gain(p, fs, 0, now));
	assert_false(judge_no_gain(p, fs, now));
	assert_int_equal(fs->verdict, POL_PAYS);
	assert_false(judge_no_gain(p, fs, now));
	assert_int_equal(fs->verdict, POL_NO_GAIN);
	assert_int_equal(fs->reprobe_ns, now + 60 * SEC);
}

/* Before re-probe time, a scan whose cost is more than 4x above or below the one no_gain was
 * decided at (a rate over 4 intervals at least) is probed at once: the filesystem behaves
 * differently now. */
static void test_reprobe_on_change(void **state)
{
	struct policy *p = *state;
	struct pol_fs *fs = policy_fs(p, 8, 1, EXT4, T0);
	assert_false(judge_no_gain(p, fs, T0)); /* decided at 10 us */
	const uint64_t t = T0 + SEC;
	struct pol_cost same = gap(40000), above = gap(40001), low = gap(2500), below = gap(2499),
			timed_above = timed(50000);
	assert_int_equal(policy_on_scan(p, fs, &same, t), POL_SKIP_NO_GAIN);
	assert_int_equal(policy_on_scan(p, fs, &low, t), POL_SKIP_NO_GAIN);
	assert_int_equal(policy_on_scan(p, fs, &none, t), POL_SKIP_NO_GAIN);
	/* a timed duration is not a time per stat: never compared with the verdict's */
	assert_int_equal(policy_on_scan(p, fs, &timed_above, t), POL_SKIP_NO_GAIN);
	/* nor is a rate over too few stats to tell the filesystem from the program's start-up */
	struct pol_cost thin = { .lat_ns = -1, .gap_ns = 400000, .gap_n = 3 };
	assert_int_equal(policy_on_scan(p, fs, &thin, t), POL_SKIP_NO_GAIN);
	assert_int_equal(fs->reprobes, 0);
	assert_int_equal(policy_on_scan(p, fs, &above, t), POL_PROBE);
	assert_int_equal(policy_on_scan(p, fs, &below, t), POL_PROBE);
	assert_int_equal(fs->reprobes, 2);
	assert_int_equal(fs->skipped_no_gain, 5);
}

static void test_depth_clamps(void **state)
{
	struct policy *p = *state;
	struct pol_fs *fs = policy_fs(p, 8, 1, EXT4, T0);
	struct dd_config c = defaults();
	fs->depth = 1000;
	assert_int_equal(policy_depth(p, fs), 64);
	fs->depth = 1;
	assert_int_equal(policy_depth(p, fs), 4);
	fs->depth = 0;
	c.depth_per_scan = 6; /* 6 / 2 is below depth_min */
	policy_reconfigure(p, &c);
	assert_int_equal(policy_depth(p, fs), 4);
	c.depth_per_scan = 3; /* depth_min above depth_per_scan: depth_per_scan wins */
	policy_reconfigure(p, &c);
	assert_int_equal(policy_depth(p, fs), 3);
	/* judged depths stay within the bounds too */
	c = defaults();
	c.depth_min = 8;
	c.depth_per_scan = 16;
	policy_reconfigure(p, &c);
	policy_account_latency(fs, 10000000);
	for (int i = 0; i < 4; i++)
		assert_true(judge_gain(p, fs, 1.0, T0 + (uint64_t)i * SEC));
	assert_int_equal(fs->depth, 16);
	for (int i = 0; i < 4; i++)
		assert_false(judge_no_gain(p, fs, T0 + (uint64_t)(10 + i) * SEC));
	assert_int_equal(fs->depth, 8);
	assert_int_equal(policy_depth(p, fs), 8);
}

struct seen {
	unsigned n;
	uint32_t minor[16];
};

static void collect(const struct pol_fs *fs, void *ctx)
{
	struct seen *s = ctx;
	if (s->n < 16)
		s->minor[s->n] = fs->dev_minor;
	s->n++;
}

static struct seen list(struct policy *p)
{
	struct seen s = { 0 };
	policy_foreach(p, collect, &s);
	return s;
}

/* At max_filesystems, a new filesystem takes the least recently used one's place. */
static void test_lru(void **state)
{
	struct policy *p = *state;
	struct dd_config c = defaults();
	c.max_filesystems = 3;
	policy_reconfigure(p, &c);
	for (uint32_t m = 1; m <= 3; m++)
		policy_fs(p, 8, m, EXT4, T0 + m);
	struct pol_fs *one = policy_fs(p, 8, 1, EXT4, T0 + 4); /* used again: most recent */
	assert_false(judge_no_gain(p, one, T0 + 4));
	policy_fs(p, 8, 4, EXT4, T0 + 5); /* evicts 8:2 */
	struct seen s = list(p);
	assert_int_equal(s.n, 3);
	assert_int_equal(s.minor[0], 4);
	assert_int_equal(s.minor[1], 1);
	assert_int_equal(s.minor[2], 3);
	one = policy_fs(p, 8, 1, EXT4, T0 + 6);
	assert_int_equal(one->verdict, POL_NO_GAIN); /* kept what it learned */
	struct pol_fs *two = policy_fs(p, 8, 2, EXT4, T0 + 7); /* back, fresh; evicts 8:3 */
	assert_int_equal(two->verdict, POL_UNKNOWN);
	assert_int_equal(two->no_gain, 0);
	s = list(p);
	assert_int_equal(s.n, 3);
	assert_int_equal(s.minor[0], 2);
	assert_int_equal(s.minor[1], 1);
	assert_int_equal(s.minor[2], 4);
}

/* A device number now carrying another filesystem (another magic) starts from nothing. */
static void test_same_dev_other_magic(void **state)
{
	struct policy *p = *state;
	struct pol_fs *fs = policy_fs(p, 8, 1, EXT4, T0);
	struct pol_cost c = gap(10000);
	policy_on_scan(p, fs, &c, T0);
	assert_false(judge_no_gain(p, fs, T0));
	policy_account_cpu(p, fs, 64 * 2000, 64);
	policy_fs(p, 8, 2, EXT4, T0 + 1);
	fs = policy_fs(p, 8, 1, XFS, T0 + 2);
	assert_int_equal(fs->magic, XFS);
	assert_int_equal(fs->verdict, POL_UNKNOWN);
	assert_int_equal(fs->scans, 0);
	assert_int_equal(fs->no_gain, 0);
	assert_int_equal(fs->depth, 0);
	assert_int_equal(fs->backoff, 1);
	assert_float_equal(fs->cost_ns, 0, 1e-9);
	assert_int_equal(policy_on_scan(p, fs, &c, T0 + 3), POL_PROBE);
	assert_int_equal(list(p).n, 2); /* reused in place, not added */
	/* a new mount that got the old device number (a FUSE client restarted) starts afresh;
	 * the same mount keeps its verdict */
	fs = policy_fs_mount(p, 0, 40, FUSE, 7, T0 + 4);
	assert_false(judge_no_gain(p, fs, T0 + 4));
	fs = policy_fs_mount(p, 0, 40, FUSE, 7, T0 + 5);
	assert_int_equal(fs->verdict, POL_NO_GAIN);
	fs = policy_fs_mount(p, 0, 40, FUSE, 8, T0 + 6);
	assert_int_equal(fs->verdict, POL_UNKNOWN);
	assert_int_equal(fs->mnt_id, 8);
	assert_int_equal(list(p).n, 3);
	/* a lookup that does not know the mount (0) is the mount seen last */
	assert_false(judge_no_gain(p, fs, T0 + 7));
	assert_ptr_equal(policy_fs_mount(p, 0, 40, FUSE, 0, T0 + 8), fs);
	assert_int_equal(fs->verdict, POL_NO_GAIN);
	assert_int_equal(fs->mnt_id, 8);
}

/* Mount ids the kernel never reuses are ordered: a newer mount of the device starts afresh, an
 * older one (the last requests of the mount it replaced, completing late; a bind mount beside
 * it) neither resets the memory nor takes it. */
static void test_mount_order(void **state)
{
	struct policy *p = *state;
	const uint64_t m1 = POL_MNT_UNIQUE + 100, m2 = POL_MNT_UNIQUE + 101;
	struct pol_fs *fs = policy_fs_mount(p, 0, 40, FUSE, m1, T0);
	assert_false(judge_no_gain(p, fs, T0));
	fs = policy_fs_mount(p, 0, 40, FUSE, m2, T0 + 1);
	assert_int_equal(fs->verdict, POL_UNKNOWN);
	assert_false(judge_no_gain(p, fs, T0 + 2));
	assert_ptr_equal(policy_fs_mount(p, 0, 40, FUSE, m1, T0 + 3), fs);
	assert_int_equal(fs->verdict, POL_NO_GAIN);
	assert_int_equal(fs->mnt_id, m2);
	assert_ptr_equal(policy_fs_mount(p, 0, 40, FUSE, m2, T0 + 4), fs);
	assert_int_equal(fs->verdict, POL_NO_GAIN);
	/* the rule alone */
	assert_true(policy_new_mount(m1, m2));
	assert_false(policy_new_mount(m2, m1));
	assert_false(policy_new_mount(m2, 0));
	assert_false(policy_new_mount(0, m2));
	assert_false(policy_new_mount(POL_MNT_ADOPT, m1));
	/* reusable ids (before 6.8) cannot be ordered: any other is a new mount */
	assert_true(policy_new_mount(8, 7));
	assert_true(policy_new_mount(7, 8));
}

/* A reload: the new knobs apply at once, what was learned stays; a smaller max_filesystems
 * keeps the most recently used. */
static void test_reconfigure(void **state)
{
	struct policy *p = *state;
	for (uint32_t m = 1; m <= 5; m++) {
		struct pol_fs *fs = policy_fs(p, 8, m, EXT4, T0 + m * SEC);
		assert_false(judge_no_gain(p, fs, T0 + m * SEC));
	}
	policy_account_cpu(p, NULL, 768 * 3000, 768); /* half the way from the prior */
	struct dd_config c = defaults();
	c.start_factor = 2;
	c.probe_stats = 32;
	c.reprobe_s = 5;
	policy_reconfigure(p, &c);
	assert_int_equal(policy_probe_stats(p), 32);
	assert_float_equal(policy_entry_cost_ns(p), 6500, 1e-6); /* the measurement stays */
	assert_int_equal(list(p).n, 5);
	struct pol_fs *fs = policy_fs(p, 8, 3, EXT4, T0 + 10 * SEC);
	assert_int_equal(fs->verdict, POL_NO_GAIN);
	assert_int_equal(fs->reprobe_ns, T0 + 3 * SEC + 60 * SEC); /* decided under the old knob */
	assert_float_equal(policy_threshold_ns(p, fs), 20000, 1e-6); /* the new factor x the prior */
	/* more room: all kept */
	c.max_filesystems = 10;
	policy_reconfigure(p, &c);
	struct seen s = list(p);
	assert_int_equal(s.n, 5);
	assert_int_equal(s.minor[0], 3);
	assert_int_equal(s.minor[1], 5);
	/* less room: the two most recently used (8:3, then 8:5) */
	c.max_filesystems = 2;
	policy_reconfigure(p, &c);
	s = list(p);
	assert_int_equal(s.n, 2);
	assert_int_equal(s.minor[0], 3);
	assert_int_equal(s.minor[1], 5);
	fs = policy_fs(p, 8, 5, EXT4, T0 + 11 * SEC);
	assert_int_equal(fs->verdict, POL_NO_GAIN);
	assert_int_equal(fs->no_gain, 1);
	/* and the new capacity holds: a third filesystem evicts 8:3 */
	policy_fs(p, 8, 9, EXT4, T0 + 12 * SEC);
	s = list(p);
	assert_int_equal(s.n, 2);
	assert_int_equal(s.minor[0], 9);
	assert_int_equal(s.minor[1], 5);
	/* an entry last used at time 0 is kept like any other (no duplicate of another) */
	policy_fs(p, 8, 20, EXT4, 0);
	c.max_filesystems = 8;
	policy_reconfigure(p, &c);
	s = list(p);
	assert_int_equal(s.n, 2);
	assert_int_not_equal(s.minor[0], s.minor[1]);
	assert_int_equal(s.minor[1], 20);
}

static void test_sample_of(void **state)
{
	(void)state;
	struct dirahead_event ev;
	memset(&ev, 0, sizeof(ev));
	ev.stats = 7;
	ev.stat_first_ns = 100;
	ev.stat_last_ns = 900;
	ev.lat_sum_ns = 350;
	ev.lat_count = 5;
	struct pol_sample s;
	pol_sample_of(&s, &ev);
	assert_int_equal(s.stats, 7);
	assert_int_equal(s.t_first, 100);
	assert_int_equal(s.t_last, 900);
	assert_int_equal(s.lat_sum, 350);
	assert_int_equal(s.lat_n, 5);
}

/* From the first stat: the gap over stats - 1 intervals; durations once MIN_TIMED (4) were timed,
 * or every stat was.  Between samples: at least 4 more timed stats. */
static void test_cost_between(void **state)
{
	(void)state;
	struct pol_cost c;
	struct pol_sample to = { .stats = 10, .t_first = 1000, .t_last = 10000, .lat_sum = 900, .lat_n = 3 };
	pol_cost_between(NULL, &to, &c);
	assert_float_equal(c.gap_ns, 1000, 1e-9);
	assert_float_equal(c.lat_ns, -1, 1e-9); /* 3 of 10 timed */
	to.lat_n = 4;
	to.lat_sum = 8000;
	pol_cost_between(NULL, &to, &c);
	assert_float_equal(c.lat_ns, 2000, 1e-9);
	struct pol_sample two = { .stats = 2, .t_first = 500, .t_last = 800, .lat_sum = 600, .lat_n = 2 };
	pol_cost_between(NULL, &two, &c);
	assert_float_equal(c.lat_ns, 300, 1e-9); /* both timed: enough */
	assert_float_equal(c.gap_ns, 300, 1e-9);
	struct pol_sample one = { .stats = 1, .t_first = 500, .t_last = 500, .lat_sum = 50, .lat_n = 1 };
	pol_cost_between(NULL, &one, &c);
	assert_float_equal(c.gap_ns, -1, 1e-9); /* no interval yet */
	assert_float_equal(c.lat_ns, 50, 1e-9);
	struct pol_sample still = { .stats = 5, .t_first = 500, .t_last = 500 };
	pol_cost_between(NULL, &still, &c);
	assert_float_equal(c.gap_ns, -1, 1e-9);
	assert_float_equal(c.lat_ns, -1, 1e-9);

	struct pol_sample from = { .stats = 10, .t_first = 1000, .t_last = 10000, .lat_sum = 8000, .lat_n = 4 };
	struct pol_sample later = { .stats = 20, .t_first = 1000, .t_last = 30000, .lat_sum = 8300, .lat_n = 7 };
	pol_cost_between(&from, &later, &c);
	assert_float_equal(c.gap_ns, 2000, 1e-9);
	assert_float_equal(c.lat_ns, -1, 1e-9); /* 3 more timed */
	later.lat_n = 8;
	later.lat_sum = 8400;
	pol_cost_between(&from, &later, &c);
	assert_float_equal(c.lat_ns, 100, 1e-9);
	struct pol_sample nostat = from;
	nostat.t_last = 20000;
	pol_cost_between(&from, &nostat, &c);
	assert_float_equal(c.gap_ns, -1, 1e-9); /* no stat since */
	struct pol_sample notime = from;
	notime.stats = 15;
	pol_cost_between(&from, &notime, &c);
	assert_float_equal(c.gap_ns, -1, 1e-9); /* no time since */
}

/* The daemon's CPU per entry: from 32 entries on, bounded to [0.5 us, 1 ms], per filesystem and
 * overall, each stretch of n entries moving the figure n / (n + 768) of the way from the prior
 * (10 us); the start rule's threshold follows the filesystem's own measurement. */
static void test_account_cpu(void **state)
{
	struct policy *p = *state;
	struct pol_fs *fs = policy_fs(p, 8, 1, EXT4, T0), *other = policy_fs(p, 8, 2, EXT4, T0);
	struct pol_cost c = gap(20000);
	assert_int_equal(policy_after_probe(p, fs, &c, T0), POL_SKIP_FAST); /* 20 < 4 x 10 us */
	policy_account_cpu(p, fs, 31ull * 1000000, 31);
	assert_float_equal(policy_entry_cost_ns(p), 10000, 1e-6); /* too few entries */
	assert_float_equal(fs->cost_ns, 0, 1e-9);
	policy_account_cpu(p, fs, 768 * 450, 768); /* 450 ns: below a syscall; half the way */
	assert_float_equal(fs->cost_ns, 10000 - 0.5 * (10000 - 500), 1e-6);
	assert_float_equal(policy_entry_cost_ns(p), 5250, 1e-6);
	policy_account_cpu(p, fs, 2304 * 500, 2304); /* three quarters of the way */
	assert_float_equal(fs->cost_ns, 5250 - 0.75 * (5250 - 500), 1e-6);
	assert_float_equal(policy_threshold_ns(p, fs), 4 * 1687.5, 1e-6);
	assert_float_equal(policy_threshold_ns(p, other), 40000, 1e-6); /* unmeasured: the prior, not another filesystem's figure */
	assert_int_equal(policy_after_probe(p, fs, &c, T0), POL_START);
	struct pol_cost quick = gap(1500);
	assert_int_equal(policy_after_probe(p, fs, &quick, T0), POL_SKIP_FAST);
	/* several filesystems (fs NULL): only the overall figure moves; 1.5 ms an entry is capped */
	policy_account_cpu(p, NULL, 768 * 1500000ull, 768);
	assert_float_equal(policy_entry_cost_ns(p), 1687.5 + 0.5 * (1e6 - 1687.5), 1e-6);
	assert_float_equal(fs->cost_ns, 1687.5, 1e-6);
	assert_float_equal(policy_threshold_ns(p, fs), 4 * 1687.5, 1e-6); /* its own figure first */
	assert_float_equal(policy_threshold_ns(p, other), 40000, 1e-6); /* still the prior */
	policy_account_cpu(p, other, 768 * 4000, 768);
	assert_float_equal(other->cost_ns, 7000, 1e-6);
	assert_float_equal(policy_threshold_ns(p, other), 28000, 1e-6); /* now its own */
}

/* One-off CPU in a short stretch must not make a filesystem look expensive: reading and
 * inode-sorting a 12,000-entry directory lands in the first stretch the timer closes, which may
 * hold only 32 entries (1 ms an entry, capped), then the scan goes on at 25 us an entry (FUSE,
 * measured).  A FUSE stat of 290 us is still prefetched (prefetch-order.sh's `du -s`).  The
 * stretch taken whole as the first figure left 573 us after two more stretches: threshold
 * 2.3 ms, and the probe said "fast". */
static void test_account_cpu_one_off(void **state)
{
	struct policy *p = *state;
	struct pol_fs *fs = policy_fs_mount(p, 0, 40, FUSE, 7, T0);
	policy_account_cpu(p, fs, 32 * 1000000ull, 32);
	assert_true(fs->cost_ns < 2 * 25000); /* 4% of the way: 49.6 us */
	policy_account_cpu(p, fs, 1583 * 25000ull, 1583);
	policy_account_cpu(p, fs, 5735 * 25000ull, 5735);
	assert_true(fs->cost_ns < 1.1 * 25000); /* 25.9 us */
	assert_true(policy_entry_cost_ns(p) < 1.1 * 25000);
	struct pol_cost c = gap(290000);
	assert_int_equal(policy_after_probe(p, fs, &c, T0), POL_START);
}

/* A probe's rate overstated by one-off work after the listing (warm xfs `find -ls`: 17 us apart,
 * 1.5 us a stat) must not make a stretch at 4 us apart (1 us a stat) look like a gain; a slow
 * filesystem's real gain stands. */
static void test_judge_timed_before(void **state)
{
	struct policy *p = *state;
	struct pol_fs *fs = policy_fs(p, 8, 1, 0x58465342, T0);
	struct pol_cost b = { .lat_ns = 1500, .gap_ns = 17000 }, a = { .lat_ns = 1000, .gap_ns = 4000 };
	assert_false(policy_judge(p, fs, &b, &a, 0, false, T0));
	assert_int_equal(fs->verdict, POL_NO_GAIN);
	/* untimed after: the rate alone decides (17 vs 4: pays) */
	struct pol_fs *g = policy_fs(p, 8, 2, 0x58465342, T0);
	struct pol_cost a2 = gap(4000);
	assert_true(policy_judge(p, g, &b, &a2, 0, false, T0));
	/* slowfs: 250 us apart, 200 us a stat, then 30 us apart with 5 us stats: pays */
	struct pol_fs *h = policy_fs(p, 0, 40, 0x65735546, T0);
	struct pol_cost sb = { .lat_ns = 200000, .gap_ns = 250000 }, sa = { .lat_ns = 5000, .gap_ns = 30000 };
	assert_true(policy_judge(p, h, &sb, &sa, 0, false, T0));
	assert_int_equal(h->verdict, POL_PAYS);
}

/* A scan's short last stretch (a 40-entry directory judged on its final 29 stats, 234 us before
 * and 193 us with prefetch on a busy machine) ends that scan: it must not make the filesystem
 * no_gain, which would end the walk it belongs to and skip every scan for reprobe_s.  A full
 * stretch with the same figures does. */
static void test_judge_short_stretch(void **state)
{
	struct policy *p = *state;
	struct pol_fs *fs = policy_fs(p, 0, 40, 0x65735546, T0);
	struct pol_cost b = gap(234000), a = gap(193000);
	unsigned depth = policy_depth(p, fs);
	assert_false(policy_judge(p, fs, &b, &a, 0, true, T0));
	assert_int_equal(fs->verdict, POL_UNKNOWN);
	assert_int_equal(policy_depth(p, fs), depth);
	assert_int_equal(policy_on_scan(p, fs, &b, T0 + SEC), POL_PROBE);
	/* twice in a row is still no verdict; a gain on a short stretch is one */
	assert_false(policy_judge(p, fs, &b, &a, 0, true, T0 + SEC));
	assert_int_equal(fs->verdict, POL_UNKNOWN);
	struct pol_cost fast = gap(20000);
	assert_true(policy_judge(p, fs, &b, &fast, 0, true, T0 + 2 * SEC));
	assert_int_equal(fs->verdict, POL_PAYS);
	assert_false(policy_judge(p, fs, &b, &a, 0, true, T0 + 3 * SEC));
	assert_int_equal(fs->verdict, POL_PAYS);
	/* the same figures over a full stretch: the filesystem's verdict (after the one doubt) */
	assert_false(policy_judge(p, fs, &b, &a, 0, false, T0 + 4 * SEC));
	assert_false(policy_judge(p, fs, &b, &a, 0, false, T0 + 5 * SEC));
	assert_int_equal(fs->verdict, POL_NO_GAIN);
}

/* Tree-ahead's listings: a daemon listing that waits for nothing (wall < 2x CPU, after 4, not
 * before) makes the filesystem FAST for listing, and listing ahead is then not allowed until
 * reprobe_s, doubling; a failure leaves the stats' verdict alone. */
static void test_list_fast(void **state)
{
	struct policy *p = *state;
	struct pol_fs *fs = policy_fs(p, 8, 1, EXT4, T0);
	assert_true(policy_list_allowed(p, fs, T0));
	for (int i = 0; i < 3; i++)
		assert_int_equal(policy_list_account(p, fs, 30000, 25000, 30000, T0), POL_UNKNOWN);
	assert_int_equal(policy_list_account(p, fs, 30000, 25000, 30000, T0), POL_FAST);
	assert_int_equal(fs->verdict, POL_UNKNOWN);
	assert_false(policy_list_allowed(p, fs, T0 + 59 * SEC));
	assert_true(policy_list_allowed(p, fs, T0 + 61 * SEC)); /* re-probed, from scratch */
	assert_int_equal(fs->list.verdict, POL_UNKNOWN);
	assert_int_equal(fs->list.reprobes, 1);
	for (int i = 0; i < 4; i++)
		policy_list_account(p, fs, 30000, 25000, 30000, T0 + 62 * SEC);
	assert_int_equal(fs->list.verdict, POL_FAST);
	assert_false(policy_list_allowed(p, fs, T0 + 62 * SEC + 119 * SEC)); /* backoff 2x */
	assert_true(policy_list_allowed(p, fs, T0 + 62 * SEC + 121 * SEC));
}

/* Listings that wait on the filesystem are not FAST; the program's own listings then decide:
 * listed ahead it took 10x less than its own (pays), or about as long (no_gain), judged every
 * 8 listings ahead; without own listings the daemon's own reading is the reference. */
static void test_list_judge(void **state)
{
	struct policy *p = *state;
	struct pol_fs *fs = policy_fs(p, 0, 50, FUSE, T0);
	for (int i = 0; i < 8; i++)
		assert_int_equal(policy_list_account(p, fs, 4000000, 100000, 4000000, T0), POL_UNKNOWN);
	assert_int_equal(policy_list_judge(p, fs, false, 4000000, T0), POL_UNKNOWN);
	assert_int_equal(policy_list_judge(p, fs, false, 4200000, T0), POL_UNKNOWN);
	for (int i = 0; i < 7; i++)
		assert_int_equal(policy_list_judge(p, fs, true, 400000, T0), POL_UNKNOWN);
	assert_int_equal(policy_list_judge(p, fs, true, 400000, T0), POL_PAYS);
	assert_true(policy_list_allowed(p, fs, T0));
	/* the same filesystem no longer caching: ahead as slow as its own */
	for (int i = 0; i < 8; i++)
		policy_list_judge(p, fs, true, 4100000, T0 + SEC);
	assert_int_equal(fs->list.verdict, POL_NO_GAIN);
	assert_false(policy_list_allowed(p, fs, T0 + 30 * SEC));

	/* no own listing: the daemon's reading (4 ms) against 3.9 ms listed ahead: no gain */
	struct pol_fs *g = policy_fs(p, 0, 51, FUSE, T0);
	for (int i = 0; i < 4; i++)
		policy_list_account(p, g, 4000000, 100000, 4000000, T0);
	for (int i = 0; i < 8; i++)
		policy_list_judge(p, g, true, 3900000, T0);
	assert_int_equal(g->list.verdict, POL_NO_GAIN);
	/* listings ahead preempted on a busy machine (8 ms for a cached directory, three of
	 * eight) do not make a paying filesystem no_gain (their average would be 3.3 ms against
	 * the daemon's 2) */
	struct pol_fs *h = policy_fs(p, 0, 52, FUSE, T0);
	for (int i = 0; i < 4; i++)
		policy_list_account(p, h, 2000000, 100000, 2000000, T0);
	for (int i = 0; i < 7; i++)
		assert_int_equal(policy_list_judge(p, h, true, i % 2 == 1 ? 8000000 : 400000, T0),
				 POL_UNKNOWN);
	assert_int_equal(policy_list_judge(p, h, true, 400000, T0), POL_PAYS);
	/* with the policy off, listing ahead is always allowed and never judged */
	struct dd_config c = defaults();
	c.policy_enabled = false;
	policy_reconfigure(p, &c);
	assert_true(policy_list_allowed(p, g, T0 + SEC));
}

/* What a program's listing of a walk's directory is a sample of: its own where the walk never
 * opened it; ahead only where the walk had read it whole before the program began (walk-slowvol:
 * a program that caught up with the walk's reads waited on them, 209 us, and such samples made a
 * paying walk no_gain). */
static void test_list_kind(void **state)
{
	(void)state;
	assert_int_equal(policy_list_kind(false, 0, T0), POL_LIST_OWN);
	assert_int_equal(policy_list_kind(false, T0, T0), POL_LIST_OWN);
	assert_int_equal(policy_list_kind(true, 0, T0), POL_LIST_JOINED);     /* still reading */
	assert_int_equal(policy_list_kind(true, T0 + 1, T0), POL_LIST_JOINED); /* done after */
	assert_int_equal(policy_list_kind(true, T0, T0), POL_LIST_AHEAD);
	assert_int_equal(policy_list_kind(true, T0 - SEC, T0), POL_LIST_AHEAD);
	assert_int_equal(policy_list_kind(true, T0, 0), POL_LIST_AHEAD);      /* start not known */
}

/* A blocked call (the sentinel) on a filesystem judged fast: the fast verdicts, of stats and of
 * listings, are forgotten at once (arming then says yes, the next scan is probed); a second
 * signal clears nothing more; no_gain, an unknown filesystem or another device stay as they are. */
static void test_blocked_rejudges(void **state)
{
	struct policy *p = *state;
	struct pol_fs *fs = policy_fs(p, 8, 1, EXT4, T0);
	struct pol_cost c = gap(2000);
	assert_int_equal(policy_after_probe(p, fs, &c, T0), POL_SKIP_FAST);
	for (int i = 0; i < 4; i++)
		policy_list_account(p, fs, 30000, 25000, 30000, T0);
	assert_int_equal(fs->list.verdict, POL_FAST);
	assert_int_equal(policy_arm_verdict(p, 8, 1, EXT4, T0 + SEC), POL_ARM_FAST);
	assert_false(policy_blocked(p, 8, 2, EXT4, T0 + SEC));  /* another device */
	assert_false(policy_blocked(p, 8, 1, FUSE, T0 + SEC));  /* another filesystem there */
	assert_int_equal(fs->verdict, POL_FAST);
	assert_true(policy_blocked(p, 8, 1, EXT4, T0 + SEC));
	assert_int_equal(fs->verdict, POL_UNKNOWN);
	assert_int_equal(fs->list.verdict, POL_UNKNOWN);
	assert_int_equal(fs->rejudged, 1);
	assert_int_equal(policy_arm_verdict(p, 8, 1, EXT4, T0 + SEC), POL_ARM_YES);
	assert_true(policy_list_allowed(p, fs, T0 + SEC));
	assert_int_equal(policy_on_scan(p, fs, &c, T0 + SEC), POL_PROBE);
	assert_false(policy_blocked(p, 8, 1, EXT4, T0 + SEC));
	assert_int_equal(fs->rejudged, 1);
	/* a fast verdict past its trust is not trusted anyway: nothing to clear */
	assert_int_equal(policy_after_probe(p, fs, &c, T0 + 2 * SEC), POL_SKIP_FAST);
	assert_false(policy_blocked(p, 8, 1, EXT4, T0 + 13 * SEC));
	/* no_gain stays: prefetch was tried while calls blocked there */
	struct pol_fs *g = policy_fs(p, 8, 3, EXT4, T0);
	assert_false(judge_no_gain(p, g, T0));
	assert_int_equal(g->verdict, POL_NO_GAIN);
	assert_false(policy_blocked(p, 8, 3, EXT4, T0 + SEC));
	assert_int_equal(g->verdict, POL_NO_GAIN);
	assert_false(policy_blocked(p, 9, 9, EXT4, T0 + SEC));  /* never seen */
}

/* Blocked calls on a filesystem that re-judging finds fast again (a warm one whose calls sleep
 * now and then): the next re-judgment waits FAST_TRUST_NS x 2, then x 4 ... (arming says fast
 * meanwhile, even past the verdict's trust); a verdict that prefetch pays ends the backoff. */
static void test_blocked_backoff(void **state)
{
	struct policy *p = *state;
	struct pol_fs *fs = policy_fs(p, 8, 7, EXT4, T0);
	struct pol_cost c = gap(2000);
	uint64_t t = T0;
	assert_int_equal(policy_after_probe(p, fs, &c, t), POL_SKIP_FAST);
	assert_true(policy_blocked(p, 8, 7, EXT4, t + SEC)); /* the first: at once */
	t += 2 * SEC;
	assert_int_equal(policy_after_probe(p, fs, &c, t), POL_SKIP_FAST); /* fast again */
	assert_int_equal(fs->fast_backoff, 2);
	assert_false(policy_blocked(p, 8, 7, EXT4, t + 19 * SEC));
	assert_int_equal(fs->verdict, POL_FAST);
	/* past the verdict's own trust (10 s), inside the backoff: still fast for arming */
	assert_int_equal(policy_arm_verdict(p, 8, 7, EXT4, t + 15 * SEC), POL_ARM_FAST);
	/* after it: an old fast verdict is re-judged too, and the backoff doubles */
	assert_int_equal(policy_arm_verdict(p, 8, 7, EXT4, t + 21 * SEC), POL_ARM_YES);
	assert_true(policy_blocked(p, 8, 7, EXT4, t + 21 * SEC));
	t += 22 * SEC;
	assert_int_equal(policy_after_probe(p, fs, &c, t), POL_SKIP_FAST);
	assert_int_equal(fs->fast_backoff, 4);
	assert_false(policy_blocked(p, 8, 7, EXT4, t + 39 * SEC));
	assert_true(policy_blocked(p, 8, 7, EXT4, t + 41 * SEC));
	/* bounded */
	for (int i = 0; i < 10; i++) {
		t += 1000 * SEC;
		fs->verdict = POL_UNKNOWN;
		fs->rejudging = true;
		assert_int_equal(policy_after_probe(p, fs, &c, t), POL_SKIP_FAST);
	}
	assert_int_equal(fs->fast_backoff, 64);
	/* this time the re-judgment finds that prefetch pays: no backoff any more */
	assert_true(policy_blocked(p, 8, 7, EXT4, t + 641 * SEC));
	struct pol_cost before = gap(900000), after = gap(100000);
	assert_true(policy_judge(p, fs, &before, &after, 0, false, t + 642 * SEC));
	assert_int_equal(fs->fast_backoff, 0);
	assert_int_equal(fs->rejudge_after_ns, 0);
}

/* What the kernel said of a filesystem is kept with it: noted from a SCAN (its mount) or the
 * sentinel (mount 0, never replacing a mount's entry), found by device and magic; nothing is
 * noted that was not read (no DIRAHEAD_FSI_FUSE). */
static void test_fsinfo_kept(void **state)
{
	struct policy *p = *state;
	uint32_t serial = DIRAHEAD_FSI_FUSE | DIRAHEAD_FSI_SERIAL_LOOKUPS;
	assert_int_equal(policy_fsinfo(p, 0, 60, FUSE), 0);
	policy_note_fsinfo(p, 0, 60, FUSE, 0, DIRAHEAD_FSI_SERIAL_LOOKUPS, T0); /* not read */
	assert_int_equal(policy_fsinfo(p, 0, 60, FUSE), 0);
	struct pol_fs *fs = policy_fs_mount(p, 0, 60, FUSE, 77, T0);
	fs->verdict = POL_PAYS;
	policy_note_fsinfo(p, 0, 60, FUSE, 0, serial, T0); /* the sentinel: the entry stays */
	assert_int_equal(policy_fsinfo(p, 0, 60, FUSE), serial);
	assert_ptr_equal(policy_fs_mount(p, 0, 60, FUSE, 77, T0), fs);
	assert_int_equal(fs->verdict, POL_PAYS);
	assert_int_equal(policy_fsinfo(p, 0, 60, EXT4), 0);
	assert_int_equal(policy_fsinfo(p, 0, 61, FUSE), 0);
	policy_note_fsinfo(p, 0, 61, FUSE, 78, DIRAHEAD_FSI_FUSE, T0); /* a new one: made */
	assert_int_equal(policy_fsinfo(p, 0, 61, FUSE), DIRAHEAD_FSI_FUSE);
	/* the entry made afresh for another mount id on that device keeps it; another kind not */
	policy_fs_mount(p, 0, 60, FUSE, 79, T0);
	assert_int_equal(policy_fsinfo(p, 0, 60, FUSE), serial);
	policy_fs_mount(p, 0, 60, EXT4, 79, T0);
	assert_int_equal(policy_fsinfo(p, 0, 60, EXT4), 0);
}

/* Where the cost is (issue 24 item 2): a list-only walk lists at every depth until its program's
 * stats block at one; then it fetches the entries there, and there only.  A full walk fetches
 * everywhere.  Depths beyond the table share its last entry; a walk re-rooted above its top
 * keeps its verdicts for the same directories, now deeper.  A no_gain filesystem, or one whose
 * lookups serialize, is not judged again so. */
/* A block device's window counts requests, each as many entries as they fetched so far. */
static void test_window_reach(void **state)
{
	(void)state;
	assert_int_equal(policy_window_reach(8, false, 1000, 10), 8);     /* FUSE: entries */
	assert_int_equal(policy_window_reach(8, true, 0, 0), 8 * 16);     /* a group at first */
	assert_int_equal(policy_window_reach(8, true, 160, 10), 8 * 16);  /* xfs, name order */
	assert_int_equal(policy_window_reach(8, true, 1000, 10), 8 * 16); /* never above a group */
	assert_int_equal(policy_window_reach(8, true, 40, 10), 8 * 4);
	assert_int_equal(policy_window_reach(8, true, 10, 10), 8);        /* ext4 hash order */
	assert_true(policy_inode_groups(0x58465342, 7));                  /* xfs on a loop device */
	assert_false(policy_inode_groups(0x65735546, 8));                 /* fuseblk */
	assert_false(policy_inode_groups(0x65735546, 0));                 /* FUSE */
	assert_true(policy_inode_groups(0x9123683E, 0));                  /* btrfs, anonymous dev */
}

/* Until prefetch is found to pay (in the scan, or on its filesystem), the window grows to twice
 * the stretch a judgment takes, not to window_max: what a scan that ends no_gain fetched. */
static void test_window_max(void **state)
{
	struct policy *p = *state;
	struct dd_config c = defaults();
	c.window_max = 1024;
	policy_reconfigure(p, &c);
	struct pol_fs *fs = policy_fs(p, 0, 40, FUSE, T0);
	assert_int_equal(policy_window_max(p, fs, false), 128);
	assert_int_equal(policy_window_max(p, fs, true), 1024);
	fs->verdict = POL_PAYS;
	assert_int_equal(policy_window_max(p, fs, false), 1024);
	fs->verdict = POL_UNKNOWN;
	c.window_max = 64; /* never above window_max */
	policy_reconfigure(p, &c);
	assert_int_equal(policy_window_max(p, fs, false), 64);
	c.window_max = 1024;
	c.policy_enabled = false; /* no cost model: no judgment to wait for */
	policy_reconfigure(p, &c);
	assert_int_equal(policy_window_max(p, fs, false), 1024);
}

static void test_walk_depths(void **state)
{
	struct policy *p = *state;
	struct pol_depths d = { { 0 } };
	assert_int_equal(policy_walk_fetch(&d, false, 0), POL_FETCH_ENTRIES);
	assert_int_equal(policy_walk_fetch(&d, false, 3), POL_FETCH_ENTRIES);
	for (unsigned i = 0; i < 2 * POL_WALK_DEPTHS; i++)
		assert_int_equal(policy_walk_fetch(&d, true, i), POL_FETCH_LIST);
	assert_false(policy_walk_fetches(&d));
	assert_true(policy_walk_blocked(&d, 2));
	assert_false(policy_walk_blocked(&d, 2)); /* judged so already */
	assert_true(policy_walk_fetches(&d));
	assert_int_equal(policy_walk_fetch(&d, true, 1), POL_FETCH_LIST);
	assert_int_equal(policy_walk_fetch(&d, true, 2), POL_FETCH_ENTRIES);
	assert_int_equal(policy_walk_fetch(&d, true, 3), POL_FETCH_LIST);
	/* re-rooted one level up: depth 2 is depth 3 now */
	policy_depths_shift(&d, 1);
	assert_int_equal(policy_walk_fetch(&d, true, 2), POL_FETCH_LIST);
	assert_int_equal(policy_walk_fetch(&d, true, 3), POL_FETCH_ENTRIES);
	policy_depths_shift(&d, 0);
	assert_int_equal(policy_walk_fetch(&d, true, 3), POL_FETCH_ENTRIES);
	policy_depths_shift(&d, POL_WALK_DEPTHS + 1);
	assert_false(policy_walk_fetches(&d));
	/* the deepest levels share one verdict */
	assert_true(policy_walk_blocked(&d, 5 * POL_WALK_DEPTHS));
	assert_int_equal(policy_walk_fetch(&d, true, POL_WALK_DEPTHS - 1), POL_FETCH_ENTRIES);
	assert_int_equal(policy_walk_fetch(&d, true, 3 * POL_WALK_DEPTHS), POL_FETCH_ENTRIES);
	assert_int_equal(policy_walk_fetch(&d, true, POL_WALK_DEPTHS - 2), POL_FETCH_LIST);
	/* who may be judged so */
	struct pol_fs *fs = policy_fs(p, 8, 1, EXT4, T0);
	assert_true(policy_walk_rejudgeable(fs, false));
	assert_false(policy_walk_rejudgeable(fs, true));
	fs->verdict = POL_FAST;
	assert_true(policy_walk_rejudgeable(fs, false));
	fs->verdict = POL_NO_GAIN;
	assert_false(policy_walk_rejudgeable(fs, false));
}

int main(void)
{
#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
	const struct CMUnitTest tests[] = {
		T(test_knobs),
		T(test_blocked_rejudges),
		T(test_blocked_backoff),
		T(test_fsinfo_kept),
		T(test_walk_depths),
		T(test_start_fast),
		T(test_start_slow),
		T(test_pays_starts_at_once),
		T(test_depth_adapts),
		T(test_depth_late_or_not_bound),
		T(test_no_gain_backoff),
		T(test_reprobe_on_change),
		T(test_depth_clamps),
		T(test_lru),
		T(test_same_dev_other_magic),
		T(test_mount_order),
		T(test_reconfigure),
		T(test_sample_of),
		T(test_cost_between),
		T(test_account_cpu),
		T(test_account_cpu_one_off),
		T(test_judge_timed_before),
		T(test_judge_short_stretch),
		T(test_list_fast),
		T(test_list_judge),
		T(test_list_kind),
		cmocka_unit_test(test_window_reach),
		T(test_window_max),
	};
	return cmocka_run_group_tests_name("policy", tests, NULL, NULL);
}
