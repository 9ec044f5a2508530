/* SPDX-License-Identifier: LGPL-2.1-or-later OR BSD-2-Clause */
/*
 * The prefetch engine: directories are opened and read (getdents64, in bounded batches) by a
 * small reader pool, and their entries stat'ed by the backend (io_uring or a thread pool), at
 * most `depth` at once, each free slot going to the directory with the fewest in flight.
 * Everything here runs on the owner thread; workers only run the bodies of jobs (rjob_run,
 * req_run) and hand them back.
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
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <unistd.h>
#include <linux/openat2.h>

#define DEFAULT_DEPTH 64
#define DEFAULT_STALL_MS 1000
#define READERS 4          /* default: directories being opened/read at once (more when some
			    * are stuck) */
#define READERS_MAX 64
#define MAX_CREDS 64       /* distinct credentials remembered (with their io_uring personality) */

/* Common part of a stat request and a directory-read job. */
struct op {
	struct pool_job job;        /* thread backend / reader pool */
	struct list_head age;       /* e->age while outstanding and not stalled */
	struct list_head onode;     /* e->uring_out: submitted to the ring, CQE not reaped */
	struct dirahead_dir *dir;   /* NULL once abandoned (cancelled directory, engine freed) */
	struct da_fd *dfd;          /* keeps the directory fd open while the op may use it */
	struct da_cred *cred;       /* the credentials to run it with (NULL: the engine's own) */
	uint64_t t0;
	int res;                    /* 0 or -errno */
	bool stalled, is_read;
};

struct req {
	struct op op;
	struct list_head dnode;     /* dir->reqs */
	uint64_t index;
	uint8_t type;
	uint32_t covers;            /* entries passed over as in its inode group (SHARED_READS) */
	uint64_t ino;
	struct statx stx;
	char name[];
};

struct rjob {
	struct op op;
	/* first read only: how to open the directory */
	int src_fd;                 /* an fd of the directory to reopen "." from, or -1 */
	struct da_fd *parent;       /* else: open `name` relative to this */
	char *name;
	/* every read */
	struct da_dirstream *ds;    /* lent by the dir for the duration of the job */
	enum dirahead_order order;
	uint32_t batch_cap;
	uint64_t base;
	/* results */
	int opened_fd;
	struct da_batch *b;
	bool eof;
	struct da_uring *uring;     /* register a personality for op.cred (first read only) */
	int personality;            /* ... its id, or -errno */
	uint64_t wall_ns, cpu_ns;   /* what the job took: time waiting on the filesystem shows as
				     * wall time above CPU time */
};

enum dir_state { DIR_WAITING, DIR_ACTIVE, DIR_DONE };

struct dirahead_dir {
	struct dirahead_engine *e;
	struct list_head node;      /* e->waiting, e->active or e->done */
	struct list_head reqs;      /* outstanding stat requests */
	enum dir_state state;
	void *data;
	enum dirahead_order order;
	uint64_t limit;
	uint64_t from;              /* entries below it not submitted yet are never fetched */
	unsigned depth;
	uint32_t batch;
	/* before the open */
	int src_fd;
	struct da_fd *parent;
	char *name;
	/* after */
	struct da_fd *dfd;
	struct da_dirstream *ds;    /* NULL while a read job has it, or at the end */
	struct rjob *reading;
	struct da_batch *cur, *next;
	uint32_t cur_pos;
	uint64_t read_total;
	unsigned inflight;          /* including stalled requests */
	unsigned stalled;           /* requests (and a read) outstanding longer than stall_ms */
	uint64_t submitted, completed, errors;
	uint64_t list_ns, list_cpu_ns, first_read_ns;
	struct da_cred *cred;       /* NULL: the engine's own credentials */
	struct req *group_req;      /* SHARED_READS: the latest request, while in flight */
	int error;
	bool opened, eof, counted_open, list_only, shared_reads;
};

struct dirahead_engine {
	struct dirahead_engine_opts o;
	enum dirahead_backend backend;
	int efd, tfd, epfd;
	struct da_uring *uring;
	struct pool *stat_pool, *read_pool;
	struct list_head waiting, active, done;
	struct list_head age;       /* outstanding, not stalled, oldest first */
	struct list_head uring_out;
	struct list_head failed;    /* requests whose submission failed: completed next reap */
	unsigned inflight;          /* stat requests counted against depth */
	uint64_t stall_ns, timer_ns;
	struct dirahead_engine_stats st;
	struct da_cred *creds;      /* interned, one reference each; at most MAX_CREDS */
	unsigned ncreds;
	bool in_process;
};

/* Requests still in the kernel when an engine was freed: kept reachable (and their memory
 * valid, since the kernel may still write their statx buffer) until the process ends. */
static pthread_mutex_t graveyard_lock = PTHREAD_MUTEX_INITIALIZER;
static struct list_head graveyard = LIST_INIT(graveyard);

static void kick(struct dirahead_engine *e)
{
	uint64_t one = 1;
	if (!e->in_process && write(e->efd, &one, sizeof(one)) < 0) {
		/* EAGAIN: already readable */
	}
}

const char *dirahead_backend_name(enum dirahead_backend b)
{
	switch (b) {
	case DIRAHEAD_BACKEND_AUTO: return "auto";
	case DIRAHEAD_BACKEND_URING: return "io_uring";
	case DIRAHEAD_BACKEND_THREADS: return "threads";
	}
	return "unknown";
}

const char *dirahead_order_name(enum dirahead_order o)
{
	switch (o) {
	case DIRAHEAD_ORDER_DEFAULT: return "default";
	case DIRAHEAD_ORDER_READDIR: return "readdir";
	case DIRAHEAD_ORDER_INODE: return "inode";
	case DIRAHEAD_ORDER_NAME: return "name";
	}
	return "unknown";
}

enum dirahead_order da_order_resolve(enum dirahead_order o)
{
	return o == DIRAHEAD_ORDER_DEFAULT ? DIRAHEAD_ORDER_DEFAULT_MEANS : o;
}

