/* SPDX-License-Identifier: LGPL-2.1-or-later OR BSD-2-Clause */
/*
 * libdirahead: start fetching the attributes of a directory's entries in parallel, ahead of a
 * program that will stat them, so that its stat()/statx() calls find them in the kernel's caches.
 * Link with -ldirahead (it uses liburing and pthreads).
 *
 * Three interfaces:
 *   - dirreadahead(): the call proposed for Linux in 2014, for any program: fire and forget.
 *   - the engine (dirahead_engine_*, dirahead_dir_*): an event-loop component with callbacks,
 *     windows and cancellation, for the dirahead daemon and tools such as `diraheadctl prefetch`.
 *   - the iterator (dirahead_xreaddir*): the proposal's xgetdents(), entries handed back with the
 *     attributes asked for, fetched ahead in parallel (`diraheadctl ls`).
 *
 * What a prefetch does, for every entry except "." and "..": one statx() relative to the engine's
 * own fd on the directory (no path is built), with AT_SYMLINK_NOFOLLOW | AT_NO_AUTOMOUNT and a
 * mask of what `ls -l` shows (type, mode, nlink, uid, gid, size, blocks, mtime, ino).  Symlinks
 * are never followed and automount points never triggered.  Results are not returned to the
 * application: the point is the kernel's inode/dentry caches (and, on FUSE or network
 * filesystems, their attribute caches), which the application's own stats then hit.
 *
 * Errors: functions returning int return 0 (or a count) on success and a negative errno on
 * failure, unless documented otherwise; functions returning a pointer return NULL and set errno.
 * dirreadahead() follows the system-call convention (-1 and errno).
 */
#ifndef DIRAHEAD_H
#define DIRAHEAD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

struct statx; /* <sys/stat.h> with _GNU_SOURCE, or <linux/stat.h>, to look inside */

#if defined(__GLIBC__) && !defined(__USE_MISC)
/* Strict ISO modes (-std=c11) hide loff_t; glibc always has the same type under this name. */
typedef __loff_t loff_t;
#endif

/*
 * dirreadahead(): starts fetching the attributes of up to `count` entries of directory `fd`, from
 * entry `*offset` on (entries counted in readdir order, "." and ".." excluded); returns without
 * waiting for them; advances *offset past the entries it started.  Repeated calls walk the
 * directory:
 *
 *     loff_t off = 0;
 *     while (dirreadahead(fd, &off, 1024) > 0)
 *             ;                           // or interleave with the program's own work
 *
 * Returns the number of entries started (at most `count`; at most 4096 per call, so large
 * counts take several calls), 0 at the end of the directory or when count is 0, or -1 with errno:
 *   EBADF    fd is not an open file descriptor (or > INT_MAX)
 *   ENOTDIR  fd is not a directory
 *   EFAULT   offset is NULL
 *   EINVAL   *offset is negative
 *   EAGAIN   too much readahead is already pending in this process (64 Ki entries); try later
 *   EACCES, ENOMEM, EMFILE, ...: opening or reading the directory failed
 * The fd and offset are checked before count, as read(2) does.
 *
 * It reads the directory names itself (synchronously, like the GFS2 implementation; that is the
 * getdents I/O the program is about to do anyway) and hands the statx calls to a process-wide
 * engine with a background thread, created on the first call: io_uring when usable, else a
 * thread pool (environment: DIRAHEAD_BACKEND=auto|io_uring|threads, DIRAHEAD_DEPTH=N, read once).
 * It never moves the file position of `fd`: it opens its own description of the directory
 * (openat(fd, ".")), and keeps it only until the started entries are fetched.  A call continuing
 * where the previous one stopped (same directory, *offset unchanged) resumes from a remembered
 * readdir cookie; any other offset re-reads the directory from the start up to *offset.
 *
 * Thread safety: may be called from any thread, concurrently.  The caller may close fd right
 * after the call; the started entries are still fetched.  At exit, whatever is still in flight is
 * dropped (the kernel cancels it).  In a child after fork(), the first call starts a new engine (the parent's
 * pending work stays with the parent).
 */
int dirreadahead(unsigned int fd, loff_t *offset, unsigned int count);

