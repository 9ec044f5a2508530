// SPDX-License-Identifier: LGPL-2.1-or-later OR BSD-2-Clause
/*
 * Delayed replies.  Handlers do the backing-store work at once and hand the finished reply to
 * this scheduler, which sends it when the operation's latency has passed.  Sleeping inside the
 * handlers instead would cap the requests in flight at libfuse's worker count (about 10 with
 * Debian's 3.14), far below what a parallel prefetcher issues.  One timer thread owns a min-heap
 * ordered by due time; fuse_reply_* may be called from any thread.
 */
#define SLOWFS_WANT_FUSE
#include "slowfs.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static uint64_t serial_due;		/* --serial: when the last delayed reply is due */
static pthread_cond_t cond;
static pthread_t thread;
static bool running, stopping, stalled;
static pid_t stall_tgid;		/* its replies are held (sf_sched_stall_pid) */
static struct sf_reply **held;		/* ... here, in arrival order, until a stall ends */
static size_t held_len, held_cap;
static struct sf_reply **heap;
static size_t heap_len, heap_cap;
static uint64_t next_seq;

static bool before(const struct sf_reply *a, const struct sf_reply *b)
{
	/* FIFO among equal due times keeps replies in request order. */
	return a->due_ns < b->due_ns || (a->due_ns == b->due_ns && a->seq < b->seq);
}

static void heap_swap(size_t i, size_t j)
{
	struct sf_reply *t = heap[i];

	heap[i] = heap[j];
	heap[j] = t;
}

static int heap_push(struct sf_reply *r)
{
	size_t i;

	if (heap_len == heap_cap) {
		size_t cap = heap_cap ? heap_cap * 2 : 256;
		struct sf_reply **n = realloc(heap, cap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		heap = n;
		heap_cap = cap;
	}
	i = heap_len++;
	heap[i] = r;
	while (i > 0 && before(heap[i], heap[(i - 1) / 2])) {
		heap_swap(i, (i - 1) / 2);
		i = (i - 1) / 2;
	}
	return 0;
}

static struct sf_reply *heap_pop(void)
{
	struct sf_reply *top = heap[0];
	size_t i = 0;

	heap[0] = heap[--heap_len];
	for (;;) {
		size_t l = 2 * i + 1, r = l + 1, m = i;

		if (l < heap_len && before(heap[l], heap[m]))
			m = l;
		if (r < heap_len && before(heap[r], heap[m]))
			m = r;
		if (m == i)
			break;
		heap_swap(i, m);
		i = m;
	}
	return top;
}

static void send_reply(struct sf_reply *r)
{
	int res;

	/* Out of flight before the reply goes: once written, the client may send its next
	 * request, and counting this one beside it would see one more in flight than there is. */
	sf_stats_done(r->op);

	switch (r->kind) {
	case SF_R_ENTRY:
		res = fuse_reply_entry(r->req, &r->u.entry);
		break;
	case SF_R_ATTR:
		res = fuse_reply_attr(r->req, &r->u.attr.st, r->u.attr.timeout);
		break;
	case SF_R_BUF:
		res = fuse_reply_buf(r->req, r->buf, r->len);
		break;
	case SF_R_OPEN:
		res = fuse_reply_open(r->req, &r->u.fi);
		break;
	case SF_R_STATFS:
		res = fuse_reply_statfs(r->req, &r->u.sv);
		break;
	case SF_R_XATTR:
		res = fuse_reply_xattr(r->req, r->len);
		break;
	case SF_R_ERR:
	default:
		res = fuse_reply_err(r->req, r->err);
		break;
	}
	if (res != 0 && r->undo)
		r->undo(r);
	free(r->buf);
	free(r);
}

static void *timer_main(void *arg)
{
	(void)arg;
	/* Default timer slack (50 us) would blur sub-millisecond latencies. */
	prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
	pthread_mutex_lock(&lock);
	for (;;) {
		if (heap_len == 0 || (stalled && !stopping)) {
			if (stopping && heap_len == 0)
				break;
			pthread_cond_wait(&cond, &lock);
			continue;
		}
		uint64_t now = sf_now_ns();

		if (!stopping && heap[0]->due_ns > now) {
			struct timespec ts = {
				.tv_sec = heap[0]->due_ns / 1000000000ULL,
				.tv_nsec = heap[0]->due_ns % 1000000000ULL,
			};
			pthread_cond_timedwait(&cond, &lock, &ts);
			continue;
		}
		struct sf_reply *r = heap_pop();

		/* Send outside the lock: writing to /dev/fuse wakes the caller and may take a while. */
		pthread_mutex_unlock(&lock);
		send_reply(r);
		pthread_mutex_lock(&lock);
	}
	pthread_mutex_unlock(&lock);
	return NULL;
}

int sf_sched_start(void)
{
	pthread_condattr_t ca;
	sigset_t all, old;
	int err;

	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&cond, &ca);
	pthread_condattr_destroy(&ca);
	/* SIGTERM/SIGINT must reach the main thread, which runs libfuse's loop. */
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	err = pthread_create(&thread, NULL, timer_main, NULL);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (err)
		return -err;
	running = true;
	return 0;
}

