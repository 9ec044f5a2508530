/* SPDX-License-Identifier: LGPL-2.1-or-later OR BSD-2-Clause */
/* Filesystem types by superblock magic: names for filters, and which ones are pseudo. */
#ifndef DIRAHEAD_FSMAGIC_H
#define DIRAHEAD_FSMAGIC_H

#include <stdbool.h>
#include <stdint.h>

/* The name `findmnt`/`stat -f` uses for the type, or NULL if unknown. */
const char *fsmagic_name(uint64_t magic);
/* proc, sysfs, cgroup, tracefs, debugfs, devpts, bpf, securityfs...: nothing to prefetch there. */
bool fsmagic_is_pseudo(uint64_t magic);

#endif
