/* SPDX-License-Identifier: LGPL-2.1-or-later OR BSD-2-Clause */
/*
 * Arming's decisions (daemon/diraheadd/arm.h) and the verdicts they read
 * (policy_arm_verdict()): which blocked call attaches the syscall hooks, which is ignored, and
 * when they come off.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "arm.h"

#define SEC 1000000000ull
#define T0 (1000 * SEC)
#define FUSE 0x65735546ull

static struct dd_config defaults(void)
{
	return (struct dd_config){
		.depth_per_scan = 64, .depth_total = 128, .policy_enabled = true, .probe_stats = 8,
		.start_factor = 1.5, .entry_cost_us = 10, .gain_stats = 64, .min_gain = 1.3,
		.reprobe_s = 60, .mute_ms = 2000, .depth_min = 4, .max_filesystems = 256,
	};
}

static void decide(void **state)
{
	(void)state;
	assert_int_equal(arm_decide(false, POL_ARM_YES, false, false), ARM_SIG_ARMED);
	assert_int_equal(arm_decide(true, POL_ARM_YES, false, false), ARM_SIG_KEPT);
	assert_int_equal(arm_decide(false, POL_ARM_FAST, false, false), ARM_SIG_IGNORED_VERDICT);
	assert_int_equal(arm_decide(false, POL_ARM_NO_GAIN, false, false), ARM_SIG_IGNORED_VERDICT);
	assert_int_equal(arm_decide(true, POL_ARM_HUNG, false, false), ARM_SIG_IGNORED_VERDICT);
	/* filters first: an excluded program never arms, whatever its filesystem */
	assert_int_equal(arm_decide(false, POL_ARM_YES, true, false), ARM_SIG_IGNORED_FILTER);
	/* waiting for a second directory: ignored, armed or not; the verdict first */
	assert_int_equal(arm_decide(false, POL_ARM_YES, false, true), ARM_SIG_IGNORED_SERIAL);
	assert_int_equal(arm_decide(true, POL_ARM_YES, false, true), ARM_SIG_IGNORED_SERIAL);
	assert_int_equal(arm_decide(false, POL_ARM_NO_GAIN, false, true), ARM_SIG_IGNORED_VERDICT);
}

/* Where lookups serialize, only a blocked listing of another directory than the process's last
 * one (the sentinel's flag) arms: not a stat, not an open, not its first listing, not the same
 * directory again (a flat `ls -l` of a big directory reads it in several getdents64 calls). */
static void one_dir(void **state)
{
	(void)state;
	assert_false(arm_one_dir(false, false, false)); /* lookups in parallel: any call */
	assert_false(arm_one_dir(false, true, false));
	assert_true(arm_one_dir(true, false, true));    /* a stat or an open */
	assert_true(arm_one_dir(true, true, false));    /* its first listing, or the same again */
	assert_false(arm_one_dir(true, true, true));    /* another directory: a walker */
}

static void quiet(void **state)
{
	(void)state;
	assert_false(arm_quiet(T0 + 4 * SEC, T0, 5 * SEC, 0));
	assert_true(arm_quiet(T0 + 5 * SEC, T0, 5 * SEC, 0));
	/* a scan or walk running keeps the hooks */
	assert_false(arm_quiet(T0 + 60 * SEC, T0, 5 * SEC, 1));
	/* a signal stamped after `now` (read late from the ring) is no quiet */
	assert_false(arm_quiet(T0, T0 + SEC, 5 * SEC, 0));
}

static void for_listings(void **state)
{
	(void)state;
	assert_true(arm_for_listings(POL_ARM_FAST, true, true));
	assert_false(arm_for_listings(POL_ARM_FAST, false, true));   /* a stat: the stats' verdict */
	assert_false(arm_for_listings(POL_ARM_FAST, true, false));   /* listing ahead not judged to pay */
	assert_false(arm_for_listings(POL_ARM_NO_GAIN, true, true)); /* no_gain, hung: not armed */
	assert_false(arm_for_listings(POL_ARM_HUNG, true, true));
}

static void settled(void **state)
{
	(void)state;
	/* the filesystem that armed them judged fast, no_gain or hung since, nothing running */
	assert_true(arm_settled(true, POL_ARM_FAST, false, 0));
	assert_true(arm_settled(true, POL_ARM_NO_GAIN, false, 0));
	assert_true(arm_settled(true, POL_ARM_HUNG, false, 0));
	/* not judged yet, or judged to pay: quiet_s decides */
	assert_false(arm_settled(true, POL_ARM_YES, false, 0));
	/* its stats are fast, but listing ahead of walkers pays there */
	assert_false(arm_settled(true, POL_ARM_FAST, true, 0));
	/* a scan (probing included) or walk running keeps them */
	assert_false(arm_settled(true, POL_ARM_FAST, false, 1));
	/* the sentinel could not say which filesystem armed them */
	assert_false(arm_settled(false, POL_ARM_FAST, false, 0));
}