/* ---- The engine ---------------------------------------------------------------------------- */
/*
 * Usage (a complete program warming one directory):
 *
 *     struct dirahead_engine_opts eo = { .size = sizeof(eo) };        // all defaults
 *     struct dirahead_engine *e = dirahead_engine_new(&eo);
 *     int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
 *     struct dirahead_dir_opts o = { .size = sizeof(o), .limit = UINT64_MAX };
 *     struct dirahead_dir *d = dirahead_dir_submit(e, fd, &o);
 *     close(fd);                                   // the engine has its own
 *     dirahead_engine_run(e, -1);                  // or: poll dirahead_engine_fd() in your loop
 *     dirahead_engine_free(e);                     //     and call dirahead_engine_process()
 *
 * Threading: an engine is not thread-safe.  Create it, and call every dirahead_engine_* and
 * dirahead_dir_* function on it, from one thread at a time (normally the event-loop thread);
 * the callbacks run in that thread, from dirahead_engine_process()/run() only, and may call
 * any engine function except dirahead_engine_free(), _process() and _run().  Internally the engine uses an io_uring
 * (its io-wq workers) or worker threads, plus a few reader threads for open/getdents; none of
 * them ever calls back into the application.
 *
 * Nothing called on the owner thread blocks on the filesystem: opening, reading and stat'ing
 * directories all happen in workers.  Calls that add work (dir_submit, dir_set_limit,
 * dir_cancel) record it and make the engine fd readable; the work starts in the next
 * dirahead_engine_process().  Each free slot of `depth` goes to the directory with the fewest
 * requests in flight, so a directory on a slow filesystem, whose requests last longer, cannot
 * crowd out a fast one.
 *
 * Directory order and batches: each directory is read with getdents64 into batches of at most
 * `dirahead_dir_opts.batch` entries (default 8192, also capped at 1 MiB of names); each batch is
 * sorted by the requested order and fetched; at most two batches of a directory are in memory
 * (the one being fetched and the next one, read ahead).  So a directory smaller than one batch is
 * fetched in exactly the requested order, and a larger one in that order within each batch of
 * readdir order; memory stays bounded whatever the directory size (about 2 MiB per directory at
 * most with the defaults).  Indexes (dirahead_completion.index, limits, find) number the entries
 * in that prefetch order.
 *
 * Hung filesystems: a request still outstanding after `stall_ms` stops counting against the
 * engine's `depth` (it still counts against its directory's depth, so that directory does not
 * issue more), so a directory on a hung filesystem cannot starve the others; the thread backend
 * then starts a replacement worker, and io_uring starts more io-wq workers by itself.  It still
 * counts against its credentials' `cred_depth` until it returns, cancelled or not: a program (a
 * user) whose filesystem hangs holds at most that many workers, and waits, alone.  A stuck
 * request cannot be interrupted (the kernel waits for the filesystem): cancel and free abandon it
 * instead of waiting, and its directory fd is closed when it finally returns.  (A thread inside
 * a FUSE request that the server has already read cannot even be killed: a process can exit
 * only once its stuck requests return, whatever it does; cancelling still returns at once.)
 *
 * Lifetime of a directory: it holds its own fd from its first read until it finishes (every
 * entry fetched), fails or is cancelled; on_dir_done then reports it.  A directory whose window
 * (limit) stops short of the end stays open, waiting for the limit to move: cancel it when the
 * application is done with it.
 */

enum dirahead_backend {
	DIRAHEAD_BACKEND_AUTO = 0,    /* io_uring when usable, else threads */
	DIRAHEAD_BACKEND_URING = 1,   /* IORING_OP_STATX; fails if io_uring is unusable */
	DIRAHEAD_BACKEND_THREADS = 2, /* a pool of threads calling statx() */
};

enum dirahead_order {
	DIRAHEAD_ORDER_DEFAULT = 0,   /* DIRAHEAD_ORDER_DEFAULT_MEANS, below */
	DIRAHEAD_ORDER_READDIR = 1,   /* as getdents returns them (fts, rsync, tar, os.walk) */
	DIRAHEAD_ORDER_INODE = 2,     /* ascending inode number (disk order, roughly) */
	DIRAHEAD_ORDER_NAME = 3,      /* by strcmp() of the names, as `ls -l` sorts in the C locale */
};

