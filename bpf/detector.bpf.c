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
 * stats for the application stat latency histogram (`app_lat`, see below).  Why tp_btf on the
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
 * Stat latency: sys_enter notes the start time of a stat in task-local storage, only in a process
 * that has state (one `procs` lookup per stat; other syscalls: the switch); sys_exit, for a stat
 * it matched to a tracked directory, adds the duration to a per-CPU log2 histogram.  An attached
 * sys_enter program costs every syscall of every process ~21 ns of wall time (getppid() 123 ->
 * 144 ns; the tracepoint's dispatch more than the program, which runs 28 ns by
 * kernel.bpf_stats_enabled, that accounting included) and a matched stat ~100 ns (entry and
 * exit together), so the daemon attaches it only while scans happen (detector_stat_timing()).
 *
 * How a stat is matched to the directory being listed:
 *   dirfd + "name"          dirfd resolved through task->files to dev/ino (fts: du/find stat via a
 *                           dup of the listing fd; tar and rsync via the listing fd);
 *   AT_FDCWD + "name"       the cwd's dev/ino, cached per process and refreshed on chdir/fchdir
 *                           (`ls -l` in the directory, rsync after chdir);
 *   AT_FDCWD + "p/name", "/abs/p/name"
 *                           hash of "p" (runs of slashes as one, trailing ones dropped) looked up
 *                           in `names`, filled at the first getdents64 from the process's last
 *                           O_DIRECTORY openat of that directory (`ls -l DIR`, Python os.walk +
 *                           os.stat).  Relative names are seeded with the cwd identity, so after a
 *                           chdir they no longer match; all names with a per-process seed.
 * A repeated stat of the same name (tar stats each entry twice) counts once.
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

char LICENSE[] SEC("license") = "Dual BSD/GPL";

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
	__u64 mnt_id;	/* see file_mnt_id() */
	__u64 parent_ino;
	__u64 t_first;	/* exit time of the first and the latest matched stat */
	__u64 t_last;
	__u64 lat_sum;	/* durations of the matched stats sys_enter timed, and how many */
	__u64 lat_n;
	__u64 ctl_gen;	/* ctl_gen when scan_ctl was last looked at */
	__u64 name_ino;	/* a run by path: what the program's stat of `name` returned (SCAN only) */
	__u32 name_major;
	__u32 name_minor;
	__u32 name_id;	/* DIRAHEAD_EVF_NAME_ID | DIRAHEAD_EVF_NAME_FOLLOW, or 0 */
	__u32 pad0;
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

struct dirinfo {
	__u64 ino;
	__u64 size;
	__u64 magic;
	__u64 mnt_id;
	__u64 parent_ino;
	__u32 dev;
	__u32 mode;
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

/*
 * Ring buffer submit flags, for a record reserved and not yet submitted.  SCAN and PROGRESS wake
 * the daemon (it starts a scan, or moves a window the program is about to run out of); END and
 * walker events may wait for its next poll (DIRAHEAD_CFG_LAZY_WAKEUP): a wakeup costs the
 * calling process a cross-CPU wakeup inside its syscall.  The ring's own rule wakes the reader
 * only for a record at the head of an empty ring, so a waking record behind one that waited
 * must force it; and a ring a quarter full wakes it all the same.
 */
static __always_inline __u64 submit_flags(bool may_wait)
{
	const struct dirahead_bpf_config *cfg = get_config();
	__u64 queued;

	if (!cfg || !(cfg->flags & DIRAHEAD_CFG_LAZY_WAKEUP))
		return 0;
	queued = bpf_ringbuf_query(&events, BPF_RB_AVAIL_DATA);
	if (!may_wait)
		return queued > sizeof(struct dirahead_event) + 8 ? BPF_RB_FORCE_WAKEUP : 0;
	return queued > RING_SIZE / 4 ? BPF_RB_FORCE_WAKEUP : BPF_RB_NO_WAKEUP;
}

static __always_inline struct scratch *get_scratch(void)
{
	__u32 zero = 0;

	return bpf_map_lookup_elem(&scratch, &zero);
}

/* An ia32 syscall numbers differently: ignore it rather than misread it. */
static __always_inline bool compat_syscall(struct task_struct *task)
{
#ifdef DA_TS_COMPAT
	if (bpf_core_field_exists(task->thread_info.status))
		return task->thread_info.status & DA_TS_COMPAT;
#endif
	return false;
}

static __always_inline struct file *fd_file(struct task_struct *task, int fd)
{
	struct files_struct *files;
	struct fdtable *fdt;
	struct file **arr;
	struct file *f = NULL;

	if (fd < 0)
		return NULL;
	files = task->files;
	if (!files)
		return NULL;
	fdt = files->fdt;
	if (!fdt || (unsigned int)fd >= fdt->max_fds)
		return NULL;
	arr = fdt->fd;
	if (bpf_probe_read_kernel(&f, sizeof(f), &arr[fd]))
		return NULL;
	return f;
}

static __always_inline bool inode_id(struct inode *inode, __u32 *dev, __u64 *ino)
{
	if (!inode)
		return false;
	*ino = BPF_CORE_READ(inode, i_ino);
	*dev = BPF_CORE_READ(inode, i_sb, s_dev);
	return true;
}

static __always_inline bool fd_id(struct task_struct *task, int fd, __u32 *dev, __u64 *ino)
{
	struct file *f = fd_file(task, fd);

	return f && inode_id(BPF_CORE_READ(f, f_inode), dev, ino);
}

/*
 * The mount the directory was reached through, as an ID that a later mount never gets again
 * (mnt_id_unique, 6.8+; before that the reusable mnt_id): a filesystem unmounted and mounted
 * again (a FUSE client restarted) often gets the same anonymous device number, and must not
 * inherit what the daemon learned about the old one.
 */
static __always_inline __u64 vfsmount_id(struct vfsmount *vm)
{
	struct mount *m = (struct mount *)((char *)vm - bpf_core_field_offset(struct mount, mnt));

	if (bpf_core_field_exists(m->mnt_id_unique))
		return BPF_CORE_READ(m, mnt_id_unique);
	return (__u32)BPF_CORE_READ(m, mnt_id);
}

/* What the detector keeps of a directory, from the mount and dentry it was reached by. */
static __always_inline bool path_dirinfo(struct vfsmount *vm, struct dentry *dentry,
					 struct dirinfo *di)
{
	struct inode *inode = BPF_CORE_READ(dentry, d_inode);
	struct super_block *sb;