/* ---- jobs run by workers --------------------------------------------------------------------- */
/* Every job runs with its credentials (a worker serves jobs of several programs in turn). */
static int op_cred(const struct op *op)
{
	return dirahead_cred_apply(op->cred ? &op->cred->c : NULL);
}

static void req_run(struct pool_job *j)
{
	struct req *r = list_entry(j, struct req, op.job);
	if ((r->op.res = op_cred(&r->op)) < 0)
		return;
	r->op.res = statx(r->op.dfd->fd, r->name, DA_STATX_FLAGS, DA_STATX_MASK, &r->stx) < 0
			    ? -errno : 0;
}

static void req_free(struct req *r)
{
	da_fd_put(r->op.dfd);
	da_cred_unref(r->op.cred);
	free(r);
}

static void req_discard(struct pool_job *j)
{
	req_free(list_entry(j, struct req, op.job));
}

static int open_child(int parent, const char *name)
{
	struct statx stx;
	/* Look before opening: opening an automount point would trigger it, and RESOLVE_NO_XDEV
	 * only refuses after the mount happened. */
	if (statx(parent, name, DA_STATX_FLAGS, STATX_TYPE, &stx) < 0)
		return -errno;
	if (S_ISLNK(stx.stx_mode))
		return -ELOOP;
	if (!S_ISDIR(stx.stx_mode))
		return -ENOTDIR;
	if (stx.stx_attributes & (STATX_ATTR_AUTOMOUNT | STATX_ATTR_MOUNT_ROOT))
		return -EXDEV;
	struct open_how how = {
		.flags = O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC,
		.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_XDEV,
	};
	long fd = syscall(SYS_openat2, parent, name, &how, sizeof(how));
	if (fd < 0 && errno == ENOSYS)
		fd = openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	return fd < 0 ? -errno : (int)fd;
}

static uint64_t thread_cpu_ns(void)
{
	struct timespec ts;
	if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts))
		return 0;
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Our own open file of the directory src_fd is on (own file position).  With a program's
 * credentials not by "." (a lookup in it, which needs search permission): by the fd's magic
 * link, which checks only read permission on the directory, as the program's own open did. */