/*
 * What DIRAHEAD_ORDER_DEFAULT stands for: the order measured best for prefetching a whole
 * directory, readdir order.  On slowfs (FUSE, 500 us per request, 5,000 entries) the order makes
 * no difference: latency bound, ~0.07-0.08 s with io_uring for every order.  On ext4 (loop
 * device with direct I/O, 100,000 entries spread over a 500,000-inode table, caches dropped)
 * readdir order was best or tied at depth 64 (median 0.57 s; inode 0.69 s; name 0.69 s): with
 * many requests in flight, neighbouring inodes wait on the same inode-table block, while hash
 * order spreads the reads over the device.  Inode order may still win on a rotating disk (GNU fts
 * sorts by inode for its one-at-a-time stats); none was available to measure.  When the pattern
 * is known, ask for it: NAME for `ls -l`, READDIR for fts, rsync, tar and os.walk.
 */
#define DIRAHEAD_ORDER_DEFAULT_MEANS DIRAHEAD_ORDER_READDIR

struct dirahead_engine;
struct dirahead_dir;

/* One finished prefetch request; the struct and what it points to are valid only during the
 * callback. */
struct dirahead_completion {
	struct dirahead_dir *dir;     /* live during the callback */
	void *dir_data;               /* dirahead_dir_opts.data */
	const char *name;             /* entry name */
	uint64_t index;               /* position in the directory's prefetch order */
	int error;                    /* 0 or a positive errno (ENOENT: deleted meanwhile, ...) */
	uint64_t latency_ns;          /* submission to completion */
	unsigned char type;           /* DT_* from getdents (DT_UNKNOWN on some filesystems) */
	const struct statx *stx;      /* the attributes fetched, NULL on error */
	/* added after the draft: */
	uint32_t covered;             /* entries that follow it in the order, passed over as in
	                               * its inode group (DIRAHEAD_DIR_SHARED_READS): fetched by it */
};

typedef void (*dirahead_complete_fn)(const struct dirahead_completion *c, void *engine_data);
/* A directory is finished: every entry was fetched (error 0), it was cancelled (ECANCELED) or it
 * failed (errno of open/getdents: ENOENT, EACCES, ENOTDIR, EIO, ...; for dirahead_dir_submitat
 * also ELOOP for a symlink and EXDEV for a mount point).  Called exactly once per directory, from
 * dirahead_engine_process(), never from the call that caused it; the directory's fd is already
 * closed unless a stuck request still uses it; the handle is freed right after this returns. */
typedef void (*dirahead_dir_done_fn)(struct dirahead_dir *dir, void *dir_data, int error,
				     void *engine_data);

struct dirahead_engine_opts {
	size_t size;                  /* sizeof(struct dirahead_engine_opts) */
	enum dirahead_backend backend;
	unsigned int depth;           /* requests in flight in total, also those of cancelled
	                               * directories until they return (default 64) */
	unsigned int dir_depth;       /* requests in flight per directory (default: depth) */
	unsigned int threads;         /* workers of the thread backend (default: depth) */
	dirahead_complete_fn on_complete;  /* may be NULL */
	dirahead_dir_done_fn on_dir_done;  /* may be NULL */
	void *data;                   /* passed to the callbacks */
	/* added after the draft: */
	unsigned int stall_ms;        /* a request older than this stops counting against depth
	                               * (default 1000) */
	unsigned int max_open;        /* directories open at once; more wait (most recently
	                               * submitted first); 0: no limit (default) */
	unsigned int readers;         /* directories being opened and read at once (default 4;
	                               * more start for readers stuck on a hung filesystem) */
	unsigned int cred_depth;      /* requests in flight per credentials (dirahead_dir_opts.cred:
	                               * one program's, one user's), so that none takes all of
	                               * `depth`; stalled and abandoned requests count here until
	                               * they return; 0: no limit (default) */
	/* A request (or the reading) of the directory has been outstanding for stall_ms: its
	 * filesystem may hang.  Called from dirahead_engine_process(), once per request; may be
	 * NULL. */
	void (*on_stall)(struct dirahead_dir *dir, void *dir_data, void *engine_data);
};

