/* SPDX-License-Identifier: LGPL-2.1-or-later OR BSD-2-Clause */
/*
 * The ABI between the BPF detector (bpf/detector.bpf.c) and the daemon: ring-buffer events, the
 * configuration map and the counter indexes.  Included by BPF code (after vmlinux.h) and by user
 * space, so it uses only __u32/__u64-style types and no libc.
 */
#ifndef DIRAHEAD_EVENT_H
#define DIRAHEAD_EVENT_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

#define DIRAHEAD_COMM_LEN 16
#define DIRAHEAD_NAME_LEN 64   /* leading bytes of the last entry name stat'ed (for sorted order) */
#define DIRAHEAD_PATH_LEN 256  /* the process's own name for the directory */
#define DIRAHEAD_EV_GROUPS 32  /* supplementary groups an event carries */

enum dirahead_event_type {
	DIRAHEAD_EV_SCAN = 1,     /* a scan was confirmed: listing + confirm_stats matching stats */
	DIRAHEAD_EV_PROGRESS = 2, /* the application moved on by progress_step stats (rate-limited) */
	DIRAHEAD_EV_END = 3,      /* the application is done with the directory (see end_reason);
				   * scan_id 0: a walker (see `walkers`) exited or exec'ed */
	DIRAHEAD_EV_LISTING = 4,  /* a walker started listing a directory (its first getdents) */
};

enum dirahead_end_reason {
	DIRAHEAD_END_NONE = 0,
	DIRAHEAD_END_EXIT = 1,    /* the process exited */
	DIRAHEAD_END_NEXT = 2,    /* the process started listing another directory and left this one */
	DIRAHEAD_END_EVICTED = 3, /* the state was dropped: too many directories open at once */
	DIRAHEAD_END_EXEC = 4,    /* the process called execve: a new program, the scan is over */
	DIRAHEAD_END_THREAD = 5,  /* the thread that listed it exited; its process lives on */
};

/* How the process names the directory; the daemon tries them in this order and verifies dev+ino. */
enum dirahead_ref {
	DIRAHEAD_REF_FD = 1u << 0,   /* `fd` is an fd of the process on the directory */
	DIRAHEAD_REF_CWD = 1u << 1,  /* the directory is the process's cwd */
	DIRAHEAD_REF_PATH = 1u << 2, /* `path`, relative to the process's cwd unless it starts with '/' */
};

struct dirahead_event {
	__u32 type;        /* enum dirahead_event_type */
	__u32 tgid;        /* process (thread group) */
	__u32 tid;         /* thread that made the call */
	__s32 fd;          /* valid when ref has DIRAHEAD_REF_FD, else -1 */
	__u32 ref;         /* enum dirahead_ref bits */
	__u32 end_reason;  /* enum dirahead_end_reason, for DIRAHEAD_EV_END */
	__u32 dev_major;   /* the directory's device (superblock s_dev split) */
	__u32 dev_minor;
	__u64 ino;         /* the directory's inode number */
	__u64 magic;       /* superblock s_magic, so pseudo filesystems are skipped without opening */
	__u64 dir_size;    /* i_size of the directory inode */
	__u64 listed;      /* bytes of records getdents64 returned so far (not parsed per entry) */
	__u64 stats;       /* stats matched to this directory so far */
	__u64 scan_id;     /* unique per (process, directory) scan; same on every event of a scan */
	__u64 ts_ns;       /* bpf_ktime_get_ns() when the event was made */
	__u32 listing_done;/* getdents has returned 0 (end of directory) at least once */
	__u32 name_len;    /* bytes valid in name */
	/*
	 * The cost model's signals (daemon/diraheadd/policy.c), all cumulative over the scan so the
	 * daemon takes differences between events.  stat_first_ns/stat_last_ns: bpf_ktime_get_ns()
	 * at the exit of the first and of the latest matched stat (the progress rate: stats over
	 * time, no entry hook needed).  lat_sum_ns/lat_count: durations of the matched stats that the
	 * sys_enter program timed (only while it is attached; see DIRAHEAD_APP_LAT_SLOTS).
	 */
	__u64 stat_first_ns;
	__u64 stat_last_ns;
	__u64 lat_sum_ns;
	__u64 lat_count;
	__u64 mnt_id;      /* the mount it was listed through (unique per mount where the kernel
			    * has mnt_id_unique): the cost model's memory is per mount */
	__u64 parent_ino;  /* inode of the directory's parent (its dentry's), 0 if unknown: which
			    * listing a new one is below, for tree-ahead (daemon/diraheadd/walk.c) */
	/*
	 * SCAN, PROGRESS and LISTING: the credentials of the calling thread (kernel ids, as the
	 * initial user namespace sees them), so that the daemon prefetches with the program's own
	 * rights: ids, the first DIRAHEAD_EV_GROUPS supplementary groups (cred_ngroups is how many it
	 * has), effective capabilities (bit 1 << CAP_*) when they are held in the initial user
	 * namespace (0 otherwise: a namespace's capabilities are not root's).
	 */
	__u32 cred_uid, cred_euid, cred_suid, cred_fsuid;
	__u32 cred_gid, cred_egid, cred_sgid, cred_fsgid;
	__u32 cred_ngroups;
	__u32 cred_pad;
	__u64 cred_caps;
	__u64 cgroup_id;   /* its cgroup v2 (for the daemon's limits per cgroup) */
	__u32 cred_groups[DIRAHEAD_EV_GROUPS];
	/*
	 * DIRAHEAD_EV_LISTING only: the time from the walker's O_DIRECTORY open of the directory to
	 * the return of its first getdents (0: no open just before), what the listing cost it.
	 */
	__u64 list_ns;
	char comm[DIRAHEAD_COMM_LEN];
	char name[DIRAHEAD_NAME_LEN];  /* last entry name stat'ed, NUL-terminated (may be truncated) */
	char path[DIRAHEAD_PATH_LEN];  /* valid when ref has DIRAHEAD_REF_PATH, NUL-terminated */
	__u32 flags;       /* DIRAHEAD_EVF_* */
	__u32 fsinfo;      /* SCAN, PROGRESS, END: DIRAHEAD_FSI_*, what the kernel knows of how the
			    * directory's filesystem answers lookups (read when the scan was made) */
	/*
	 * The SCAN of a run by path only (DIRAHEAD_EVF_UNLISTED with dev 0:0), with
	 * DIRAHEAD_EVF_NAME_ID: what the program's own successful stat of `name` in that directory
	 * returned (st_dev as user space sees it, split, and st_ino), so that the daemon can check
	 * that the directory it finds by `path` is the one the program stat'ed in.
	 */
	__u32 name_dev_major;
	__u32 name_dev_minor;
	__u64 name_ino;
};

