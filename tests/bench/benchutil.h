/* SPDX-License-Identifier: LGPL-2.1-or-later OR BSD-2-Clause */
/* What the bench's C tools share: the kernel's getdents64 record and the monotonic clock. */
#ifndef DIRAHEAD_BENCHUTIL_H
#define DIRAHEAD_BENCHUTIL_H

#include <stdint.h>

#include "../../daemon/common/dirent64.h"
#include "../../daemon/common/monoclock.h"

#endif
