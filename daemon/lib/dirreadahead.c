/* SPDX-License-Identifier: LGPL-2.1-or-later OR BSD-2-Clause */
/*
 * dirreadahead(): the 2014 system-call proposal as a library call.  The caller's thread reads the
 * names (on its own open file description); a process-wide engine, owned by a background thread,
 * stats them.
 */
#include "internal.h"

#include <assert.h>
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#define MAX_PER_CALL 4096      /* names read per call: bounds the time and memory of one call */
#define MAX_PENDING 65536      /* entries handed over and not yet fetched, per process */
#define NCOOKIES 32            /* directories whose walk can be resumed without re-reading */

struct pending {
	struct list_head node;
	int fd;
	struct da_batch *b;
};

struct cookie {
	dev_t dev;
	ino_t ino;
	uint64_t index;         /* entries before the position */
	int64_t pos;            /* readdir cookie (d_off) of that position */
	uint64_t used;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t started = PTHREAD_COND_INITIALIZER;
static pthread_once_t once = PTHREAD_ONCE_INIT;
static struct {
	pid_t pid;              /* process the engine belongs to (0: none) */
	bool starting;
	int start_error;
	int cmd_fd;             /* eventfd: new work queued */
	struct list_head queue;
	uint64_t pending;
	struct cookie cookies[NCOOKIES];
	uint64_t tick;
} g;

/* ---- the background thread ----------------------------------------------------------------- */
static void on_done(struct dirahead_dir *d, void *data, int error, void *ctx)
{
	(void)d;
	(void)error;
	(void)ctx;
	pthread_mutex_lock(&lock);
	g.pending -= (uintptr_t)data;
	pthread_mutex_unlock(&lock);
}

static struct dirahead_engine *make_engine(void)
{
	struct dirahead_engine_opts o = { .size = sizeof(o), .on_dir_done = on_done };
	const char *b = secure_getenv("DIRAHEAD_BACKEND"), *depth = secure_getenv("DIRAHEAD_DEPTH");
	if (b && !strcmp(b, "io_uring"))
		o.backend = DIRAHEAD_BACKEND_URING;
	else if (b && !strcmp(b, "threads"))
		o.backend = DIRAHEAD_BACKEND_THREADS;
	if (depth) {
		long v = strtol(depth, NULL, 10);
		if (v > 0 && v <= 4096)
			o.depth = (unsigned)v;
	}
	return dirahead_engine_new(&o);
}

static void *engine_thread(void *arg)
{
	int cmd_fd = (int)(intptr_t)arg;
	/* Created here so that the io_uring (and its io-wq workers) belongs to this thread. */
	struct dirahead_engine *e = make_engine();

	pthread_mutex_lock(&lock);
	g.start_error = e ? 0 : errno;
	g.starting = false;
	pthread_cond_broadcast(&started);
	pthread_mutex_unlock(&lock);
	if (!e)
		return NULL;

	for (;;) {
		struct pollfd p[2] = {
			{ .fd = dirahead_engine_fd(e), .events = POLLIN },
			{ .fd = cmd_fd, .events = POLLIN },
		};
		if (poll(p, 2, -1) < 0)
			continue;
		if (p[1].revents) {
			struct list_head q = LIST_INIT(q), *pos, *n;
			uint64_t v;
			if (read(cmd_fd, &v, sizeof(v)) < 0) {
				/* EAGAIN: raced with another wakeup */
			}
			pthread_mutex_lock(&lock);
			list_splice_tail(&g.queue, &q);
			pthread_mutex_unlock(&lock);
			list_for_each_safe(pos, n, &q) {
				struct pending *p = list_entry(pos, struct pending, node);
				uint32_t cnt = p->b->n;
				list_del(pos);
				if (!da_dir_submit_batch(e, p->fd, p->b, (void *)(uintptr_t)cnt)) {
					close(p->fd);
					da_batch_free(p->b);
					pthread_mutex_lock(&lock);
					g.pending -= cnt;
					pthread_mutex_unlock(&lock);
				}
				free(p);
			}
		}
		dirahead_engine_process(e);
	}
	return NULL;
}

static void atfork_prepare(void) { pthread_mutex_lock(&lock); }
static void atfork_parent(void) { pthread_mutex_unlock(&lock); }
static void atfork_child(void)
{
	/* The engine thread does not exist in the child: forget the parent's (its memory and
	 * fds are the parent's business) and start afresh on the next call. */
	pthread_mutex_init(&lock, NULL);
	pthread_cond_init(&started, NULL);
	memset(&g, 0, sizeof(g));
	list_init(&g.queue);
}

static void init_once(void)
{
	list_init(&g.queue);
	pthread_atfork(atfork_prepare, atfork_parent, atfork_child);
}

/* Called with the lock held; starts the engine thread on first use. */
static int ensure_engine(void)
{
	pthread_t t;
	pthread_attr_t attr;
	sigset_t all, old;
	int fd, r;

	while (g.starting)
		pthread_cond_wait(&started, &lock);
	if (g.pid == getpid())
		return 0;
	fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (fd < 0)
		return -errno;
	g.starting = true;
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old); /* the application's signals are not ours */
	r = pthread_create(&t, &attr, engine_thread, (void *)(intptr_t)fd);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	pthread_attr_destroy(&attr);
	if (r) {
		g.starting = false;
		close(fd);
		return -r;
	}
	while (g.starting)
		pthread_cond_wait(&started, &lock);
	if (g.start_error) {
		close(fd); /* the thread has exited without using it further */
		return -g.start_error;
	}
	g.cmd_fd = fd;
	g.pid = getpid();
	return 0;
}

