/* SPDX-License-Identifier: LGPL-2.1-or-later OR BSD-2-Clause */
/*
 * The clocks, read in one place for the daemon, diraheadctl and libdirahead: CLOCK_MONOTONIC
 * (the clock of timeouts, ages and BPF's bpf_ktime_get_ns()) and CLOCK_REALTIME for what is
 * shown as a date.  Header only: libdirahead.so links no object of daemon/common.
 */
#ifndef DIRAHEAD_MONOCLOCK_H
#define DIRAHEAD_MONOCLOCK_H

#include <stdint.h>
#include <time.h>

static inline uint64_t mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static inline uint64_t mono_us(void)
{
	return mono_ns() / 1000;
}

static inline uint64_t mono_ms(void)
{
	return mono_ns() / 1000000;
}

/* CLOCK_REALTIME in microseconds (the daemon's start, its uptime). */
static inline uint64_t wall_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

#endif
