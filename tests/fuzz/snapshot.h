/* SPDX-License-Identifier: LGPL-2.1-or-later OR BSD-2-Clause */
/*
 * A daemon without its engine, for the fuzz targets: the scan manager, the detector and reload
 * are stand-ins (snapshot.c) reporting a fixed status snapshot, except for what a user controls
 * in a live daemon, the names of one scan's program and directory, which come from the fuzz
 * input.  control.c and metrics.c then render their replies as a running daemon would.
 */
#ifndef DIRAHEAD_FUZZ_SNAPSHOT_H
#define DIRAHEAD_FUZZ_SNAPSHOT_H

#include <stddef.h>
#include <stdint.h>
#include "daemon.h"

/* Defaults for cfg, counters filled in, no loop, one remembered filesystem. */
void snapshot_daemon_init(struct daemon *d);
void snapshot_daemon_fini(struct daemon *d);
/* The scan shown by `scans`: "COMM\0PATH" (COMM cut to 15 bytes), or bytes that are both. */
void snapshot_set_scan(const uint8_t *data, size_t len);
/* What the stand-in showed: for checking the rendered replies. */
const char *snapshot_scan_comm(void);
const char *snapshot_scan_path(void);

#endif
