/* SPDX-License-Identifier: LGPL-2.1-or-later OR BSD-2-Clause */
/*
 * The ABI between the sentinel (bpf/sentinel.bpf.c) and the daemon (daemon/diraheadd/sentinel.c):
 * its ring-buffer event, its settings and its counters.  The sentinel tells the daemon that a
 * metadata call blocked, so that the detector's syscall hooks are attached only then (issue 22).
 * Included by BPF code (after vmlinux.h) and by user space.
 */
#ifndef DIRAHEAD_SENTINEL_H
#define DIRAHEAD_SENTINEL_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

/* What kind of call blocked. */
enum dirahead_sentinel_call {
	DIRAHEAD_SENT_STAT = 1,     /* stat, lstat, newfstatat, statx */
	DIRAHEAD_SENT_GETDENTS = 2, /* getdents64 */
	DIRAHEAD_SENT_OPENDIR = 3,  /* openat/openat2 with O_DIRECTORY */
};

/* Where `dev_major`/`dev_minor`/`magic` come from: the filesystem the call names, where cheap. */
enum dirahead_sentinel_fs {
	DIRAHEAD_SENT_FS_UNKNOWN = 0, /* an absolute path, or the fd could not be read */
	DIRAHEAD_SENT_FS_FD = 1,      /* the dirfd (getdents64: the listed fd) */
	DIRAHEAD_SENT_FS_CWD = 2,     /* AT_FDCWD with a relative name: the cwd's */
	DIRAHEAD_SENT_FS_WALK = 3,    /* blocked in a path walk: the directory it is looking a
				       * name up in (task->nameidata), exactly the one scanned */
};

struct dirahead_sentinel_event {
	__u32 tgid;
	__u32 tid;
	__u32 call;        /* enum dirahead_sentinel_call */
	__s32 nr;          /* the syscall number */
	__s32 fd;          /* the dirfd argument (AT_FDCWD is -100) */
	__u32 fs;          /* enum dirahead_sentinel_fs */
	__u32 dev_major;   /* the filesystem (superblock s_dev), when fs != UNKNOWN */
	__u32 dev_minor;
	__u64 magic;       /* superblock s_magic, when fs != UNKNOWN */
	__u64 ino;         /* the directory named (dirfd's or cwd's inode), when fs != UNKNOWN */
	__u64 blocked;     /* blocked metadata calls of this process seen so far (LRU-bounded) */
	__u64 ts_ns;       /* bpf_ktime_get_ns() */
	char comm[16];
	__u32 fsinfo;      /* DIRAHEAD_FSI_* (dirahead_event.h) of that filesystem, when fs != UNKNOWN */
	__u32 flags;       /* DIRAHEAD_SENT_F_* */
	/* how long this process has kept blocking: since the first blocked metadata call of a run
	 * of them none more than the rate limit's interval after the one before (0: this one
	 * began it) */
	__u64 spell_ns;
};

/* A getdents64 of another directory (or filesystem) than the process's last signalled one. */
#define DIRAHEAD_SENT_F_LISTED_OTHER 1u

/* Per-CPU counters in the array map `sentinel_counters`. */
enum dirahead_sentinel_counter {
	DIRAHEAD_SENT_CNT_BLOCKED = 0,  /* metadata calls seen going to sleep (daemon excluded) */
	DIRAHEAD_SENT_CNT_SIGNALS,      /* events sent to the daemon */
	DIRAHEAD_SENT_CNT_RATE_LIMITED, /* blocked calls not signalled: its process signalled lately */
	DIRAHEAD_SENT_CNT_LOST,         /* events dropped: ring buffer full */
	DIRAHEAD_SENT_CNT_MAX,
};

#endif /* DIRAHEAD_SENTINEL_H */