	if (!inode)
		return false;
	sb = BPF_CORE_READ(inode, i_sb);
	di->ino = BPF_CORE_READ(inode, i_ino);
	di->mode = BPF_CORE_READ(inode, i_mode);
	di->size = BPF_CORE_READ(inode, i_size);
	di->dev = BPF_CORE_READ(sb, s_dev);
	di->magic = BPF_CORE_READ(sb, s_magic);
	di->mnt_id = vfsmount_id(vm);
	di->parent_ino = BPF_CORE_READ(dentry, d_parent, d_inode, i_ino);
	return true;
}

static __always_inline bool file_dirinfo(struct file *f, struct dirinfo *di)
{
	return path_dirinfo(BPF_CORE_READ(f, f_path.mnt), BPF_CORE_READ(f, f_path.dentry), di);
}

static __always_inline bool pseudo_fs(__u64 magic)
{
	switch (magic) {
	case DA_PROC_SUPER_MAGIC:
	case DA_SYSFS_MAGIC:
	case DA_CGROUP_SUPER_MAGIC:
	case DA_CGROUP2_SUPER_MAGIC:
	case DA_DEVPTS_SUPER_MAGIC:
	case DA_DEBUGFS_MAGIC:
	case DA_TRACEFS_MAGIC:
	case DA_BPF_FS_MAGIC:
	case DA_SECURITYFS_MAGIC:
	case DA_SELINUX_MAGIC:
	case DA_PSTOREFS_MAGIC:
	case DA_CONFIGFS_MAGIC:
	case DA_NSFS_MAGIC:
		return true;
	}
	return false;
}

static __always_inline __u64 mix64(__u64 h)
{
	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdULL;
	h ^= h >> 33;
	h *= 0xc4ceb9fe1a85ec53ULL;
	h ^= h >> 33;
	return h;
}

static __always_inline void read_cwd(struct task_struct *task, struct proc *p)
{
	struct fs_struct *fs = task->fs;
	__u32 dev = 0;
	__u64 ino = 0;

	if (fs)
		inode_id(BPF_CORE_READ(fs, pwd.dentry, d_inode), &dev, &ino);
	p->cwd_dev = dev;
	p->cwd_ino = ino;
	p->rel_seed = mix64(p->seed ^ mix64(((__u64)dev << 32) ^ ino));
}

#define FNV_OFFSET	0xcbf29ce484222325ULL
#define FNV_PRIME	0x100000001b3ULL

/*
 * One pass over a path: FNV-1a of the whole path, of everything before its last run of slashes
 * and of what follows it (the name), normalized the same way (runs of '/' count as one, trailing
 * ones not at all), so "dir/", "dir//x" and "dir/x" agree on "dir".  Indexing only by the loop
 * counter keeps the verifier's work linear in PATH_LEN.
 */
struct path_hash {
	__u64 full;
	__u64 prefix;
	__u64 name;
	int last_slash;	/* index of the last '/', -1 if none */
	int prefix_end;	/* index of the first '/' of the last run of them */
};

struct path_buf {
	char c[PATH_LEN];
};

/*
 * A global (not inlined) function: the verifier checks it once, on its own, instead of once per
 * call site and caller state.
 */
__noinline int hash_path(const struct path_buf *buf, long n, __u64 seed, struct path_hash *ph)
{
	__u64 h = FNV_OFFSET ^ seed, prefix = h, name = FNV_OFFSET;
	int slash = -1, run = -1;
	bool pending = false;

	if (!buf || !ph)
		return 0;
	for (int i = 0; i < PATH_LEN; i++) {
		char c;

		if (i >= n)
			break;
		c = buf->c[i];
		if (c == '/') {
			if (!pending) {
				prefix = h;
				run = i;
			}
			pending = true;
			slash = i;
			continue;
		}
		if (pending) {
			h = (h ^ '/') * FNV_PRIME;
			name = FNV_OFFSET;
			pending = false;
		}
		h = (h ^ (__u8)c) * FNV_PRIME;
		name = (name ^ (__u8)c) * FNV_PRIME;
	}
	ph->full = h;
	ph->prefix = prefix;
	ph->name = name;
	ph->last_slash = slash;
	ph->prefix_end = run;
	return 0;
}

/* Is the kernel's fd still on this directory?  (The process may have closed or reused it.) */
static __always_inline bool fd_still_on(struct task_struct *task, int fd,
					const struct dirahead_scan_key *key)
{
	__u32 dev;
	__u64 ino;

	return fd >= 0 && fd_id(task, fd, &dev, &ino) && dev == key->dev && ino == key->ino;
}

/* The calling thread's credentials and cgroup into the event (not on the hot path: events
 * only). */
static __always_inline void fill_cred(struct dirahead_event *e)
{
	struct task_struct *task = bpf_get_current_task_btf();
	const struct cred *c = BPF_CORE_READ(task, cred);
	struct group_info *gi;
	__u32 n;

	if (!c)
		return;
	e->cred_uid = BPF_CORE_READ(c, uid.val);
	e->cred_euid = BPF_CORE_READ(c, euid.val);
	e->cred_suid = BPF_CORE_READ(c, suid.val);
	e->cred_fsuid = BPF_CORE_READ(c, fsuid.val);
	e->cred_gid = BPF_CORE_READ(c, gid.val);
	e->cred_egid = BPF_CORE_READ(c, egid.val);
	e->cred_sgid = BPF_CORE_READ(c, sgid.val);
	e->cred_fsgid = BPF_CORE_READ(c, fsgid.val);
	e->cgroup_id = bpf_get_current_cgroup_id();
	/* Capabilities count only where they are root's: held in the initial user namespace
	 * (level 0).  Any user has a full set in a namespace of its own (unshare -Ur, a rootless
	 * container), valid only over what that namespace maps; the daemon's would be real.
	 * kernel_cap_t: one u64 (6.3+) or two u32, the same 8 bytes either way. */
	if (BPF_CORE_READ(c, user_ns, level) == 0)
		bpf_probe_read_kernel(&e->cred_caps, sizeof(e->cred_caps), &c->cap_effective);
	else
		e->cred_caps = 0;
	gi = BPF_CORE_READ(c, group_info);
	if (!gi)
		return;
	e->cred_ngroups = BPF_CORE_READ(gi, ngroups);
	n = e->cred_ngroups;
	if (n > DIRAHEAD_EV_GROUPS)
		n = DIRAHEAD_EV_GROUPS;
	if (n)
		bpf_probe_read_kernel(e->cred_groups, (n & (2 * DIRAHEAD_EV_GROUPS - 1)) * sizeof(__u32),
				      &gi->gid[0]);
}

static __always_inline void emit(__u32 type, __u32 reason, const struct dirahead_scan_key *key,
				 const struct scan *sc, const struct proc *p,
				 struct task_struct *task)
{
	struct dirahead_event *e;
	__u32 ref = 0;