/* ---- resuming walks ------------------------------------------------------------------------ */
static struct cookie *cookie_find(dev_t dev, ino_t ino, uint64_t index)
{
	struct cookie *best = NULL;
	for (int i = 0; i < NCOOKIES; i++) {
		struct cookie *c = &g.cookies[i];
		if (c->used && c->dev == dev && c->ino == ino && c->index <= index &&
		    (!best || c->index > best->index))
			best = c;
	}
	return best;
}

static void cookie_store(dev_t dev, ino_t ino, uint64_t index, int64_t pos)
{
	struct cookie *slot = &g.cookies[0];
	for (int i = 0; i < NCOOKIES; i++) {
		struct cookie *c = &g.cookies[i];
		if (c->used && c->dev == dev && c->ino == ino) {
			slot = c; /* one position per directory: the latest walk */
			break;
		}
		if (c->used < slot->used)
			slot = c;
	}
	*slot = (struct cookie){ .dev = dev, .ino = ino, .index = index, .pos = pos,
				 .used = ++g.tick };
}

/* ---- the call -------------------------------------------------------------------------------- */
/* Where a walk of this directory stopped before, if one did at or before the asked index. */
struct resume {
	int64_t pos;            /* readdir cookie to seek to, -1: read from the start */
	uint64_t index;         /* entries before pos */
};

/* The arguments, as the system call would check them: 0 (st filled) or -errno. */
static int check_args(unsigned int fd, const loff_t *offset, struct stat *st)
{
	if (fd > INT_MAX)
		return -EBADF;
	if (fstat((int)fd, st) < 0)
		return -errno;
	if (!S_ISDIR(st->st_mode))
		return -ENOTDIR;
	if (!offset)
		return -EFAULT;
	if (*offset < 0)
		return -EINVAL;
	return 0;
}

/* Under the lock: the engine started, room for more, and where an earlier walk stopped.
 * 0 or -errno. */
static int prepare(const struct stat *st, uint64_t start, struct resume *at)
{
	struct cookie *ck;
	int r;

	pthread_once(&once, init_once);
	pthread_mutex_lock(&lock);
	r = ensure_engine();
	if (!r && g.pending >= MAX_PENDING)
		r = -EAGAIN;
	if (!r && (ck = cookie_find(st->st_dev, st->st_ino, start))) {
		at->pos = ck->pos;
		at->index = ck->index;
	}
	pthread_mutex_unlock(&lock);
	return r;
}

