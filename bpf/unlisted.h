// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * Runs of stats without a listing (cfg->unlisted_stats): a thread's stats of distinct names in one
 * directory it did not list, counted in task storage (`runs`), and promoted to a scan, confirmed at
 * once (DIRAHEAD_EVF_UNLISTED), when enough of them came.
 */
#ifndef DIRAHEAD_DETECTOR_UNLISTED_H
#define DIRAHEAD_DETECTOR_UNLISTED_H

#include "detector_model.h"
#include "kernel_id.h"
#include "names.h"
#include "emit.h"
#include "share.h"
#include "slots.h"
#include "mutes.h"

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
 * A run in the directory `dentry`, reached by a dirfd (dfd) or the cwd: what the detector keeps
 * of it into *di, and its key; the process's entry, or NULL where it stays untracked.
 */
static __always_inline struct proc *run_dir_by_dentry(__u32 tgid, int dfd, __u64 dentry,
						      struct task_struct *task,
						      const struct dirahead_bpf_config *cfg,
						      struct scratch *s, struct dirinfo *di,
						      struct dirahead_scan_key *key)
{
	struct vfsmount *vm;
	struct proc *p;

	if (dfd != DA_AT_FDCWD) {
		struct file *f = fd_file(task, dfd);

		if (!f)
			return NULL;
		vm = BPF_CORE_READ(f, f_path.mnt);
	} else {
		vm = BPF_CORE_READ(task, fs, pwd.mnt);
	}
	if (!path_dirinfo(vm, (struct dentry *)dentry, di))
		return NULL;
	if ((di->mode & DA_S_IFMT) != DA_S_IFDIR || pseudo_fs(di->magic) ||
	    di->size < cfg->min_dir_size || muted(tgid, di->dev) || walked(tgid, di->dev))
		return NULL;
	p = get_proc(tgid, task, s);
	if (!p)
		return NULL;
	if (dfd == DA_AT_FDCWD)
		read_cwd(task, p);	/* DIRAHEAD_REF_CWD: the cwd of the thread that stats */
	key->dev = di->dev;
	key->ino = di->ino;
	return p;
}

/*
 * A run by path, whose directory is known only by its name, s->path up to prefix_end: its key
 * (dev 0, the name's hash) and `names` entry, and the program's stat of the name to check it
 * by; the process's entry, or NULL where it stays untracked.
 */
static __always_inline struct proc *run_dir_by_path(__u32 tgid, long n, int prefix_end,
						    struct task_struct *task, struct scratch *s,
						    struct dirahead_scan_key *key,
						    struct name_key *nk, struct name_val *nv)
{
	struct name_val *old;
	struct path_hash ph;
	struct proc *p;
	__u32 dev;

	if (prefix_end <= 0 || prefix_end >= PATH_LEN)
		return NULL;
	read_stat_id();
	if (!s->name_id)
		return NULL;	/* nothing to check the directory by: the daemon would refuse */
	/* muted or walked on the filesystem its stat returned, not on another one */
	dev = DIRAHEAD_KDEV(s->name_major, s->name_minor);
	if (muted_paths(tgid, dev) || walked(tgid, dev))
		return NULL;
	p = get_proc(tgid, task, s);
	if (!p)
		return NULL;
	hash_path((const struct path_buf *)s->path, n,
		  s->path[0] == '/' ? p->seed : p->rel_seed, &ph);
	nk->hash = ph.prefix;
	/* a directory the process listed and still scans: that scan stands */
	old = bpf_map_lookup_elem(&names, nk);
	if (old) {
		key->dev = old->dev;
		key->ino = old->ino;
		if (bpf_map_lookup_elem(&scans, key))
			return NULL;
	}
	key->dev = 0;
	key->ino = ph.prefix | 1;
	nv->ino = key->ino;
	return p;
}

