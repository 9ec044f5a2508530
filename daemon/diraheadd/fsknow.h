/* SPDX-License-Identifier: LGPL-2.1-or-later OR BSD-2-Clause */
/*
 * What the kernel says about a filesystem before anything is tried there (DIRAHEAD_FSI_* in the
 * events, read by BPF from the superblock when a scan is made) and what it implies for
 * per-entry prefetch: a decision function, acted on by the gate (gate.c) and the start rule
 * (judge.c).
 */
#ifndef DIRAHEAD_FSKNOW_H
#define DIRAHEAD_FSKNOW_H

#include <stdint.h>

enum fsknow_entries {
	FSKNOW_FETCH,       /* nothing known against it: the cost model decides (it probes first) */
	FSKNOW_PROBE_FIRST, /* the listing brings the attributes: fetch only on this scan's
			     * evidence that the program's stats still wait (the probe), even where
			     * prefetch paid before (judge.c) */
	FSKNOW_NO_LOOKUPS,  /* lookups in one directory serialize (FUSE without parallel dirops):
			     * a lookup sent there queues in front of the program's; send none
			     * into the directory it stats (list ahead elsewhere) */
};

/* May the daemon send per-entry lookups into a directory a program stats, there? */
enum fsknow_entries fsknow_entries(uint32_t fsinfo);

#endif