/*
 * The program never listed the directory: it stat'ed `unlisted_stats` distinct names of it in a
 * row (a file list, a version-control index).  Reported by fd (a dirfd) or cwd, with dev and
 * ino; or, for names stat'ed by path ("dir/name", "/abs/dir/name"), by `path` alone: dev_major,
 * dev_minor, ino, magic, mnt_id, dir_size and parent_ino are then 0 and the daemon finds the
 * directory by resolving the path as the process would.
 */
#define DIRAHEAD_EVF_UNLISTED 1u
/* With UNLISTED: the names of the run came in ascending byte order (a sorted list). */
#define DIRAHEAD_EVF_SORTED 2u
/* name_dev_major, name_dev_minor and name_ino hold what the program's stat of `name` returned. */
#define DIRAHEAD_EVF_NAME_ID 4u
/* ... and that stat followed `name` if it is a symbolic link (stat, not lstat). */
#define DIRAHEAD_EVF_NAME_FOLLOW 8u

/*
 * fsinfo: what per-entry prefetch meets there, from the kernel's own state (FUSE only so far).
 * FUSE: the FUSE connection was read (the bits below are valid).  SERIAL_LOOKUPS: the server did
 * not negotiate FUSE_PARALLEL_DIROPS (sshfs, libfuse < 3.16), so the kernel serializes lookups
 * in one directory: each lookup sent there queues in front of the program's own.  READDIRPLUS:
 * the listing brings the entries' attributes (FUSE_DO_READDIRPLUS): stats after a listing may
 * not wait at all.
 */
#define DIRAHEAD_FSI_FUSE 1u
#define DIRAHEAD_FSI_SERIAL_LOOKUPS 2u
#define DIRAHEAD_FSI_READDIRPLUS 4u

/* Settings the daemon writes into the single-entry array map `cfg`; changeable while attached. */
struct dirahead_bpf_config {
	__u32 enabled;       /* 0: every hook returns at once */
	__u32 self_tgid;     /* the daemon: its syscalls (and its io_uring workers') are ignored */
	__u32 confirm_stats; /* stats of the directory's entries before a scan is confirmed */
	__u32 progress_step; /* default stats between two progress events of one scan */
	__u64 min_dir_size;  /* directories whose i_size is below this are not tracked */
	__u32 flags;         /* DIRAHEAD_CFG_* */
	__u32 timing_epoch;  /* set by the loader, bumped whenever the sys_enter program is detached:
			      * a stat start time noted in an earlier epoch is stale */
	__u32 unlisted_stats;/* distinct names of a directory the process did not list, stat'ed in a
			      * row, before it counts as a scan (DIRAHEAD_EVF_UNLISTED); 0: never */
	__u32 user_share_pct;/* a uid's share of the `procs` and `scans` tables, in percent of their
			      * size; 0: no share (a uid may fill them) */
	__u32 user_procs;    /* set by the loader from user_share_pct and the tables' sizes: entries */
	__u32 user_scans;    /* one uid may hold in `procs` and in `scans` (0: no limit) */
	__u32 pad;
};

/*
 * PROGRESS and END events are queued without waking the reader: each wakeup costs the scanning
 * process a cross-CPU wakeup inside its syscall (measured ~10 us here, nested VM).  The reader
 * must then also consume on a timer (every few ms); SCAN events always wake it.
 */