	e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
	if (!e) {
		count(DIRAHEAD_CNT_EVENTS_LOST, 1);
		return;
	}
	e->type = type;
	e->tgid = key->tgid;
	e->tid = (__u32)bpf_get_current_pid_tgid();
	e->fd = -1;
	if (type != DIRAHEAD_EV_END && task && fd_still_on(task, sc->fd, key)) {
		e->fd = sc->fd;
		ref |= DIRAHEAD_REF_FD;
	}
	if (p && p->cwd_dev == key->dev && p->cwd_ino == key->ino)
		ref |= DIRAHEAD_REF_CWD;
	if ((sc->flags & SCAN_HAS_PATH) &&
	    ((sc->flags & SCAN_ABS_PATH) || (p && p->rel_seed == sc->rel_seed))) {
		ref |= DIRAHEAD_REF_PATH;
		__builtin_memcpy(e->path, sc->path, PATH_LEN);
	} else {
		e->path[0] = 0;
	}
	e->ref = ref;
	e->end_reason = reason;
	e->dev_major = DIRAHEAD_KDEV_MAJOR(key->dev);
	e->dev_minor = DIRAHEAD_KDEV_MINOR(key->dev);
	e->ino = key->ino;
	e->magic = sc->magic;
	e->dir_size = sc->dir_size;
	e->listed = sc->listed;
	e->stats = sc->stats;
	e->scan_id = sc->scan_id;
	e->ts_ns = bpf_ktime_get_ns();
	e->listing_done = !!(sc->flags & SCAN_DONE);
	e->name_len = sc->name_len;
	e->mnt_id = sc->mnt_id;
	e->parent_ino = sc->parent_ino;
	e->stat_first_ns = sc->t_first;
	e->stat_last_ns = sc->t_last;
	e->lat_sum_ns = sc->lat_sum;
	e->lat_count = sc->lat_n;
	__builtin_memcpy(e->name, sc->name, NAME_LEN);
	e->name[NAME_LEN - 1] = 0;
	e->path[PATH_LEN - 1] = 0;
	e->flags = ((sc->flags & SCAN_UNLISTED) ? DIRAHEAD_EVF_UNLISTED : 0) |
		   ((sc->flags & SCAN_SORTED) ? DIRAHEAD_EVF_SORTED : 0);
	e->pad = 0;
	/* only the SCAN's `name` is the one the stat was read for (later stats replace it) */
	if (type == DIRAHEAD_EV_SCAN && sc->name_id) {
		e->flags |= sc->name_id;
		e->name_dev_major = sc->name_major;
		e->name_dev_minor = sc->name_minor;
		e->name_ino = sc->name_ino;
	} else {
		e->name_dev_major = e->name_dev_minor = 0;
		e->name_ino = 0;
	}
	/* (the ring buffer's memory is not zeroed) */
	__builtin_memset(&e->cred_uid, 0, offsetof(struct dirahead_event, comm) -
					  offsetof(struct dirahead_event, cred_uid));
	if (type != DIRAHEAD_EV_END)
		fill_cred(e);
	bpf_get_current_comm(e->comm, sizeof(e->comm));
	bpf_ringbuf_submit(e, submit_flags(type == DIRAHEAD_EV_END));
	count(DIRAHEAD_CNT_EVENTS, 1);
}


static const struct user_share no_share = {};

/* An entry of *uid's leaves `procs` (scan false) or `scans` (true).  uid points into a map value:
 * inlined where scans end, whose call chain has no stack to spare. */
static __always_inline void share_give(const __u32 *uid, bool scan)
{
	struct user_share *u = bpf_map_lookup_elem(&user_share, uid);

	if (!u)
		return;
	__sync_fetch_and_add(scan ? &u->scans : &u->procs, -1);
	if (u->procs <= 0 && u->scans <= 0)
		bpf_map_delete_elem(&user_share, uid);
}

/*
 * An entry more for uid in `procs` (scan 0) or `scans` (1), if its share has room: 1, else 0.
 * A call of its own (not inlined): the callers' frames, on the deepest call chain, must not grow.
 */
static __noinline int share_take(__u32 uid, int scan)
{
	const struct dirahead_bpf_config *cfg = get_config();
	struct user_share *u = bpf_map_lookup_elem(&user_share, &uid);
	__u32 limit = cfg ? (scan ? cfg->user_scans : cfg->user_procs) : 0;
	__s32 *n;

	if (!u) {
		bpf_map_update_elem(&user_share, &uid, &no_share, BPF_NOEXIST);
		u = bpf_map_lookup_elem(&user_share, &uid);
		if (!u) {	/* more uids hold entries than the map has room for */
			count(DIRAHEAD_CNT_USER_FULL, 1);
			return 0;
		}
	}
	n = scan ? &u->scans : &u->procs;
	if (limit && *n >= (__s32)limit) {
		count(DIRAHEAD_CNT_USER_FULL, 1);
		return 0;
	}
	__sync_fetch_and_add(n, 1);
	return 1;
}

/* share_take() undone: the entry could not be made after all. */
static __noinline int share_untake(__u32 uid, int scan)
{
	share_give(&uid, scan);
	return 0;
}

/* A slot stops counting as live (its scan is forgotten or gone). */
static __always_inline void slot_unlive(struct proc *p, struct active_slot *a)
{
	if (a->flags & SLOT_LIVE) {
		if (a->flags & SLOT_PATH)
			p->npath--;
		if (p->nlive && !--p->nlive)
			__sync_fetch_and_add(&live_procs, -1);
	}
	a->flags &= ~(SLOT_LIVE | SLOT_PATH);
}

/*
 * Drop one scan of a process; an END goes out only if the daemon heard of it and still cares.
 * Global, like the other loop-heavy helpers below: verified once, not per call site.
 */
__noinline int end_scan(struct proc *p, __u32 tgid, int slot, __u32 reason)
{
	struct dirahead_scan_key key = {};
	struct dirahead_scan_ctl *ctl;
	struct active_slot *a;
	struct scan *sc;

	if (!p || slot < 0 || slot >= MAX_ACTIVE)
		return 0;
	a = &p->active[slot];
	if (!a->seq)
		return 0;
	key.tgid = tgid;
	key.dev = a->dev;
	key.ino = a->ino;
	slot_unlive(p, a);
	a->seq = 0;
	sc = bpf_map_lookup_elem(&scans, &key);
	if (!sc)
		return 0;
	if ((sc->flags & (SCAN_CONFIRMED | SCAN_FORGOTTEN)) == SCAN_CONFIRMED) {
		ctl = bpf_map_lookup_elem(&scan_ctl, &sc->scan_id);
		if (!ctl || !(ctl->flags & DIRAHEAD_CTL_FORGET))
			emit(DIRAHEAD_EV_END, reason, &key, sc, p, NULL);
	}
	if (sc->flags & SCAN_CONFIRMED)
		bpf_map_delete_elem(&scan_ctl, &sc->scan_id);
	if (bpf_map_delete_elem(&scans, &key) == 0)
		share_give(&p->uid, true);
	return 0;
}

static __always_inline void end_all(__u32 tgid, __u32 reason)
{
	struct proc *p = bpf_map_lookup_elem(&procs, &tgid);

	/* One lookup for the many processes that never listed anything. */
	if (!p)
		return;
	for (int i = 0; i < MAX_ACTIVE; i++)
		end_scan(p, tgid, i, reason);
	/* before the delete: a freed entry may be reused at once */
	share_give(&p->uid, false);
	bpf_map_delete_elem(&procs, &tgid);
}

/* A thread of a process that lives on exited: the scans it listed are over. */
__noinline int end_thread(struct proc *p, __u32 tgid, __u32 tid)
{
	if (!p)
		return 0;
	for (int i = 0; i < MAX_ACTIVE; i++)
		if (p->active[i].seq && p->active[i].tid == tid)
			end_scan(p, tgid, i, DIRAHEAD_END_THREAD);
	return 0;
}

/* Bit i set: the process's scan in slot i is on a parent (up to MAX_DEPTH levels) of `dentry`. */
__noinline __u32 enclosing_slots(const struct proc *p, __u32 dev, __u64 dentry)
{
	struct dentry *d = (struct dentry *)dentry, *parent;
	__u32 keep = 0;

	if (!p)
		return 0;
	for (int depth = 0; depth < MAX_DEPTH; depth++) {
		__u64 ino;

		parent = BPF_CORE_READ(d, d_parent);
		if (!parent || parent == d)
			break;
		d = parent;
		ino = BPF_CORE_READ(d, d_inode, i_ino);
		for (int i = 0; i < MAX_ACTIVE; i++)
			if (p->active[i].seq && p->active[i].dev == dev && p->active[i].ino == ino)
				keep |= 1u << i;
	}
	return keep;
}

/*
 * A free slot for a new scan of thread `tid`, ending what must go: with `ending` set, the
 * thread's scans whose bit in `keep` is clear (it moved on to another directory; `kind` says
 * which of its slots that concerns: SLOT_UNLISTED for a new run without a listing, 0 for all);
 * if none is free then, its own oldest, else the process's oldest (MAX_ACTIVE enclosing
 * directories: the outermost goes).  Returns the slot index.  Global: verified once.
 */
__noinline int take_slot(struct proc *p, __u32 tgid, __u32 tid, __u32 keep, __u32 kind)
{
	__u32 oldest_seq = 0xffffffff, own_seq = 0xffffffff;
	int free_slot = -1, oldest = 0, own = -1;

	if (!p)
		return -1;
	for (int i = 0; i < MAX_ACTIVE; i++) {
		struct active_slot *a = &p->active[i];

		if (a->seq && a->tid == tid && !(keep & (1u << i)) && (a->flags & kind) == kind)
			end_scan(p, tgid, i, DIRAHEAD_END_NEXT);
		if (!a->seq) {
			if (free_slot < 0)
				free_slot = i;
			continue;
		}
		if (a->seq < oldest_seq) {
			oldest_seq = a->seq;
			oldest = i;
		}
		if (a->tid == tid && a->seq < own_seq) {
			own_seq = a->seq;
			own = i;
		}
	}
	if (free_slot < 0) {
		free_slot = own >= 0 ? own : oldest;
		end_scan(p, tgid, free_slot, DIRAHEAD_END_EVICTED);
	}
	return free_slot;
}

static __always_inline void fill_slot(struct proc *p, int i, __u32 tid, __u32 dev, __u64 ino,
				      __u32 flags)
{
	struct active_slot *a;

	if (i < 0 || i >= MAX_ACTIVE)
		return;
	a = &p->active[i];
	p->seq++;
	if (!p->seq)
		p->seq = 1;
	a->seq = p->seq;
	a->tid = tid;
	a->dev = dev;
	a->ino = ino;
	a->flags = flags | SLOT_LIVE;
	if (flags & SLOT_PATH)
		p->npath++;
	if (!p->nlive++)
		__sync_fetch_and_add(&live_procs, 1);
}

/* The process's state, created at its first tracked listing; NULL if the table is full or its
 * uid holds its share. */
static __always_inline struct proc *get_proc(__u32 tgid, struct task_struct *task,
					     struct scratch *s)
{
	struct proc *p = bpf_map_lookup_elem(&procs, &tgid);

