/* SPDX-License-Identifier: LGPL-2.1-or-later OR BSD-2-Clause */
#include "stats.h"

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>

#define X_NAME(e, s) s,
const char *const da_end_reason_names[DA_END_MAX] = { DA_END_REASONS(X_NAME) };
const char *const da_skip_reason_names[DA_SKIP_MAX] = { DA_SKIP_REASONS(X_NAME) };
const char *const da_walk_end_reason_names[DA_WALK_END_MAX] = { DA_WALK_END_REASONS(X_NAME) };
#undef X_NAME
const char *const da_err_class_names[DA_ERR_MAX] = { "enoent", "eacces", "eio", "other" };
#define X_NAME(e, s) s,
const char *const da_http_result_names[DA_HTTP_MAX] = { DA_HTTP_RESULTS(X_NAME) };
#undef X_NAME

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

struct out {
	char *buf;
	size_t len, pos;
};

static void put(struct out *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(struct out *o, const char *fmt, ...)
{
	va_list ap;
	if (o->pos >= o->len)
		return;
	va_start(ap, fmt);
	int n = vsnprintf(o->buf + o->pos, o->len - o->pos, fmt, ap);
	va_end(ap);
	if (n > 0)
		o->pos += (size_t)n < o->len - o->pos ? (size_t)n : o->len - o->pos - 1;
}

static uint64_t sum(const uint64_t *v, int n)
{
	uint64_t t = 0;
	for (int i = 0; i < n; i++)
		t += v[i];
	return t;
}

/* ", N what (n1 reason1, n2 reason2)" with the reasons that moved */
static void put_reasons(struct out *o, const char *what, const uint64_t *now, const uint64_t *prev,
			const char *const *names, int n)
{
	bool first = true;
	put(o, ", %llu %s", (unsigned long long)(sum(now, n) - sum(prev, n)), what);
	for (int i = 0; i < n; i++) {
		if (now[i] == prev[i])
			continue;
		put(o, "%s%llu %s", first ? " (" : ", ", (unsigned long long)(now[i] - prev[i]), names[i]);
		first = false;
	}
	if (!first)
		put(o, ")");
}

size_t da_stats_summary(const struct da_stats *now, const struct da_stats *prev, char *buf, size_t len)
{
	struct out o = { buf, len, 0 };
	uint64_t d_err = sum(now->errors, DA_ERR_MAX) - sum(prev->errors, DA_ERR_MAX);
	bool walks = now->walks_started != prev->walks_started ||
		     sum(now->walks_ended, DA_WALK_END_MAX) != sum(prev->walks_ended, DA_WALK_END_MAX);
	if (len)
		buf[0] = '\0';
	if (now->scans_confirmed == prev->scans_confirmed && now->scans_started == prev->scans_started &&
	    sum(now->scans_ended, DA_END_MAX) == sum(prev->scans_ended, DA_END_MAX) &&
	    sum(now->skips, DA_SKIP_MAX) == sum(prev->skips, DA_SKIP_MAX) && !walks &&
	    now->entries_prefetched == prev->entries_prefetched && now->hits == prev->hits &&
	    now->misses == prev->misses && !d_err)
		return 0;
	put(&o, "%llu scans confirmed, %llu started",
	    (unsigned long long)(now->scans_confirmed - prev->scans_confirmed),
	    (unsigned long long)(now->scans_started - prev->scans_started));
	put_reasons(&o, "ended", now->scans_ended, prev->scans_ended, da_end_reason_names, DA_END_MAX);
	put_reasons(&o, "skipped", now->skips, prev->skips, da_skip_reason_names, DA_SKIP_MAX);
	if (walks) {
		put(&o, "; %llu walks started", (unsigned long long)(now->walks_started - prev->walks_started));
		put_reasons(&o, "ended", now->walks_ended, prev->walks_ended, da_walk_end_reason_names,
			    DA_WALK_END_MAX);
	}
	put(&o, "; %llu entries prefetched, %llu hits, %llu misses",
	    (unsigned long long)(now->entries_prefetched - prev->entries_prefetched),
	    (unsigned long long)(now->hits - prev->hits), (unsigned long long)(now->misses - prev->misses));
	if (d_err)
		put_reasons(&o, "errors", now->errors, prev->errors, da_err_class_names, DA_ERR_MAX);
	return o.pos;
}