static void verdicts(void **state)
{
	(void)state;
	struct dd_config c = defaults();
	struct policy *p = policy_new(&c);
	assert_non_null(p);
	/* never seen: arm, and nothing is created by asking */
	assert_int_equal(policy_arm_verdict(p, 0, 50, FUSE, T0), POL_ARM_YES);

	struct pol_fs *fs = policy_fs(p, 0, 50, FUSE, T0);
	fs->verdict = POL_FAST;
	fs->verdict_ns = T0;
	assert_int_equal(policy_arm_verdict(p, 0, 50, FUSE, T0 + SEC), POL_ARM_FAST);
	/* a fast verdict is trusted 10 s, then the next block may probe again */
	assert_int_equal(policy_arm_verdict(p, 0, 50, FUSE, T0 + 11 * SEC), POL_ARM_YES);

	fs->verdict = POL_NO_GAIN;
	fs->reprobe_ns = T0 + 60 * SEC;
	assert_int_equal(policy_arm_verdict(p, 0, 50, FUSE, T0 + 30 * SEC), POL_ARM_NO_GAIN);
	assert_int_equal(policy_arm_verdict(p, 0, 50, FUSE, T0 + 61 * SEC), POL_ARM_YES);
	/* another filesystem on that device number (another magic) is not judged by it */
	assert_int_equal(policy_arm_verdict(p, 0, 50, 0xef53, T0 + 30 * SEC), POL_ARM_YES);

	fs->verdict = POL_PAYS;
	assert_int_equal(policy_arm_verdict(p, 0, 50, FUSE, T0 + 30 * SEC), POL_ARM_YES);
	policy_fs_hung(fs, T0 + 30 * SEC);
	assert_int_equal(policy_arm_verdict(p, 0, 50, FUSE, T0 + 31 * SEC), POL_ARM_HUNG);
	policy_free(p);

	/* [policy] enabled = no: no verdict holds anything back */
	c.policy_enabled = false;
	p = policy_new(&c);
	fs = policy_fs(p, 0, 50, FUSE, T0);
	fs->verdict = POL_NO_GAIN;
	fs->reprobe_ns = T0 + 60 * SEC;
	assert_int_equal(policy_arm_verdict(p, 0, 50, FUSE, T0 + SEC), POL_ARM_YES);
	policy_free(p);
}

/* A filesystem judged fast, trusted still or not, is overturned only by calls that go on
 * blocking for the sentinel's rate interval (200 ms): not by a warm program's brief spell of
 * a few evicted blocks.  Any other verdict, or none, does not ask. */
static void brief_spells(void **state)
{
	(void)state;
	const uint64_t rate = 200000000ull;
	assert_false(arm_overturns_fast(0, rate));               /* the spell's first call */
	assert_false(arm_overturns_fast(3000000, rate));         /* 18 blocks in one getdents64 */
	assert_true(arm_overturns_fast(rate, rate));             /* the next window, still blocking */
	assert_true(arm_overturns_fast(5 * SEC, rate));

	struct dd_config c = defaults();
	struct policy *p = policy_new(&c);
	assert_false(policy_judged_fast(p, 0, 50, FUSE));       /* never seen */
	struct pol_fs *fs = policy_fs(p, 0, 50, FUSE, T0);
	assert_false(policy_judged_fast(p, 0, 50, FUSE));       /* not judged yet */
	fs->verdict = POL_FAST;
	fs->verdict_ns = T0;
	assert_true(policy_judged_fast(p, 0, 50, FUSE));
	assert_false(policy_judged_fast(p, 0, 50, 0xef53));     /* another filesystem there */
	/* past its trust it arms on a blocked call, as before, but still counts as fast here */
	assert_int_equal(policy_arm_verdict(p, 0, 50, FUSE, T0 + 11 * SEC), POL_ARM_YES);
	assert_true(policy_judged_fast(p, 0, 50, FUSE));
	fs->verdict = POL_PAYS;
	assert_false(policy_judged_fast(p, 0, 50, FUSE));
	fs->verdict = POL_NO_GAIN;
	assert_false(policy_judged_fast(p, 0, 50, FUSE));
	policy_free(p);

	/* [policy] enabled = no: nothing is judged */
	c.policy_enabled = false;
	p = policy_new(&c);
	fs = policy_fs(p, 0, 50, FUSE, T0);
	fs->verdict = POL_FAST;
	assert_false(policy_judged_fast(p, 0, 50, FUSE));
	policy_free(p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(decide),
		cmocka_unit_test(one_dir),
		cmocka_unit_test(quiet),
		cmocka_unit_test(settled),
		cmocka_unit_test(for_listings),
		cmocka_unit_test(verdicts),
		cmocka_unit_test(brief_spells),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
