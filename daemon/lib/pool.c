/* SPDX-License-Identifier: LGPL-2.1-or-later OR BSD-2-Clause */
#include "pool.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "monoclock.h"

/* Workers only make a few syscalls; a small stack keeps hundreds of them cheap. */
#define WORKER_STACK (256 * 1024)
#define IDLE_EXIT_SEC 5

struct pool {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct list_head queue, running, done;
	unsigned queued;     /* jobs on `queue` */
	unsigned nthreads;   /* workers alive (including stuck ones) */
	unsigned idle;       /* workers waiting for a job */
	unsigned released;   /* running jobs the owner no longer counts */
	unsigned base, max;
	int notify_fd;
	size_t stack;
	uint64_t stuck_ns;   /* 0: only the owner releases jobs */
	bool closing;
};

static void notify(struct pool *p)
{
	uint64_t one = 1;
	/* Under the lock: after pool_close() the owner may close the fd at any time. */
	if (write(p->notify_fd, &one, sizeof(one)) < 0) {
		/* EAGAIN: the counter is saturated, the owner is already woken */
	}
}

static void pool_destroy(struct pool *p)
{
	pthread_mutex_destroy(&p->lock);
	pthread_cond_destroy(&p->cond);
	free(p);
}

static unsigned target(const struct pool *p)
{
	unsigned t = p->base + p->released;
	return t > p->max ? p->max : t;
}

/* Under the lock (timed pools): running jobs past stuck_ns no longer hold a worker. */
static void release_stuck(struct pool *p)
{
	if (!p->stuck_ns)
		return;
	uint64_t now = mono_ns();
	for (struct list_head *n = p->running.next; n != &p->running; n = n->next) {
		struct pool_job *j = list_entry(n, struct pool_job, node);
		if (!j->released && now - j->start_ns > p->stuck_ns) {
			j->released = true;
			p->released++;
		}
	}
}

static void *worker(void *arg)
{
	struct pool *p = arg;
	bool last;

	pthread_mutex_lock(&p->lock);
	for (;;) {
		while (!p->queued && !p->closing) {
			struct timespec ts;
			clock_gettime(CLOCK_REALTIME, &ts);
			ts.tv_sec += IDLE_EXIT_SEC;
			p->idle++;
			int r = pthread_cond_timedwait(&p->cond, &p->lock, &ts);
			p->idle--;
			if (r == ETIMEDOUT && !p->queued && !p->closing)
				goto out;
		}
		if (p->closing)
			break;
		struct pool_job *j = list_first(&p->queue, struct pool_job, node);
		list_del(&j->node);
		p->queued--;
		j->state = JOB_RUNNING;
		if (p->stuck_ns)
			j->start_ns = mono_ns();
		list_add_tail(&j->node, &p->running);
		pthread_mutex_unlock(&p->lock);

		j->run(j);

		pthread_mutex_lock(&p->lock);
		list_del(&j->node);
		if (j->released)
			p->released--;
		if (p->closing) {
			pthread_mutex_unlock(&p->lock);
			j->discard(j);
			pthread_mutex_lock(&p->lock);
			break;
		}
		j->state = JOB_DONE;
		/* The owner takes the whole list after draining the eventfd: one wakeup per
		 * non-empty list is enough, and saves a syscall per job. */
		if (list_empty(&p->done))
			notify(p);
		list_add_tail(&j->node, &p->done);
		/* A replacement was started while this one was stuck: one of us is surplus now. */
		if (p->nthreads > target(p))
			break;
	}
out:
	p->nthreads--;
	last = p->closing && !p->nthreads;
	pthread_mutex_unlock(&p->lock);
	if (last)
		pool_destroy(p);
	return NULL;
}

