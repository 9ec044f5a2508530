// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * dirahead sentinel: tells the daemon that a metadata call blocked, so that the detector's
 * syscall hooks (bpf/detector.bpf.c) are attached only while something is cold (issue 22).
 *
 * Why sched_switch: any program on the syscall tracepoints puts every syscall of the machine on
 * the kernel's tracepoint slow path while it is attached (8-17% of a warm `ls -l` or `find` here,
 * however little the program does), and fentry/fexit and LSM programs are refused here
 * (lockdown).  A task that goes to sleep inside stat/getdents64/an open of a directory waits for
 * the disk, the network, a FUSE server or a lock: a cache miss by definition, on any filesystem,
 * and a warm workload never does.  sched_switch runs only when a CPU changes tasks, and for all
 * but those calls this program returns after a few loads (measured: noise on warm loops).
 *
 * Fast path, in order: preempted or still runnable (not a sleep) -> return; a kernel thread or
 * an io_uring/io-wq worker (no syscall of its own in its registers) -> return; the syscall
 * number from bpf_task_pt_regs(prev) not a metadata call -> return.  Only then map work: the
 * daemon excluded, one LRU hash entry per process that rate-limits its signals to one per
 * `rate_ns` (and one listing per `rate_ns`), and one ring-buffer record with the filesystem the
 * call names where that is cheap (the dirfd's or the cwd's superblock) and how long the process
 * has kept blocking (its spell: one blocked call is not a cold filesystem, calls that go on
 * blocking are).
 *
 * In sched_switch `prev` is still the current task, so its user memory (a path's first byte,
 * openat2's flags) can be read; page faults are off there, so a page not resident reads as an
 * error and the call is taken as it is (filesystem unknown).
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "dirahead_event.h"
#include "dirahead_sentinel.h"
#include "detector_sys.h"
#include "kernel_id.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

#define PF_KTHREAD_	0x00200000	/* include/linux/sched.h: macros are not in BTF */
#define PF_IO_WORKER_	0x00000010
#define TASK_RUNNING_	0
#define ENOSYS_		38

#if defined(__TARGET_ARCH_x86)
/*
 * On entry to a syscall ax is set to -ENOSYS and keeps it until the call returns; a task that
 * sleeps in a page fault has the fault's error code in orig_ax (4 and 6 are common, the numbers
 * of stat and lstat) and the user's ax, so this tells a syscall from a fault.
 */
#define IN_SYSCALL(regs)	((long)(regs)->ax == -ENOSYS_)
#else
#define IN_SYSCALL(regs)	(DA_SYSCALL_NR(regs) >= 0)
#endif

/* Set by the daemon (skeleton .bss) before and while attached. */
__u32 enabled = 1;
__u32 self_tgid;	/* the daemon: its own calls and its io-wq workers' are not signals */
__u64 rate_ns = 200000000ull;	/* one signal per process per this */
__u32 lazy;		/* 1: the daemon is armed and polls; records need not wake it */

struct rate {
	__u64 last_ns;	/* last signal sent for this process (a listing's: last_list_ns) */
	__u64 blocked;	/* blocked metadata calls seen */
	/* listings have their own: where lookups serialize, the daemon arms only for a process
	 * that blocks listing a second directory (arm.h), and a walker's stats would take every
	 * slot (a hundred stats for each getdents64) */
	__u64 last_list_ns;
	/* the directory of its last signalled listing: a listing of another is a walker's
	 * (DIRAHEAD_SENT_F_LISTED_OTHER); kept here, per process, where a flood of other
	 * processes cannot push it out as it could a small table in the daemon */
	__u64 list_ino;
	__u32 list_major, list_minor;
	/* its current spell of blocking: the first and the last blocked call of a run of them
	 * none more than rate_ns after the one before (a cold walk blocks on and on; a warm
	 * program whose few evicted blocks are read again, for a few ms) */
	__u64 spell_ns, last_block_ns;
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, struct rate);
} sentinel_rate SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 64 * 1024);
} sentinel_events SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, DIRAHEAD_SENT_CNT_MAX);
	__type(key, __u32);
	__type(value, __u64);
} sentinel_counters SEC(".maps");

