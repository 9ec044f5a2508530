/* SPDX-License-Identifier: LGPL-2.1-or-later OR BSD-2-Clause */
/* What the bench's C tools share: the kernel's getdents64 record and the monotonic clock. */
#ifndef DIRAHEAD_BENCHUTIL_H
#define DIRAHEAD_BENCHUTIL_H

#include <stdint.h>

#include "../../daemon/common/monoclock.h"

/* getdents64's record (glibc declares no type for the raw syscall) */
struct linux_dirent64 {
	uint64_t d_ino;
	int64_t d_off;
	unsigned short d_reclen;
	unsigned char d_type;
	char d_name[];
};

#endif
