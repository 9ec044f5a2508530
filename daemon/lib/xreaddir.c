/* SPDX-License-Identifier: LGPL-2.1-or-later OR BSD-2-Clause */
/*
 * dirahead_xreaddir(): a directory's entries with the attributes asked for, one at a time, in
 * order, over a bounded window of entries listed ahead.  Fetches run inline (in the caller's
 * thread) while they are fast, and in parallel on the engine's backends (io_uring statx, or the
 * worker pool for statx + xattrs) once one was slow.  Slots of the window are reused; nothing is
 * allocated per entry except xattr blocks.
 */
#include "internal.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <unistd.h>

#define XR_WINDOW_DEFAULT 256
#define XR_WINDOW_MAX 65536
#define XR_DEPTH_DEFAULT 64
#define XR_DS_BYTES (32 * 1024)             /* the getdents buffer (dirread.c) */
#define XR_CLOSE_WAIT_NS (1000 * 1000000ull) /* close waits this long for fetches in flight */
#define XR_FLAGS_ALL (DIRAHEAD_XREADDIR_FOLLOW | DIRAHEAD_XREADDIR_AUTOMOUNT | \
		      DIRAHEAD_XREADDIR_XATTRS | DIRAHEAD_XREADDIR_PARALLEL)

enum slot_state { SL_LISTED, SL_FLIGHT, SL_DONE };

/* One entry of the window.  While in flight it belongs to the backend (a worker or the ring)
 * and holds its own reference to the directory fd; so a slot abandoned by close still has
 * everything it needs. */
struct xslot {
	struct pool_job job;
	struct list_head gnode;     /* graveyard */
	struct da_fd *dfd;          /* in flight only */
	enum slot_state state;
	bool want_stat, want_xattrs;
	int atflags;
	unsigned mask;
	struct da_xattr_limits lim;
	int err, xerr;              /* positive errnos */
	unsigned xcalls;
	uint8_t type;
	uint64_t ino;
	struct statx stx;
	struct da_xattrs xa;
	char name[NAME_MAX + 1];
};

/* Inline fetches that were slow, in a row (xr_go_parallel). */
#define XR_GROUP 4  /* inline fetches timed together (a clock read per fetch costs 3%) */
struct xr_slow {
	unsigned n;                 /* fetches of the group being timed */
	uint64_t t0;                /* its start */
	unsigned run;               /* slow groups in a row */
	long nvcsw0;                /* voluntary switches after the first of them */
};

struct dirahead_xdir {
	struct dirahead_xreaddir_opts o;
	int atflags;
	struct da_fd *dfd;
	struct da_dirstream ds;
	bool ds_ok, list_eof, list_err_told;
	int list_err;
	struct xslot **ring;        /* window slots, by position % window; allocated on first use */
	uint64_t head, tail;        /* positions: [head, tail) listed and not yet consumed */
	uint64_t next_submit;       /* parallel: first position not handed to the backend */
	bool returned;              /* the head entry was handed out: drop it on the next call */
	unsigned inflight;
	bool parallel;
	struct xr_slow slow;
	int efd;
	struct da_uring *uring;
	struct pool *pool;
	struct dirahead_xent ent;
	struct dirahead_xreaddir_stats st;
	uint64_t mem_now;
};

/* io_uring slots still in the kernel after close: never freed (the kernel may write them). */
static pthread_mutex_t graveyard_lock = PTHREAD_MUTEX_INITIALIZER;
static struct list_head graveyard = LIST_INIT(graveyard);

static void mem_add(struct dirahead_xdir *x, uint64_t n)
{
	x->mem_now += n;
	if (x->mem_now > x->st.mem_peak)
		x->st.mem_peak = x->mem_now;
}

/* ---- decisions ------------------------------------------------------------------------------ */
/* Whether an entry needs a statx: not when only its type is wanted and getdents said it (a
 * symlink's type does not say its target's, which FOLLOW wants). */
static bool xr_needs_statx(unsigned mask, unsigned flags, uint8_t type)
{
	if (mask & ~(unsigned)STATX_TYPE)
		return true;
	if (type == DT_UNKNOWN)
		return true;
	return type == DT_LNK && (flags & DIRAHEAD_XREADDIR_FOLLOW);
}

/* Whether the inline fetches say the directory is not cached, so fetching ahead pays: the last
 * DIRAHEAD_XREADDIR_INLINE_SLOW of them (two groups of XR_GROUP in a row) took longer than
 * DIRAHEAD_XREADDIR_INLINE_NS each on average, and the thread slept in at least half of the
 * second group's (voluntary context switches: it waited for a disk or a server).  Cached
 * statx calls preempted on a busy machine take as long, but are switched out involuntarily.
 * mean_ns: the group's wall time per fetch; nvcsw: the thread's voluntary switches so far (read
 * only after a slow group). */
