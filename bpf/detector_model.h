// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * The detector's state model: its limits and flags, a process (struct proc) with its per-thread
 * slots, a scan, a thread's last directory open and run of unlisted stats, every map and global
 * the programs share with each other and with the daemon (see include/dirahead_event.h for the
 * ABI half), and the accessors to the config, the counters and the per-CPU scratch.
 */
#ifndef DIRAHEAD_DETECTOR_MODEL_H
#define DIRAHEAD_DETECTOR_MODEL_H

#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "dirahead_event.h"

#define PATH_LEN	DIRAHEAD_PATH_LEN	/* power of two: indexes are masked with it */
#define NAME_LEN	DIRAHEAD_NAME_LEN
#define MAX_ACTIVE	8			/* directories one process keeps scanning at once */
#define MAX_DEPTH	16			/* parent levels searched for an enclosing scan */
#define DEFAULT_CONFIRM	3
#define RING_SIZE	(512 * 1024)

#define SCAN_CONFIRMED	0x1	/* DIRAHEAD_EV_SCAN sent */
#define SCAN_DONE	0x2	/* getdents64 returned 0 */
#define SCAN_HAS_PATH	0x4	/* path[] holds the name the process opened it with */
#define SCAN_ABS_PATH	0x8	/* ... and it is absolute */
#define SCAN_UNLISTED	0x10	/* reported from stats alone (DIRAHEAD_EVF_UNLISTED) */
#define SCAN_FORGOTTEN	0x20	/* the daemon forgot it: kept only so a listing going on does not
				 * start it again; its stats return at once */
#define SCAN_SORTED	0x40	/* the run's names came in ascending order (DIRAHEAD_EVF_SORTED) */

#define SLOT_LIVE	0x1	/* its scan is not forgotten: counted in proc->nlive */
#define SLOT_PATH	0x2	/* ... and has a name in `names`: counted in proc->npath */
#define SLOT_UNLISTED	0x4	/* a run of stats without a listing */

/*
 * A directory a process scans.  Slots belong to the process (MAX_ACTIVE in all), each tagged
 * with the thread that listed it: only that thread's next listing ends it, so threads walking
 * side by side do not end each other's scans; a stat from any thread of the process counts.
 */
struct active_slot {
	__u64 ino;
	__u32 dev;
	__u32 seq;	/* 0: free; else allocation order, the smallest is evicted first */
	__u32 tid;
	__u32 flags;	/* SLOT_* */
};

struct proc {
	__u64 seed;	/* per process incarnation: names of an earlier process with this tgid never match */
	__u64 rel_seed;	/* seed mixed with the cwd: relative names hold for one cwd only */
	__u64 cwd_ino;
	__u32 cwd_dev;
	__u32 seq;
	__u32 nlive;	/* live slots: 0 lets stats return after the `procs` lookup */
	__u32 npath;	/* live slots with a name: 0 lets AT_FDCWD stats off the cwd skip the string */
	__u32 uid;	/* whose share of the tables the entry and its scans are (`user_share`) */
	__u32 pad;
	struct active_slot active[MAX_ACTIVE];
};

struct scan {
	__u64 scan_id;	/* first: user space reads it to tell whether the scan lives on */
	__u64 listed;
	__u64 stats;
	__u64 next_progress;
	__u64 dir_size;
	__u64 magic;
	__u64 rel_seed;	/* proc->rel_seed when a relative path was recorded */
	__u64 mnt_id;	/* see vfsmount_id() (kernel_id.h) */
	__u64 parent_ino;
	__u64 t_first;	/* exit time of the first and the latest matched stat */
	__u64 t_last;
	__u64 lat_sum;	/* durations of the matched stats sys_enter timed, and how many */
	__u64 lat_n;
	__u64 ctl_gen;	/* ctl_gen when scan_ctl was last looked at */
	__u64 name_ino;	/* a run by path: what the program's stat of `name` returned (SCAN only);
			 * fs_info()'s scratch while the scan is made */
	__u32 name_major;
	__u32 name_minor;
	__u32 name_id;	/* DIRAHEAD_EVF_NAME_ID | DIRAHEAD_EVF_NAME_FOLLOW, or 0 */
	__u32 fsinfo;	/* DIRAHEAD_FSI_*: fs_info() when the scan was made */
	__u32 flags;
	__u32 step;
	__u32 ctl_seq;
	__s32 fd;	/* last fd seen on the directory (getdents64 or stat dirfd); checked before use */
	__u32 name_len;
	__u32 path_len;
	char name[NAME_LEN];
	char path[PATH_LEN];
};

/* The last O_DIRECTORY open relative to the cwd (or absolute) of a thread, until it lists it. */
struct lastopen {
	__u64 ino;
	__u32 dev;
	__s32 fd;
	__u32 len;	/* strlen(path) */
	__u32 pad;
	char path[PATH_LEN];
};

struct name_key {
	__u32 tgid;
	__u32 pad;
	__u64 hash;
};

struct name_val {
	__u64 ino;
	__u32 dev;
	__u32 pad;
};

/* Room for a 16-byte load at any index below PATH_LEN (see name_key()). */
struct scratch {
	char path[PATH_LEN];
	char pad[16];
	char name[NAME_LEN];
	struct lastopen lo;
	/* a run by path being reported: what the program's stat of its last name returned */
	__u64 name_ino;
	__u32 name_major;
	__u32 name_minor;
	__u32 name_id;	/* DIRAHEAD_EVF_NAME_ID | DIRAHEAD_EVF_NAME_FOLLOW, or 0 */
	__u32 pad1;
	struct scan scan;	/* a new scan is built here: too big for the stack */
	struct proc proc;	/* and a new process */
};