	if (p)
		return p;
	__builtin_memset(&s->proc, 0, sizeof(s->proc));
	s->proc.seed = ((__u64)bpf_get_prandom_u32() << 32) | bpf_get_prandom_u32();
	s->proc.uid = (__u32)bpf_get_current_uid_gid();
	if (!share_take(s->proc.uid, 0))
		return NULL;
	if (bpf_map_update_elem(&procs, &tgid, &s->proc, BPF_NOEXIST)) {
		share_untake(s->proc.uid, 0);
		/* full, or another thread of the process made it meanwhile */
		p = bpf_map_lookup_elem(&procs, &tgid);
		if (!p)
			count(DIRAHEAD_CNT_TABLE_FULL, 1);
		return p;
	}
	p = bpf_map_lookup_elem(&procs, &tgid);
	if (!p)
		return NULL;
	read_cwd(task, p);
	return p;
}

/* The daemon muted this process on `dev` (0: its runs by path) and the mute holds. */
static __always_inline bool muted(__u32 tgid, __u32 dev)
{
	struct dirahead_mute *m = bpf_map_lookup_elem(&mutes, &tgid);

	if (!m)
		return false;
	return bpf_ktime_get_ns() < (dev ? (m->dev == dev ? m->until_ns : 0) : m->paths_until_ns);
}

/* A walk covers this process's directories on `dev` (any filesystem for dev 0). */
static __always_inline bool walked(__u32 tgid, __u32 dev)
{
	struct dirahead_walker *w = bpf_map_lookup_elem(&walkers, &tgid);

	return w && (w->dev == dev || dev == 0);
}

/*
 * The thread's last O_DIRECTORY open was of this directory: take the path it used and make it
 * findable by name.  By dev+ino, not fd: opendir(fd) and fts list through a dup.
 */
static __always_inline bool adopt_name(struct scan *sc, const struct proc *p, __u32 tgid,
				       __u32 tid, const struct dirinfo *di)
{
	struct lastopen *lo = bpf_map_lookup_elem(&lastopen, &tid);
	struct name_key nk = { .tgid = tgid };
	struct name_val nv = { .ino = di->ino, .dev = di->dev };
	struct path_hash ph;
	__u32 n;
	bool abs;

	if (!lo || lo->dev != di->dev || lo->ino != di->ino)
		return false;
	n = lo->len;
	if (n == 0 || n >= PATH_LEN)
		return false;
	abs = lo->path[0] == '/';
	__builtin_memcpy(sc->path, lo->path, PATH_LEN);
	sc->path_len = n;
	sc->flags |= SCAN_HAS_PATH | (abs ? SCAN_ABS_PATH : 0);
	sc->rel_seed = p->rel_seed;
	hash_path((const struct path_buf *)lo->path, n, abs ? p->seed : p->rel_seed, &ph);
	nk.hash = ph.full;
	bpf_map_update_elem(&names, &nk, &nv, BPF_ANY);
	bpf_map_delete_elem(&lastopen, &tid);
	return true;
}

static __always_inline __u64 new_scan_id(void)
{
	return ((__u64)bpf_get_smp_processor_id() << 56) |
	       (bpf_ktime_get_ns() & 0x00ffffffffffffffULL);
}
/* A listing that began this long after the walker's last O_DIRECTORY open is not that open's. */
#define WALKER_OPEN_FRESH_NS	(100ULL * 1000000ULL)

/*
 * A process the daemon walks ahead of: report each new directory it lists on the walked
 * filesystem once, and track nothing (the walk covers it); with it, how long the listing took
 * from the directory's open to its first getdents (what a listing costs when nothing is cached:
 * the first call reads, and nothing of the program's own work between calls is in it), so the
 * daemon sees what listings cost the program with and without the walk ahead.  true: handled.
 * One hash lookup per getdents call for every process, walkers are rare: the map is empty most
 * of the time.
 */
static __always_inline bool walker_listing(__u32 tgid, int fd, const struct dirinfo *di, long ret)
{
	struct dirahead_walker *w = bpf_map_lookup_elem(&walkers, &tgid);
	struct dirahead_event *e;
	__u64 now;

	if (!w || w->dev != di->dev)
		return false;
	if (w->last_ino == di->ino || ret == 0)
		return true;	/* the same listing (one more getdents, or its end) */
	now = bpf_ktime_get_ns();
	w->last_ino = di->ino;
	e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
	if (!e) {
		count(DIRAHEAD_CNT_EVENTS_LOST, 1);
		return true;
	}
	__builtin_memset(e, 0, sizeof(*e));
	e->type = DIRAHEAD_EV_LISTING;
	e->tgid = tgid;
	e->tid = (__u32)bpf_get_current_pid_tgid();
	e->fd = fd;
	e->ref = DIRAHEAD_REF_FD;
	e->dev_major = DIRAHEAD_KDEV_MAJOR(di->dev);
	e->dev_minor = DIRAHEAD_KDEV_MINOR(di->dev);
	e->ino = di->ino;
	e->parent_ino = di->parent_ino;
	e->magic = di->magic;
	e->dir_size = di->size;
	e->mnt_id = di->mnt_id;
	if (w->open_ns && now - w->open_ns < WALKER_OPEN_FRESH_NS)
		e->list_ns = now - w->open_ns;
	fill_cred(e);
	e->ts_ns = now;
	bpf_get_current_comm(e->comm, sizeof(e->comm));
	bpf_ringbuf_submit(e, submit_flags(true));
	count(DIRAHEAD_CNT_EVENTS, 1);
	return true;
}


/* A walker exited or exec'ed: its walk is over (DIRAHEAD_EV_END, scan_id 0). */
static __always_inline void walker_end(__u32 tgid, __u32 reason)
{
	struct dirahead_walker *w = bpf_map_lookup_elem(&walkers, &tgid);
	struct dirahead_event *e;

	if (!w)
		return;
	bpf_map_delete_elem(&walkers, &tgid);
	e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
	if (!e) {
		count(DIRAHEAD_CNT_EVENTS_LOST, 1);
		return;
	}
	__builtin_memset(e, 0, sizeof(*e));
	e->type = DIRAHEAD_EV_END;
	e->end_reason = reason;
	e->tgid = tgid;
	e->fd = -1;
	e->ts_ns = bpf_ktime_get_ns();
	bpf_ringbuf_submit(e, submit_flags(true));
	count(DIRAHEAD_CNT_EVENTS, 1);
}

/* Tells the forms of a run's `parent` apart (dentries are aligned: their low bits are free). */
#define RUN_FD		1ULL
#define RUN_CWD		2ULL
#define RUN_SEED_REL	0x52554e52454cULL
#define RUN_SEED_ABS	0x52554e414253ULL

/* The thread lists this directory: remember it (struct run), by the name it opened it by too. */
static __always_inline void run_listed(struct task_struct *task, __u32 tid,
				       struct dentry *dentry, const struct dirinfo *di)
{
	struct run *r = bpf_task_storage_get(&runs, task, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
	struct lastopen *lo;
	struct path_hash ph;

	if (!r || r->listed == (__u64)dentry)
		return;
	r->listed = (__u64)dentry;
	r->listed_name = 0;
	lo = bpf_map_lookup_elem(&lastopen, &tid);
	if (!lo || lo->dev != di->dev || lo->ino != di->ino || lo->len == 0 || lo->len >= PATH_LEN)
		return;
	hash_path((const struct path_buf *)lo->path, lo->len,
		  lo->path[0] == '/' ? RUN_SEED_ABS : RUN_SEED_REL, &ph);
	r->listed_name = ph.full & ~3ULL;
}

/* The thread has slots (a parent walk for enclosing ones is needed only then). */
static __always_inline bool thread_slots(const struct proc *p, __u32 tid)
{
	bool any = false;

	for (int i = 0; i < MAX_ACTIVE; i++)
		any |= p->active[i].seq && p->active[i].tid == tid;
	return any;
}

static __always_inline int on_getdents(struct pt_regs *regs, long ret)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	__u32 tgid = pid_tgid >> 32, tid = (__u32)pid_tgid;
	const struct dirahead_bpf_config *cfg;
	struct dirahead_scan_key key = {};
	struct task_struct *task;
	struct dirinfo di = {};
	struct dentry *dentry;
	struct scan *sc;
	struct proc *p;
	struct file *f;
	int fd;

