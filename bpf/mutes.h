// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * Where the daemon told the detector to stand aside, through maps it writes: a process muted on a
 * filesystem or for its runs by path (`mutes`), one it walks ahead of (`walkers`), and a scan it
 * forgot (`scan_ctl`, DIRAHEAD_CTL_FORGET).
 */
#ifndef DIRAHEAD_DETECTOR_MUTES_H
#define DIRAHEAD_DETECTOR_MUTES_H

#include "detector_model.h"
#include "slots.h"

/* The daemon muted this process on `dev` and the mute holds. */
static __always_inline bool muted(__u32 tgid, __u32 dev)
{
	struct dirahead_mute *m = bpf_map_lookup_elem(&mutes, &tgid);

	if (!m || m->dev != dev)
		return false;
	return bpf_ktime_get_ns() < m->until_ns;
}

/* The daemon muted this process's runs by path whose stats return `dev` (DIRAHEAD_KDEV of
 * st_dev), and the mute holds. */
static __always_inline bool muted_paths(__u32 tgid, __u32 dev)
{
	struct dirahead_mute *m = bpf_map_lookup_elem(&mutes, &tgid);

	if (!m || (m->paths_dev && m->paths_dev != dev))
		return false;
	return bpf_ktime_get_ns() < m->paths_until_ns;
}

/* A walk covers this process's directories on `dev` (any filesystem for dev 0). */
static __always_inline bool walked(__u32 tgid, __u32 dev)
{
	struct dirahead_walker *w = bpf_map_lookup_elem(&walkers, &tgid);

	return w && (w->dev == dev || dev == 0);
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

#endif /* DIRAHEAD_DETECTOR_MUTES_H */
