/* SPDX-License-Identifier: LGPL-2.1-or-later OR BSD-2-Clause */
#include "stats.h"

#include <errno.h>

#define X_NAME(e, s) s,
const char *const da_end_reason_names[DA_END_MAX] = { DA_END_REASONS(X_NAME) };
const char *const da_skip_reason_names[DA_SKIP_MAX] = { DA_SKIP_REASONS(X_NAME) };
const char *const da_walk_end_reason_names[DA_WALK_END_MAX] = { DA_WALK_END_REASONS(X_NAME) };
#undef X_NAME
const char *const da_err_class_names[DA_ERR_MAX] = { "enoent", "eacces", "eio", "other" };

enum da_err_class da_err_class_of(int err)
{
	switch (err) {
	case ENOENT:
	case ENOTDIR:
	case ESTALE:
		return DA_ERR_ENOENT; /* raced with a delete or rename: harmless */
	case EACCES:
	case EPERM:
		return DA_ERR_EACCES;
	case EIO:
	case ETIMEDOUT:
	case ENOTCONN:
		return DA_ERR_EIO;
	default:
		return DA_ERR_OTHER;
	}
}

const double da_latency_bounds[DA_LAT_BUCKETS] = { 1e-5, 5e-5, 1e-4, 2.5e-4, 5e-4, 1e-3, 2.5e-3,
						   5e-3, 1e-2, 5e-2, 0.25, 1.0 };

void da_stats_latency(struct da_stats *s, uint64_t ns)
{
	double v = (double)ns / 1e9;
	int i = 0;
	while (i < DA_LAT_BUCKETS && v > da_latency_bounds[i])
		i++;
	s->lat_bucket[i]++;
	s->lat_count++;
	s->lat_sum_s += v;
}