#define DIRAHEAD_CFG_LAZY_WAKEUP 1u

/* Per-CPU counters in the array map `counters`. */
enum dirahead_counter {
	DIRAHEAD_CNT_LISTINGS = 0,     /* directory listings seen (first getdents of a dir by a process) */
	DIRAHEAD_CNT_SCANS,            /* scans confirmed */
	DIRAHEAD_CNT_STATS_MATCHED,    /* stats matched to a tracked directory */
	DIRAHEAD_CNT_EVENTS,           /* events sent */
	DIRAHEAD_CNT_EVENTS_LOST,      /* events dropped: ring buffer full */
	DIRAHEAD_CNT_TABLE_FULL,       /* listings not tracked: the process or scan table was full */
	DIRAHEAD_CNT_USER_FULL,        /* listings not tracked: their uid held its share of the
					* tables (user_share_pct) */
	DIRAHEAD_CNT_MAX,
};

/*
 * The application's stat latency in tracked directories: the single-entry per-CPU array map
 * `app_lat`, a log2 histogram of the time from sys_enter to sys_exit of every successful stat
 * (stat, lstat, newfstatat, statx) that the detector matched to a directory the process listed.
 * slot[k] counts stats that took more than 2^(k-1) and at most 2^k ns (slot 0: at most 1 ns);
 * the last slot also holds everything longer.  Sum the CPUs' copies to read it.
 */
#define DIRAHEAD_APP_LAT_SLOTS 40
struct dirahead_app_lat {
	__u64 slot[DIRAHEAD_APP_LAT_SLOTS];
	__u64 sum_ns;
};

/*
 * Internal to the detector (bpf/detector.bpf.c and daemon/diraheadd/detector.c), not for the
 * daemon's logic: the key of the per-(process, directory) maps and the per-scan control entry.
 * `dev` is the kernel's internal dev_t (superblock s_dev): major << 20 | minor.
 */
#define DIRAHEAD_KDEV_MINORBITS 20
#define DIRAHEAD_KDEV(major, minor) (((__u32)(major) << DIRAHEAD_KDEV_MINORBITS) | (__u32)(minor))
#define DIRAHEAD_KDEV_MAJOR(dev) ((__u32)(dev) >> DIRAHEAD_KDEV_MINORBITS)
#define DIRAHEAD_KDEV_MINOR(dev) ((__u32)(dev) & ((1u << DIRAHEAD_KDEV_MINORBITS) - 1))

struct dirahead_scan_key {
	__u32 tgid;
	__u32 dev;
	__u64 ino;
};

/*
 * `scan_ctl` (key: the scan's scan_id, so that a control written late, after the scan ended,
 * never applies to a new scan of the same directory) value, written by user space only (a
 * separate map, so user-space writes never race with the BPF side's in-place updates of the scan
 * state).  BPF applies it when `seq` changes; user space bumps the global `ctl_gen` after each
 * write, so that BPF looks the map up only when something changed.
 */
#define DIRAHEAD_CTL_FORGET 1u   /* ignore this scan from now on: no more events */
/*
 * With FORGET: prefetch does not pay here.  BPF drops the scan; user space also writes `mutes`.
 */
#define DIRAHEAD_CTL_MUTE 2u
struct dirahead_scan_ctl {
	__u32 seq;
	__u32 step;
	__u32 flags;
	__u32 pad;
};

/*
 * `mutes` (key: tgid), written by user space: until `until_ns` (bpf_ktime_get_ns(), that is
 * CLOCK_MONOTONIC), no new listing of the process on `dev` is tracked, nor any run of its stats
 * without a listing there; until `paths_until_ns`, none of its runs of stats by path whose
 * stats return `paths_dev` (BPF knows a run by path's filesystem only from what the program's
 * stat returned; 0: on any filesystem).  So the rest of its walk costs what an untracked process
 * costs, and a run by path judged on one filesystem leaves its runs on another alone (Python's
 * imports, judged fast on /, had muted a list-driven run on a slow mount).
 */
struct dirahead_mute {
	__u32 dev;         /* DIRAHEAD_KDEV() */
	__u32 paths_dev;   /* DIRAHEAD_KDEV() of the stats' st_dev, 0: any */
	__u64 until_ns;
	__u64 paths_until_ns;
};

/*
 * `walkers` (hash, key tgid): processes the daemon walks a tree ahead of.  Their listings on
 * `dev` are not tracked as scans (the walk covers them); each new one is reported as a
 * DIRAHEAD_EV_LISTING event instead, at the first getdents, with no confirming stats.  Their
 * exit or exec is reported as DIRAHEAD_EV_END with scan_id 0, and the entry deleted.
 */
struct dirahead_walker {
	__u32 dev;         /* DIRAHEAD_KDEV() of the walked filesystem */
	__u32 pad;
	__u64 last_ino;    /* BPF: the directory last reported (one event per listing) */
	__u64 open_ns;     /* BPF: exit time of the walker's last O_DIRECTORY open */
};

#endif /* DIRAHEAD_EVENT_H */
