// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * dirahead scan detector.
 *
 * Watches, per process, which directory it lists (getdents64) and whether it then stats that
 * directory's entries.  After `confirm_stats` such stats it sends one DIRAHEAD_EV_SCAN through the
 * ring buffer, then DIRAHEAD_EV_PROGRESS every `progress_step` stats, and DIRAHEAD_EV_END when the
 * process exits, execs, or lists a directory that is not below this one.
 *
 * Hooks: tp_btf/sys_exit (raw_syscalls:sys_exit, dispatching on the syscall number),
 * tp_btf/sched_process_exit and tp_btf/sched_process_exec; and tp_btf/sys_enter, only to time
 * stats for the application stat latency histogram (`app_lat`, stat_timing.h).  Why tp_btf on the
 * raw syscall tracepoint and not syscalls:sys_exit_* tracepoints:
 *   - no tracefs mount, no perf_event_open, so the daemon needs neither CAP_SYS_ADMIN nor a
 *     writable /sys; links are plain BPF links that die with the process;
 *   - everything happens at syscall exit: the arguments are still in the saved user registers
 *     (only ax/x0 holds the return value) and only successful calls count, so detection needs
 *     no entry hook and no per-thread entry map;
 *   - typed BTF pointers: regs and the current task are read with plain loads, not helper calls.
 * Measured on this machine (6.18, 2 vCPU; getppid()/fstatat() loops, ns per call):
 *     no BPF 64 / 259;  tp_btf sys_exit 83 / 292;  raw_tp sys_exit (CO-RE reads) 87-91 / 302;
 *     tracepoint syscalls:sys_exit_newfstatat 69-74 / 304.
 * So per-syscall tracepoints cost ~10 ns less on unrelated syscalls but ~12 ns more on every stat
 * of a scan, and add the tracefs/CAP_SYS_ADMIN requirement; we take tp_btf.
 *
 * Fast path (every syscall of every process): read orig_ax, switch on the number, return.  For
 * stat/chdir from a process that never listed a directory: one hash lookup (`procs`) and return;
 * process exit/exec: one lookup too.  openat does work only for O_DIRECTORY opens relative to
 * the cwd or absolute (remembering how the process names the directory); getdents64 always does
 * (a listing creates the state).  Program run time (kernel.bpf_stats_enabled / BPF_ENABLE_STATS,
 * tests/bpf/detector-cost.sh): sys_exit 28 ns average over read/write syscalls of a process
 * without state, ~150-210 ns average over a stat-heavy load (ls -l, find, du), ~185 ns per
 * matched stat; sched_process_exit ~170 ns without state, a few us when it sends END events
 * (the ring buffer's reader wakeup dominates; see DIRAHEAD_CFG_LAZY_WAKEUP).
 *
 * No close() hook: the fd an event offers is checked through the fdtable when the event is made.
 *
 * The programs are here; what they do is in headers by job, one compilation unit:
 *   kernel_id.h      the kernel's objects: fds, inodes, mounts, directories (shared with the
 *                    sentinel)
 *   detector_model.h the state model: limits, flags, struct proc and scan, the maps
 *   names.h          seeds, path hashing, names of listed directories and of stat'ed entries
 *   emit.h           scan events into the ring buffer
 *   share.h          each uid's share of the tables
 *   slots.h          a process's entry and per-thread slots, scans ended
 *   mutes.h          where the daemon told the detector to stand aside
 *   unlisted.h       runs of stats without a listing
 *   listing.h        getdents64, O_DIRECTORY opens, chdir
 *   stat_timing.h    the application stat latency histogram (sys_enter)
 *   stat_match.h     a stat matched to a tracked directory and counted
 *
 * Loops that scan strings or walk parents are global functions (verified once, on their own).
 * getdents64 results are not parsed: what a listing returned is counted in bytes.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "dirahead_event.h"
