// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * What a listing does: getdents64 of a directory creates or feeds its scan (or, in a process the
 * daemon walks ahead of, is reported as a LISTING event and tracked no further); an O_DIRECTORY
 * open remembers the name the directory was opened by; chdir refreshes the cwd a process's
 * relative names hold for.
 */
#ifndef DIRAHEAD_DETECTOR_LISTING_H
#define DIRAHEAD_DETECTOR_LISTING_H

#include "detector_model.h"
#include "kernel_id.h"
#include "names.h"
#include "emit.h"
#include "share.h"
#include "slots.h"
#include "mutes.h"
#include "unlisted.h"

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
	e = reserve_event();
	if (!e)
		return true;
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
	submit_event(e, true);
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
	e = reserve_event();
	if (!e)
		return;
	__builtin_memset(e, 0, sizeof(*e));
	e->type = DIRAHEAD_EV_END;
	e->end_reason = reason;
	e->tgid = tgid;
	e->fd = -1;
	e->ts_ns = bpf_ktime_get_ns();
	submit_event(e, true);
}

/*
 * A directory this process lists and has no scan of: its scan, made and given a slot of the
 * thread (the thread's scans that do not enclose it are over); NULL if it stays untracked.
 */
static __always_inline struct scan *new_listing(const struct dirahead_scan_key *key, __u32 tid,
						struct task_struct *task, struct file *f,
						const struct dirinfo *di, long ret)
{
	struct dentry *dentry;
	struct scratch *s;
	struct scan *sc;
	struct proc *p;
	int slot;

	if (ret == 0)
		return NULL;	/* an empty directory: nothing will be stat'ed */
	/* The daemon found prefetch does not pay for this process here: stay out of its way. */
	if (muted(key->tgid, di->dev))
		return NULL;
	/* A scan value is too big for the stack: build it in the per-CPU scratch. */
	s = get_scratch();
	if (!s)
		return NULL;
	p = get_proc(key->tgid, task, s);
	if (!p)
		return NULL;
	sc = &s->scan;
	__builtin_memset(sc, 0, sizeof(*sc));
	sc->scan_id = new_scan_id();
	sc->dir_size = di->size;
	sc->magic = di->magic;
	sc->mnt_id = di->mnt_id;
	sc->parent_ino = di->parent_ino;
	sc->fd = -1;
	sc->ctl_gen = ctl_gen;
	sc->fsinfo = fs_info((__u64)BPF_CORE_READ(f, f_path.dentry), di->magic, &sc->name_ino);
	adopt_name(sc, p, key->tgid, tid, di);
	if (!share_take(p->uid, 1))
		return NULL;
	if (bpf_map_update_elem(&scans, key, sc, BPF_NOEXIST)) {
		share_untake(p->uid, 1);
		count(DIRAHEAD_CNT_TABLE_FULL, 1);
		return NULL;
	}
	/* This thread lists another directory: its scans that do not enclose it are over. */
	dentry = BPF_CORE_READ(f, f_path.dentry);
	slot = take_slot(p, key->tgid, tid, thread_slots(p, tid) ?
			 enclosing_slots(p, di->dev, (__u64)dentry) : 0, 0);
	fill_slot(p, slot, tid, di->dev, di->ino, sc->flags & SCAN_HAS_PATH ? SLOT_PATH : 0);
	sc = bpf_map_lookup_elem(&scans, key);
	if (!sc)
		return NULL;
	count(DIRAHEAD_CNT_LISTINGS, 1);
	return sc;
}

static __always_inline int on_getdents(struct pt_regs *regs, long ret)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	__u32 tgid = pid_tgid >> 32, tid = (__u32)pid_tgid;
	const struct dirahead_bpf_config *cfg;
	struct dirahead_scan_key key = {};
	struct task_struct *task;
	struct dirinfo di = {};
	struct scan *sc;
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
		sc = new_listing(&key, tid, task, f, &di, ret);
		if (!sc)
			return 0;
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

#endif /* DIRAHEAD_DETECTOR_LISTING_H */
