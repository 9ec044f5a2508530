/* SPDX-License-Identifier: LGPL-2.1-or-later OR BSD-2-Clause */
/* What the kernel's view of a filesystem implies for per-entry prefetch (fsknow.h). */
#include "fsknow.h"

#include "dirahead_event.h"

enum fsknow_entries fsknow_entries(uint32_t fsinfo)
{
	if (!(fsinfo & DIRAHEAD_FSI_FUSE))
		return FSKNOW_FETCH;
	/* serialized lookups decide it, whatever the listing brings: a stat the listing did not
	 * answer waits behind every lookup the daemon queued in that directory */
	if (fsinfo & DIRAHEAD_FSI_SERIAL_LOOKUPS)
		return FSKNOW_NO_LOOKUPS;
	if (fsinfo & DIRAHEAD_FSI_READDIRPLUS)
		return FSKNOW_PROBE_FIRST;
	return FSKNOW_FETCH;
}
