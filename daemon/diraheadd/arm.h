/* SPDX-License-Identifier: LGPL-2.1-or-later OR BSD-2-Clause */
/*
 * Arming: the detector's syscall hooks (sys_exit, and sys_enter for timing) are attached only
 * while metadata calls block ([detect] arm = on-block).  The sentinel (sentinel.h) reports a
 * blocked stat, getdents64 or open of a directory; a report from a filesystem where the cost
 * model would start prefetching (arm_decide) attaches the hooks; they are detached once no
 * report came for [detect] quiet_s and no scan or walk is running (arm_quiet); where lookups
 * serialize, only a process that blocks listing a second directory arms (arm_one_dir).  Arming takes at
 * least quiet_s per cycle, which bounds the rate of attach/detach.  [detect] arm = always keeps
 * the hooks attached, as before, and the sentinel detached.
 */
#ifndef DIRAHEAD_ARM_H
#define DIRAHEAD_ARM_H

#include <stdbool.h>
#include <stdint.h>
#include "policy.h"

struct daemon;
struct arm;

/* What became of a sentinel signal in the daemon (rate-limited ones never reach it). */
#define ARM_SIGNALS(X)                                                                             \
	X(ARMED, "armed")                   /* it attached the hooks */                           \
	X(KEPT, "kept")                     /* they were attached: it keeps them so for quiet_s */ \
	X(IGNORED_VERDICT, "ignored_verdict")/* its filesystem's verdict is fast or no_gain, or hung */ \
	X(IGNORED_FILTER, "ignored_filter") /* a pseudo filesystem, or [filter] excludes it */     \
	X(IGNORED_SERIAL, "ignored_serial") /* lookups serialize there, one directory listed */    \
	X(FAILED, "attach_failed")          /* attaching failed (counted, retried on the next) */

#define X_ENUM(e, s) ARM_SIG_##e,
enum arm_signal { ARM_SIGNALS(X_ENUM) ARM_SIG_MAX };
#undef X_ENUM
extern const char *const arm_signal_names[ARM_SIG_MAX];

struct arm_stats {
	bool on_block;          /* [detect] arm = on-block, and the sentinel runs */
	bool armed;             /* the syscall hooks are attached now */
	uint64_t arms, disarms;
	double armed_s;         /* time the hooks were attached, in total (now included) */
	uint64_t signals[ARM_SIG_MAX];
	/* the sentinel's own counters (BPF) */
	uint64_t blocked;       /* metadata calls that went to sleep */
	uint64_t sent;          /* signals it sent */
	uint64_t rate_limited;  /* blocked calls not signalled: the process had signalled lately */
	uint64_t lost;          /* signals lost: its ring buffer was full */
};

/* Pure decisions (tests/unit/test_arm.c).  A signal: armed already, the filesystem's verdict
 * (POL_ARM_YES when not known), whether filters exclude it, whether it waits for a second
 * directory (arm_one_dir). */
static inline enum arm_signal arm_decide(bool armed, enum pol_arm verdict, bool filtered,
					 bool one_dir)
{
	if (filtered)
		return ARM_SIG_IGNORED_FILTER;
	if (verdict != POL_ARM_YES)
		return ARM_SIG_IGNORED_VERDICT;
	if (one_dir)
		return ARM_SIG_IGNORED_SERIAL;
	return armed ? ARM_SIG_KEPT : ARM_SIG_ARMED;
}

/* Where lookups in one directory serialize (fsknow.h: FUSE without parallel dirops, as sshfs)
 * the daemon sends no lookup into a directory a program stats; only listing ahead of a walker
 * can help, and attached hooks cost every syscall on the machine (8% of a flat `ls -l` on
 * sshfs).  So there a process arms them only once it blocks listing (getdents64) another
 * directory than the one it last blocked listing (the sentinel's DIRAHEAD_SENT_F_LISTED_OTHER,
 * kept per process in BPF): a walker, not one `ls -l`.  A blocked stat or open there never
 * arms. */
static inline bool arm_one_dir(bool serial, bool getdents, bool listed_other)
{
	return serial && !(getdents && listed_other);
}

