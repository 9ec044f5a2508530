/* SPDX-License-Identifier: LGPL-2.1-or-later OR BSD-2-Clause */
#include "opener.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "list.h"
#include "monoclock.h"

/* An idle opener thread exits after this long: an idle daemon keeps none. */
#define IDLE_EXIT_SEC 5
/* Threads in all, stuck ones included: replacements for stuck jobs stop here (each stuck job is
 * also its user's, and a user has per_user at most). */
#define MAX_FACTOR 4

struct job {
	struct list_head node;      /* queue, running or done list */
	void (*run)(void *), (*done)(void *), (*discard)(void *);
	void *arg;
	uint32_t dev_major, dev_minor;   /* 0:0: not known yet (a run by path) */
	uint32_t uid;
	uint64_t start_ns;
};

struct opener {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct list_head queue, running, done;
	unsigned threads, nthreads, idle, nqueued, nrunning;
	unsigned per_user;
	uint64_t stuck_ns;
	int efd;
	sd_event_source *src;
	bool closing;               /* opener_free() was called: threads free it when the last ends */
};


static void destroy(struct opener *o)
{
	pthread_mutex_destroy(&o->lock);
	pthread_cond_destroy(&o->cond);
	if (o->efd >= 0)
		close(o->efd);
	free(o);
}

static void *worker(void *arg)
{
	struct opener *o = arg;
	pthread_mutex_lock(&o->lock);
	for (;;) {
		while (list_empty(&o->queue) && !o->closing) {
			struct timespec ts;
			clock_gettime(CLOCK_REALTIME, &ts);
			ts.tv_sec += IDLE_EXIT_SEC;
			o->idle++;
			int r = pthread_cond_timedwait(&o->cond, &o->lock, &ts);
			o->idle--;
			if (r == ETIMEDOUT && list_empty(&o->queue))
				goto out;
		}
		if (o->closing)
			break;
		struct job *j = list_first(&o->queue, struct job, node);
		list_del(&j->node);
		o->nqueued--;
		o->nrunning++;
		j->start_ns = mono_ns();
		list_add_tail(&j->node, &o->running);
		pthread_mutex_unlock(&o->lock);

		j->run(j->arg);

		pthread_mutex_lock(&o->lock);
		list_del(&j->node);
		o->nrunning--;
		if (o->closing) { /* nobody will take it: let go of what it holds here */
			pthread_mutex_unlock(&o->lock);
			j->discard(j->arg);
			free(j);
			pthread_mutex_lock(&o->lock);
			break;
		}
		list_add_tail(&j->node, &o->done);
		uint64_t one = 1;
		if (write(o->efd, &one, sizeof(one)) < 0) {
			/* the counter cannot overflow at our rate: nothing to do */
		}
	}
out:;
	bool last = --o->nthreads == 0 && o->closing;
	pthread_mutex_unlock(&o->lock);
	if (last)
		destroy(o);
	return NULL;
}

static int on_done(sd_event_source *s, int fd, uint32_t revents, void *userdata)
{
	struct opener *o = userdata;
	uint64_t n;
	struct list_head done;
	(void)s;
	(void)revents;
	if (read(fd, &n, sizeof(n)) < 0) {
		/* EAGAIN: a spurious wakeup */
	}
	list_init(&done);
	pthread_mutex_lock(&o->lock);
	while (!list_empty(&o->done)) {
		struct job *j = list_first(&o->done, struct job, node);
		list_del(&j->node);
		list_add_tail(&j->node, &done);
	}
	pthread_mutex_unlock(&o->lock);
	while (!list_empty(&done)) {
		struct job *j = list_first(&done, struct job, node);
		list_del(&j->node);
		j->done(j->arg);
		free(j);
	}
	return 0;
}

struct opener *opener_new(sd_event *loop, unsigned threads, unsigned per_user, unsigned stuck_ms)
{
	struct opener *o = calloc(1, sizeof(*o));
	if (!o)
		return NULL;
	pthread_mutex_init(&o->lock, NULL);
	pthread_cond_init(&o->cond, NULL);
	list_init(&o->queue);
	list_init(&o->running);
	list_init(&o->done);
	o->threads = threads ? threads : 1;
	o->per_user = per_user ? per_user : 1;
	o->stuck_ns = (uint64_t)stuck_ms * 1000000ull;
	o->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (o->efd < 0 || sd_event_add_io(loop, &o->src, o->efd, EPOLLIN, on_done, o) < 0) {
		destroy(o);
		return NULL;
	}
	return o;
}

static bool is_stuck(const struct opener *o, const struct job *j, uint64_t now)
{
	return now - j->start_ns > o->stuck_ns;
}