struct dirahead_dir_opts {
	size_t size;                  /* sizeof(struct dirahead_dir_opts) */
	enum dirahead_order order;
	uint64_t limit;               /* fetch entries whose index < limit; UINT64_MAX: all */
	unsigned int depth;           /* per-directory in flight; 0: the engine's dir_depth */
	void *data;
	/* added after the draft: */
	unsigned int batch;           /* entries per batch (sort and find scope); 0: 8192 */
	unsigned int flags;           /* DIRAHEAD_DIR_* */
	const struct dirahead_cred *cred; /* do all of the directory's I/O (its open, its reading,
	                               * every stat) with these credentials; NULL: the engine's own.
	                               * Copied: the caller's struct need not outlive the call. */
};

/*
 * Credentials (dirahead_dir_opts.cred, dirahead_cred_apply()): those of the program a prefetch is
 * for, so that every permission check is the program's own.  A thread applying them takes on the
 * filesystem uid and gid, the groups and (of `caps`, bits 1 << CAP_*) the capabilities the
 * process has, with no other capability effective meanwhile; never the real, effective or saved
 * ids, which signal and prlimit permission checks compare (a user could otherwise kill the
 * process).  Needs CAP_SETUID and CAP_SETGID in the process's permitted set.  Unused groups must
 * be 0.  A program with more groups than DIRAHEAD_CRED_GROUPS cannot be represented: serve it
 * without them never (a dropped group can grant access an ACL denies it).
 */
#define DIRAHEAD_CRED_GROUPS 256
struct dirahead_cred {
	uint32_t uid, euid, suid, fsuid;
	uint32_t gid, egid, sgid, fsgid;
	uint32_t ngroups;             /* at most DIRAHEAD_CRED_GROUPS */
	uint32_t groups[DIRAHEAD_CRED_GROUPS];
	uint64_t caps;
};
/* The calling thread acts with c from now on (NULL: with the process's own credentials again).
 * Per thread: other threads are not affected.  0 or -errno (EPERM without
 * CAP_SETUID/CAP_SETGID, E2BIG for too many groups). */
int dirahead_cred_apply(const struct dirahead_cred *c);

/*
 * What a call as a program's credentials hands back (dirahead_cred_call()): its result, the fds
 * it opened (the caller's to close) and numbers it found.
 */
#define DIRAHEAD_CALL_FDS 9
#define DIRAHEAD_CALL_VALS 9
struct dirahead_call_out {
	int res;                      /* fn's result: >= 0, or -errno */
	unsigned int nfds;            /* fds[0..nfds) are open */
	int fds[DIRAHEAD_CALL_FDS];
	uint64_t vals[DIRAHEAD_CALL_VALS];
};
/* fn reads only what arg points to and writes only into out (it may run in another process). */
typedef void (*dirahead_call_fn)(void *arg, struct dirahead_call_out *out);
/*
 * Runs fn acting as c (dirahead_cred_apply(c): the thread still acts as c on return).  If fn's
 * result is -EACCES or -EPERM and c's real, effective or saved ids are not the process's, fn runs
 * once more in a short-lived child process that has c's ids in full, and out is the child's: a
 * FUSE mount without allow_other admits only its owner's processes, by those ids.  The child
 * shares the caller's memory and fds while the calling thread waits (as with vfork()); one that
 * runs for 2 s (a hung filesystem, or stopped by the user it acts as) is killed, and the user
 * may kill it too: either costs that call, and the thread's own answer stands.  Not with
 * fs.suid_dumpable = 1 (the user could trace the child).  0 (the outcome
 * is in out->res), or -errno if c could not be applied at all.
 */
int dirahead_cred_call(const struct dirahead_cred *c, dirahead_call_fn fn, void *arg,
		       struct dirahead_call_out *out);
/* Closes out's fds. */
void dirahead_call_close(struct dirahead_call_out *out);

/*
 * List the directory, fetch only the entries that may be directories (getdents reports
 * DT_DIR or DT_UNKNOWN): for a walk over a filesystem whose listing already brings the entries'
 * attributes (sshfs, NFS and FUSE with readdirplus), where what is worth doing ahead is the
 * listing, and the subdirectories are needed to go on.  Other entries are read and counted
 * (dirahead_dir_info.read) but neither fetched nor reported.
 */
