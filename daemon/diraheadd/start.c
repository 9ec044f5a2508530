/* SPDX-License-Identifier: LGPL-2.1-or-later OR BSD-2-Clause */
/* The opener job of scans and walks: what is opened in the opener threads (start.h). */
#include "start.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "opener.h"
#include "order.h"
#include "stats.h"

struct start_job *start_job_new(enum start_what what, void *owner, uint64_t id,
				const struct dirahead_event *ev, void (*done)(struct start_job *))
{
	struct start_job *job = calloc(1, sizeof(*job));
	if (!job)
		return NULL;
	*job = (struct start_job){ .what = what, .owner = owner, .id = id, .ev = *ev, .done = done,
				   .fd = -1 };
	for (unsigned i = 0; i < START_ANCESTORS; i++)
		job->up_fd[i] = -1;
	return job;
}

void start_job_free(struct start_job *job)
{
	if (job->fd >= 0)
		close(job->fd);
	for (unsigned i = 0; i < START_ANCESTORS; i++)
		if (job->up_fd[i] >= 0)
			close(job->up_fd[i]);
	free(job);
}

/* --- a scan's directory (in an opener thread: may hang on the filesystem) --- */

/* The order the program stats in, learnt as the program (its stats of the first names:
 * refused on a FUSE mount without allow_other to anyone without its ids). */
static void learn_as(void *arg, struct dirahead_call_out *out)
{
	const struct start_job *job = arg;
	char name[DIRAHEAD_NAME_LEN];
	memcpy(name, job->ev.name, sizeof(name));
	name[sizeof(name) - 1] = '\0';
	enum dirahead_order o = order_learn(job->fd, name, job->ev.stats);
	out->vals[0] = (uint64_t)o;
	out->res = 0;
}

static void open_dir(struct start_job *job)
{
	if (job->fd >= 0)
		return; /* opened already (a run by path's directory, handed over) */
	job->order = DIRAHEAD_ORDER_READDIR;
	/* A run by path: which directory, opened for the prefetch at once (one open fewer: every
	 * round trip here is stats the program makes without help). */
	job->fd = job->what == START_RESOLVE ? procdir_resolve(&job->ev, &job->found)
					     : procdir_open(&job->ev);
	if (job->fd >= 0 && job->learn && (job->ev.flags & DIRAHEAD_EVF_SORTED)) {
		job->order = DIRAHEAD_ORDER_NAME; /* BPF saw its names come in order: no reading */
	} else if (job->fd >= 0 && job->learn && job->ev.name_len < DIRAHEAD_NAME_LEN) {
		struct dirahead_cred c;
		struct dirahead_call_out out;
		/* its reading, too, as the program (the filesystem sees who asks) */
		if (procdir_cred(&job->ev, &c) == 0 &&
		    dirahead_cred_call(&c, learn_as, job, &out) == 0 && out.res == 0)
			job->order = (enum dirahead_order)out.vals[0];
		dirahead_cred_apply(NULL);
	}
}

/* --- a walk's top and its ancestors (in an opener thread) --- */

static const struct open_how up_how = { .flags = O_PATH | O_DIRECTORY | O_CLOEXEC,
					 .resolve = RESOLVE_NO_XDEV | RESOLVE_NO_MAGICLINKS };

struct up_as {
	int fd;                            /* a directory of the walk */
	const struct dirahead_event *ev;   /* the mount it must stay on */
	uint64_t want;                     /* up_to: the inode the ancestor must have */
	unsigned levels;                   /* up_to: how far up it may be */
	uint64_t stop;                     /* ancestors: the inode the walk starts below */
};

/* The ancestor of a->fd at most a->levels up whose inode is a->want, as the program (in
 * fds[0]); -ESTALE if none is. */
static void up_to_as(void *arg, struct dirahead_call_out *out)
{
	const struct up_as *a = arg;
	int cur = a->fd;
	out->res = -ESTALE;
	for (unsigned i = 0; i < a->levels; i++) {
		int pfd = (int)syscall(SYS_openat2, cur, "..", &up_how, sizeof(up_how));
		int err = errno;
		if (cur != a->fd)
			close(cur);
		if (pfd < 0) { /* (EXDEV: above the mount's root) */
			out->res = -err;
			return;
		}
		/* (checked as the program too: a mount without allow_other answers nobody else) */
		if (procdir_same(pfd, "", a->ev, a->want) == 0) {
			out->res = 0;
			out->fds[out->nfds++] = pfd;
			return;
		}
		cur = pfd;
	}
	if (cur != a->fd)
		close(cur);
}

