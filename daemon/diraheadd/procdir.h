/* SPDX-License-Identifier: LGPL-2.1-or-later OR BSD-2-Clause */
/* Opening the directory a process is scanning, through its own view (/proc/PID/...). */
#ifndef DIRAHEAD_PROCDIR_H
#define DIRAHEAD_PROCDIR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "dirahead.h"
#include "dirahead_event.h"

/*
 * Processes are found under PROC (/proc, or the host's procfs mounted elsewhere when the daemon
 * runs in a PID namespace of its own: BPF reports PIDs as the initial namespace numbers them).
 * Learns this process's own PID there (what BPF must exclude); *host says whether PROC is the
 * initial PID namespace's.  -1 with a message in err if PROC is no procfs or does not show us.
 */
int procdir_setup(const char *proc, bool *host, char *err, size_t errlen);
/* This process's PID as BPF reports it (getpid() before procdir_setup). */
uint32_t procdir_self_tgid(void);
/* openat() of PROC/PID/WHAT. */
int procdir_open_pid(uint32_t pid, const char *what, int flags);
/* Whether process pid still runs (not exited, not a zombie): for what BPF reports no exit of. */
bool procdir_alive(uint32_t pid);

/*
 * Opens the directory named by ev (its fd, or another fd of the program that is that directory,
 * its cwd or path, in that order) through /proc/PID (the
 * /proc/PID/task/TID of the thread that made the call, while it lives), so
 * that processes in other mount namespaces and chroots resolve as they see it, and returns an
 * O_RDONLY|O_DIRECTORY|O_CLOEXEC fd only if it is the directory BPF saw (procdir_same).  The
 * process's links are followed as the daemon; the directory is opened, and a path resolved, with
 * the program's credentials at the event (procdir_cred), so that nothing opens that the program
 * could not open.  The calling thread has the daemon's own credentials on return.
 * A path is resolved as the kernel resolves it for the process: below its root, a relative one
 * from its cwd, never above the root (-EXDEV if its cwd is outside its root).
 * Returns -ENOENT when nothing opened (process gone, directory gone), -ESTALE when something
 * opened but was another directory, other -errno otherwise (-EACCES: the program may not).
 */
int procdir_open(const struct dirahead_event *ev);
/* As procdir_open(), for the directory `ino` on ev's mount if the program holds it open under
 * any fd (a walker's ancestors: fts keeps them open to come back to). */
int procdir_open_held(const struct dirahead_event *ev, uint64_t ino);
/* The program's credentials at ev, for its prefetch (dirahead_dir_opts.cred): its ids, all of
 * its groups (beyond the event's first DIRAHEAD_EV_GROUPS, from the thread's status), and of its
 * capabilities (held in the initial user namespace: BPF reports no others) those that bear on
 * reading.  0, or -E2BIG (more groups than a dirahead_cred holds), -ESTALE (its groups changed
 * since the event), -ESRCH (the thread is gone): then it is not served at all. */
int procdir_cred(const struct dirahead_event *ev, struct dirahead_cred *c);
/* Whether ev (a later event of the same program) shows the credentials c was taken from. */
bool procdir_cred_same(const struct dirahead_cred *c, const struct dirahead_event *ev);

/* Where the event's path leads, as the process resolves it. */
struct procdir_id {
	uint32_t dev_major, dev_minor;
	uint64_t ino, mnt_id, magic, size;
	uint64_t parent_ino; /* 0: at its mount's root, or not known */
};

/*
 * For a directory BPF knows by path only (a run of stats by path, DIRAHEAD_EVF_UNLISTED): opens
 * ev->path as the thread would (in its root, from its cwd), checks that it holds, under
 * ev->name, the file the program's own stat returned (DIRAHEAD_EVF_NAME_ID), and reports what
 * it found there (an fd, or -errno; -ENOENT when the process or the directory is gone, -ESTALE
 * when the directory there does not hold that file, -EXDEV when the thread's cwd is outside its
 * root).
 */
int procdir_resolve(const struct dirahead_event *ev, struct procdir_id *id);

/* 0 if NAME under DFD ("" for DFD itself; symlinks not followed) is a directory with inode INO
 * on the mount ev was listed through, -ESTALE if it is something else, -errno if it cannot be
 * stat'ed. */
int procdir_same(int dfd, const char *name, const struct dirahead_event *ev, uint64_t ino);

#endif