static bool xr_go_parallel(struct xr_slow *s, uint64_t mean_ns, long nvcsw)
{
	if (mean_ns <= DIRAHEAD_XREADDIR_INLINE_NS) {
		s->run = 0;
		return false;
	}
	bool slept = s->run && nvcsw - s->nvcsw0 >= XR_GROUP / 2;
	s->run = 1; /* this group is the first of the next pair */
	s->nvcsw0 = nvcsw;
	return slept;
}

/* ---- fetching one entry (caller's thread or a worker) --------------------------------------- */
static void slot_fetch(struct xslot *s, int dfd)
{
	if (s->want_stat) {
		/* the type is always wanted; STATX_TYPE costs nothing extra */
		unsigned mask = s->mask | (s->type == DT_UNKNOWN ? STATX_TYPE : 0);
		s->err = statx(dfd, s->name, s->atflags, mask, &s->stx) < 0 ? errno : 0;
	}
	if (s->want_xattrs && !s->err) {
		int r = da_xattrs_fetch(dfd, s->name, s->atflags, &s->lim, &s->xa, &s->xcalls);
		s->xerr = r < 0 ? -r : 0;
	}
}

static void slot_free(struct xslot *s)
{
	da_fd_put(s->dfd);
	da_xattrs_free(&s->xa);
	free(s);
}

static void job_run(struct pool_job *j)
{
	struct xslot *s = list_entry(j, struct xslot, job);
	slot_fetch(s, s->dfd->fd);
}

static void job_discard(struct pool_job *j)
{
	slot_free(list_entry(j, struct xslot, job));
}

/* A fetch came back (owner thread). */
static void slot_done(struct dirahead_xdir *x, struct xslot *s)
{
	s->state = SL_DONE;
	da_fd_put(s->dfd);
	s->dfd = NULL;
	x->inflight--;
	if (s->want_stat)
		x->st.statx++;
	x->st.xattr_calls += s->xcalls;
	mem_add(x, s->xa.bytes);
}

static void uring_done(void *data, int res, void *ctx)
{
	struct xslot *s = data;
	s->err = res < 0 ? -res : 0;
	slot_done(ctx, s);
}

/* ---- the backend for parallel fetching ------------------------------------------------------- */
static int xr_start_parallel(struct dirahead_xdir *x)
{
	if (x->efd < 0) {
		x->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
		if (x->efd < 0)
			return -errno;
	}
	/* io_uring cannot list xattrs: those need the worker pool */
	bool threads = x->o.backend == DIRAHEAD_BACKEND_THREADS ||
		       (x->o.flags & DIRAHEAD_XREADDIR_XATTRS);
	if (!threads) {
		int r = da_uring_new(&x->uring, x->o.depth, x->efd);
		if (r < 0 && x->o.backend == DIRAHEAD_BACKEND_URING)
			return r;
		threads = r < 0;
	}
	if (threads) {
		x->pool = pool_new(x->o.depth, x->o.depth * 2, x->efd);
		if (!x->pool)
			return -ENOMEM;
	}
	x->parallel = true;
	x->st.parallel = true;
	x->st.backend = x->uring ? DIRAHEAD_BACKEND_URING : DIRAHEAD_BACKEND_THREADS;
	if (x->next_submit < x->head)
		x->next_submit = x->head;
	return 0;
}

static void xr_submit(struct dirahead_xdir *x)
{
	bool queued = false;
	while (x->inflight < x->o.depth && x->next_submit < x->tail) {
		struct xslot *s = x->ring[x->next_submit++ % x->o.window];
		if (s->state != SL_LISTED)
			continue;
		s->state = SL_FLIGHT;
		s->dfd = da_fd_get(x->dfd);
		x->inflight++;
		if (x->uring) {
			unsigned mask = s->mask | (s->type == DT_UNKNOWN ? STATX_TYPE : 0);
			da_uring_statx_as(x->uring, s->dfd->fd, s->name, s->atflags, mask, &s->stx,
					  -1, s);
			queued = true;
		} else {
			int r = pool_submit(x->pool, &s->job);
			if (r < 0) {
				s->err = -r;
				slot_done(x, s);
			}
		}
	}
	if (queued)
		da_uring_flush(x->uring);
}