/* The ancestor of e's directory at most `levels` up whose inode is `want`, or -errno. */
static int up_to(const struct dirahead_event *e, uint64_t want, unsigned levels)
{
	int fd = procdir_open(e);
	if (fd < 0)
		return fd;
	/* The parent as the program reached it: same mount, no symlink, its rights; checked by
	 * inode. */
	struct dirahead_cred c;
	struct dirahead_call_out out;
	struct up_as a = { .fd = fd, .ev = e, .want = want, .levels = levels };
	int err = procdir_cred(e, &c);
	out.nfds = 0;
	if (err == 0)
		err = dirahead_cred_call(&c, up_to_as, &a, &out);
	dirahead_cred_apply(NULL);
	close(fd);
	if (err < 0 || out.res < 0 || out.nfds != 1) {
		dirahead_call_close(&out);
		return err < 0 ? err : out.res < 0 ? out.res : -EPROTO;
	}
	return out.fds[0];
}

/* The top of the walk (the parent of ev's directory), or -errno. */
static int open_top(const struct start_job *job)
{
	uint64_t top = job->ev.parent_ino;
	int fd = up_to(&job->ev, top, 1);
	if (fd >= 0)
		return fd;
	/* the listing's fd is gone already (fts closes a directory once read, and a tree whose
	 * leaves list and stat fast is left at once): the top held open by the program */
	int hfd = procdir_open_held(&job->ev, top);
	if (hfd >= 0 || !job->has_top)
		return hfd >= 0 ? hfd : fd;
	/* The listing's fd is gone already (fts closes a directory once read; ls -R once read,
	 * before it stats, and holds no ancestor): by the scan that made it a walker, as the
	 * program named that directory: the top itself, or an ancestor of it (the program went
	 * on from there, past a few directories the walk could not place). */
	int tfd = job->near.ino == top ? procdir_open(&job->near)
					: up_to(&job->near, top, START_CLIMB);
	return tfd >= 0 ? tfd : fd;
}

/* The ancestors of a->fd as far as the mount goes (and the program may search), as the
 * program: fds[i] and their inodes in vals[i]. */
static void ancestors_as(void *arg, struct dirahead_call_out *out)
{
	const struct up_as *a = arg;
	out->res = 0;
	for (int cur = a->fd, i = 0; i < START_ANCESTORS && i < DIRAHEAD_CALL_FDS; i++) {
		int up = (int)syscall(SYS_openat2, cur, "..", &up_how, sizeof(up_how));
		struct stat st;
		cur = up;
		if (up < 0 && i == 0 && (errno == EACCES || errno == EPERM)) {
			/* refused to the filesystem ids alone (a FUSE mount without allow_other
			 * admits only its user's ids in full): said, so that dirahead_cred_call
			 * asks again from a child acting as the program in full.  Answered 0, a
			 * walk on a user's sshfs held no ancestor and ended at the first
			 * directory `ls -lR` listed beside its top (left_tree, re-rooted nowhere) */
			out->res = -errno;
			break;
		}
		if (up < 0 || fstat(up, &st) < 0 || procdir_same(up, "", a->ev, st.st_ino) < 0 ||
		    (i && st.st_ino == out->vals[i - 1]) || st.st_ino == a->stop) {
			/* not the same mount, or the filesystem's root */
			if (up >= 0)
				close(up);
			break;
		}
		out->vals[i] = st.st_ino;
		out->fds[out->nfds++] = up;
	}
}

static void open_walk_top(struct start_job *job)
{
	int pfd = job->fd = open_top(job);
	if (pfd < 0)
		return;
	struct dirahead_cred c;
	struct dirahead_call_out out;
	struct up_as a = { .fd = pfd, .ev = &job->ev, .stop = job->ev.parent_ino };
	if (procdir_cred(&job->ev, &c) == 0 && dirahead_cred_call(&c, ancestors_as, &a, &out) == 0)
		for (unsigned i = 0; i < out.nfds && i < START_ANCESTORS; i++) {
			job->up[i] = out.vals[i];
			job->up_fd[i] = out.fds[i];
		}
	dirahead_cred_apply(NULL);
}

/* --- the job's life --- */

static void run(void *arg)
{
	struct start_job *job = arg;
	if (job->what == START_TOP)
		open_walk_top(job);
	else
		open_dir(job);
}

static void done(void *arg)
{
	struct start_job *job = arg;
	job->done(job);
}

static void discard(void *arg)
{
	start_job_free(arg);
}

int start_run(struct opener *o, uint32_t dev_major, uint32_t dev_minor, uint32_t uid,
	      struct start_job *job)
{
	assert(job->done);
	int r = opener_run(o, dev_major, dev_minor, uid, run, done, discard, job);
	return r < 0 ? (int)dd_skip_of_opener(r) : 0;
}