	if (ret < 0)
		return 0;
	cfg = active_config(tgid);
	if (!cfg)
		return 0;
	task = bpf_get_current_task_btf();
	if (compat_syscall(task))
		return 0;
	fd = (int)PT_REGS_PARM1_SYSCALL(regs);
	f = fd_file(task, fd);
	if (!f || !file_dirinfo(f, &di))
		return 0;
	if ((di.mode & DA_S_IFMT) != DA_S_IFDIR || pseudo_fs(di.magic))
		return 0;
	if (cfg->unlisted_stats)
		run_listed(task, tid, BPF_CORE_READ(f, f_path.dentry), &di);
	if (walker_listing(tgid, fd, &di, ret))
		return 0;
	if (di.size < cfg->min_dir_size)
		return 0;
	key.tgid = tgid;
	key.dev = di.dev;
	key.ino = di.ino;
	sc = bpf_map_lookup_elem(&scans, &key);
	if (!sc) {
		struct scratch *s;
		int slot;

		if (ret == 0)
			return 0;	/* an empty directory: nothing will be stat'ed */
		/* The daemon found prefetch does not pay for this process here: stay out of its way. */
		if (muted(tgid, di.dev))
			return 0;
		/* A scan value is too big for the stack: build it in the per-CPU scratch. */
		s = get_scratch();
		if (!s)
			return 0;
		p = get_proc(tgid, task, s);
		if (!p)
			return 0;
		sc = &s->scan;
		__builtin_memset(sc, 0, sizeof(*sc));
		sc->scan_id = new_scan_id();
		sc->dir_size = di.size;
		sc->magic = di.magic;
		sc->mnt_id = di.mnt_id;
		sc->parent_ino = di.parent_ino;
		sc->fd = -1;
		sc->ctl_gen = ctl_gen;
		adopt_name(sc, p, tgid, tid, &di);
		if (!share_take(p->uid, 1))
			return 0;
		if (bpf_map_update_elem(&scans, &key, sc, BPF_NOEXIST)) {
			share_untake(p->uid, 1);
			count(DIRAHEAD_CNT_TABLE_FULL, 1);
			return 0;
		}
		/* This thread lists another directory: its scans that do not enclose it are over. */
		dentry = BPF_CORE_READ(f, f_path.dentry);
		slot = take_slot(p, tgid, tid, thread_slots(p, tid) ?
				 enclosing_slots(p, di.dev, (__u64)dentry) : 0, 0);
		fill_slot(p, slot, tid, di.dev, di.ino, sc->flags & SCAN_HAS_PATH ? SLOT_PATH : 0);
		sc = bpf_map_lookup_elem(&scans, &key);
		if (!sc)
			return 0;
		count(DIRAHEAD_CNT_LISTINGS, 1);
	}
	sc->fd = fd;
	if (ret == 0)
		sc->flags |= SCAN_DONE;
	else
		sc->listed += ret; /* bytes: counting records would cost a loop per entry, unread */
	return 0;
}

static __always_inline int on_open(struct pt_regs *regs, long ret, long nr)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	__u32 tgid = pid_tgid >> 32, tid = (__u32)pid_tgid;
	const char *upath = (const char *)PT_REGS_PARM2_SYSCALL(regs);
	int dfd = (int)PT_REGS_PARM1_SYSCALL(regs);
	struct dirahead_walker *w;
	struct task_struct *task;
	struct lastopen *lo;
	struct scratch *s;
	__u64 flags;
	long n;

