// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * Stat latency: sys_enter notes the start time of a stat in task-local storage, only in a process
 * that has state (one `procs` lookup per stat; other syscalls: the switch); sys_exit, for a stat
 * it matched to a tracked directory, adds the duration to a per-CPU log2 histogram.  An attached
 * sys_enter program costs every syscall of every process ~21 ns of wall time (getppid() 123 ->
 * 144 ns; the tracepoint's dispatch more than the program, which runs 28 ns by
 * kernel.bpf_stats_enabled, that accounting included) and a matched stat ~100 ns (entry and
 * exit together), so the daemon attaches it only while scans happen (detector_stat_timing()).
 */
#ifndef DIRAHEAD_DETECTOR_STAT_TIMING_H
#define DIRAHEAD_DETECTOR_STAT_TIMING_H

#include "detector_model.h"

/* The smallest k with v <= 2^k (v >= 1): the bit length of v - 1, without a loop. */
static __always_inline __u32 log2_ceil(__u64 v)
{
	__u64 x = v ? v - 1 : 0;
	__u32 k = 0;

	if (x >> 32) { k += 32; x >>= 32; }
	if (x >> 16) { k += 16; x >>= 16; }
	if (x >> 8) { k += 8; x >>= 8; }
	if (x >> 4) { k += 4; x >>= 4; }
	if (x >> 2) { k += 2; x >>= 2; }
	if (x >> 1) { k += 1; x >>= 1; }
	return k + (__u32)x;
}

/*
 * A stat matched to a tracked directory returned: add its duration to the histogram, and return
 * it (0: not timed).
 */
static __always_inline __u64 app_stat_latency(struct task_struct *task, long nr,
					      const struct dirahead_bpf_config *cfg)
{
	struct dirahead_app_lat *h;
	struct stat_start *st;
	__u32 zero = 0, k;
	__u64 d;

	st = bpf_task_storage_get(&stat_start, task, 0, 0);
	if (!st || !st->ts || st->nr != nr || st->epoch != cfg->timing_epoch)
		return 0;
	d = bpf_ktime_get_ns() - st->ts;
	st->ts = 0;
	h = bpf_map_lookup_elem(&app_lat, &zero);
	if (!h)
		return d;
	k = log2_ceil(d);
	if (k >= DIRAHEAD_APP_LAT_SLOTS)
		k = DIRAHEAD_APP_LAT_SLOTS - 1;
	h->slot[k]++;
	h->sum_ns += d;
	return d;
}

/*
 * A stat begins: remember when, for the latency histogram, but only in a process with live
 * scans; every other process pays the switch and, while some process is tracked, one lookup.
 */
static __always_inline int on_stat_enter(long nr)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;
	const struct dirahead_bpf_config *cfg;
	struct stat_start *st;
	struct proc *p;

	if (!live_procs)
		return 0;
	p = bpf_map_lookup_elem(&procs, &tgid);
	if (!p || !p->nlive)
		return 0;
	cfg = active_config(tgid);
	if (!cfg)
		return 0;
	st = bpf_task_storage_get(&stat_start, bpf_get_current_task_btf(), 0,
				  BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!st)
		return 0;
	st->nr = nr;
	st->epoch = cfg->timing_epoch;
	st->ts = bpf_ktime_get_ns();
	return 0;
}

#endif /* DIRAHEAD_DETECTOR_STAT_TIMING_H */
