/* SPDX-License-Identifier: LGPL-2.1-or-later OR BSD-2-Clause */
/*
 * What the kernel says about a filesystem before anything is tried there (DIRAHEAD_FSI_* in the
 * events, read by BPF from the superblock when a scan is made) and what it implies for
 * per-entry prefetch: a decision function, acted on by the gate (gate.c) and the start rule
 * (judge.c).
 */
#ifndef DIRAHEAD_FSKNOW_H
#define DIRAHEAD_FSKNOW_H

#include <stdbool.h>
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

/* A program blocked on that filesystem, after listing `lists` directories one after another (the
 * sentinel's count, to 2): is it worth attaching the detector's syscall hooks (arm.h) for it?
 * Where no per-entry lookup may be sent (FSKNOW_NO_LOOKUPS) only a walk can be helped (listed
 * ahead): not before it lists a second directory, so that a flat `ls -l` there pays nothing
 * (every syscall of every process pays the hooks while they are attached). */
bool fsknow_arm(uint32_t fsinfo, uint32_t lists);

#endif