/* What a new job of `uid` meets (under the lock): the user's jobs queued or running (stuck ones
 * too: they are the user's until they return), and the running jobs that are stuck. */
static void tally(const struct opener *o, uint32_t uid, unsigned *user, unsigned *stuck)
{
	uint64_t t = mono_ns();
	*user = *stuck = 0;
	for (struct list_head *p = o->queue.next; p != &o->queue; p = p->next)
		*user += list_entry(p, struct job, node)->uid == uid;
	for (struct list_head *p = o->running.next; p != &o->running; p = p->next) {
		const struct job *j = list_entry(p, struct job, node);
		*user += j->uid == uid;
		*stuck += is_stuck(o, j, t);
	}
}

/* May a new job of a user with `user` jobs be queued now?  0, -EUSERS or -EBUSY. */
static int admission(const struct opener *o, unsigned user, unsigned stuck)
{
	if (user >= o->per_user)
		return -EUSERS;
	/* stuck jobs no longer hold the pool (their users' shares hold them) */
	if (o->nqueued >= o->threads && o->nrunning - stuck >= o->threads)
		return -EBUSY;
	return 0;
}

int opener_run(struct opener *o, uint32_t dev_major, uint32_t dev_minor, uint32_t uid,
	       void (*run)(void *arg), void (*done)(void *arg), void (*discard)(void *arg), void *arg)
{
	unsigned user, nstuck;
	pthread_mutex_lock(&o->lock);
	tally(o, uid, &user, &nstuck);
	int r = admission(o, user, nstuck);
	if (r < 0) {
		pthread_mutex_unlock(&o->lock);
		return r;
	}
	struct job *j = calloc(1, sizeof(*j));
	if (!j) {
		pthread_mutex_unlock(&o->lock);
		return -ENOMEM;
	}
	*j = (struct job){ .run = run, .done = done, .discard = discard, .arg = arg,
			   .dev_major = dev_major, .dev_minor = dev_minor, .uid = uid };
	list_add_tail(&j->node, &o->queue);
	o->nqueued++;
	if (o->idle) {
		pthread_cond_signal(&o->cond);
	} else if (o->nthreads - nstuck < o->threads && o->nthreads < MAX_FACTOR * o->threads) {
		/* a thread more, or one in place of a stuck one (which goes when its call returns) */
		pthread_t th;
		pthread_attr_t attr;
		pthread_attr_init(&attr);
		pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
		pthread_attr_setstacksize(&attr, 64 * 1024);
		if (pthread_create(&th, &attr, worker, o) == 0)
			o->nthreads++;
		pthread_attr_destroy(&attr);
		if (!o->nthreads) { /* no thread at all: nothing would run it */
			list_del(&j->node);
			o->nqueued--;
			pthread_mutex_unlock(&o->lock);
			free(j);
			return -EAGAIN;
		}
	}
	pthread_mutex_unlock(&o->lock);
	return 0;
}

static unsigned stuck(const struct opener *o, bool any, uint32_t maj, uint32_t min, uint32_t uid)
{
	struct opener *m = (struct opener *)o; /* the lock, not the state, changes */
	uint64_t t = mono_ns();
	unsigned n = 0;
	pthread_mutex_lock(&m->lock);
	for (struct list_head *p = m->running.next; p != &m->running; p = p->next) {
		const struct job *j = list_entry(p, struct job, node);
		n += is_stuck(o, j, t) &&
		     (any || (j->dev_major == maj && j->dev_minor == min &&
			      (maj || min || j->uid == uid)));
	}
	pthread_mutex_unlock(&m->lock);
	return n;
}

unsigned opener_stuck(const struct opener *o)
{
	return stuck(o, true, 0, 0, 0);
}

unsigned opener_stuck_on(const struct opener *o, uint32_t dev_major, uint32_t dev_minor,
			 uint32_t uid)
{
	return stuck(o, false, dev_major, dev_minor, uid);
}

void opener_free(struct opener *o)
{
	if (!o)
		return;
	sd_event_source_disable_unref(o->src);
	o->src = NULL;
	pthread_mutex_lock(&o->lock);
	o->closing = true;
	/* queued and finished jobs are nobody's now */
	struct list_head *lists[] = { &o->queue, &o->done };
	for (int i = 0; i < 2; i++)
		while (!list_empty(lists[i])) {
			struct job *j = list_first(lists[i], struct job, node);
			list_del(&j->node);
			j->discard(j->arg);
			free(j);
		}
	o->nqueued = 0;
	pthread_cond_broadcast(&o->cond);
	bool none = o->nthreads == 0;
	pthread_mutex_unlock(&o->lock);
	if (none)
		destroy(o);
}