static __always_inline void count(__u32 idx)
{
	__u64 *v = bpf_map_lookup_elem(&sentinel_counters, &idx);

	if (v)
		*v += 1;
}

/* The kind of metadata call `nr` is, or 0. */
static __always_inline __u32 call_kind(struct pt_regs *regs, long nr)
{
	switch (nr) {
	case DA_NR_NEWFSTATAT:
	case DA_NR_STATX:
	case DA_NR_STAT:
	case DA_NR_LSTAT:
		return DIRAHEAD_SENT_STAT;
	case DA_NR_GETDENTS64:
		return DIRAHEAD_SENT_GETDENTS;
	case DA_NR_OPENAT:
		return (PT_REGS_PARM3_SYSCALL(regs) & DA_O_DIRECTORY) ? DIRAHEAD_SENT_OPENDIR : 0;
	case DA_NR_OPENAT2: {
		__u64 flags = 0;	/* struct open_how begins with its flags */

		if (bpf_probe_read_user(&flags, sizeof(flags), (void *)PT_REGS_PARM3_SYSCALL(regs)))
			return 0;
		return (flags & DA_O_DIRECTORY) ? DIRAHEAD_SENT_OPENDIR : 0;
	}
	default:
		return 0;
	}
}

/* The filesystem and directory of a dentry into ev; false if there is none. */
static __always_inline bool dentry_fs(struct dentry *dentry, struct dirahead_sentinel_event *ev)
{
	struct inode *inode = BPF_CORE_READ(dentry, d_inode);
	struct super_block *sb;
	__u64 scratch;
	__u32 dev;

	if (!inode)
		return false;
	sb = BPF_CORE_READ(inode, i_sb);
	dev = BPF_CORE_READ(sb, s_dev);
	ev->dev_major = DIRAHEAD_KDEV_MAJOR(dev);
	ev->dev_minor = DIRAHEAD_KDEV_MINOR(dev);
	ev->magic = BPF_CORE_READ(sb, s_magic);
	ev->ino = BPF_CORE_READ(inode, i_ino);
	ev->fsinfo = fs_info((__u64)dentry, ev->magic, &scratch);
	return true;
}

/*
 * Which filesystem and directory the blocked call is about.  Asleep inside a path walk (a cold
 * lookup: the usual case), the walk's own position says it exactly: the directory it looks the
 * next name up in.  Else (asleep in getattr after the walk, in a listing, in an open) the
 * dirfd's, or the cwd's for a relative name; an absolute name may end on any filesystem:
 * unknown.
 */
static __always_inline void call_fs(struct task_struct *task, struct pt_regs *regs, long nr,
				    __u32 call, struct dirahead_sentinel_event *ev)
{
	const char *upath;
	char c = 0;
	int fd;

	ev->fd = -1;
	if (call == DIRAHEAD_SENT_GETDENTS) {
		fd = (int)PT_REGS_PARM1_SYSCALL(regs);
		upath = NULL;
	} else if (nr == DA_NR_STAT || nr == DA_NR_LSTAT) {
		fd = DA_AT_FDCWD;
		upath = (const char *)PT_REGS_PARM1_SYSCALL(regs);
	} else {
		fd = (int)PT_REGS_PARM1_SYSCALL(regs);
		upath = (const char *)PT_REGS_PARM2_SYSCALL(regs);
	}
	ev->fd = fd;
	struct nameidata *nd = BPF_CORE_READ(task, nameidata);

	if (nd && dentry_fs(BPF_CORE_READ(nd, path.dentry), ev)) {
		ev->fs = DIRAHEAD_SENT_FS_WALK;
		return;
	}
	if (upath && (bpf_probe_read_user(&c, 1, upath) || c == '/'))
		return;	/* unknown, or absolute: the dirfd does not say where it ends */
	if (fd == DA_AT_FDCWD) {
		struct fs_struct *fs = task->fs;

		if (fs && dentry_fs(BPF_CORE_READ(fs, pwd.dentry), ev))
			ev->fs = DIRAHEAD_SENT_FS_CWD;
		return;
	}
	struct file *f = fd_file(task, fd);

	if (f && dentry_fs(BPF_CORE_READ(f, f_path.dentry), ev))
		ev->fs = DIRAHEAD_SENT_FS_FD;
}

