/* SPDX-License-Identifier: LGPL-2.1-or-later OR BSD-2-Clause */
/*
 * Openers: a bounded pool of threads for the blocking part of starting a scan or a walk (opening
 * the program's directory through /proc, learning its order, walking up to its ancestors,
 * resolving a run by path), which can hang on a filesystem.  The event loop never waits for one.
 * Every job carries its filesystem (0:0 while unknown: a path not resolved yet) and its user.
 * A job that has run for longer than `stuck_ms` is stuck: it counts for its filesystem (for an
 * unknown one: for its user), it no longer holds one of the pool's `threads` (a replacement may
 * start, up to 4 x threads in all), and it keeps counting against its user's share until it
 * returns.  A user has at most `per_user` jobs queued or running at once, so that a user whose
 * filesystem never answers exhausts only their own share; with every thread busy a new job is
 * refused at once (the caller skips the scan) instead of queueing behind a hung filesystem.
 */
#ifndef DIRAHEAD_OPENER_H
#define DIRAHEAD_OPENER_H

#include <stdint.h>
#include <systemd/sd-event.h>

struct opener;

/* threads: at most this many jobs running at once (not counting stuck ones), and as many more
 * queued; per_user: jobs of one user queued or running, stuck ones included. */
struct opener *opener_new(sd_event *loop, unsigned threads, unsigned per_user, unsigned stuck_ms);
/*
 * Runs run(arg) in an opener thread, then done(arg) on the event loop; if the opener is freed
 * first, discard(arg) instead (in whatever thread: it releases what run() got).  Nothing runs and
 * arg stays the caller's on: -EUSERS (the user has per_user jobs already), -EBUSY (every thread
 * busy and the queue full), -ENOMEM, -EAGAIN.  dev: the filesystem the job is for (of the event;
 * 0:0 if not known yet), uid: whom for (the event's euid).
 */
int opener_run(struct opener *o, uint32_t dev_major, uint32_t dev_minor, uint32_t uid,
	       void (*run)(void *arg), void (*done)(void *arg), void (*discard)(void *arg), void *arg);
/* Jobs running for longer than stuck_ms now: in all; on one filesystem (dev 0:0: those of `uid`
 * whose filesystem is not known yet). */
unsigned opener_stuck(const struct opener *o);
unsigned opener_stuck_on(const struct opener *o, uint32_t dev_major, uint32_t dev_minor,
			 uint32_t uid);
/* Stops: queued jobs are dropped (done() is not called for them nor for running ones); threads
 * stuck in the kernel are left to finish on their own and free what is theirs. */
void opener_free(struct opener *o);

#endif