static int reopen(int src_fd, bool as_program)
{
	int fd = -1;
	if (as_program) {
		char p[40];
		snprintf(p, sizeof(p), "/proc/self/fd/%d", src_fd);
		fd = open(p, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (fd >= 0 || errno != ENOENT)
			return fd; /* (ENOENT: no /proc here) */
	}
	return openat(src_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
}

/* The open itself, as the job's credentials (perhaps in a child that has them in full). */
static void rjob_open_as(void *arg, struct dirahead_call_out *out)
{
	struct rjob *j = arg;
	int fd = j->src_fd >= 0 ? reopen(j->src_fd, j->op.cred != NULL)
				: open_child(j->parent->fd, j->name);
	out->res = fd < 0 ? (j->src_fd >= 0 ? -errno : fd) : 0;
	if (fd >= 0)
		out->fds[out->nfds++] = fd;
}

/* First read: open our own description of the directory (own file position). */
static bool rjob_open(struct rjob *j)
{
	struct dirahead_call_out out;
	int r = dirahead_cred_call(j->op.cred ? &j->op.cred->c : NULL, rjob_open_as, j, &out);
	if (r < 0 || out.res < 0 || out.nfds != 1) {
		dirahead_call_close(&out);
		j->op.res = r < 0 ? r : out.res < 0 ? out.res : -EPROTO;
		return false;
	}
	int fd = out.fds[0];
	j->opened_fd = fd;
	j->ds = malloc(sizeof(*j->ds));
	if (!j->ds || da_ds_init(j->ds, fd) < 0) {
		j->op.res = -ENOMEM;
		return false;
	}
	return true;
}

static void rjob_read(struct rjob *j);

static void rjob_run(struct pool_job *pj)
{
	struct rjob *j = list_entry(pj, struct rjob, op.job);
	if ((j->op.res = op_cred(&j->op)) < 0)
		return;
	/* io_uring takes credentials as a registered personality (registered by a child with
	 * them in full: the reader thread only takes the filesystem ids) */
	if (j->uring && (j->personality = da_uring_personality(j->uring, &j->op.cred->c)) < 0) {
		j->op.res = j->personality;
		return;
	}
	if (!j->ds && !rjob_open(j))
		return;
	/* the reading alone: what a program's own listing of the directory repeats */
	uint64_t t0 = da_now_ns(), c0 = thread_cpu_ns();
	rjob_read(j);
	j->wall_ns = da_now_ns() - t0;
	j->cpu_ns = thread_cpu_ns() - c0;
}

static void rjob_read(struct rjob *j)
{
	const char *name;
	uint64_t ino;
	uint8_t type;
	int r;

	j->b = da_batch_new(j->base, j->batch_cap);
	if (!j->b) {
		j->op.res = -ENOMEM;
		return;
	}
	while (!da_batch_full(j->b)) {
		r = da_ds_next(j->ds, &name, &ino, &type);
		if (r == 0)
			j->eof = true;
		if (r <= 0) {
			j->op.res = r;
			break;
		}
		r = da_batch_add(j->b, name, ino, type);
		if (r < 0) {
			j->op.res = r;
			break;
		}
	}
	r = da_batch_finish(j->b, j->order);
	if (r < 0 && !j->op.res)
		j->op.res = r;
}

static void ds_free(struct da_dirstream *ds)
{
	if (ds) {
		da_ds_fini(ds);
		free(ds);
	}
}

static void rjob_free(struct rjob *j)
{
	/* An fd opened by the job but never handed to a dir (abandoned): nothing else uses it. */
	if (j->opened_fd >= 0)
		close(j->opened_fd);
	if (j->src_fd >= 0)
		close(j->src_fd);
	da_fd_put(j->parent);
	da_fd_put(j->op.dfd);
	da_cred_unref(j->op.cred);
	free(j->name);
	/* A dirstream lent from a dir shares the dir's fd (closed through dfd), not its own. */
	ds_free(j->ds);
	da_batch_free(j->b);
	free(j);
}

static void rjob_discard(struct pool_job *pj)
{
	rjob_free(list_entry(pj, struct rjob, op.job));
}

/* ---- directory bookkeeping (owner thread) ---------------------------------------------------- */
static void dir_release(struct dirahead_dir *d)
{
	da_batch_free(d->cur);
	da_batch_free(d->next);
	d->cur = d->next = NULL;
	ds_free(d->ds);
	d->ds = NULL;
	/* Closes the fd now unless an abandoned request still uses it. */
	da_fd_put(d->dfd);
	d->dfd = NULL;
	if (d->src_fd >= 0)
		close(d->src_fd);
	d->src_fd = -1;
	da_fd_put(d->parent);
	d->parent = NULL;
	free(d->name);
	d->name = NULL;
	da_cred_unref(d->cred);
	d->cred = NULL;
}

static void dir_finish(struct dirahead_dir *d, int error)
{
	struct dirahead_engine *e = d->e;
	list_del(&d->node);
	if (d->counted_open) {
		e->st.dirs_open--;
		d->counted_open = false;
	}
	d->state = DIR_DONE;
	d->error = error;
	if (error == ECANCELED)
		e->st.dirs_cancelled++;
	else if (error)
		e->st.dirs_failed++;
	else
		e->st.dirs_done++;
	dir_release(d);
	list_add_tail(&d->node, &e->done);
	kick(e);
}

/* DIRAHEAD_DIR_LIST_ONLY: an entry getdents typed as anything but a directory is not fetched;
 * nor one below dirahead_dir_set_from()'s index. */
static bool dir_wants(const struct dirahead_dir *d, uint32_t i)
{
	uint8_t t = d->cur->ents[i].type;
	if (d->cur->base + i < d->from)
		return false;
	return !d->list_only || t == DT_DIR || t == DT_UNKNOWN;
}

/* Inode numbers a and b share their 16-aligned group counted from 0 and from 1 alike: on a block
 * device they then lie in one inode block or cluster whatever the filesystem's alignment (ext4's
 * blocks of 16 count from inode 1, xfs's clusters of 16 or more from 0), so one read brings both. */
static bool same_inode_group(uint64_t a, uint64_t b)
{
	const uint64_t g = DIRAHEAD_INODE_GROUP;
	return a && b && a / g == b / g && (a - 1) / g == (b - 1) / g;
}

/* DIRAHEAD_DIR_SHARED_READS: an entry (not a directory: walks need those) in the inode group of
 * the request just submitted, still in flight, is passed over and reported with it.  Only inside
 * the window: what is passed over counts as fetched. */
static bool dir_covered(struct dirahead_dir *d, uint32_t i)
{
	const struct req *r = d->group_req;
	uint8_t t = d->cur->ents[i].type;
	return d->shared_reads && r && d->cur->base + i < d->limit && t != DT_DIR &&
	       t != DT_UNKNOWN && same_inode_group(r->ino, d->cur->ents[i].ino);
}

/* Moves past entries not to fetch, and to the next batch when the current one is used up. */
static void dir_advance(struct dirahead_dir *d)
{
	while (d->cur) {
		while (d->cur_pos < d->cur->n &&
		       (!dir_wants(d, d->cur_pos) || dir_covered(d, d->cur_pos))) {
			if (dir_wants(d, d->cur_pos))
				d->group_req->covers++;
			d->cur_pos++;
		}
		if (d->cur_pos < d->cur->n)
			return;
		if (d->next) {
			da_batch_free(d->cur);
			d->cur = d->next;
			d->next = NULL;
			d->cur_pos = 0;
		} else {
			if (d->eof && !d->reading) {
				da_batch_free(d->cur);
				d->cur = NULL;
			}
			return;
		}
	}
}

static void dir_check_done(struct dirahead_dir *d)
{
	if (d->state != DIR_ACTIVE || d->reading || d->inflight)
		return;
	dir_advance(d);
	if (d->eof && !d->cur && !d->next)
		dir_finish(d, d->error);
}

static void op_track(struct dirahead_engine *e, struct op *op)
{
	op->t0 = da_now_ns();
	list_add_tail(&op->age, &e->age);
}

static void op_untrack(struct op *op)
{
	if (list_linked(&op->age))
		list_del(&op->age);
}

/* A stat request is over (or never ran): it stops counting against the engine's depth and its
 * directory's stalled requests. */
static void req_uncount(struct dirahead_engine *e, struct req *r, struct dirahead_dir *d)
{
	if (r->op.stalled) {
		e->st.stalled--;
		if (d)
			d->stalled--;
	} else {
		e->inflight--;
	}
}

/* A stat request has returned (or never ran): only now does it stop counting against its
 * credentials' share.  A stalled or abandoned request still holds a thread or an io-wq worker
 * for them, so a user whose filesystem hangs cannot pile up more than cred_depth of those. */
static void req_uncount_cred(struct req *r)
{
	if (r->op.cred)
		r->op.cred->inflight--;
}

static void dir_start_read(struct dirahead_dir *d)
{
	struct dirahead_engine *e = d->e;
	struct rjob *j = calloc(1, sizeof(*j));
	int r;

	if (!j) {
		d->eof = true;
		d->error = d->error ? d->error : ENOMEM;
		return;
	}
	j->op.job.run = rjob_run;
	j->op.job.discard = rjob_discard;
	j->op.is_read = true;
	j->op.dir = d;
	list_init(&j->op.age);
	list_init(&j->op.onode);
	j->src_fd = -1;
	j->opened_fd = -1;
	j->order = d->order;
	j->batch_cap = d->batch;
	j->base = d->read_total;
	j->personality = -1;
	j->op.cred = da_cred_ref(d->cred);
	if (d->cred && e->uring && d->cred->personality < 0)
		j->uring = e->uring;
	if (!d->opened) {
		j->src_fd = d->src_fd;
		j->parent = d->parent;
		j->name = d->name;
		d->src_fd = -1;
		d->parent = NULL;
		d->name = NULL;
	} else {
		j->ds = d->ds;
		d->ds = NULL;
		j->op.dfd = da_fd_get(d->dfd);
	}
	d->reading = j;
	op_track(e, &j->op);
	r = pool_submit(e->read_pool, &j->op.job);
	if (r < 0) {
		/* no reader thread could be started: fail the directory */
		op_untrack(&j->op);
		d->reading = NULL;
		if (d->opened) {
			d->ds = j->ds;
			j->ds = NULL;
		}
		rjob_free(j);
		d->eof = true;
		d->error = -r;
	}
}

static void rjob_complete(struct dirahead_engine *e, struct rjob *j)
{
	struct dirahead_dir *d = j->op.dir;

	op_untrack(&j->op);
	if (j->uring && j->personality >= 0) {
		if (j->op.cred->personality < 0)
			j->op.cred->personality = j->personality;
		else if (j->op.cred->personality != j->personality) /* two readers registered it */
			da_uring_unpersonality(e->uring, j->personality);
	}
	if (!d) {
		rjob_free(j);
		return;
	}
	d->reading = NULL;
	if (j->op.stalled)
		d->stalled--;
	d->list_ns += j->wall_ns;
	d->list_cpu_ns += j->cpu_ns;
	if (!d->opened) {
		if (j->opened_fd < 0) {
			d->eof = true;
			d->error = -j->op.res;
			rjob_free(j);
			dir_check_done(d);
			return;
		}
		d->dfd = da_fd_new(j->opened_fd);
		if (!d->dfd) {
			d->eof = true;
			d->error = ENOMEM;
			rjob_free(j);
			dir_check_done(d);
			return;
		}
		j->opened_fd = -1;
		d->opened = true;
	}
	d->ds = j->ds;
	j->ds = NULL;
	if (d->ds && !d->first_read_ns)
		d->first_read_ns = d->ds->first_ns;
	if (j->b && j->b->n) {
		e->st.batches++;
		d->read_total += j->b->n;
		if (!d->cur) {
			d->cur = j->b;
			d->cur_pos = 0;
		} else {
			d->next = j->b;
		}
		j->b = NULL;
	}
	if (j->eof || j->op.res < 0) {
		/* A read error ends the listing; what was read is still fetched, then the directory
		 * reports the error. */
		d->eof = true;
		if (j->op.res < 0 && !d->error)
			d->error = -j->op.res;
		ds_free(d->ds);
		d->ds = NULL;
	}
	rjob_free(j);
	dir_check_done(d);
}

/* Reads ahead: the first batch at once, later ones while the window reaches past what is read. */
static void dir_maybe_read(struct dirahead_dir *d)
{
	if (d->reading || d->eof || d->next || d->state != DIR_ACTIVE)
		return;
	if (d->cur && d->limit <= d->cur->base + d->cur->n)
		return;
	dir_start_read(d);
}

static void req_complete(struct dirahead_engine *e, struct req *r)
{
	struct dirahead_dir *d = r->op.dir;

	op_untrack(&r->op);
	req_uncount_cred(r);
	if (!d) {
		e->st.abandoned--;
		req_uncount(e, r, NULL);
		req_free(r);
		return;
	}
	list_del(&r->dnode);
	if (d->group_req == r)
		d->group_req = NULL;
	d->inflight--;
	req_uncount(e, r, d);
	d->completed++;
	e->st.completed++;
	if (r->op.res < 0) {
		d->errors++;
		e->st.errors++;
	}
	if (e->o.on_complete) {
		struct dirahead_completion c = {
			.dir = d, .dir_data = d->data, .name = r->name, .index = r->index,
			.error = -r->op.res, .latency_ns = da_now_ns() - r->op.t0, .type = r->type,
			.stx = r->op.res < 0 ? NULL : &r->stx, .covered = r->covers,
		};
		e->o.on_complete(&c, e->o.data);
	}
	req_free(r);
	dir_check_done(d);
}

static void uring_done(void *data, int res, void *ctx)
{
	struct req *r = data;
	list_del(&r->op.onode);
	r->op.res = res;
	req_complete(ctx, r);
}

static bool backend_full(struct dirahead_engine *e)
{
	return e->uring && !da_uring_room(e->uring);
}

static void dir_submit_one(struct dirahead_dir *d)
{
	struct dirahead_engine *e = d->e;
	const struct da_batch *b = d->cur;
	const char *name = da_batch_name(b, d->cur_pos);
	size_t len = strlen(name) + 1;
	struct req *r = malloc(sizeof(*r) + len);

	if (!r) {
		d->cur_pos++; /* skip it: readahead is best effort */
		return;
	}
	memset(r, 0, sizeof(*r));
	memcpy(r->name, name, len);
	r->op.job.run = req_run;
	r->op.job.discard = req_discard;
	r->op.dir = d;
	r->op.dfd = da_fd_get(d->dfd);
	r->op.cred = da_cred_ref(d->cred);
	list_init(&r->op.onode);
	r->index = b->base + d->cur_pos;
	r->type = b->ents[d->cur_pos].type;
	r->ino = b->ents[d->cur_pos].ino;
	d->cur_pos++;
	if (d->shared_reads)
		d->group_req = r;
	list_add_tail(&r->dnode, &d->reqs);
	op_track(e, &r->op);
	d->inflight++;
	e->inflight++;
	if (d->cred)
		d->cred->inflight++;
	d->submitted++;
	e->st.submitted++;
	if (e->uring) {
		list_add_tail(&r->op.onode, &e->uring_out);
		da_uring_statx(e->uring, d->dfd->fd, r->name, &r->stx,
			       d->cred ? d->cred->personality : -1, r);
	} else {
		int rc = pool_submit(e->stat_pool, &r->op.job);
		if (rc < 0) {
			r->op.res = rc;
			list_add_tail(&r->op.job.node, &e->failed);
		}
	}
}

static bool dir_can_submit(struct dirahead_dir *d)
{
	if (d->state != DIR_ACTIVE || d->inflight >= d->depth)
		return false;
	/* one program's (user's) requests cannot take everybody's depth */
	if (d->cred && d->e->o.cred_depth && d->cred->inflight >= d->e->o.cred_depth)
		return false;
	dir_advance(d);
	dir_maybe_read(d);
	return d->cur && d->cur_pos < d->cur->n && d->cur->base + d->cur_pos < d->limit;
}

static void start_waiting(struct dirahead_engine *e)
{
	while (!list_empty(&e->waiting) && (!e->o.max_open || e->st.dirs_open < e->o.max_open)) {
		struct dirahead_dir *d = list_first(&e->waiting, struct dirahead_dir, node);
		list_del(&d->node);
		list_add_tail(&d->node, &e->active);
		d->state = DIR_ACTIVE;
		d->counted_open = true;
		e->st.dirs_open++;
		dir_start_read(d);
		dir_check_done(d); /* the read could not even be queued */
	}
}

/* Hands out the engine's free slots, each to the directory with the fewest requests in flight:
 * a directory on a slow filesystem holds its slots longer, and with plain round-robin it would
 * end up holding all of them while a fast directory waits. */
static void schedule(struct dirahead_engine *e)
{
	struct list_head *pos, *n;

	while (e->inflight < e->o.depth && !backend_full(e)) {
		struct dirahead_dir *best = NULL;
		for (pos = e->active.next; pos != &e->active; pos = pos->next) {
			struct dirahead_dir *d = list_entry(pos, struct dirahead_dir, node);
			if ((!best || d->inflight < best->inflight) && dir_can_submit(d))
				best = d;
		}
		if (!best)
			break;
		dir_submit_one(best);
	}
	/* Directories that cannot submit may still need their next batch read, or be done. */
	list_for_each_safe(pos, n, &e->active) {
		struct dirahead_dir *d = list_entry(pos, struct dirahead_dir, node);
		dir_advance(d);
		dir_maybe_read(d);
		dir_check_done(d);
	}
	/* Ties go to the first directory: rotate so that it is not always the same one. */
	if (!list_empty(&e->active)) {
		struct list_head *first = e->active.next;
		list_del(first);
		list_add_tail(first, &e->active);
	}
}

/* Requests outstanding for longer than stall_ms stop counting against the engine's depth (not
 * against their credentials' cred_depth: see req_uncount_cred). */
static void check_stalls(struct dirahead_engine *e)
{
	uint64_t now = da_now_ns();
	while (!list_empty(&e->age)) {
		struct op *op = list_first(&e->age, struct op, age);
		if (op->t0 + e->stall_ns > now)
			break;
		op_untrack(op);
		op->stalled = true;
		if (op->dir)
			op->dir->stalled++;
		if (op->is_read) {
			pool_release(e->read_pool, &op->job);
		} else {
			/* still its credentials' until it returns (req_uncount_cred) */
			e->inflight--;
			e->st.stalled++;
			if (e->stat_pool)
				pool_release(e->stat_pool, &op->job);
		}
		/* last: the callback may cancel the directory */
		if (op->dir && e->o.on_stall)
			e->o.on_stall(op->dir, op->dir->data, e->o.data);
	}
}

static void arm_timer(struct dirahead_engine *e)
{
	uint64_t when = 0;
	if (!list_empty(&e->age))
		when = list_first(&e->age, struct op, age)->t0 + e->stall_ns;
	if (when == e->timer_ns)
		return;
	struct itimerspec its = {
		.it_value = { .tv_sec = (time_t)(when / 1000000000ull),
			      .tv_nsec = (long)(when % 1000000000ull) },
	};
	if (timerfd_settime(e->tfd, TFD_TIMER_ABSTIME, &its, NULL) == 0)
		e->timer_ns = when;
}

static int reap(struct dirahead_engine *e)
{
	struct list_head done = LIST_INIT(done), *pos, *n;
	int count = 0;

	pool_take_done(e->read_pool, &done);
	list_for_each_safe(pos, n, &done) {
		list_del(pos);
		rjob_complete(e, list_entry(pos, struct rjob, op.job.node));
	}
	if (e->stat_pool)
		pool_take_done(e->stat_pool, &done);
	list_splice_tail(&e->failed, &done);
	list_for_each_safe(pos, n, &done) {
		list_del(pos);
		req_complete(e, list_entry(pos, struct req, op.job.node));
		count++;
	}
	if (e->uring)
		count += da_uring_reap(e->uring, uring_done, e);
	return count;
}

static void drain_fd(int fd)
{
	uint64_t v;
	while (read(fd, &v, sizeof(v)) == sizeof(v))
		;
}

int dirahead_engine_process(struct dirahead_engine *e)
{
	int n = 0, err = 0;

	e->in_process = true;
	drain_fd(e->efd);
	drain_fd(e->tfd);
	for (;;) {
		n += reap(e);
		check_stalls(e);
		start_waiting(e);
		schedule(e);
		if (e->uring) {
			int r = da_uring_flush(e->uring);
			if (r < 0)
				err = r;
		}
		if (list_empty(&e->done))
			break;
		/* Callbacks may submit, cancel or finish directories: loop until nothing is due. */
		while (!list_empty(&e->done)) {
			struct dirahead_dir *d = list_first(&e->done, struct dirahead_dir, node);
			list_del(&d->node);
			if (e->o.on_dir_done)
				e->o.on_dir_done(d, d->data, d->error, e->o.data);
			free(d);
		}
	}
	arm_timer(e);
	e->in_process = false;
	return err ? err : n;
}

int dirahead_engine_run(struct dirahead_engine *e, int timeout_ms)
{
	uint64_t deadline = timeout_ms < 0 ? 0 : da_now_ns() + (uint64_t)timeout_ms * 1000000ull;
	for (;;) {
		dirahead_engine_process(e);
		if (list_empty(&e->active) && list_empty(&e->waiting) && list_empty(&e->done))
			return 0;
		int wait = -1;
		if (timeout_ms >= 0) {
			uint64_t now = da_now_ns();
			if (now >= deadline)
				return -ETIMEDOUT;
			wait = (int)((deadline - now + 999999) / 1000000);
		}
		struct pollfd pfd = { .fd = e->epfd, .events = POLLIN };
		if (poll(&pfd, 1, wait) < 0 && errno == EINTR)
			return -EINTR;
	}
}

/* ---- engine lifetime ------------------------------------------------------------------------- */
/* The caller's options (as much of them as its struct has), each left at 0 given its default. */
static void engine_opts_fill(struct dirahead_engine_opts *o, const struct dirahead_engine_opts *opts)
{
	if (opts)
		memcpy(o, opts, opts->size < sizeof(*o) ? opts->size : sizeof(*o));
	o->size = sizeof(*o);
	if (!o->depth)
		o->depth = DEFAULT_DEPTH;
	if (!o->dir_depth || o->dir_depth > o->depth)
		o->dir_depth = o->depth;
	if (!o->threads)
		o->threads = o->depth;
	if (!o->stall_ms)
		o->stall_ms = DEFAULT_STALL_MS;
	if (!o->readers)
		o->readers = READERS;
	if (o->readers > READERS_MAX)
		o->readers = READERS_MAX;
}

/* One pollable fd for the caller: completions (eventfd) and stall checks (timerfd) behind an
 * epoll.  0, or -1 with errno set (what was opened is closed by dirahead_engine_free). */
static int engine_open_fds(struct dirahead_engine *e)
{
	struct epoll_event ev = { .events = EPOLLIN };

	e->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (e->efd < 0)
		return -1;
	e->tfd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
	if (e->tfd < 0)
		return -1;
	e->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (e->epfd < 0)
		return -1;
	ev.data.fd = e->efd;
	if (epoll_ctl(e->epfd, EPOLL_CTL_ADD, e->efd, &ev) < 0)
		return -1;
	ev.data.fd = e->tfd;
	if (epoll_ctl(e->epfd, EPOLL_CTL_ADD, e->tfd, &ev) < 0)
		return -1;
	return 0;
}

/* io_uring unless threads were asked for or (with auto) it cannot start; then the stat pool;
 * the readers' pool always.  0, or -1 with errno set. */
static int engine_start_workers(struct dirahead_engine *e)
{
	e->backend = DIRAHEAD_BACKEND_THREADS;
	if (e->o.backend != DIRAHEAD_BACKEND_THREADS) {
		int r = da_uring_new(&e->uring, e->o.depth, e->efd);
		if (r == 0)
			e->backend = DIRAHEAD_BACKEND_URING;
		else if (e->o.backend == DIRAHEAD_BACKEND_URING) {
			errno = -r;
			return -1;
		}
	}
	if (!e->uring) {
		e->stat_pool = pool_new(e->o.threads, e->o.threads * 3, e->efd);
		if (!e->stat_pool) {
			errno = ENOMEM;
			return -1;
		}
	}
	e->read_pool = pool_new(e->o.readers, READERS_MAX, e->efd);
	if (!e->read_pool) {
		errno = ENOMEM;
		return -1;
	}
	return 0;
}

struct dirahead_engine *dirahead_engine_new(const struct dirahead_engine_opts *opts)
{
	struct dirahead_engine *e;
	int r;

	if (opts && (opts->size < offsetof(struct dirahead_engine_opts, stall_ms) ||
		     opts->backend > DIRAHEAD_BACKEND_THREADS)) {
		errno = EINVAL;
		return NULL;
	}
	e = calloc(1, sizeof(*e));
	if (!e) {
		errno = ENOMEM;
		return NULL;
	}
	engine_opts_fill(&e->o, opts);
	e->stall_ns = (uint64_t)e->o.stall_ms * 1000000ull;
	list_init(&e->waiting);
	list_init(&e->active);
	list_init(&e->done);
	list_init(&e->age);
	list_init(&e->uring_out);
	list_init(&e->failed);
	e->tfd = e->epfd = -1;
	if (engine_open_fds(e) < 0 || engine_start_workers(e) < 0) {
		r = errno;
		dirahead_engine_free(e);
		errno = r;
		return NULL;
	}
	return e;
}

static void dir_abandon_ops(struct dirahead_dir *d)
{
	struct dirahead_engine *e = d->e;
	struct list_head *pos, *n;

	d->group_req = NULL;
	list_for_each_safe(pos, n, &d->reqs) {
		struct req *r = list_entry(pos, struct req, dnode);
		list_del(pos);
		r->op.dir = NULL;
		d->inflight--;
		if (!e->uring && pool_cancel(e->stat_pool, &r->op.job)) {
			req_uncount(e, r, d);
			op_untrack(&r->op);
			req_uncount_cred(r);
			req_free(r); /* still queued: never ran */
			continue;
		}
		/* Sent, so still a request at the filesystem: it counts against depth until it
		 * returns (req_complete) or stalls (check_stalls, which lets the pool replace a
		 * stuck worker), so that depth bounds what the filesystem sees, not only what
		 * directories still want. */
		if (r->op.stalled)
			d->stalled--;
		if (e->uring)
			da_uring_cancel(e->uring, r);
		e->st.abandoned++;
	}
	if (d->reading) {
		struct rjob *j = d->reading;
		d->reading = NULL;
		j->op.dir = NULL;
		op_untrack(&j->op);
		if (pool_cancel(e->read_pool, &j->op.job))
			rjob_free(j);
		else
			pool_release(e->read_pool, &j->op.job);
	}
}

void dirahead_dir_cancel(struct dirahead_dir *d)
{
	if (!d || d->state == DIR_DONE)
		return;
	dir_abandon_ops(d);
	dir_finish(d, ECANCELED);
}

void dirahead_engine_free(struct dirahead_engine *e)
{
	struct list_head *pos, *n;

	if (!e)
		return;
	e->in_process = true; /* no kicks: nobody is listening any more */
	struct list_head *lists[] = { &e->waiting, &e->active };
	for (size_t i = 0; i < sizeof(lists) / sizeof(lists[0]); i++)
		while (!list_empty(lists[i]))
			dirahead_dir_cancel(list_first(lists[i], struct dirahead_dir, node));
	list_for_each_safe(pos, n, &e->done) {
		list_del(pos);
		free(list_entry(pos, struct dirahead_dir, node));
	}
	if (e->uring) {
		/* Give the async cancels a moment to return what they can; anything still in the
		 * kernel after that is parked, never freed (the kernel may still write to it). */
		da_uring_flush(e->uring);
		uint64_t deadline = da_now_ns() + 50 * 1000000ull;
		while (!list_empty(&e->uring_out) && da_now_ns() < deadline) {
			da_uring_reap(e->uring, uring_done, e);
			if (!list_empty(&e->uring_out))
				da_uring_wait(e->uring, 10);
		}
		da_uring_reap(e->uring, uring_done, e);
		pthread_mutex_lock(&graveyard_lock);
		list_for_each_safe(pos, n, &e->uring_out) {
			list_del(pos);
			list_add_tail(pos, &graveyard);
		}
		pthread_mutex_unlock(&graveyard_lock);
		da_uring_free(e->uring);
	}
	list_for_each_safe(pos, n, &e->failed) {
		list_del(pos);
		req_free(list_entry(pos, struct req, op.job.node));
	}
	/* Workers still running a job discard it when it returns; the pools free themselves. */
	if (e->stat_pool)
		pool_close(e->stat_pool);
	if (e->read_pool)
		pool_close(e->read_pool);
	while (e->creds) { /* their personalities went with the ring */
		struct da_cred *c = e->creds;
		e->creds = c->next;
		da_cred_unref(c);
	}
	if (e->epfd >= 0)
		close(e->epfd);
	if (e->tfd >= 0)
		close(e->tfd);
	if (e->efd >= 0)
		close(e->efd);
	free(e);
}

enum dirahead_backend dirahead_engine_backend(const struct dirahead_engine *e)
{
	return e->backend;
}

int dirahead_engine_fd(const struct dirahead_engine *e)
{
	return e->epfd;
}

void dirahead_engine_get_stats(const struct dirahead_engine *e, struct dirahead_engine_stats *st)
{
	uint64_t active = 0, waiting = 0;
	struct list_head *pos;
	for (pos = e->active.next; pos != &e->active; pos = pos->next)
		active++;
	for (pos = e->waiting.next; pos != &e->waiting; pos = pos->next)
		waiting++;
	*st = e->st;
	st->inflight = e->inflight;
	st->dirs_active = active + waiting;
	st->dirs_waiting = waiting;
}

/* ---- directories ----------------------------------------------------------------------------- */
/* The engine's copy of c, shared by every directory with the same credentials (so io_uring
 * registers one personality for them); NULL if out of memory. */
static struct da_cred *cred_intern(struct dirahead_engine *e, const struct dirahead_cred *c)
{
	struct da_cred **pp, *unused = NULL;
	for (pp = &e->creds; *pp; pp = &(*pp)->next) {
		if (!memcmp(&(*pp)->c, c, sizeof(*c)))
			return da_cred_ref(*pp);
		if (__atomic_load_n(&(*pp)->refs, __ATOMIC_ACQUIRE) == 1)
			unused = *pp; /* only the engine's reference left */
	}
	if (e->ncreds >= MAX_CREDS && unused) {
		for (pp = &e->creds; *pp != unused; pp = &(*pp)->next)
			;
		*pp = unused->next;
		if (unused->personality >= 0 && e->uring)
			da_uring_unpersonality(e->uring, unused->personality);
		da_cred_unref(unused);
		e->ncreds--;
	}
	struct da_cred *n = calloc(1, sizeof(*n));
	if (!n)
		return NULL;
	n->c = *c;
	n->refs = 2; /* the engine's and the caller's */
	n->personality = -1;
	n->next = e->creds;
	e->creds = n;
	e->ncreds++;
	return n;
}

static struct dirahead_dir *dir_new(struct dirahead_engine *e, const struct dirahead_dir_opts *opts)
{
	struct dirahead_dir_opts o = { .size = sizeof(o), .limit = UINT64_MAX };
	struct dirahead_dir *d;

	if (opts) {
		if (opts->size < offsetof(struct dirahead_dir_opts, batch) ||
		    opts->order > DIRAHEAD_ORDER_NAME) {
			errno = EINVAL;
			return NULL;
		}
		memcpy(&o, opts, opts->size < sizeof(o) ? opts->size : sizeof(o));
	}
	d = calloc(1, sizeof(*d));
	if (!d) {
		errno = ENOMEM;
		return NULL;
	}
	d->e = e;
	list_init(&d->node);
	list_init(&d->reqs);
	d->data = o.data;
	d->order = da_order_resolve(o.order);
	d->limit = o.limit;
	d->depth = o.depth ? o.depth : e->o.dir_depth;
	if (d->depth > e->o.depth)
		d->depth = e->o.depth;
	d->batch = o.batch ? o.batch : DA_BATCH_DEFAULT;
	d->list_only = o.flags & DIRAHEAD_DIR_LIST_ONLY;
	d->shared_reads = o.flags & DIRAHEAD_DIR_SHARED_READS;
	d->src_fd = -1;
	if (o.size >= offsetof(struct dirahead_dir_opts, cred) + sizeof(o.cred) && o.cred) {
		if (o.cred->ngroups > DIRAHEAD_CRED_GROUPS) {
			free(d);
			errno = EINVAL;
			return NULL;
		}
		if (!(d->cred = cred_intern(e, o.cred))) {
			free(d);
			errno = ENOMEM;
			return NULL;
		}
	}
	return d;
}

static void dir_enqueue(struct dirahead_dir *d)
{
	/* Most recent first: a recursive walk then goes depth-first, which keeps few parent
	 * directories pinned open by waiting children. */
	list_add_head(&d->node, &d->e->waiting);
	d->state = DIR_WAITING;
	kick(d->e);
}

struct dirahead_dir *dirahead_dir_submit(struct dirahead_engine *e, int dirfd,
					 const struct dirahead_dir_opts *opts)
{
	/* A duplicate is taken now (the caller may close dirfd at once); reopening "." happens
	 * in a reader, since an open can block on the filesystem (FUSE OPENDIR). */
	int fd = fcntl(dirfd, F_DUPFD_CLOEXEC, 3);
	if (fd < 0)
		return NULL;
	struct dirahead_dir *d = dir_new(e, opts);
	if (!d) {
		int err = errno;
		close(fd);
		errno = err;
		return NULL;
	}
	d->src_fd = fd;
	dir_enqueue(d);
	return d;
}

struct dirahead_dir *dirahead_dir_submitat(struct dirahead_engine *e, struct dirahead_dir *parent,
					   const char *name, const struct dirahead_dir_opts *opts)
{
	if (!parent || parent->e != e || parent->state == DIR_DONE || !parent->dfd || !name ||
	    !*name || strchr(name, '/') || !strcmp(name, ".") || !strcmp(name, "..")) {
		errno = EINVAL;
		return NULL;
	}
	struct dirahead_dir *d = dir_new(e, opts);
	if (!d)
		return NULL;
	d->name = strdup(name);
	if (!d->name) {
		da_cred_unref(d->cred);
		free(d);
		errno = ENOMEM;
		return NULL;
	}
	d->parent = da_fd_get(parent->dfd);
	dir_enqueue(d);
	return d;
}

/* The public handle is the engine's own reference-counted fd. */
struct dirahead_dirfd *dirahead_dir_hold(struct dirahead_dir *d)
{
	if (!d || d->state == DIR_DONE || !d->dfd) {
		errno = d ? EAGAIN : EINVAL;
		return NULL;
	}
	return (struct dirahead_dirfd *)da_fd_get(d->dfd);
}

void dirahead_dirfd_put(struct dirahead_dirfd *f)
{
	da_fd_put((struct da_fd *)f);
}

struct dirahead_dir *dirahead_dir_submitunder(struct dirahead_engine *e,
					      struct dirahead_dirfd *parent, const char *name,
					      const struct dirahead_dir_opts *opts)
{
	if (!e || !parent || !name || !*name || strchr(name, '/') || !strcmp(name, ".") ||
	    !strcmp(name, "..")) {
		errno = EINVAL;
		return NULL;
	}
	struct dirahead_dir *d = dir_new(e, opts);
	if (!d)
		return NULL;
	d->name = strdup(name);
	if (!d->name) {
		da_cred_unref(d->cred);
		free(d);
		errno = ENOMEM;
		return NULL;
	}
	d->parent = da_fd_get((struct da_fd *)parent);
	dir_enqueue(d);
	return d;
}

struct dirahead_dir *da_dir_submit_batch(struct dirahead_engine *e, int fd, struct da_batch *b,
					 void *data)
{
	struct dirahead_dir_opts o = { .size = sizeof(o), .order = DIRAHEAD_ORDER_READDIR,
				       .limit = UINT64_MAX, .data = data };
	struct dirahead_dir *d = dir_new(e, &o);
	if (!d)
		return NULL;
	d->dfd = da_fd_new(fd);
	if (!d->dfd) {
		da_cred_unref(d->cred);
		free(d);
		errno = ENOMEM;
		return NULL;
	}
	d->opened = true;
	d->eof = true;
	d->cur = b;
	d->read_total = b->n;
	d->state = DIR_ACTIVE;
	d->counted_open = true;
	e->st.dirs_open++;
	list_add_tail(&d->node, &e->active);
	kick(e);
	return d;
}

int dirahead_dir_set_limit(struct dirahead_dir *d, uint64_t limit)
{
	if (!d)
		return -EINVAL;
	d->limit = limit;
	kick(d->e);
	return 0;
}

int dirahead_dir_set_from(struct dirahead_dir *d, uint64_t from)
{
	if (!d)
		return -EINVAL;
	if (from > d->from)
		d->from = from;
	kick(d->e);
	return 0;
}

int dirahead_dir_set_depth(struct dirahead_dir *d, unsigned int depth)
{
	if (!d)
		return -EINVAL;
	d->depth = depth ? depth : d->e->o.dir_depth;
	if (d->depth > d->e->o.depth)
		d->depth = d->e->o.depth;
	kick(d->e);
	return 0;
}

int64_t dirahead_dir_find(struct dirahead_dir *d, const char *name)
{
	int64_t i;
	if (!d || !name)
		return -1;
	if (d->cur && (i = da_batch_find(d->cur, name)) >= 0)
		return (int64_t)d->cur->base + i;
	if (d->next && (i = da_batch_find(d->next, name)) >= 0)
		return (int64_t)d->next->base + i;
	return -1;
}

void dirahead_dir_get_info(const struct dirahead_dir *d, struct dirahead_dir_info *info)
{
	*info = (struct dirahead_dir_info){
		.read = d->read_total, .submitted = d->submitted, .completed = d->completed,
		.errors = d->errors, .inflight = d->inflight, .limit = d->limit,
		.eof = d->eof && !d->error, .open = d->dfd != NULL,
		.list_ns = d->list_ns, .list_cpu_ns = d->list_cpu_ns, .stalled = d->stalled,
		.first_read_ns = d->first_read_ns,
	};
}

void *dirahead_dir_data(const struct dirahead_dir *d)
{
	return d->data;
}
