/* SPDX-License-Identifier: LGPL-2.1-or-later OR BSD-2-Clause */
/*
 * Whether one statx reads an entry's neighbours in inode order too: a filesystem on a block
 * device reads inodes by the block or cluster (ext4 16 to a 4 KiB block, xfs clusters of 32);
 * FUSE, even over a block device (fuseblk), looks up each name on its own.  The daemon and
 * `diraheadctl prefetch` then ask the engine for one request per inode group
 * (DIRAHEAD_DIR_SHARED_READS).  Header only.
 */
#ifndef DIRAHEAD_FSGROUPS_H
#define DIRAHEAD_FSGROUPS_H

#include <stdbool.h>
#include <stdint.h>

#define FSGROUPS_FUSE_MAGIC 0x65735546ULL
#define FSGROUPS_BTRFS_MAGIC 0x9123683EULL

static inline bool fs_inode_groups(uint64_t magic, uint32_t dev_major)
{
	/* btrfs's subvolumes have anonymous device numbers, its metadata is a block device's */
	return (dev_major != 0 || magic == FSGROUPS_BTRFS_MAGIC) && magic != FSGROUPS_FUSE_MAGIC;
}

#endif