/* Waits (up to timeout_ms) for fetches to come back and takes them in. */
static void xr_reap(struct dirahead_xdir *x, int timeout_ms)
{
	if (x->uring) {
		if (timeout_ms)
			da_uring_wait(x->uring, timeout_ms);
		da_uring_reap(x->uring, uring_done, x);
		return;
	}
	struct pollfd p = { .fd = x->efd, .events = POLLIN };
	uint64_t v;
	if (timeout_ms)
		poll(&p, 1, timeout_ms);
	while (read(x->efd, &v, sizeof(v)) == sizeof(v))
		;
	struct list_head done = LIST_INIT(done), *pos, *n;
	pool_take_done(x->pool, &done);
	list_for_each_safe(pos, n, &done) {
		list_del(pos);
		slot_done(x, list_entry(pos, struct xslot, job.node));
	}
}

/* ---- listing into the window ---------------------------------------------------------------- */
static int cmp_ino(const void *a, const void *b)
{
	const struct xslot *x = *(struct xslot *const *)a, *y = *(struct xslot *const *)b;
	return x->ino < y->ino ? -1 : x->ino > y->ino;
}

/* Sorts positions [from, to) of the ring by inode (they are all newly listed). */
static void sort_range(struct dirahead_xdir *x, uint64_t from, uint64_t to)
{
	size_t n = (size_t)(to - from);
	struct xslot **tmp = n > 1 ? malloc(n * sizeof(*tmp)) : NULL;
	if (!tmp)
		return; /* readdir order then: the order is a hint */
	for (size_t i = 0; i < n; i++)
		tmp[i] = x->ring[(from + i) % x->o.window];
	qsort(tmp, n, sizeof(*tmp), cmp_ino);
	for (size_t i = 0; i < n; i++)
		x->ring[(from + i) % x->o.window] = tmp[i];
	free(tmp);
}

static struct xslot *slot_at(struct dirahead_xdir *x, uint64_t pos)
{
	struct xslot **p = &x->ring[pos % x->o.window];
	if (!*p && pos && pos - 1 < x->head) {
		/* the previous position's slot is consumed (inline: one at a time): move it here,
		 * one slot used over and over */
		struct xslot **prev = &x->ring[(pos - 1) % x->o.window];
		*p = *prev;
		*prev = NULL;
	}
	if (!*p) {
		*p = calloc(1, sizeof(**p));
		if (*p) {
			(*p)->job.run = job_run;
			(*p)->job.discard = job_discard;
			mem_add(x, sizeof(**p));
		}
	}
	return *p;
}

/* How far ahead to list: the window once fetching in parallel (or sorting by inode); inline,
 * one entry, as a plain loop does: a slot used over and over stays in the CPU's cache. */
static uint64_t xr_lookahead(const struct dirahead_xdir *x)
{
	return x->parallel || x->o.order == DIRAHEAD_ORDER_INODE ? x->o.window : 1;
}

static void xr_fill(struct dirahead_xdir *x)
{
	uint64_t count = x->tail - x->head, start = x->tail, ahead = xr_lookahead(x);
	/* inode order: refill by half windows, each sorted */
	if (x->list_eof || count >= ahead ||
	    (x->o.order == DIRAHEAD_ORDER_INODE && count && count > x->o.window / 2))
		return;
	while (x->tail - x->head < ahead) {
		const char *name;
		uint64_t ino;
		uint8_t type;
		int r = da_ds_next(&x->ds, &name, &ino, &type);
		if (r <= 0) {
			x->list_eof = true;
			x->list_err = -r;
			break;
		}
		struct xslot *s = slot_at(x, x->tail);
		if (!s) {
			x->list_eof = true;
			x->list_err = ENOMEM;
			break;
		}
		size_t len = strlen(name);
		if (len > NAME_MAX)
			len = NAME_MAX; /* cannot happen on Linux; never overflow */
		memcpy(s->name, name, len);
		s->name[len] = '\0';
		s->ino = ino;
		s->type = type;
		s->err = s->xerr = 0;
		s->xcalls = 0;
		s->atflags = x->atflags;
		s->mask = x->o.mask;
		s->lim = (struct da_xattr_limits){ x->o.xattr_max_list, x->o.xattr_max_value,
						   x->o.xattr_max_total };
		s->want_stat = xr_needs_statx(x->o.mask, x->o.flags, type);
		s->want_xattrs = x->o.flags & DIRAHEAD_XREADDIR_XATTRS;
		if (!s->want_stat) {
			/* d_type answers: the type alone, no call */
			memset(&s->stx, 0, sizeof(s->stx));
			s->stx.stx_mask = STATX_TYPE;
			s->stx.stx_mode = (uint16_t)DTTOIF(type);
		}
		s->state = s->want_stat || s->want_xattrs ? SL_LISTED : SL_DONE;
		x->tail++;
	}
	if (x->o.order == DIRAHEAD_ORDER_INODE)
		sort_range(x, start, x->tail);
}