#define DIRAHEAD_DIR_LIST_ONLY 0x1u
/*
 * The entries share their reads (a block device's filesystem reads inodes by the block or
 * cluster): an entry whose inode number is in the same aligned group of 16 as the request just
 * submitted, while that one is in flight, is not fetched but reported with it
 * (dirahead_completion.covered), so that the requests in flight are distinct reads rather than
 * 16 waiting on one.  Directories are always fetched.
 */
#define DIRAHEAD_DIR_SHARED_READS 0x2u
#define DIRAHEAD_INODE_GROUP 16       /* inode numbers to a group (DIRAHEAD_DIR_SHARED_READS) */

struct dirahead_engine_stats {
	uint64_t submitted, completed, errors;
	uint64_t inflight;            /* requests counted against depth (stalled ones are not;
	                               * abandoned ones are until they return or stall) */
	uint64_t dirs_active;         /* submitted and not finished (open or waiting) */
	/* added after the draft: */
	uint64_t stalled;             /* requests outstanding for longer than stall_ms */
	uint64_t abandoned;           /* requests of cancelled directories not yet returned */
	uint64_t dirs_open;           /* directories with an fd open (or being opened) */
	uint64_t dirs_waiting;        /* submitted, waiting for max_open */
	uint64_t dirs_done, dirs_failed, dirs_cancelled;
	uint64_t batches;             /* getdents batches read */
};

struct dirahead_dir_info {
	uint64_t read;                /* entries read from the directory so far */
	uint64_t submitted, completed, errors;
	uint64_t inflight;
	uint64_t limit;
	bool eof;                     /* the whole directory has been read, without error */
	bool open;                    /* the engine holds an fd on it */
	/* added after the draft: */
	uint64_t list_ns;             /* wall time spent reading it (getdents; not its open) */
	uint64_t list_cpu_ns;         /* CPU time the readers spent on that */
	uint64_t stalled;             /* requests (or its read) outstanding longer than stall_ms */
	uint64_t first_read_ns;       /* how long its first getdents64 took (what a program's first
	                               * call on it, uncached, would wait); 0: not read yet */
};

/* Creates an engine.  NULL with errno: EINVAL (bad opts/size), ENOMEM, or, for
 * DIRAHEAD_BACKEND_URING, why io_uring is unusable (EPERM when kernel.io_uring_disabled forbids
 * it, ENOSYS, EOPNOTSUPP if IORING_OP_STATX is missing).  AUTO falls back to threads silently;
 * dirahead_engine_backend() tells which one runs. */
struct dirahead_engine *dirahead_engine_new(const struct dirahead_engine_opts *opts);
/* Abandons every directory without calling any callback and frees the engine.  Never waits for
 * the filesystem (io_uring: at most 50 ms for cancelled requests to come back): requests stuck
 * there are left to finish on their own.  Their memory and their directory's fd stay allocated
 * until they return (thread backend) or until the process exits (io_uring: the kernel may still
 * write their statx buffer, and nothing tells when it has stopped).  NULL is fine. */
void dirahead_engine_free(struct dirahead_engine *e);
enum dirahead_backend dirahead_engine_backend(const struct dirahead_engine *e);
const char *dirahead_backend_name(enum dirahead_backend b);  /* "auto", "io_uring", "threads" */
const char *dirahead_order_name(enum dirahead_order o);      /* "default", "readdir", ... */
/* Readable (EPOLLIN) when dirahead_engine_process() has work: put it in your poll/epoll/sd-event
 * loop.  Level-triggered; process() consumes the readiness. */
int dirahead_engine_fd(const struct dirahead_engine *e);
/* Reaps completions, runs callbacks, submits more.  Never blocks.  Returns the number of
 * completions handled, or -errno if submitting failed (the engine stays usable). */
int dirahead_engine_process(struct dirahead_engine *e);
/* Processes until no directory is left (returns 0) or timeout_ms passes (-ETIMEDOUT; -1: no
 * limit).  For simple callers; returns -EINTR if a signal interrupts the wait. */
int dirahead_engine_run(struct dirahead_engine *e, int timeout_ms);
void dirahead_engine_get_stats(const struct dirahead_engine *e, struct dirahead_engine_stats *st);

