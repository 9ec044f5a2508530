/* SPDX-License-Identifier: LGPL-2.1-or-later OR BSD-2-Clause */
/*
 * Start: the one opener job of scans and walks (opener.h runs it in a thread of its own, as the
 * filesystem may hang).  What it opens, through /proc and as the program: a scan's directory
 * (and the order the program stats it in), the directory a run of stats by path is in, or a
 * walk's top (the parent of the event's directory) with its ancestors on the mount.  Its result
 * goes to the owner's done(job) on the event loop; the owner takes the fds it keeps (setting
 * them to -1) and frees the job, which closes the rest.
 */
#ifndef DIRAHEAD_START_H
#define DIRAHEAD_START_H

#include <stdbool.h>
#include <stdint.h>
#include "dirahead.h"
#include "dirahead_event.h"
#include "procdir.h"

struct opener;

/* Levels above its root a walk recognises (walk.h). */
#define START_ANCESTORS 8
/* how far above the scan that made a process a walker its walk's top is looked for */
#define START_CLIMB 8

enum start_what {
	START_DIR,      /* ev's directory, opened (and its order learnt, if learn) */
	START_RESOLVE,  /* the directory ev's run of stats by path is in: found and opened */
	START_TOP,      /* a walk's top, the parent of ev's directory, and its ancestors */
};

struct start_job {
	enum start_what what;
	void *owner;                /* the scans or the walks */
	uint64_t id;                /* the owner's scan or walk */
	struct dirahead_event ev;   /* its directory as the daemon knows it */
	void (*done)(struct start_job *job);
	/* START_DIR and START_RESOLVE */
	bool learn;                 /* learn the program's order (order.h) */
	enum dirahead_order order;  /* learnt, when the job asked */
	struct procdir_id found;    /* START_RESOLVE: which directory it is */
	/* START_TOP */
	bool has_top;
	struct dirahead_event near; /* a scan of the top or of a child of it (has_top) */
	uint64_t up[START_ANCESTORS];/* the top's ancestors on its mount, nearest first */
	int up_fd[START_ANCESTORS]; /* O_PATH fds of them (-1: none) */
	/* result */
	int fd;                     /* >= 0 (opened already: handed over, only passed on), -errno */
};

/* A job (fd -1, no ancestors), NULL if out of memory. */
struct start_job *start_job_new(enum start_what what, void *owner, uint64_t id,
				const struct dirahead_event *ev, void (*done)(struct start_job *));
/* Runs it in an opener thread (for that filesystem, 0:0 while unknown, and user), then
 * job->done(job) on the loop.  0, or a skip reason (enum dd_skip_reason) and the job is still
 * the caller's. */
int start_run(struct opener *o, uint32_t dev_major, uint32_t dev_minor, uint32_t uid,
	      struct start_job *job);
/* Closes the fds left in it, and frees it. */
void start_job_free(struct start_job *job);

#endif
