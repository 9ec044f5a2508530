/* SPDX-License-Identifier: LGPL-2.1-or-later OR BSD-2-Clause */
/*
 * getdents64(2)'s record, for the readers of raw listings (libdirahead's dirread.c, the daemon's
 * order.c, the bench's tools): glibc declares no type for the raw syscall.  Header only.
 */
#ifndef DIRAHEAD_DIRENT64_H
#define DIRAHEAD_DIRENT64_H

#include <stdint.h>

struct linux_dirent64 {
	uint64_t d_ino;
	int64_t d_off;
	unsigned short d_reclen;
	unsigned char d_type;
	char d_name[];
};

#endif