	if (ret < 0)
		return 0;
	if (nr == DA_NR_OPENAT2) {
		/* struct open_how starts with the u64 flags */
		if (bpf_probe_read_user(&flags, sizeof(flags), (void *)PT_REGS_PARM3_SYSCALL(regs)))
			return 0;
	} else {
		flags = PT_REGS_PARM3_SYSCALL(regs);
	}
	/* opendir() always passes O_DIRECTORY; an O_PATH fd cannot be listed. */
	if (!(flags & DA_O_DIRECTORY) || (flags & DA_O_PATH))
		return 0;
	if (!active_config(tgid))
		return 0;
	/* a walker's listing is timed from its open (a FUSE or network OPENDIR can be slow) */
	w = bpf_map_lookup_elem(&walkers, &tgid);
	if (w)
		w->open_ns = bpf_ktime_get_ns();
	task = bpf_get_current_task_btf();
	if (compat_syscall(task))
		return 0;
	s = get_scratch();
	if (!s)
		return 0;
	lo = &s->lo;
	n = bpf_probe_read_user_str(lo->path, PATH_LEN, upath);
	if (n <= 1 || n >= PATH_LEN)	/* empty, or too long to be a usable name */
		return 0;
	/* Only names that resolve from the cwd (or the root) can be matched to later stats. */
	if (dfd != DA_AT_FDCWD && lo->path[0] != '/')
		return 0;
	if (!fd_id(task, (int)ret, &lo->dev, &lo->ino))
		return 0;
	lo->fd = (int)ret;
	lo->len = n - 1;
	bpf_map_update_elem(&lastopen, &tid, lo, BPF_ANY);
	return 0;
}

static __always_inline int on_chdir(long ret)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;
	struct proc *p;

	if (ret != 0)
		return 0;
	p = bpf_map_lookup_elem(&procs, &tgid);
	if (!p)
		return 0;
	read_cwd(bpf_get_current_task_btf(), p);
	return 0;
}

static __always_inline bool same_name(const char *a, const char *b)
{
	const __u64 *x = (const __u64 *)a, *y = (const __u64 *)b;
	__u64 diff = 0;

	for (int i = 0; i < NAME_LEN / 8; i++)
		diff |= x[i] ^ y[i];
	return diff == 0;
}

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

/* The live slot on this directory, or -1. */
static __always_inline int live_slot(const struct proc *p, __u32 dev, __u64 ino)
{
	for (int i = 0; i < MAX_ACTIVE; i++)
		if ((p->active[i].flags & SLOT_LIVE) && p->active[i].dev == dev &&
		    p->active[i].ino == ino)
			return i;
	return -1;
}

/*
 * The daemon forgot the scan (DIRAHEAD_CTL_FORGET): it stops counting as live, so the process's
 * stats return after one lookup.  A muted one goes altogether (`mutes` keeps new listings there
 * untracked); a forgotten one stays as a tombstone, or a listing going on would start it again.
 */
static __always_inline void forget_scan(struct proc *p, const struct dirahead_scan_key *key,
					struct scan *sc, __u32 flags)
{
	int i = live_slot(p, key->dev, key->ino);

	sc->flags |= SCAN_FORGOTTEN;
	if (i < 0)
		return;
	if (flags & DIRAHEAD_CTL_MUTE)
		end_scan(p, key->tgid, i, DIRAHEAD_END_NONE);	/* sc is gone after this */
	else
		slot_unlive(p, &p->active[i & (MAX_ACTIVE - 1)]);
}

/* A stat of one of the entries of the directory `key` succeeded; s->name holds its name. */
static __always_inline void scan_stat(struct dirahead_scan_key *key, struct scan *sc,
				      struct proc *p, struct scratch *s, long n, int dfd,
				      const struct dirahead_bpf_config *cfg,
				      struct task_struct *task, __u64 lat)
{
	struct dirahead_scan_ctl *ctl = NULL;
	__u32 confirm;
	__u64 now, gen;

	if (sc->flags & SCAN_FORGOTTEN)
		return;
	gen = ctl_gen;
	if ((sc->flags & SCAN_CONFIRMED) && sc->ctl_gen != gen) {
		ctl = bpf_map_lookup_elem(&scan_ctl, &sc->scan_id);
		if (ctl && (ctl->flags & DIRAHEAD_CTL_FORGET)) {
			forget_scan(p, key, sc, ctl->flags);
			return;
		}
		if (!ctl)
			sc->ctl_gen = gen;	/* nothing for this scan */
	}
	/* Same name as last time (tar stats every entry twice): one entry, one count. */
	if (same_name(s->name, sc->name))
		return;
	__builtin_memcpy(sc->name, s->name, NAME_LEN);
	sc->name_len = n;
	sc->stats++;
	now = bpf_ktime_get_ns();
	if (!sc->t_first)
		sc->t_first = now;
	sc->t_last = now;
	if (lat) {
		sc->lat_sum += lat;
		sc->lat_n++;
	}
	if (dfd != DA_AT_FDCWD)
		sc->fd = dfd;
	count(DIRAHEAD_CNT_STATS_MATCHED, 1);

	if (!(sc->flags & SCAN_CONFIRMED)) {
		confirm = cfg->confirm_stats ? cfg->confirm_stats : DEFAULT_CONFIRM;
		if (sc->stats < confirm)
			return;
		sc->flags |= SCAN_CONFIRMED;
		sc->step = cfg->progress_step;
		sc->next_progress = sc->stats + sc->step;
		count(DIRAHEAD_CNT_SCANS, 1);
		emit(DIRAHEAD_EV_SCAN, DIRAHEAD_END_NONE, key, sc, p, task);
		return;
	}
	if (ctl) {
		sc->ctl_gen = gen;
		if (ctl->seq != sc->ctl_seq) {
			/* The daemon changed this scan's step: count from now. */
			sc->ctl_seq = ctl->seq;
			sc->step = ctl->step;
			sc->next_progress = sc->stats + sc->step;
		}
	}
	if (sc->step && sc->stats >= sc->next_progress) {
		sc->next_progress = sc->stats + sc->step;
		emit(DIRAHEAD_EV_PROGRESS, DIRAHEAD_END_NONE, key, sc, p, task);
	}
}

/* s->name = the name at s->path[off], NUL-padded (same_name compares whole words); its length. */
static __always_inline long take_name(struct scratch *s, int off)
{
	long n;

	__builtin_memset(s->name, 0, NAME_LEN);
	n = bpf_probe_read_kernel_str(s->name, NAME_LEN, &s->path[off & (PATH_LEN - 1)]);
	return n > 0 ? n - 1 : 0;
}

/* Ignore a name that is no entry: "" (AT_EMPTY_PATH: an fstat), ".", "..", "dir/". */
static __always_inline bool not_an_entry(const struct scratch *s, long n,
					 const struct path_hash *ph)
{
	int b = ph->last_slash + 1;

	if (n <= 0 || ph->last_slash == n - 1)
		return true;
	if (b < 0 || b >= PATH_LEN - 2)
		return false;
	return s->path[b] == '.' &&
	       (b + 1 == n || (s->path[b + 1] == '.' && b + 2 == n));
}

enum { MATCH_NONE, MATCH_DONE };

/*
 * A stat of a process with live scans, matched by the cheapest test first: the dirfd's inode,
 * or the cwd, against the live slots, before any string is read; a path's directory by its
 * hash in `names`.  MATCH_DONE: it concerned one of them (counted, or ignored on purpose).
 */
static __always_inline int tracked_stat(struct proc *p, __u32 tgid, int dfd, const char *upath,
					long nr, const struct dirahead_bpf_config *cfg,
					struct task_struct *task, struct scratch *s)
{
	struct dirahead_scan_key key = { .tgid = tgid };
	bool cwd_live = false;
	struct path_hash ph;
	struct scan *sc;
	int off = 0;
	long n;

