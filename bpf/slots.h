// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * A process's entry and its per-thread slots: the entry made at the first tracked listing, slots
 * taken, filled, looked up and freed, and scans ended (one, a thread's, all of a process's) with
 * their END events.
 */
#ifndef DIRAHEAD_DETECTOR_SLOTS_H
#define DIRAHEAD_DETECTOR_SLOTS_H

#include "detector_model.h"
#include "names.h"
#include "emit.h"
#include "share.h"

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
 * Global, like the other loop-heavy helpers: verified once, not per call site.
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

/* The thread has slots (a parent walk for enclosing ones is needed only then). */
static __always_inline bool thread_slots(const struct proc *p, __u32 tid)
{
	bool any = false;

	for (int i = 0; i < MAX_ACTIVE; i++)
		any |= p->active[i].seq && p->active[i].tid == tid;
	return any;
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

#endif /* DIRAHEAD_DETECTOR_SLOTS_H */