/*
 * A thread's run of stats in one directory it did not list (task storage: no hash lookup, and
 * it goes away with the thread).  `parent` names the directory cheaply: the dentry of a dirfd or
 * of the cwd, or the hash of the path before the name; `bloom` holds a bit per name seen, so
 * that a name stat'ed again, or two names in turn, do not count as more.
 */
struct run {
	__u64 parent;
	__u64 bloom;
	__u64 t_first;	/* exit time of the run's first stat */
	__u32 count;	/* distinct names (new bloom bits) in this directory, in a row */
	__u32 done;	/* reported, or refused: nothing more until the directory changes */
	__u64 key_hi;	/* the last name's first 16 bytes (name_key()) */
	__u64 key_lo;
	__u32 sorted;	/* every name so far came after the one before (a sorted list) */
	__u32 pad;
	/* The directory the thread listed last, by dentry and by the hash of the name it opened
	 * it by: its stats are no run without a listing, even where the listing went untracked
	 * (muted, small, a walk's) */
	__u64 listed;
	__u64 listed_name;
	/* a stat of another directory than the run's, since the run's last: the directory, where
	 * the run moves at its second; the last two files stat'ed elsewhere (their paths'
	 * hashes: stat'ed again, they are noise, as /etc/localtime; run_stat) */
	__u64 other;
	__u64 noise[2];
	__u64 first_bit, first_hi, first_lo;	/* the first stat there: its name's bit and key */
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct dirahead_bpf_config);
} cfg SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, DIRAHEAD_CNT_MAX);
	__type(key, __u32);
	__type(value, __u64);
} counters SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, RING_SIZE);
} events SEC(".maps");

/*
 * Processes and scans are plain hash maps, not LRU: an evicted entry would take a live scan with
 * it, and the daemon would never hear its END.  An entry lives from the process's first tracked
 * listing to its exit or exec (both always seen); a full table leaves new listings untracked
 * (DIRAHEAD_CNT_TABLE_FULL).  The loader may resize them (tests fill them).
 */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, 8192);
	__type(key, __u32);
	__type(value, struct proc);
} procs SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, 16384);
	__type(key, struct dirahead_scan_key);
	__type(value, struct scan);
} scans SEC(".maps");

/*
 * Entries of `procs` and `scans` each uid holds (key: the real uid, as the initial user namespace
 * sees it, of the process when its entry was made).  A uid holding its share
 * (cfg->user_procs, cfg->user_scans) gets no new entry (DIRAHEAD_CNT_USER_FULL), so that one
 * user's idle listing processes cannot leave everybody else's untracked.  Looked at only where an
 * entry is made or dropped, never per stat.  A uid's entry goes when it holds nothing; a race
 * with that can lose a count (the share then errs towards tracking: counts are signed).
 */
struct user_share {
	__s32 procs;
	__s32 scans;
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, 8192);
	__type(key, __u32);
	__type(value, struct user_share);
} user_share SEC(".maps");

/* Written by the daemon, keyed by scan_id; entries of scans that ended age out. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 4096);
	__type(key, __u64);
	__type(value, struct dirahead_scan_ctl);
} scan_ctl SEC(".maps");

/* Written by the daemon, keyed by tgid; see struct dirahead_mute. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, struct dirahead_mute);
} mutes SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, struct name_key);
	__type(value, struct name_val);
} names SEC(".maps");

/* Keyed by thread: threads open and list directories side by side. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, struct lastopen);
} lastopen SEC(".maps");

/* Written by the daemon (a walk per process at most); see struct dirahead_walker. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 256);
	__type(key, __u32);
	__type(value, struct dirahead_walker);
} walkers SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct scratch);
} scratch SEC(".maps");

/* When the task's current stat began; written at sys_enter only for processes with state. */
struct stat_start {
	__u64 ts;
	__s32 nr;	/* the syscall it belongs to: a stale entry never times another call */
	__u32 epoch;	/* cfg->timing_epoch: one noted before sys_enter was detached is stale */
};

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct stat_start);
} stat_start SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct run);
} runs SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct dirahead_app_lat);
} app_lat SEC(".maps");

/*
 * Processes with at least one live slot (proc->nlive > 0).  Zero most of the time (scans are
 * rare, forgotten and muted ones do not count): then a stat costs one load, not a hash lookup.
 */
volatile __u64 live_procs;

/* Bumped by user space after every scan_ctl write: a scan looks the map up only when it moved. */
volatile __u64 ctl_gen;

static __always_inline void count(__u32 idx, __u64 n)
{
	__u64 *v = bpf_map_lookup_elem(&counters, &idx);

	if (v)
		*v += n;
}

static __always_inline const struct dirahead_bpf_config *get_config(void)
{
	__u32 zero = 0;

	return bpf_map_lookup_elem(&cfg, &zero);
}

/* Config present, enabled, and the caller is not the daemon itself. */
static __always_inline const struct dirahead_bpf_config *active_config(__u32 tgid)
{
	const struct dirahead_bpf_config *cfg = get_config();

	if (!cfg || !cfg->enabled || tgid == cfg->self_tgid)
		return NULL;
	return cfg;
}

static __always_inline struct scratch *get_scratch(void)
{
	__u32 zero = 0;

	return bpf_map_lookup_elem(&scratch, &zero);
}

static __always_inline __u64 new_scan_id(void)
{
	return ((__u64)bpf_get_smp_processor_id() << 56) |
	       (bpf_ktime_get_ns() & 0x00ffffffffffffffULL);
}

#endif /* DIRAHEAD_DETECTOR_MODEL_H */
