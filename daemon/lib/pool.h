/* SPDX-License-Identifier: LGPL-2.1-or-later OR BSD-2-Clause */
/*
 * A worker-thread pool for blocking filesystem calls (statx, open, getdents): the mechanics of
 * threads, queue, wakeups, shutdown and stuck jobs, with no policy.  One owner thread submits
 * jobs and reaps finished ones; workers signal an eventfd when the done list becomes non-empty.
 * A job stuck in the kernel (hung filesystem) cannot be interrupted, so it can be "released":
 * the pool then may run one more worker in its place (up to max), and the surplus worker exits
 * when the call returns.  The owner releases a job (pool_release), or a timed pool releases one
 * itself once it has run for longer than stuck_ns.  Private to libdirahead (the engine's stat
 * and reader pools), and shared with the daemon's openers (daemon/diraheadd/opener.c, linked
 * from libdirahead.a); libdirahead.map keeps it out of libdirahead.so's symbols.
 */
#ifndef DIRAHEAD_POOL_H
#define DIRAHEAD_POOL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "list.h"

enum pool_job_state { JOB_NEW, JOB_QUEUED, JOB_RUNNING, JOB_DONE };

struct pool_job {
	struct list_head node;                /* on the pool's queue, running or done list */
	void (*run)(struct pool_job *j);      /* called in a worker */
	void (*discard)(struct pool_job *j);  /* frees a job nobody will reap (the pool closed) */
	enum pool_job_state state;            /* under the pool lock */
	bool released;                        /* under the pool lock: stuck or no longer counted */
	uint64_t start_ns;                    /* timed pools: when it started running */
};

struct pool;

/* base: workers normally allowed; max: hard cap including replacements for released jobs.
 * Workers are started on demand and exit after a few idle seconds.  notify_fd: an eventfd. */
struct pool *pool_new(unsigned base, unsigned max, int notify_fd);
/* As pool_new, with `stack` bytes for each worker and, if stuck_ns is not 0, a clock: a job
 * running for longer than stuck_ns is released (checked at pool_submit and pool_visit). */
struct pool *pool_new_timed(unsigned base, unsigned max, int notify_fd, size_t stack,
			    uint64_t stuck_ns);
/* Queues a job; -errno if no worker exists and none can be started (the job is the caller's). */
int pool_submit(struct pool *p, struct pool_job *j);
/* True if the job was still queued: it is removed and belongs to the caller again.  False if it
 * is running or finished: it will show up in pool_take_done() (or be discarded). */
bool pool_cancel(struct pool *p, struct pool_job *j);
/* The owner stops counting a running job (stuck or no longer wanted): allow one more worker. */
void pool_release(struct pool *p, struct pool_job *j);
/* Calls fn(j, ctx) for every job queued (JOB_QUEUED) or running (JOB_RUNNING, released if
 * stuck), under the pool's lock: fn only reads, and calls no pool function. */
void pool_visit(struct pool *p, void (*fn)(const struct pool_job *j, void *ctx), void *ctx);
/* Moves finished jobs to `out` (in completion order). */
void pool_take_done(struct pool *p, struct list_head *out);
/* Discards queued and finished jobs, lets running ones discard themselves when their call
 * returns, and frees the pool when its last worker is gone.  Never waits for a worker.  No
 * worker writes notify_fd once it returns: the owner may close it. */
void pool_close(struct pool *p);

#endif /* DIRAHEAD_POOL_H */