/* Does a blocked call overturn its filesystem's `fast` verdict (re-judge it, arm for it)?  Only
 * calls that go on blocking: a spell of at least the sentinel's rate interval.  A cold walk or
 * `ls -l` blocks on and on; a warm program sleeps for a few ms where a handful of its blocks
 * were evicted (seen here: warm btrfs `ls -l` of 100,000 files, 1-3 reads a run; a warm ext4
 * `find`, 18 directory blocks read in one getdents64), and each re-judgment armed the hooks
 * for quiet_s and more, at the cost of every syscall on the machine. */
static inline bool arm_overturns_fast(uint64_t spell_ns, uint64_t rate_ns)
{
	return spell_ns >= rate_ns;
}

/* Disarm now?  No signal that armed or kept for quiet_ns since last_ns, and no scan or walk
 * running (live). */
static inline bool arm_quiet(uint64_t now_ns, uint64_t last_ns, uint64_t quiet_ns, unsigned live)
{
	return !live && now_ns >= last_ns && now_ns - last_ns >= quiet_ns;
}

/* Does a blocked listing or open of a directory arm where the stats are judged fast (verdict
 * POL_ARM_FAST)?  Where listing ahead of walkers pays (lists_pay: the filesystem's listing
 * verdict), yes, at once: its fast stats say nothing of its listings (seen: ls -lR on a FUSE
 * listing cache, 2 ms a listing, its first 200 ms unhelped until its spell re-judged the
 * stats).  Its stats are not judged again for it. */
static inline bool arm_for_listings(enum pol_arm verdict, bool listing, bool lists_pay)
{
	return verdict == POL_ARM_FAST && listing && lists_pay;
}

/* Disarm before quiet_s?  The filesystem of the last signal that armed or kept the hooks (known:
 * the sentinel named it) has been judged since, and not for prefetch (verdict: what arming would
 * say of it now; lists_pay: walkers there are helped by listing ahead, which their fast stats do
 * not decide), and nothing is running or being decided (live: scans in any state, walks) for
 * ARM_SETTLE_USEC since the detector last reported.  A cold ext4 `find -ls` of 20,000 files
 * blocks every few hundred inodes and arms, its probe finds 15 us a stat (fast), and the hooks
 * attached for the rest of it and quiet_s after cost some 6% of its run (0.91-0.95x of off on a
 * slow volume), and of the next runs within quiet_s; a new signal there is ignored until a
 * re-judgment is due, so this does not attach and detach in a loop.  The wait lets a walker that
 * was judged fast in one directory reach the next, where its listings are judged (walk.h): at
 * 0.2 s a busy machine's ls -lR on a fresh FUSE mount was disarmed before it descended, and its
 * next 200 ms went unhelped. */
#define ARM_SETTLE_USEC 1000000ull
static inline bool arm_settled(bool known, enum pol_arm verdict, bool lists_pay, unsigned live)
{
	return known && verdict != POL_ARM_YES && !lists_pay && !live;
}

/* Opens the sentinel and applies [detect] arm; without a sentinel (an old kernel) it arms
 * always, with a warning.  NULL only on out of memory / event loop errors (err filled). */
struct arm *arm_new(struct daemon *d, char *err, size_t errlen);
/* fn(ctx) each time the hooks are detached by the quiet rule (nothing blocked for quiet_s, nothing
 * running): the daemon is idle from then on until the next blocked call. */
void arm_on_quiet(struct arm *a, void (*fn)(void *ctx), void *ctx);
/* After a reload: d->cfg's arm, quiet_s, enabled and filters apply from now. */
void arm_reconfigure(struct arm *a);
/* After the detector reported (a batch of events: scans judged, started, ended): detach the
 * hooks ARM_SETTLE_USEC from now, unless it reports again meanwhile, where arm_settled() says
 * so then. */
void arm_settle(struct arm *a);
void arm_get_stats(struct arm *a, struct arm_stats *out);
/* The sentinel program's id and run statistics, false without one. */
bool arm_sentinel_prog(struct arm *a, uint32_t *id, uint64_t *run_cnt, uint64_t *run_time_ns,
		       bool *attached);
void arm_free(struct arm *a);

#endif