void sf_sched_stop(void)
{
	if (!running)
		return;
	pthread_mutex_lock(&lock);
	stopping = true;
	pthread_cond_signal(&cond);
	pthread_mutex_unlock(&lock);
	pthread_join(thread, NULL);
	running = false;
	free(heap);
	heap = NULL;
	heap_len = heap_cap = 0;
}

void sf_sched_stall(bool on)
{
	pthread_mutex_lock(&lock);
	stalled = on;
	if (!on) {
		/* the end of a stall ends a stall of one process too: what it held goes out */
		stall_tgid = 0;
		for (size_t i = 0; i < held_len; i++)
			if (heap_push(held[i]) != 0) {
				pthread_mutex_unlock(&lock);
				send_reply(held[i]);
				pthread_mutex_lock(&lock);
			}
		held_len = 0;
	}
	pthread_cond_signal(&cond);
	pthread_mutex_unlock(&lock);
}

void sf_sched_stall_pid(pid_t tgid)
{
	pthread_mutex_lock(&lock);
	stall_tgid = tgid;
	pthread_mutex_unlock(&lock);
}

pid_t sf_sched_stalled_pid(void)
{
	pid_t t;

	pthread_mutex_lock(&lock);
	t = stall_tgid;
	pthread_mutex_unlock(&lock);
	return t;
}

/* Whether process pid's parent is ppid (a process a client starts to make requests for it:
 * the daemon's children that act with a user's ids in full). */
static bool child_of(pid_t pid, pid_t ppid)
{
	char path[64], buf[1024], *p;
	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return false;
	buf[n] = '\0';
	p = strstr(buf, "\nPPid:");
	return p && (pid_t)strtol(p + 7, NULL, 10) == ppid;
}

/* Held for a stall of its process, or of a child of it (lock held): true if taken. */
static bool hold(struct sf_reply *r)
{
	if (!stall_tgid || r->tgid <= 0 || (r->tgid != stall_tgid && !child_of(r->tgid, stall_tgid)))
		return false;
	if (held_len == held_cap) {
		size_t cap = held_cap ? held_cap * 2 : 64;
		struct sf_reply **n = realloc(held, cap * sizeof(*n));

		if (!n)
			return false;
		held = n;
		held_cap = cap;
	}
	held[held_len++] = r;
	return true;
}

bool sf_sched_stalled(void)
{
	bool s;

	pthread_mutex_lock(&lock);
	s = stalled;
	pthread_mutex_unlock(&lock);
	return s;
}

size_t sf_sched_pending(void)
{
	size_t n;

	pthread_mutex_lock(&lock);
	n = heap_len + held_len;
	pthread_mutex_unlock(&lock);
	return n;
}

