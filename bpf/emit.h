// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * Events into the ring buffer: a record reserved (or counted lost) and submitted, waking the
 * daemon or not; the scan record (SCAN, PROGRESS, END) with the references the daemon can open
 * the directory by and the caller's credentials.
 */
#ifndef DIRAHEAD_DETECTOR_EMIT_H
#define DIRAHEAD_DETECTOR_EMIT_H

#include "detector_model.h"
#include "kernel_id.h"

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

/* A record of the ring buffer, or NULL (counted as lost: the ring is full). */
static __always_inline struct dirahead_event *reserve_event(void)
{
	struct dirahead_event *e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);

	if (!e)
		count(DIRAHEAD_CNT_EVENTS_LOST, 1);
	return e;
}

/* The record goes to the daemon; may_wait: see submit_flags(). */
static __always_inline void submit_event(struct dirahead_event *e, bool may_wait)
{
	bpf_ringbuf_submit(e, submit_flags(may_wait));
	count(DIRAHEAD_CNT_EVENTS, 1);
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

	e = reserve_event();
	if (!e)
		return;
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
	e->fsinfo = sc->fsinfo;
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
	submit_event(e, type == DIRAHEAD_EV_END);
}

#endif /* DIRAHEAD_DETECTOR_EMIT_H */
