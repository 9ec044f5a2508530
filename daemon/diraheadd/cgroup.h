/* SPDX-License-Identifier: LGPL-2.1-or-later OR BSD-2-Clause */
/* A process's cgroup (v2), and the [filter] cgroup_include / cgroup_exclude patterns. */
#ifndef DIRAHEAD_CGROUP_H
#define DIRAHEAD_CGROUP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "config.h"

/*
 * The cgroup v2 path of process `pid`, as its "0::/path" line of /proc/PID/cgroup gives it (in the
 * daemon's cgroup namespace).  0, or -errno (-ESRCH: gone; -ENOENT: no v2 line; -ENAMETOOLONG).
 */
int cgroup_of(uint32_t pid, char *buf, size_t len);

/*
 * Whether a pattern of `l` matches `path` or one of its ancestors: each pattern is a shell pattern
 * (fnmatch(3) with FNM_PATHNAME, so * stays within one component) matched against the path cut at
 * every component boundary, so "/system.slice" covers /system.slice/cron.service and everything
 * below it.  Trailing slashes of a pattern are ignored; "/" matches every cgroup.
 */
bool cgroup_match(const struct dd_strlist *l, const char *path);

#endif