/* Starts a directory.  dirfd may be any fd of the directory (O_PATH too); it is not kept (the
 * engine opens its own, so the caller's file position never moves) and the caller may close it
 * at once.  NULL with errno (EBADF, ENOMEM, EINVAL); errors opening or reading the directory
 * come later through on_dir_done.  opts may be NULL (defaults, no limit). */
struct dirahead_dir *dirahead_dir_submit(struct dirahead_engine *e, int dirfd,
					 const struct dirahead_dir_opts *opts);
/* Starts the subdirectory `name` of a live directory `parent` (typically from on_complete, for a
 * recursive prefetch).  Opened with O_NOFOLLOW and without crossing into another mount: a symlink
 * fails with ELOOP, a mount point or automount point with EXDEV.  The parent's fd stays open until
 * the child has been opened. */
struct dirahead_dir *dirahead_dir_submitat(struct dirahead_engine *e, struct dirahead_dir *parent,
					   const char *name, const struct dirahead_dir_opts *opts);
/*
 * For opening subdirectories after their parent has finished (a walk that visits them in a
 * later order): a held reference to the parent's fd, which outlives the directory handle.
 * dirahead_dir_hold() works once the engine has opened the directory (from on_complete, say;
 * NULL with EAGAIN before that or after on_dir_done); dirahead_dir_submitunder() opens `name`
 * below it as dirahead_dir_submitat() does (no symlinks, no mount crossing); the fd is closed
 * when the last holder lets go (dirahead_dirfd_put, NULL is fine) and no child still needs it.
 */
struct dirahead_dirfd;
struct dirahead_dirfd *dirahead_dir_hold(struct dirahead_dir *d);
void dirahead_dirfd_put(struct dirahead_dirfd *f);
struct dirahead_dir *dirahead_dir_submitunder(struct dirahead_engine *e,
					      struct dirahead_dirfd *parent, const char *name,
					      const struct dirahead_dir_opts *opts);
/* Moves the window: fetch entries with index < limit.  A lower limit than before stops further
 * submissions beyond it (requests already in flight complete).  Returns 0, or -EINVAL for NULL. */
int dirahead_dir_set_limit(struct dirahead_dir *d, uint64_t limit);
/* Entries with index < from that are not submitted yet are never fetched (skipped, neither
 * completed nor reported): the program got to them first.  Only moves forward.  Returns 0, or
 * -EINVAL for NULL. */
int dirahead_dir_set_from(struct dirahead_dir *d, uint64_t from);
/* Changes the directory's requests in flight (0: the engine's dir_depth; capped at the engine's
 * depth).  Lower than now: requests in flight complete, no new ones until below.  Returns 0, or
 * -EINVAL for NULL. */
int dirahead_dir_set_depth(struct dirahead_dir *d, unsigned int depth);
/* Index of `name` (exact match) in the directory's prefetch order, or -1 if it is not in a batch
 * held in memory: not read yet, or in a batch already fetched and dropped (only the current and
 * the next batch are kept). */
int64_t dirahead_dir_find(struct dirahead_dir *d, const char *name);
/* Stop: nothing more is submitted, on_complete is not called again for this directory, and
 * on_dir_done(ECANCELED) follows from the next dirahead_engine_process(), even if requests are
 * stuck on a hung filesystem (they are abandoned: io_uring gets an async cancel, queued thread
 * jobs are dropped, running ones forgotten).  No-op on a directory already finished or
 * cancelled whose on_dir_done has not run yet. */
void dirahead_dir_cancel(struct dirahead_dir *d);
void dirahead_dir_get_info(const struct dirahead_dir *d, struct dirahead_dir_info *info);
void *dirahead_dir_data(const struct dirahead_dir *d);