static __thread uint64_t rng_state;

static uint64_t jitter(void)
{
	if (!sf_cfg.jitter_ns)
		return 0;
	if (!rng_state)
		rng_state = sf_now_ns() ^ (uint64_t)(uintptr_t)&rng_state ^ 0x9e3779b97f4a7c15ULL;
	/* xorshift64: cheap, per thread, good enough for spreading latencies */
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return rng_state % (sf_cfg.jitter_ns + 1);
}

/* The operations --latency-us (and so --depth-latency) delays. */
static bool metadata_op(enum sf_op op)
{
	switch (op) {
	case SF_OP_LOOKUP: case SF_OP_GETATTR: case SF_OP_READLINK: case SF_OP_OPEN:
	case SF_OP_OPENDIR: case SF_OP_READDIR: case SF_OP_READDIRPLUS: case SF_OP_ACCESS:
		return true;
	default:
		return false;
	}
}

uint64_t sf_delay_ns(enum sf_op op, int depth)
{
	uint64_t d = sf_cfg.lat_ns[op];
	if (depth < 0 || !metadata_op(op))
		return d;
	for (unsigned i = 0; i < sf_cfg.n_depth_lat; i++)
		if (sf_cfg.depth_lat[i].depth <= (unsigned)depth)
			d = sf_cfg.depth_lat[i].ns;
	return d;
}

struct sf_reply *sf_reply_new(fuse_req_t req, enum sf_op op)
{
	return sf_reply_new_at(req, op, -1);
}

struct sf_reply *sf_reply_new_at(fuse_req_t req, enum sf_op op, int depth)
{
	struct sf_reply *r = calloc(1, sizeof(*r));
	uint64_t delay = sf_delay_ns(op, depth);

	pid_t tgid = sf_stats_begin(op, fuse_req_ctx(req)->pid, fuse_req_ctx(req)->uid);

	if (!r) {
		/* Out of memory: answer at once rather than lose the request. */
		sf_stats_done(op);
		fuse_reply_err(req, ENOMEM);
		return NULL;
	}
	r->req = req;
	r->tgid = tgid;
	r->op = op;
	r->kind = SF_R_ERR;
	r->due_ns = sf_now_ns();
	if (delay) {
		uint64_t d = delay + jitter();
		sf_stats_delayed(tgid);
		if (sf_cfg.serial) {
			/* --serial: each delayed reply waits for the one before it */
			pthread_mutex_lock(&lock);
			if (serial_due > r->due_ns)
				r->due_ns = serial_due;
			r->due_ns += d;
			serial_due = r->due_ns;
			pthread_mutex_unlock(&lock);
		} else {
			r->due_ns += d;
		}
	}
	return r;
}

void sf_reply_submit(struct sf_reply *r)
{
	pthread_mutex_lock(&lock);
	/* release, flush and forget are never held: a stuck close is no metadata latency */
	if (r->op != SF_OP_RELEASE && r->op != SF_OP_FLUSH && r->op != SF_OP_RELEASEDIR &&
	    !stopping && hold(r)) {
		pthread_mutex_unlock(&lock);
		return;
	}
	if (!stalled && (!running || r->due_ns <= sf_now_ns())) {
		/* Nothing to wait for: answer from the worker thread, no hand-over cost. */
		pthread_mutex_unlock(&lock);
		send_reply(r);
		return;
	}
	r->seq = next_seq++;
	if (heap_push(r) != 0) {
		pthread_mutex_unlock(&lock);
		send_reply(r);
		return;
	}
	if (heap[0] == r || !stalled)
		pthread_cond_signal(&cond);
	pthread_mutex_unlock(&lock);
}

void sf_reply_err(fuse_req_t req, enum sf_op op, int err)
{
	struct sf_reply *r = sf_reply_new(req, op);

	if (!r)
		return;
	r->err = err;
	sf_reply_submit(r);
}
