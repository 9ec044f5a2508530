// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * Each uid's share of the `procs` and `scans` tables (struct user_share in detector_model.h): an
 * entry is taken before one is made and given back when it goes.
 */
#ifndef DIRAHEAD_DETECTOR_SHARE_H
#define DIRAHEAD_DETECTOR_SHARE_H

#include "detector_model.h"

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

#endif /* DIRAHEAD_DETECTOR_SHARE_H */
