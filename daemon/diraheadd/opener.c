/* SPDX-License-Identifier: LGPL-2.1-or-later OR BSD-2-Clause */
/*
 * The openers' policy (opener.h) over libdirahead's worker pool (daemon/lib/pool.h), which does
 * the mechanics: threads, queue, wakeups, shutdown, and stuck jobs released after stuck_ms with
 * a replacement thread.  Here: each job's filesystem and user, the per-user share, the refusal
 * rules, the stuck counts, and the eventfd that brings finished jobs back to the event loop.
 */
#include "opener.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "list.h"
#include "pool.h"

/* Threads in all, stuck ones included: replacements for stuck jobs stop here (each stuck job is
 * also its user's, and a user has per_user at most). */
#define MAX_FACTOR 4
/* Openers open, read and sort one directory at a time: a small stack is plenty. */
#define OPENER_STACK (64 * 1024)

struct job {
	struct pool_job pj;
	void (*run)(void *), (*done)(void *), (*discard)(void *);
	void *arg;
	uint32_t dev_major, dev_minor;   /* 0:0: not known yet (a run by path) */
	uint32_t uid;
};

struct opener {
	struct pool *pool;
	unsigned threads, per_user;
	int efd;
	sd_event_source *src;
};

static struct job *job_of(const struct pool_job *pj)
{
	return list_entry(pj, struct job, pj);
}

static void job_run(struct pool_job *pj)
{
	struct job *j = job_of(pj);
	j->run(j->arg);
}

/* Nobody will take it (the opener is gone): let go of what it holds, in whatever thread. */
static void job_discard(struct pool_job *pj)
{
	struct job *j = job_of(pj);
	j->discard(j->arg);
	free(j);
}

static int on_done(sd_event_source *s, int fd, uint32_t revents, void *userdata)
{
	struct opener *o = userdata;
	struct list_head done = LIST_INIT(done), *pos, *n;
	uint64_t cnt;
	(void)s;
	(void)revents;
	if (read(fd, &cnt, sizeof(cnt)) < 0) {
		/* EAGAIN: a spurious wakeup */
	}
	pool_take_done(o->pool, &done);
	list_for_each_safe(pos, n, &done) {
		struct job *j = job_of(list_entry(pos, struct pool_job, node));
		list_del(pos);
		j->done(j->arg);
		free(j);
	}
	return 0;
}

static void destroy(struct opener *o)
{
	sd_event_source_disable_unref(o->src);
	if (o->pool)
		pool_close(o->pool);
	if (o->efd >= 0)
		close(o->efd);
	free(o);
}

struct opener *opener_new(sd_event *loop, unsigned threads, unsigned per_user, unsigned stuck_ms)
{
	struct opener *o = calloc(1, sizeof(*o));
	if (!o)
		return NULL;
	o->threads = threads ? threads : 1;
	o->per_user = per_user ? per_user : 1;
	o->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	/* stuck_ms 0: stuck as soon as it runs (the pool's 0 would mean never) */
	uint64_t stuck_ns = stuck_ms ? (uint64_t)stuck_ms * 1000000ull : 1;
	if (o->efd >= 0)
		o->pool = pool_new_timed(o->threads, MAX_FACTOR * o->threads, o->efd, OPENER_STACK,
					 stuck_ns);
	if (!o->pool || sd_event_add_io(loop, &o->src, o->efd, EPOLLIN, on_done, o) < 0) {
		destroy(o);
		return NULL;
	}
	return o;
}

/* What the pool holds, seen from one user and one filesystem. */
struct tally {
	bool any;                        /* count stuck jobs of any filesystem */
	uint32_t dev_major, dev_minor, uid;
	unsigned queued, running, stuck; /* all of them */
	unsigned user;                   /* uid's jobs queued or running, stuck ones too */
	unsigned stuck_on;               /* stuck on dev (on 0:0: uid's with no filesystem yet) */
};

static void count(const struct pool_job *pj, void *ctx)
{
	struct tally *t = ctx;
	const struct job *j = job_of(pj);
	bool running = pj->state == JOB_RUNNING, stuck = running && pj->released;
	t->queued += !running;
	t->running += running;
	t->stuck += stuck;
	t->user += j->uid == t->uid;
	t->stuck_on += stuck && (t->any || (j->dev_major == t->dev_major &&
					    j->dev_minor == t->dev_minor &&
					    (t->dev_major || t->dev_minor || j->uid == t->uid)));
}

static struct tally tally(const struct opener *o, bool any, uint32_t maj, uint32_t min,
			  uint32_t uid)
{
	struct tally t = { .any = any, .dev_major = maj, .dev_minor = min, .uid = uid };
	pool_visit(o->pool, count, &t);
	return t;
}

/* May a new job of the user tallied be queued now?  0, -EUSERS or -EBUSY.  A tally taken before
 * the submission can only be stale towards refusing (jobs end meanwhile), never towards more. */
static int admission(const struct opener *o, const struct tally *t)
{
	if (t->user >= o->per_user)
		return -EUSERS;
	/* stuck jobs no longer hold the pool (their users' shares hold them) */
	if (t->queued >= o->threads && t->running - t->stuck >= o->threads)
		return -EBUSY;
	return 0;
}

int opener_run(struct opener *o, uint32_t dev_major, uint32_t dev_minor, uint32_t uid,
	       void (*run)(void *arg), void (*done)(void *arg), void (*discard)(void *arg), void *arg)
{
	struct tally t = tally(o, false, dev_major, dev_minor, uid);
	int r = admission(o, &t);
	if (r < 0)
		return r;
	struct job *j = calloc(1, sizeof(*j));
	if (!j)
		return -ENOMEM;
	*j = (struct job){ .pj = { .run = job_run, .discard = job_discard },
			   .run = run, .done = done, .discard = discard, .arg = arg,
			   .dev_major = dev_major, .dev_minor = dev_minor, .uid = uid };
	r = pool_submit(o->pool, &j->pj);
	if (r < 0) /* no thread at all: nothing would run it */
		free(j);
	return r;
}

unsigned opener_stuck(const struct opener *o)
{
	return tally(o, true, 0, 0, 0).stuck_on;
}

unsigned opener_stuck_on(const struct opener *o, uint32_t dev_major, uint32_t dev_minor,
			 uint32_t uid)
{
	return tally(o, false, dev_major, dev_minor, uid).stuck_on;
}

void opener_free(struct opener *o)
{
	if (o)
		destroy(o);
}