/* Called with the lock held. */
static int spawn(struct pool *p)
{
	pthread_attr_t attr;
	pthread_t t;
	sigset_t all, old;
	int r;

	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	pthread_attr_setstacksize(&attr, p->stack);
	/* Workers block every signal, so the application's signals go to its own threads. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	r = pthread_create(&t, &attr, worker, p);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	pthread_attr_destroy(&attr);
	if (r)
		return -r;
	p->nthreads++;
	return 0;
}

/* Called with the lock held: start workers while jobs wait and the target allows. */
static void grow(struct pool *p)
{
	while (p->queued > p->idle && p->nthreads < target(p))
		if (spawn(p) < 0)
			break;
}

struct pool *pool_new_timed(unsigned base, unsigned max, int notify_fd, size_t stack,
			    uint64_t stuck_ns)
{
	struct pool *p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	pthread_mutex_init(&p->lock, NULL);
	pthread_cond_init(&p->cond, NULL);
	list_init(&p->queue);
	list_init(&p->running);
	list_init(&p->done);
	p->base = base ? base : 1;
	p->max = max < p->base ? p->base : max;
	p->notify_fd = notify_fd;
	p->stack = stack;
	p->stuck_ns = stuck_ns;
	return p;
}

struct pool *pool_new(unsigned base, unsigned max, int notify_fd)
{
	return pool_new_timed(base, max, notify_fd, WORKER_STACK, 0);
}

int pool_submit(struct pool *p, struct pool_job *j)
{
	int r = 0;
	pthread_mutex_lock(&p->lock);
	j->state = JOB_QUEUED;
	j->released = false;
	list_add_tail(&j->node, &p->queue);
	p->queued++;
	release_stuck(p);
	grow(p);
	if (!p->nthreads) {
		list_del(&j->node);
		p->queued--;
		j->state = JOB_NEW;
		r = -EAGAIN;
	} else if (p->idle) {
		pthread_cond_signal(&p->cond);
	}
	pthread_mutex_unlock(&p->lock);
	return r;
}

bool pool_cancel(struct pool *p, struct pool_job *j)
{
	bool removed = false;
	pthread_mutex_lock(&p->lock);
	if (j->state == JOB_QUEUED) {
		list_del(&j->node);
		p->queued--;
		j->state = JOB_NEW;
		removed = true;
	}
	pthread_mutex_unlock(&p->lock);
	return removed;
}

void pool_release(struct pool *p, struct pool_job *j)
{
	pthread_mutex_lock(&p->lock);
	if (j->state == JOB_RUNNING && !j->released) {
		j->released = true;
		p->released++;
		grow(p);
	}
	pthread_mutex_unlock(&p->lock);
}

void pool_visit(struct pool *p, void (*fn)(const struct pool_job *j, void *ctx), void *ctx)
{
	struct list_head *lists[] = { &p->queue, &p->running };
	pthread_mutex_lock(&p->lock);
	release_stuck(p);
	for (size_t i = 0; i < sizeof(lists) / sizeof(lists[0]); i++)
		for (struct list_head *n = lists[i]->next; n != lists[i]; n = n->next)
			fn(list_entry(n, struct pool_job, node), ctx);
	pthread_mutex_unlock(&p->lock);
}

void pool_take_done(struct pool *p, struct list_head *out)
{
	pthread_mutex_lock(&p->lock);
	list_splice_tail(&p->done, out);
	pthread_mutex_unlock(&p->lock);
}

void pool_close(struct pool *p)
{
	struct list_head drop = LIST_INIT(drop), *pos, *n;
	bool last;

	if (!p)
		return;
	pthread_mutex_lock(&p->lock);
	p->closing = true;
	list_splice_tail(&p->queue, &drop);
	list_splice_tail(&p->done, &drop);
	p->queued = 0;
	pthread_cond_broadcast(&p->cond);
	last = !p->nthreads;
	pthread_mutex_unlock(&p->lock);
	list_for_each_safe(pos, n, &drop) {
		struct pool_job *j = list_entry(pos, struct pool_job, node);
		list_del(pos);
		j->discard(j);
	}
	if (last)
		pool_destroy(p);
}