/* The run's scan, built in s->scan: confirmed at once, with the run's stats and its last name. */
static __always_inline void run_scan(struct scratch *s, const struct run *r,
				     const struct dirahead_bpf_config *cfg, const struct proc *p,
				     const struct dirinfo *di, int dfd, __u64 dentry, int name_off,
				     int prefix_end)
{
	struct scan *sc = &s->scan;
	long len;

	__builtin_memset(sc, 0, sizeof(*sc));
	sc->scan_id = new_scan_id();
	sc->flags = SCAN_CONFIRMED | SCAN_UNLISTED | (r->sorted ? SCAN_SORTED : 0);
	sc->fd = dentry && dfd != DA_AT_FDCWD ? dfd : -1;
	sc->dir_size = di->size;
	sc->magic = di->magic;
	sc->fsinfo = fs_info(dentry, di->magic, &sc->name_ino);
	sc->mnt_id = di->mnt_id;
	sc->parent_ino = di->parent_ino;
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
		sc->flags |= SCAN_HAS_PATH | (s->path[0] == '/' ? SCAN_ABS_PATH : 0);
		sc->rel_seed = p->rel_seed;
		sc->name_id = s->name_id;
		sc->name_major = s->name_major;
		sc->name_minor = s->name_minor;
		sc->name_ino = s->name_ino;
	}
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
	struct scan *sc;
	struct proc *p;
	int slot;

	if (!cfg || !s || !r || n <= 0 || n >= PATH_LEN)
		return 0;
	if (dentry)
		p = run_dir_by_dentry(tgid, dfd, dentry, task, cfg, s, &di, &key);
	else
		p = run_dir_by_path(tgid, n, prefix_end, task, s, &key, &nk, &nv);
	if (!p)
		return 0;
	if (bpf_map_lookup_elem(&scans, &key))
		return 0;	/* tracked already (forgotten, or its stats come by another name) */
	run_scan(s, r, cfg, p, &di, dfd, dentry, name_off, prefix_end);
	if (!share_take(p->uid, 1))
		return 0;
	if (bpf_map_update_elem(&scans, &key, &s->scan, BPF_NOEXIST)) {
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

/* The thread's run starts afresh in `parent`. */
static __always_inline void run_start(struct run *r, __u64 parent)
{
	r->parent = parent;
	r->bloom = 0;
	r->count = 0;
	r->done = 0;
	r->t_first = bpf_ktime_get_ns();
	r->sorted = 1;
}

/*
 * A stat in `parent` (full: its path's hash; bit, hi, lo: its name's bloom bit and key) that
 * leaves the run where it is, uncounted.  One stat elsewhere does not end the run; a second
 * there, with none in the run's directory between, moves the run there, the first one counted.
 * A file stat'ed again elsewhere (one of the last two stat'ed there) is left out altogether:
 * glibc's localtime() stats /etc/localtime for each file `stat` prints, and that ended every
 * run of `stat $(cat list)` at its first name.
 */
static __always_inline bool stays_put(struct run *r, __u64 parent, __u64 full, __u64 bit,
				      __u64 hi, __u64 lo)
{
	if (parent != r->parent && r->parent) {
		if (full == r->noise[0] || full == r->noise[1])
			return true;
		r->noise[1] = r->noise[0];
		r->noise[0] = full;
		if (parent != r->other) {
			r->other = parent;
			r->first_bit = bit;
			r->first_hi = hi;
			r->first_lo = lo;
			return true;
		}
		run_start(r, parent);
		r->bloom = r->first_bit;
		r->count = 1;
		r->key_hi = r->first_hi;
		r->key_lo = r->first_lo;
	}
	r->other = 0;
	return false;
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
	bit = 1ULL << (ph.name & 63);
	if (stays_put(r, parent, ph.full, bit, hi, lo))
		return;
	if (parent != r->parent) {
		run_start(r, parent);
	} else if (r->done) {
		return;
	} else if (!(r->bloom & bit) &&
		   (hi < r->key_hi || (hi == r->key_hi && lo <= r->key_lo))) {
		r->sorted = 0;	/* (equal keys: names alike in 16 bytes, order unknown) */
	}
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

#endif /* DIRAHEAD_DETECTOR_UNLISTED_H */