/* ---- The iterator: entries with their attributes (dirahead_xreaddir(3)) ------------------- */
/*
 * The other half of the 2014 proposal, xgetdents(): a directory's entries, each with the statx
 * fields the caller asks for (and optionally its extended attributes), read one at a time in a
 * plain loop, while the fetching runs ahead in parallel:
 *
 *     struct dirahead_xreaddir_opts o = { .size = sizeof(o),
 *             .mask = STATX_TYPE | STATX_MODE | STATX_SIZE | STATX_MTIME };
 *     struct dirahead_xdir *x = dirahead_xreaddir_open(dirfd, &o);
 *     const struct dirahead_xent *ent;
 *     int r;
 *     while ((r = dirahead_xreaddir(x, &ent)) > 0)
 *             if (!ent->error)
 *                     printf("%s %llu\n", ent->name, (unsigned long long)ent->stx->stx_size);
 *     dirahead_xreaddir_close(x);              // r < 0: -errno of the listing
 *
 * What is fetched is what is asked for: `mask` goes to statx() unchanged (plus STATX_TYPE when
 * getdents could not say the type), so a filesystem that must work for a field is asked only for
 * the fields wanted.  A mask of STATX_TYPE alone (or 0) sends no statx at all for an entry whose
 * getdents d_type answers it (every local filesystem, most FUSE ones): the listing is the whole
 * cost; only DT_UNKNOWN entries, and symlinks with DIRAHEAD_XREADDIR_FOLLOW, are stat'ed.
 *
 * How: each entry is looked up relative to the iterator's own descriptor of the directory
 * (openat(dirfd, ".")), by name: no path is built, nothing above the directory is resolved.
 * Symlinks are not followed (AT_SYMLINK_NOFOLLOW) and automount points not triggered
 * (AT_NO_AUTOMOUNT) unless asked.  The iterator starts inline, one fetch at a time in the
 * caller's thread, as a getdents64 + fstatat loop would (on a warm cache nothing can beat that);
 * DIRAHEAD_XREADDIR_INLINE_SLOW fetches in a row that take longer than
 * DIRAHEAD_XREADDIR_INLINE_NS on average and in which the thread slept (waited for a disk or a
 * server: the attributes are not cached) switch it, for the rest of the directory, to parallel:
 * up to `depth` fetches in
 * flight over the next `window` entries, through io_uring statx when usable, else a pool of
 * threads (always threads with DIRAHEAD_XREADDIR_XATTRS: io_uring has no listxattr).  It needs
 * no privilege: everything runs with the calling process's credentials.
 *
 * Memory is bounded by the window, whatever the directory size: `window` entry slots (about
 * 700 bytes each), one 32 KiB getdents buffer, and with xattrs at most xattr_max_total bytes per
 * entry in the window.  Stopping early (dirahead_xreaddir_close() at any point) costs at most the
 * fetches in flight: it cancels them and waits for them to return (up to 1 s; one stuck on a hung
 * filesystem is abandoned then, its memory and the directory fd kept until it returns, or for
 * io_uring until the process exits, as dirahead_engine_free() does).
 *
 * Order: entries come in readdir order (DIRAHEAD_ORDER_READDIR, the default) or, with
 * DIRAHEAD_ORDER_INODE, by inode within each half-window of readdir order.  "." and ".." are
 * skipped.  Not thread-safe: one thread at a time per iterator (iterators are independent).
 */
struct dirahead_xdir;

#define DIRAHEAD_XREADDIR_FOLLOW    0x1u  /* stat a symlink's target (default: the link itself) */
#define DIRAHEAD_XREADDIR_AUTOMOUNT 0x2u  /* trigger automount points (default: never) */
#define DIRAHEAD_XREADDIR_XATTRS    0x4u  /* also each entry's extended attributes, names and
					   * values (dirahead_xent.xattrs) */
#define DIRAHEAD_XREADDIR_PARALLEL  0x8u  /* fetch in parallel from the first entry, never inline */
/* DIRAHEAD_XREADDIR_INLINE_SLOW inline fetches in a row slower than this on average, during
 * which the thread slept (voluntary context switches), switch the iterator to parallel fetching
 * (50 us: a cached statx takes ~1 us, a disk read or a FUSE round trip tens to thousands; slow
 * ones that did not sleep are no sign: on a busy machine a cached statx that is preempted takes
 * that long too).  They are timed in groups of 4. */
#define DIRAHEAD_XREADDIR_INLINE_NS 50000u
#define DIRAHEAD_XREADDIR_INLINE_SLOW 8u