/* ---- the public calls ------------------------------------------------------------------------ */
static void fetch_inline(struct dirahead_xdir *x, struct xslot *s)
{
	if (!x->slow.n)
		x->slow.t0 = da_now_ns();
	slot_fetch(s, x->dfd->fd);
	s->state = SL_DONE;
	if (s->want_stat) {
		x->st.statx++;
		x->st.statx_inline++;
	}
	x->st.xattr_calls += s->xcalls;
	mem_add(x, s->xa.bytes);
	/* if the backend cannot start, go on inline: slower, still correct */
	if (++x->slow.n < XR_GROUP)
		return;
	x->slow.n = 0;
	uint64_t mean = (da_now_ns() - x->slow.t0) / XR_GROUP;
	long nvcsw = 0;
	if (mean > DIRAHEAD_XREADDIR_INLINE_NS) { /* (a syscall only after a slow group) */
		struct rusage ru;
		if (getrusage(RUSAGE_THREAD, &ru) == 0)
			nvcsw = ru.ru_nvcsw;
	}
	if (xr_go_parallel(&x->slow, mean, nvcsw) && xr_start_parallel(x) < 0)
		x->o.flags |= DIRAHEAD_XREADDIR_PARALLEL; /* (do not try again) */
}

int dirahead_xreaddir(struct dirahead_xdir *x, const struct dirahead_xent **ent)
{
	if (!x || !ent)
		return -EINVAL;
	if (x->returned) {
		struct xslot *s = x->ring[x->head % x->o.window];
		x->mem_now -= s->xa.bytes;
		da_xattrs_free(&s->xa);
		x->head++;
		x->returned = false;
	}
	xr_fill(x);
	if (x->head == x->tail) {
		if (x->list_err && !x->list_err_told) {
			x->list_err_told = true;
			return -x->list_err;
		}
		return 0;
	}
	struct xslot *s = x->ring[x->head % x->o.window];
	/* take in what came back meanwhile (no wait), so that its slots are refilled now */
	if (x->parallel && x->inflight)
		xr_reap(x, 0);
	for (;;) {
		if (x->parallel)
			xr_submit(x);
		if (s->state == SL_DONE)
			break;
		if (s->state == SL_LISTED && !x->parallel)
			fetch_inline(x, s);
		else
			xr_reap(x, 1000);
	}
	x->ent = (struct dirahead_xent){
		.name = s->name, .ino = s->ino, .type = s->type, .error = s->err,
		.stx = s->err ? NULL : &s->stx, .nxattrs = s->xa.n, .xattrs = s->xa.v,
		.xattr_error = s->xerr,
	};
	if (!s->err && s->type == DT_UNKNOWN && (s->stx.stx_mask & STATX_TYPE))
		x->ent.type = (unsigned char)IFTODT(s->stx.stx_mode);
	x->st.entries++;
	if (s->err)
		x->st.errors++;
	x->returned = true;
	*ent = &x->ent;
	return 1;
}

/* Our own open file of the directory: "." needs search permission, which listing does not (a
 * names-only listing of a directory we may read but not search); then by the fd's magic link. */
static int reopen_dir(int dirfd)
{
	int fd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0 && errno == EACCES) {
		char p[40];
		snprintf(p, sizeof(p), "/proc/self/fd/%d", dirfd);
		fd = open(p, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (fd < 0 && errno == ENOENT)
			errno = EACCES;
	}
	return fd;
}

struct dirahead_xdir *dirahead_xreaddir_open(int dirfd, const struct dirahead_xreaddir_opts *opts)
{
	struct dirahead_xreaddir_opts o = { .size = sizeof(o) };
	struct dirahead_xdir *x;
	int r;

