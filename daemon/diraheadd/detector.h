/* SPDX-License-Identifier: LGPL-2.1-or-later OR BSD-2-Clause */
/*
 * The detector: loads and attaches the BPF programs of bpf/detector.bpf.c, and hands the daemon
 * the confirmed scans from the ring buffer.  One owner thread; nothing here blocks.
 */
#ifndef DIRAHEAD_DETECTOR_H
#define DIRAHEAD_DETECTOR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "dirahead_event.h"

struct detector;

/* Called from detector_consume() for every event; return 0 to go on, negative to stop consuming. */
typedef int (*detector_event_fn)(const struct dirahead_event *ev, void *ctx);

struct detector_counters {
	uint64_t v[DIRAHEAD_CNT_MAX]; /* indexed by enum dirahead_counter, summed over CPUs */
};

/* The application's stat latency histogram (see struct dirahead_app_lat), summed over CPUs. */
struct detector_app_lat {
	uint64_t slot[DIRAHEAD_APP_LAT_SLOTS]; /* slot k: more than 2^(k-1), at most 2^k ns */
	uint64_t count;                        /* sum of the slots */
	uint64_t sum_ns;
};

struct detector_prog_stat {
	const char *name;     /* BPF program name (valid until detector_close) */
	uint32_t id;          /* kernel program id, as bpftool prog show lists it */
	bool attached;        /* false: loaded, not attached (see detector_stat_timing()) */
	uint64_t run_cnt;     /* 0 unless kernel.bpf_stats_enabled=1 */
	uint64_t run_time_ns;
};

/* Defaults used when detector_open() gets cfg == NULL (see detector_default_config()). */
#define DETECTOR_DEFAULT_CONFIRM_STATS 3
#define DETECTOR_DEFAULT_PROGRESS_STEP 64

/* enabled, self_tgid = getpid(), the defaults above, min_dir_size 0, no unlisted runs. */
void detector_default_config(struct dirahead_bpf_config *cfg);

/*
 * Opens, loads and attaches.  Mounts nothing it does not need (raw tracepoints/tp_btf need no
 * tracefs).  On failure returns NULL and puts a message naming what is missing (BTF, a
 * tracepoint, a capability) into err.  verbose: libbpf's own messages to stderr.
 */
struct detector *detector_open(const struct dirahead_bpf_config *cfg, detector_event_fn fn,
			       void *ctx, bool verbose, char *err, size_t errlen);
/* Epoll fd of the ring buffer: readable when events are waiting. */
int detector_fd(const struct detector *d);
/* Drain the ring buffer without blocking; returns events consumed or -errno. */
int detector_consume(struct detector *d);
/* Replace the settings in the config map (live: programs stay attached). */
int detector_configure(struct detector *d, const struct dirahead_bpf_config *cfg);
/*
 * Per-scan control, by the scan's BPF scan_id: a control written after that scan ended never
 * applies to a later scan of the same directory.  Progress events every `progress_step` stats
 * from now (0 = no more events).
 */
int detector_scan_step(struct detector *d, uint64_t scan_id, uint32_t progress_step);
/* Forget a scan (the daemon stopped it); the process's later stats of it are ignored. */
int detector_scan_forget(struct detector *d, uint64_t scan_id);
/* Forget it and, for mute_ms, track no new listing of that process on that filesystem (the
 * device as the events name it), nor its runs of stats without a listing there; or with `paths`,
 * none of its runs of stats by path whose stats return that device (st_dev; 0:0: any): prefetch
 * does not pay there, and the rest of its walk then costs one map lookup per stat. */
int detector_scan_mute(struct detector *d, uint64_t scan_id, uint32_t tgid, bool paths,
		       uint32_t dev_major, uint32_t dev_minor, uint32_t mute_ms);
/* Undo detector_scan_mute() of that process on that filesystem (its calls there block now:
 * judge it again); 0 if it was not muted there, or -errno. */
int detector_unmute(struct detector *d, uint32_t tgid, uint32_t dev_major, uint32_t dev_minor);
/* 1 if BPF still tracks scan `scan_id` of that process and directory (as its events name
 * them), 0 if its state is gone (its END may have been lost), -errno. */
int detector_scan_alive(struct detector *d, uint32_t tgid, uint32_t dev_major, uint32_t dev_minor,
			uint64_t ino, uint64_t scan_id);
/* Before detector_open(): size the process and scan tables (0 keeps the built-in size); tests
 * fill them. */
void detector_set_table_sizes(uint32_t procs, uint32_t scans);
/* The daemon walks a tree ahead of this process on that filesystem: report its listings there
 * as DIRAHEAD_EV_LISTING and track them no more (struct dirahead_walker); clear undoes it. */
int detector_walker_set(struct detector *d, uint32_t tgid, uint32_t dev_major, uint32_t dev_minor);
int detector_walker_clear(struct detector *d, uint32_t tgid);
int detector_counters(struct detector *d, struct detector_counters *out);
/* Reads the application's stat latency histogram; 0 or -errno. */
int detector_app_lat(struct detector *d, struct detector_app_lat *out);
/*
 * Attach (on) or detach the sys_enter program that times stats for that histogram.  Attached, it
 * runs on every syscall of every process (about 20 ns each here, even though it returns at once
 * for all but stats), so a user may keep it attached only while scans happen.  detector_open()
 * attaches it.  0 or -errno.
 */
int detector_stat_timing(struct detector *d, bool on);
/*
 * Before detector_open(): attach the sys_exit program at open (the default), or leave it
 * detached until detector_syscalls(d, true) (the daemon arms on blocked calls, arm.h).
 */
void detector_set_syscalls_at_open(bool on);
/*
 * Attach or detach the syscall hooks: sys_exit, which all detection hangs on, and with it off,
 * the stat timing sys_enter too (detector_stat_timing() attaches nothing while it is off).
 * While either is attached every syscall of the machine takes the tracepoint slow path.
 * The exit, exec and sched programs stay.  0 or -errno.
 */
int detector_syscalls(struct detector *d, bool on);
bool detector_syscalls_on(const struct detector *d);
bool detector_stat_timing_on(const struct detector *d);
/*
 * Fills up to max entries; returns the number of programs.  Run times are counted only while
 * kernel.bpf_stats_enabled=1 or while some process holds a BPF_ENABLE_STATS fd (see below).
 */
int detector_prog_stats(struct detector *d, struct detector_prog_stat *out, int max);
/*
 * Turn on run-time accounting of all BPF programs for as long as this detector is open (the
 * kernel's BPF_ENABLE_STATS; no sysctl left behind if the process dies).  0 or -errno.
 */
int detector_enable_stats(struct detector *d);
/* Detaches everything and frees; safe with NULL. */
void detector_close(struct detector *d);

#endif /* DIRAHEAD_DETECTOR_H */
