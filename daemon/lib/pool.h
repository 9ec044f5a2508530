/* SPDX-License-Identifier: LGPL-2.1-or-later OR BSD-2-Clause */
/*
 * A worker-thread pool for blocking filesystem calls (statx, open, getdents).  One owner thread
 * submits jobs and reaps finished ones; workers signal an eventfd when a job finishes.  A job stuck
 * in the kernel (hung filesystem) cannot be interrupted, so the owner can "release" it: the pool
 * then may run one more worker in its place, and the stuck worker exits when its call returns.
 * Private to libdirahead.
 */
#ifndef DIRAHEAD_POOL_H
#define DIRAHEAD_POOL_H

#include <stdbool.h>
#include "list.h"

enum pool_job_state { JOB_NEW, JOB_QUEUED, JOB_RUNNING, JOB_DONE };

struct pool_job {
	struct list_head node;                /* on the pool's queue or done list */
	void (*run)(struct pool_job *j);      /* called in a worker */
	void (*discard)(struct pool_job *j);  /* frees a job nobody will reap (the pool closed) */
	enum pool_job_state state;            /* under the pool lock */
	bool released;
};

struct pool;

/* base: workers normally allowed; max: hard cap including replacements for released jobs.
 * Workers are started on demand and exit after a few idle seconds.  notify_fd: an eventfd. */
struct pool *pool_new(unsigned base, unsigned max, int notify_fd);
/* Queues a job; -errno if no worker exists and none can be started. */
int pool_submit(struct pool *p, struct pool_job *j);
/* True if the job was still queued: it is removed and belongs to the caller again.  False if it
 * is running or finished: it will show up in pool_take_done() (or be discarded). */
bool pool_cancel(struct pool *p, struct pool_job *j);
/* The owner stops counting a running job (stuck or no longer wanted): allow one more worker. */
void pool_release(struct pool *p, struct pool_job *j);
/* Moves finished jobs to `out` (in completion order). */
void pool_take_done(struct pool *p, struct list_head *out);
/* Discards queued and finished jobs, lets running ones discard themselves when their call
 * returns, and frees the pool when its last worker is gone.  Never waits for a worker. */
void pool_close(struct pool *p);

#endif /* DIRAHEAD_POOL_H */