/* A signalled listing: another directory than the process's last one?  (A new process's entry
 * is the stack copy already inserted: written back by its key.) */
static __always_inline void note_listing(struct rate *r, __u32 *new_key,
					 struct dirahead_sentinel_event *ev)
{
	if (r->list_ino && (r->list_ino != ev->ino || r->list_major != ev->dev_major ||
			    r->list_minor != ev->dev_minor))
		ev->flags |= DIRAHEAD_SENT_F_LISTED_OTHER;
	r->list_ino = ev->ino;
	r->list_major = ev->dev_major;
	r->list_minor = ev->dev_minor;
	if (new_key)
		bpf_map_update_elem(&sentinel_rate, new_key, r, BPF_ANY);
}

SEC("tp_btf/sched_switch")
int BPF_PROG(dirahead_sentinel, bool preempt, struct task_struct *prev, struct task_struct *next,
	     unsigned int prev_state)
{
	struct dirahead_sentinel_event *ev;
	struct pt_regs *regs;
	struct rate *r, nr_rate = {};
	__u32 call, tgid;
	__u64 now;
	long nr;

	if (preempt || prev_state == TASK_RUNNING_ || !enabled)
		return 0;	/* not a sleep */
	if (prev->flags & (PF_KTHREAD_ | PF_IO_WORKER_))
		return 0;	/* no syscall of its own: its registers say nothing */
	regs = (struct pt_regs *)bpf_task_pt_regs(prev);
	if (!regs || !IN_SYSCALL(regs))
		return 0;
	nr = DA_SYSCALL_NR(regs);
	call = call_kind(regs, nr);
	if (!call)
		return 0;
	tgid = prev->tgid;
	if (tgid == self_tgid || compat_syscall(prev))
		return 0;

	count(DIRAHEAD_SENT_CNT_BLOCKED);
	now = bpf_ktime_get_ns();
	r = bpf_map_lookup_elem(&sentinel_rate, &tgid);
	if (r) {
		__u64 *last = call == DIRAHEAD_SENT_GETDENTS ? &r->last_list_ns : &r->last_ns;
		__sync_fetch_and_add(&r->blocked, 1);
		if (now - r->last_block_ns > rate_ns)
			r->spell_ns = now;	/* a new spell (threads racing here: either is right) */
		r->last_block_ns = now;
		if (now - *last < rate_ns) {
			count(DIRAHEAD_SENT_CNT_RATE_LIMITED);
			return 0;
		}
		*last = now;
	} else {
		if (call == DIRAHEAD_SENT_GETDENTS)
			nr_rate.last_list_ns = now;
		else
			nr_rate.last_ns = now;
		nr_rate.blocked = 1;
		nr_rate.spell_ns = nr_rate.last_block_ns = now;
		bpf_map_update_elem(&sentinel_rate, &tgid, &nr_rate, BPF_ANY);
		r = &nr_rate;
	}

	ev = bpf_ringbuf_reserve(&sentinel_events, sizeof(*ev), 0);
	if (!ev) {
		count(DIRAHEAD_SENT_CNT_LOST);
		return 0;
	}
	__builtin_memset(ev, 0, sizeof(*ev));
	ev->tgid = tgid;
	ev->tid = prev->pid;
	ev->call = call;
	ev->nr = (__s32)nr;
	ev->blocked = r->blocked;
	ev->spell_ns = now - r->spell_ns;
	ev->ts_ns = now;
	__builtin_memcpy(ev->comm, prev->comm, sizeof(ev->comm));
	call_fs(prev, regs, nr, call, ev);
	if (call == DIRAHEAD_SENT_GETDENTS && ev->fs != DIRAHEAD_SENT_FS_UNKNOWN)
		note_listing(r, r == &nr_rate ? &tgid : NULL, ev);
	count(DIRAHEAD_SENT_CNT_SIGNALS);
	/* armed: the daemon polls and only needs to know that calls still block */
	bpf_ringbuf_submit(ev, lazy ? BPF_RB_NO_WAKEUP : 0);
	return 0;
}