	if (dfd != DA_AT_FDCWD) {
		if (!fd_id(task, dfd, &key.dev, &key.ino) || live_slot(p, key.dev, key.ino) < 0)
			return MATCH_NONE;
	} else {
		cwd_live = live_slot(p, p->cwd_dev, p->cwd_ino) >= 0;
		if (!cwd_live && !p->npath)
			return MATCH_NONE;
	}
	n = bpf_probe_read_user_str(s->path, PATH_LEN, upath);
	/* "": an fstat (AT_EMPTY_PATH); PATH_LEN: maybe truncated, and a truncated path would
	 * hash like the shorter one it was cut to: never matched */
	if (n <= 1 || n >= PATH_LEN)
		return MATCH_NONE;
	n--;
	hash_path((const struct path_buf *)s->path, n, s->path[0] == '/' ? p->seed : p->rel_seed,
		  &ph);
	if (not_an_entry(s, n, &ph))
		return MATCH_NONE;
	if (ph.last_slash < 0) {
		if (dfd == DA_AT_FDCWD) {
			if (!cwd_live)
				return MATCH_NONE;
			key.dev = p->cwd_dev;
			key.ino = p->cwd_ino;
		}
	} else {
		struct name_key nk = { .tgid = tgid, .hash = ph.prefix };
		struct name_val *nv;

		/* "sub/name" below a dirfd, or an absolute path with one: not a form tools use */
		if (dfd != DA_AT_FDCWD || !p->npath)
			return MATCH_NONE;
		nv = bpf_map_lookup_elem(&names, &nk);
		if (!nv)
			return MATCH_NONE;
		key.dev = nv->dev;
		key.ino = nv->ino;
		off = ph.last_slash + 1;
	}
	sc = bpf_map_lookup_elem(&scans, &key);
	if (!sc)
		return MATCH_NONE;
	n = take_name(s, off);
	scan_stat(&key, sc, p, s, n, off ? DA_AT_FDCWD : dfd, cfg, task,
		  app_stat_latency(task, nr, cfg));
	return MATCH_DONE;
}

/*
 * What the program's stat returned for the name it just stat'ed, read from its own buffer (user
 * space's struct stat or struct statx): a run by path is known by its name only, and the daemon
 * checks that the directory it finds there holds this very file.  Read only when such a run is
 * reported, never on the way of other stats.  s->name_id is 0 if it cannot be read.
 */
__noinline int read_stat_id(void)
{
	struct pt_regs *regs = (struct pt_regs *)bpf_task_pt_regs(bpf_get_current_task_btf());
	struct scratch *s = get_scratch();
	__u64 dev = 0, buf, flags;
	long nr;
	__u32 mask = 0;

	if (!s)
		return 0;
	s->name_id = 0;
	nr = DA_SYSCALL_NR(regs);
	if (nr == DA_NR_STATX) {	/* statx(dfd, path, flags, mask, buf) */
		buf = PT_REGS_PARM5_SYSCALL(regs);
		flags = PT_REGS_PARM3_SYSCALL(regs);
	} else if (nr == DA_NR_NEWFSTATAT) {	/* newfstatat(dfd, path, buf, flags) */
		buf = PT_REGS_PARM3_SYSCALL(regs);
		flags = PT_REGS_PARM4_SYSCALL(regs);
	} else {		/* stat(path, buf), lstat(path, buf) */
		buf = PT_REGS_PARM2_SYSCALL(regs);
		flags = nr == DA_NR_LSTAT ? DA_AT_SYMLINK_NOFOLLOW : 0;
	}
	if (nr == DA_NR_STATX) {
		/* stx_mask at 0, stx_ino at 32, stx_dev_major and stx_dev_minor at 136 and 140 */
		if (bpf_probe_read_user(&mask, sizeof(mask), (void *)buf) || !(mask & DA_STATX_INO) ||
		    bpf_probe_read_user(&s->name_ino, 8, (void *)(buf + 32)) ||
		    bpf_probe_read_user(&s->name_major, 4, (void *)(buf + 136)) ||
		    bpf_probe_read_user(&s->name_minor, 4, (void *)(buf + 140)))
			return 0;
	} else {
		/* struct stat: st_dev (unsigned long) at 0, st_ino at 8, on x86-64 and arm64 */
		if (bpf_probe_read_user(&dev, sizeof(dev), (void *)buf) ||
		    bpf_probe_read_user(&s->name_ino, 8, (void *)(buf + 8)))
			return 0;
		/* the kernel's new_encode_dev(), undone as major() and minor() do */
		s->name_major = (dev >> 8) & 0xfff;
		s->name_minor = (dev & 0xff) | ((dev >> 12) & 0xfff00);
	}
	s->name_id = DIRAHEAD_EVF_NAME_ID |
		     (flags & DA_AT_SYMLINK_NOFOLLOW ? 0 : DIRAHEAD_EVF_NAME_FOLLOW);
	return 0;
}

/*
 * The thread made unlisted_stats stats of distinct names in one directory it did not list: track
 * it as a scan, confirmed at once (DIRAHEAD_EVF_UNLISTED).  dentry: the directory, for a dirfd
 * (dfd) or the cwd; 0 for names by path, whose directory is known only by its name, s->path up
 * to prefix_end.  Global: verified once, and the common path does not carry it.
 */
