/* SPDX-License-Identifier: LGPL-2.1-or-later OR BSD-2-Clause */
/*
 * Openers: a bounded pool of threads for the blocking part of starting a scan or a walk (opening
 * the program's directory through /proc, learning its order, walking up to its ancestors), which
 * can hang on a filesystem.  The event loop never waits for one; a job that has run for longer
 * than `stuck_ms` is counted as stuck, and with every thread busy a new job is refused at once
 * (the caller skips the scan) instead of queueing behind a hung filesystem without end.
 */
#ifndef DIRAHEAD_OPENER_H
#define DIRAHEAD_OPENER_H

#include <stdint.h>
#include <systemd/sd-event.h>

struct opener;

/* threads: at most this many jobs at once (and as many more queued). */
struct opener *opener_new(sd_event *loop, unsigned threads, unsigned stuck_ms);
/*
 * Runs run(arg) in an opener thread, then done(arg) on the event loop; if the opener is freed
 * first, discard(arg) instead (in whatever thread: it releases what run() got).  -EBUSY if every
 * thread is busy and the queue is full (nothing runs, arg stays the caller's), -ENOMEM, -EAGAIN.
 * dev: the filesystem the job is for (of the event), so stuck jobs can be told per filesystem.
 */
int opener_run(struct opener *o, uint32_t dev_major, uint32_t dev_minor, void (*run)(void *arg),
	       void (*done)(void *arg), void (*discard)(void *arg), void *arg);
/* Jobs running for longer than stuck_ms now: in all, and on one filesystem. */
unsigned opener_stuck(const struct opener *o);
unsigned opener_stuck_on(const struct opener *o, uint32_t dev_major, uint32_t dev_minor);
/* Stops: queued jobs are dropped (done() is not called for them nor for running ones); threads
 * stuck in the kernel are left to finish on their own and free what is theirs. */
void opener_free(struct opener *o);

#endif