/* Moves ds to the entry at index start, from a resumed walk's position when it still holds:
 * 1 there, 0 if the directory ends before it, -errno. */
static int seek_to(struct da_dirstream *ds, int own, uint64_t start, const struct resume *at)
{
	const char *name;
	uint64_t ino, skip = start;
	uint8_t type;
	int r = 1;

	if (at->pos >= 0 && lseek(own, at->pos, SEEK_SET) == at->pos)
		skip = start - at->index;
	else
		lseek(own, 0, SEEK_SET);
	while (skip && (r = da_ds_next(ds, &name, &ino, &type)) > 0)
		skip--;
	return r;
}

/* Up to count names (MAX_PER_CALL at most) into *out: how many, 0 at the end, or -errno when
 * none was read (an error after some entries is left for the next call to report). */
static int read_batch(struct da_dirstream *ds, uint64_t start, unsigned int count,
		      struct da_batch **out)
{
	const char *name;
	uint64_t ino;
	uint8_t type;
	int r = 1;
	struct da_batch *b = da_batch_new(start, count < MAX_PER_CALL ? count : MAX_PER_CALL);

	*out = b;
	if (!b)
		return -ENOMEM;
	while (!da_batch_full(b) && (r = da_ds_next(ds, &name, &ino, &type)) > 0)
		if ((r = da_batch_add(b, name, ino, type)) < 0)
			break;
	if (b->n)
		return (int)b->n;
	return r < 0 ? r : 0;
}

/* Queues the batch of n entries (with own, which the engine thread closes) and wakes the
 * thread: 0, after which neither is the caller's to touch, or -ENOMEM, when the caller keeps
 * both. */
static int hand_over(int own, struct da_batch *b, uint32_t n, const struct stat *st,
		     uint64_t start, int64_t cookie)
{
	struct pending *p = malloc(sizeof(*p));
	uint64_t one = 1;

	assert(n > 0 && n == b->n);
	if (!p)
		return -ENOMEM;
	p->fd = own;
	p->b = b;
	pthread_mutex_lock(&lock);
	cookie_store(st->st_dev, st->st_ino, start + n, cookie);
	g.pending += n;
	list_add_tail(&p->node, &g.queue);
	if (write(g.cmd_fd, &one, sizeof(one)) < 0) {
		/* EAGAIN: the thread is already woken */
	}
	pthread_mutex_unlock(&lock);
	return 0;
}

int dirreadahead(unsigned int fd, loff_t *offset, unsigned int count)
{
	struct da_dirstream ds;
	struct da_batch *b = NULL;
	struct stat st;
	struct resume at = { .pos = -1 };
	uint64_t start;
	uint32_t n;
	int own, r;

	r = check_args(fd, offset, &st);
	if (r < 0) {
		errno = -r;
		return -1;
	}
	if (!count)
		return 0;
	start = (uint64_t)*offset;
	r = prepare(&st, start, &at);
	if (r < 0) {
		errno = -r;
		return -1;
	}

	/* Our own open file description: the caller's position must not move. */
	own = openat((int)fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (own < 0)
		return -1;
	if (da_ds_init(&ds, own) < 0) {
		close(own);
		errno = ENOMEM;
		return -1;
	}
	r = seek_to(&ds, own, start, &at); /* 0: *offset is at or past the end */
	if (r > 0)
		r = read_batch(&ds, start, count, &b);
	n = r > 0 ? (uint32_t)r : 0;
	if (n)
		r = hand_over(own, b, n, &st, start, ds.cookie);
	da_ds_fini(&ds);
	if (n && r == 0) {
		*offset = (loff_t)(start + n);
		return (int)n; /* b and own are the engine thread's now: not to be touched */
	}
	close(own);
	da_batch_free(b);
	if (r < 0) {
		errno = -r;
		return -1;
	}
	return 0;
}