__noinline int promote(int dfd, __u64 dentry, long n, int name_off, int prefix_end)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	__u32 tgid = pid_tgid >> 32, tid = (__u32)pid_tgid;
	const struct dirahead_bpf_config *cfg = get_config();
	struct task_struct *task = bpf_get_current_task_btf();
	struct run *r = bpf_task_storage_get(&runs, task, 0, 0);
	struct dirahead_scan_key key = { .tgid = tgid };
	struct scratch *s = get_scratch();
	struct name_key nk = { .tgid = tgid };
	struct name_val nv = {};
	struct dirinfo di = {};
	struct path_hash ph;
	struct scan *sc;
	struct proc *p;
	int slot;
	bool abs;
	long len;

	if (!cfg || !s || !r || n <= 0 || n >= PATH_LEN)
		return 0;
	if (dentry) {
		struct vfsmount *vm;

		if (dfd != DA_AT_FDCWD) {
			struct file *f = fd_file(task, dfd);

			if (!f)
				return 0;
			vm = BPF_CORE_READ(f, f_path.mnt);
		} else {
			vm = BPF_CORE_READ(task, fs, pwd.mnt);
		}
		if (!path_dirinfo(vm, (struct dentry *)dentry, &di))
			return 0;
		if ((di.mode & DA_S_IFMT) != DA_S_IFDIR || pseudo_fs(di.magic) ||
		    di.size < cfg->min_dir_size || muted(tgid, di.dev) || walked(tgid, di.dev))
			return 0;
		p = get_proc(tgid, task, s);
		if (!p)
			return 0;
		if (dfd == DA_AT_FDCWD)
			read_cwd(task, p);	/* DIRAHEAD_REF_CWD: the cwd of the thread that stats */
		key.dev = di.dev;
		key.ino = di.ino;
	} else {
		if (prefix_end <= 0 || prefix_end >= PATH_LEN || muted(tgid, 0) || walked(tgid, 0))
			return 0;
		p = get_proc(tgid, task, s);
		if (!p)
			return 0;
		abs = s->path[0] == '/';
		hash_path((const struct path_buf *)s->path, n, abs ? p->seed : p->rel_seed, &ph);
		nk.hash = ph.prefix;
		/* a directory the process listed and still scans: that scan stands */
		struct name_val *old = bpf_map_lookup_elem(&names, &nk);

		if (old) {
			key.dev = old->dev;
			key.ino = old->ino;
			if (bpf_map_lookup_elem(&scans, &key))
				return 0;
		}
		key.dev = 0;
		key.ino = ph.prefix | 1;
		nv.ino = key.ino;
		read_stat_id();
		if (!s->name_id)
			return 0;	/* nothing to check the directory by: the daemon would refuse */
	}
	if (bpf_map_lookup_elem(&scans, &key))
		return 0;	/* tracked already (forgotten, or its stats come by another name) */
	sc = &s->scan;
	__builtin_memset(sc, 0, sizeof(*sc));
	sc->scan_id = new_scan_id();
	sc->flags = SCAN_CONFIRMED | SCAN_UNLISTED | (r->sorted ? SCAN_SORTED : 0);
	sc->fd = dentry && dfd != DA_AT_FDCWD ? dfd : -1;
	sc->dir_size = di.size;
	sc->magic = di.magic;
	sc->mnt_id = di.mnt_id;
	sc->parent_ino = di.parent_ino;
	sc->stats = cfg->unlisted_stats;
	sc->t_first = r->t_first;
	sc->t_last = bpf_ktime_get_ns();
	sc->step = cfg->progress_step;
	sc->next_progress = sc->stats + sc->step;
	sc->ctl_gen = ctl_gen;
	len = take_name(s, name_off);
	__builtin_memcpy(sc->name, s->name, NAME_LEN);
	sc->name_len = len;
	if (!dentry) {
		__builtin_memcpy(sc->path, s->path, PATH_LEN);
		sc->path[prefix_end & (PATH_LEN - 1)] = 0;
		sc->path_len = prefix_end;
		sc->flags |= SCAN_HAS_PATH | (abs ? SCAN_ABS_PATH : 0);
		sc->rel_seed = p->rel_seed;
		sc->name_id = s->name_id;
		sc->name_major = s->name_major;
		sc->name_minor = s->name_minor;
		sc->name_ino = s->name_ino;
	}
	if (!share_take(p->uid, 1))
		return 0;
	if (bpf_map_update_elem(&scans, &key, sc, BPF_NOEXIST)) {
		share_untake(p->uid, 1);
		count(DIRAHEAD_CNT_TABLE_FULL, 1);
		return 0;
	}
	/* its run in another directory before this one is over */
	slot = take_slot(p, tgid, tid, 0, SLOT_UNLISTED);
	fill_slot(p, slot, tid, key.dev, key.ino, SLOT_UNLISTED | (dentry ? 0 : SLOT_PATH));
	if (!dentry)
		bpf_map_update_elem(&names, &nk, &nv, BPF_ANY);
	sc = bpf_map_lookup_elem(&scans, &key);
	if (!sc)
		return 0;
	count(DIRAHEAD_CNT_SCANS, 1);
	emit(DIRAHEAD_EV_SCAN, DIRAHEAD_END_NONE, &key, sc, p, task);
	return 0;
}

/* A big-endian load of 8 bytes: compared as numbers, words order as their bytes do. */
static __always_inline __u64 be64(const char *p)
{
	__u64 w;

	__builtin_memcpy(&w, p, 8);
	return __builtin_bswap64(w);
}

/*
 * The first 16 bytes of the name at s->path[off] (the path is n bytes long), zero-padded, as two
 * words that compare as strcmp() would compare those bytes.
 */
static __always_inline void name_key(const struct scratch *s, int off, long n, __u64 *hi,
				     __u64 *lo)
{
	long len = n - off;
	int o = off & (PATH_LEN - 1);

	*hi = be64(&s->path[o]);
	*lo = be64(&s->path[o + 8]);
	/* bytes past the name are left over from earlier strings */
	if (len < 8) {
		*hi &= len <= 0 ? 0 : ~0ULL << (8 * (8 - len));
		*lo = 0;
	} else if (len < 16) {
		*lo &= ~0ULL << (8 * (16 - len));
	}
}

/*
 * Runs without a listing: a stat no live scan took.  One task-storage lookup; for a dirfd the
 * directory is its dentry, and a run already reported or refused there returns before the name
 * is read; otherwise the name is read and hashed once.
 */
static __always_inline void run_stat(int dfd, const char *upath,
				     const struct dirahead_bpf_config *cfg,
				     struct task_struct *task, struct scratch *s)
{
	struct dentry *d = NULL;
	struct path_hash ph;
	__u64 parent = 0, bit, hi, lo;
	struct run *r;
	long n;

	r = bpf_task_storage_get(&runs, task, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!r)
		return;
	if (dfd != DA_AT_FDCWD) {
		struct file *f = fd_file(task, dfd);

		if (!f)
			return;
		d = BPF_CORE_READ(f, f_path.dentry);
		parent = (__u64)d | RUN_FD;
		if (parent == r->parent && r->done)
			return;
	}
	n = bpf_probe_read_user_str(s->path, PATH_LEN, upath);
	if (n <= 1 || n >= PATH_LEN)
		return;		/* an fstat, or a path too long to be matched safely */
	n--;
	hash_path((const struct path_buf *)s->path, n,
		  s->path[0] == '/' ? RUN_SEED_ABS : RUN_SEED_REL, &ph);
	if (not_an_entry(s, n, &ph))
		return;
	if (dfd != DA_AT_FDCWD) {
		if (ph.last_slash >= 0)
			return;
	} else if (ph.last_slash < 0) {
		struct fs_struct *fs = task->fs;

		if (!fs)
			return;
		d = BPF_CORE_READ(fs, pwd.dentry);
		parent = (__u64)d | RUN_CWD;
	} else {
		parent = ph.prefix & ~3ULL;
	}
	name_key(s, ph.last_slash + 1, n, &hi, &lo);
	if (parent != r->parent) {
		r->parent = parent;
		r->bloom = 0;
		r->count = 0;
		r->done = 0;
		r->t_first = bpf_ktime_get_ns();
		r->sorted = 1;
	} else if (r->done) {
		return;
	} else if (!(r->bloom & (1ULL << (ph.name & 63))) &&
		   (hi < r->key_hi || (hi == r->key_hi && lo <= r->key_lo))) {
		r->sorted = 0;	/* (equal keys: names alike in 16 bytes, order unknown) */
	}
	bit = 1ULL << (ph.name & 63);
	if (r->bloom & bit)
		return;
	r->bloom |= bit;
	r->key_hi = hi;
	r->key_lo = lo;
	if (++r->count < cfg->unlisted_stats)
		return;
	/* by path, the name is how the daemon checks the directory: one that does not fit in the
	 * event's name waits for the next one */
	if (!d && n - (ph.last_slash + 1) >= NAME_LEN)
		return;
	r->done = 1;
	/* the directory it listed: not a run without a listing (see struct run) */
	if (d ? (__u64)d == r->listed : parent == r->listed_name)
		return;
	promote(dfd, (__u64)d, n, d ? 0 : ph.last_slash + 1, d ? 0 : ph.prefix_end);
}

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
