/* SPDX-License-Identifier: LGPL-2.1-or-later OR BSD-2-Clause */
/* Which order a program stats a directory's entries in, learnt from what it stat'ed so far. */
#ifndef DIRAHEAD_ORDER_H
#define DIRAHEAD_ORDER_H

#include <stdint.h>

#include "dirahead.h"

/* gnulib fts reads (and sorts) at most this many entries of a directory at a time. */
#define ORDER_FTS_CHUNK 100000
/* ... and sorts them by inode number only when a directory has more than 10,000 entries. */
#define ORDER_FTS_INODE_MIN 10001

/*
 * The program has made `stats` stats of entries of the directory open on fd, the latest of
 * `name`.  In readdir order that name is among the first `stats` entries; sorted by inode number
 * (gnulib fts above 10,000 entries: find, du, rm, chmod -R) or by name, it is among the first
 * `stats` of that order instead.  Reads the directory (from offset 0, at most ORDER_FTS_CHUNK
 * entries; only as far as the name when it is early in readdir order, which is the common case)
 * and leaves the offset at 0.  READDIR when nothing else fits or the directory cannot be read.
 */
enum dirahead_order order_learn(int fd, const char *name, uint64_t stats);

#endif