struct dirahead_xreaddir_opts {
	size_t size;                  /* sizeof(struct dirahead_xreaddir_opts) */
	unsigned int mask;            /* STATX_* fields wanted; 0: names and types only */
	unsigned int flags;           /* DIRAHEAD_XREADDIR_* */
	enum dirahead_order order;    /* DEFAULT or READDIR, or INODE; NAME is EINVAL (sorting by
				       * name needs the whole listing: the caller's job) */
	unsigned int window;          /* entries listed and fetched ahead (default 256, 1..65536) */
	unsigned int depth;           /* fetches in flight (default 64, at most window) */
	enum dirahead_backend backend; /* for parallel fetching (default AUTO) */
	/* DIRAHEAD_XREADDIR_XATTRS only; an entry over a limit gets xattr_error E2BIG and no
	 * xattrs (0: the default) */
	size_t xattr_max_list;        /* bytes of the names list (default 65536) */
	size_t xattr_max_value;       /* bytes of one value (default 65536) */
	size_t xattr_max_total;       /* bytes of all names and values of one entry (default
				       * 262144) */
};

/* One extended attribute of an entry. */
struct dirahead_xattr {
	const char *name;             /* "user.comment", "security.capability", ... */
	const void *value;            /* `size` bytes, not NUL-terminated */
	size_t size;
};

/* One entry; it and everything it points to stay valid until the next dirahead_xreaddir() or
 * dirahead_xreaddir_close() on the same iterator. */
struct dirahead_xent {
	const char *name;             /* the entry's name (never "." or "..") */
	uint64_t ino;                 /* d_ino from getdents (on a mount point, the covered
				       * directory's; stx->stx_ino is the mounted root's) */
	unsigned char type;           /* DT_*: from getdents, or from the statx when getdents said
				       * DT_UNKNOWN (DT_UNKNOWN only if the fetch failed) */
	int error;                    /* 0, or the positive errno of the statx: ENOENT removed since
				       * it was listed, EACCES, ELOOP, EIO, ... (stx is NULL then) */
	const struct statx *stx;      /* never NULL when error is 0; stx->stx_mask says which fields
				       * are filled: at least the ones asked for that the filesystem
				       * has.  With no statx sent (type-only mask answered by
				       * d_type) only STATX_TYPE: stx_mode holds the file type. */
	/* DIRAHEAD_XREADDIR_XATTRS only (else 0, NULL, 0) */
	unsigned int nxattrs;
	const struct dirahead_xattr *xattrs;
	int xattr_error;              /* 0, or why xattrs is empty: E2BIG over a limit, EACCES,
				       * ENOENT, ... (EOPNOTSUPP: the filesystem has none: 0 and
				       * no xattrs instead) */
};

struct dirahead_xreaddir_stats {
	uint64_t entries;             /* returned so far */
	uint64_t statx;               /* statx calls made (inline ones included) */
	uint64_t statx_inline;        /* ... of which in the caller's thread */
	uint64_t xattr_calls;         /* listxattr and getxattr calls */
	uint64_t errors;              /* entries returned with an error */
	uint64_t mem_peak;            /* most bytes the iterator had allocated at once */
	bool parallel;                /* switched to (or started) parallel fetching */
	enum dirahead_backend backend; /* the parallel backend, AUTO while none was needed */
};

/* Opens an iterator over the directory dirfd refers to (any fd of it, O_PATH too; the caller's
 * fd is neither kept nor moved: it may be closed at once).  NULL with errno: EINVAL (bad opts),
 * EBADF, ENOTDIR, EACCES, ENOMEM, EMFILE. */
struct dirahead_xdir *dirahead_xreaddir_open(int dirfd, const struct dirahead_xreaddir_opts *opts);
/* The next entry into *ent: 1, 0 at the end of the directory, or -errno if reading the
 * directory failed (entries listed before the error are returned first; then -errno once, then
 * 0).  -EINVAL for a NULL argument. */
int dirahead_xreaddir(struct dirahead_xdir *x, const struct dirahead_xent **ent);
/* The iterator's own fd of the directory (for openat()/readlinkat() relative to it); valid
 * until close. */
int dirahead_xreaddir_fd(const struct dirahead_xdir *x);
void dirahead_xreaddir_get_stats(const struct dirahead_xdir *x,
				 struct dirahead_xreaddir_stats *st);
/* Stops: cancels the fetches in flight, closes its fds, frees everything.  NULL is fine. */
void dirahead_xreaddir_close(struct dirahead_xdir *x);

#ifdef __cplusplus
}
#endif
#endif /* DIRAHEAD_H */