	if (opts) {
		if (opts->size < offsetof(struct dirahead_xreaddir_opts, xattr_max_list))
			goto inval;
		memcpy(&o, opts, opts->size < sizeof(o) ? opts->size : sizeof(o));
		o.size = sizeof(o);
	}
	if ((o.flags & ~XR_FLAGS_ALL) || (o.mask & STATX__RESERVED) ||
	    (o.order != DIRAHEAD_ORDER_DEFAULT && o.order != DIRAHEAD_ORDER_READDIR &&
	     o.order != DIRAHEAD_ORDER_INODE) ||
	    o.window > XR_WINDOW_MAX || o.backend > DIRAHEAD_BACKEND_THREADS)
		goto inval;
	o.order = da_order_resolve(o.order);
	if (!o.window)
		o.window = XR_WINDOW_DEFAULT;
	if (!o.depth)
		o.depth = XR_DEPTH_DEFAULT;
	if (o.depth > o.window)
		o.depth = o.window;
	if (!o.xattr_max_list)
		o.xattr_max_list = 65536;
	if (!o.xattr_max_value)
		o.xattr_max_value = 65536;
	if (!o.xattr_max_total)
		o.xattr_max_total = 262144;

	x = calloc(1, sizeof(*x));
	if (!x)
		return NULL;
	x->o = o;
	x->efd = -1;
	x->atflags = AT_STATX_SYNC_AS_STAT |
		     (o.flags & DIRAHEAD_XREADDIR_FOLLOW ? 0 : AT_SYMLINK_NOFOLLOW) |
		     (o.flags & DIRAHEAD_XREADDIR_AUTOMOUNT ? 0 : AT_NO_AUTOMOUNT);
	mem_add(x, sizeof(*x) + o.window * sizeof(*x->ring) + XR_DS_BYTES);
	x->ring = calloc(o.window, sizeof(*x->ring));
	if (!x->ring)
		goto fail_nomem;
	int fd = reopen_dir(dirfd);
	if (fd < 0)
		goto fail;
	x->dfd = da_fd_new(fd);
	if (!x->dfd) {
		close(fd);
		goto fail_nomem;
	}
	if (da_ds_init(&x->ds, fd) < 0)
		goto fail_nomem;
	x->ds_ok = true;
	if (o.flags & DIRAHEAD_XREADDIR_PARALLEL) {
		r = xr_start_parallel(x);
		if (r < 0) {
			errno = -r;
			goto fail;
		}
	}
	return x;

inval:
	errno = EINVAL;
	return NULL;
fail_nomem:
	errno = ENOMEM;
fail:
	r = errno;
	dirahead_xreaddir_close(x);
	errno = r;
	return NULL;
}

int dirahead_xreaddir_fd(const struct dirahead_xdir *x)
{
	return x && x->dfd ? x->dfd->fd : -EINVAL;
}

void dirahead_xreaddir_get_stats(const struct dirahead_xdir *x, struct dirahead_xreaddir_stats *st)
{
	*st = x->st;
}

/* Cancels what is in flight and waits for it, at most XR_CLOSE_WAIT_NS. */
static void xr_drain(struct dirahead_xdir *x)
{
	for (unsigned i = 0; i < x->o.window; i++) {
		struct xslot *s = x->ring[i];
		if (!s || s->state != SL_FLIGHT)
			continue;
		if (x->uring) {
			da_uring_cancel(x->uring, s);
		} else if (pool_cancel(x->pool, &s->job)) { /* still queued: ours again */
			s->state = SL_LISTED;
			da_fd_put(s->dfd);
			s->dfd = NULL;
			x->inflight--;
		}
	}
	if (x->uring)
		da_uring_flush(x->uring);
	uint64_t deadline = da_now_ns() + XR_CLOSE_WAIT_NS;
	while (x->inflight && da_now_ns() < deadline)
		xr_reap(x, 10);
}

void dirahead_xreaddir_close(struct dirahead_xdir *x)
{
	if (!x)
		return;
	if (x->parallel) {
		xr_drain(x);
		/* what is still out (a hung filesystem) is the backend's now */
		for (unsigned i = 0; x->inflight && i < x->o.window; i++) {
			struct xslot *s = x->ring[i];
			if (!s || s->state != SL_FLIGHT)
				continue;
			x->ring[i] = NULL;
			if (x->uring) { /* kept, never freed: the kernel may still write it */
				pthread_mutex_lock(&graveyard_lock);
				list_add_tail(&s->gnode, &graveyard);
				pthread_mutex_unlock(&graveyard_lock);
			} /* else the pool discards it (slot_free) when its call returns */
		}
		if (x->uring)
			da_uring_free(x->uring);
		if (x->pool)
			pool_close(x->pool);
	}
	if (x->ring)
		for (unsigned i = 0; i < x->o.window; i++)
			if (x->ring[i])
				slot_free(x->ring[i]);
	free(x->ring);
	if (x->ds_ok)
		da_ds_fini(&x->ds);
	da_fd_put(x->dfd);
	if (x->efd >= 0)
		close(x->efd);
	free(x);
}