#include "detector_sys.h"
#include "kernel_id.h"
#include "detector_model.h"
#include "names.h"
#include "emit.h"
#include "share.h"
#include "slots.h"
#include "mutes.h"
#include "unlisted.h"
#include "listing.h"
#include "stat_timing.h"
#include "stat_match.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

static __always_inline int on_stat(struct pt_regs *regs, long ret, long nr)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	__u32 tgid = pid_tgid >> 32;
	const struct dirahead_bpf_config *cfg;
	struct task_struct *task;
	const char *upath;
	struct scratch *s;
	struct proc *p = NULL;
	int dfd;

	if (ret != 0)
		return 0;
	if (live_procs) {
		p = bpf_map_lookup_elem(&procs, &tgid);
		if (p && !p->nlive)
			p = NULL;	/* its scans are forgotten or muted */
	}
	cfg = active_config(tgid);
	if (!cfg || (!p && !cfg->unlisted_stats))
		return 0;	/* not listing anything, runs off: the common case */
	if (nr == DA_NR_STAT || nr == DA_NR_LSTAT) {
		dfd = DA_AT_FDCWD;
		upath = (const char *)PT_REGS_PARM1_SYSCALL(regs);
	} else {
		dfd = (int)PT_REGS_PARM1_SYSCALL(regs);
		upath = (const char *)PT_REGS_PARM2_SYSCALL(regs);
	}
	task = bpf_get_current_task_btf();
	if (compat_syscall(task))
		return 0;
	s = get_scratch();
	if (!s)
		return 0;
	if (p && tracked_stat(p, tgid, dfd, upath, nr, cfg, task, s) == MATCH_DONE)
		return 0;
	if (cfg->unlisted_stats)
		run_stat(dfd, upath, cfg, task, s);
	return 0;
}

SEC("tp_btf/sys_enter")
int BPF_PROG(dirahead_sys_enter, struct pt_regs *regs, long id)
{
	switch (id) {
	case DA_NR_NEWFSTATAT:
	case DA_NR_STATX:
	case DA_NR_STAT:
	case DA_NR_LSTAT:
		return on_stat_enter(id);
	default:
		return 0;
	}
}

SEC("tp_btf/sys_exit")
int BPF_PROG(dirahead_sys_exit, struct pt_regs *regs, long ret)
{
	long nr = DA_SYSCALL_NR(regs);

	switch (nr) {
	case DA_NR_NEWFSTATAT:
	case DA_NR_STATX:
	case DA_NR_STAT:
	case DA_NR_LSTAT:
		return on_stat(regs, ret, nr);
	case DA_NR_GETDENTS64:
		return on_getdents(regs, ret);
	case DA_NR_OPENAT:
	case DA_NR_OPENAT2:
		return on_open(regs, ret, nr);
	case DA_NR_CHDIR:
	case DA_NR_FCHDIR:
		return on_chdir(ret);
	default:
		return 0;
	}
}

SEC("tp_btf/sched_process_exit")
int BPF_PROG(dirahead_exit, struct task_struct *task)
{
	__u32 tid = task->pid, tgid = task->tgid;
	struct proc *p;

	bpf_map_delete_elem(&lastopen, &tid);
	if (task->signal->live.counter != 0) {
		/* one thread of several: what it listed is over, the process's state stays */
		if (live_procs) {
			p = bpf_map_lookup_elem(&procs, &tgid);
			if (p)
				end_thread(p, tgid, tid);
		}
		return 0;
	}
	walker_end(tgid, DIRAHEAD_END_EXIT);
	end_all(tgid, DIRAHEAD_END_EXIT);
	return 0;
}

SEC("tp_btf/sched_process_exec")
int BPF_PROG(dirahead_exec, struct task_struct *task)
{
	__u32 tid = task->pid;

	bpf_map_delete_elem(&lastopen, &tid);
	bpf_task_storage_delete(&runs, task);	/* a run of the old program is not the new one's */
	walker_end(task->tgid, DIRAHEAD_END_EXEC);
	end_all(task->tgid, DIRAHEAD_END_EXEC);
	return 0;
}
