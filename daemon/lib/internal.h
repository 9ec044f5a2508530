/* SPDX-License-Identifier: LGPL-2.1-or-later OR BSD-2-Clause */
/* libdirahead internals shared by its source files (not installed, not exported). */
#ifndef DIRAHEAD_INTERNAL_H
#define DIRAHEAD_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <fcntl.h>

#include "dirahead.h"
#include "list.h"
#include "pool.h"

#define DA_HIDDEN __attribute__((visibility("hidden")))

/* What `ls -l` shows (type and mode, links, owner, group, size, blocks for "total", mtime, inode
 * for -i); nothing else is asked for.  Never follow a symlink, never trigger an automount. */
#define DA_STATX_MASK (STATX_TYPE | STATX_MODE | STATX_NLINK | STATX_UID | STATX_GID | \
		       STATX_SIZE | STATX_BLOCKS | STATX_MTIME | STATX_INO)
#define DA_STATX_FLAGS (AT_SYMLINK_NOFOLLOW | AT_NO_AUTOMOUNT | AT_STATX_SYNC_AS_STAT)

uint64_t da_now_ns(void) DA_HIDDEN;

/* ---- shared directory descriptor ------------------------------------------------------------
 * Every request names its directory by fd, so the fd must stay open (and keep its number) until
 * the last request using it has returned: closing it earlier could let a stuck or queued request
 * resolve a reused fd number.  Refcounted; the last put closes it, from any thread. */
struct da_fd {
	int fd;     /* -1 until opened */
	int refs;   /* atomic */
};
struct da_fd *da_fd_new(int fd) DA_HIDDEN;
struct da_fd *da_fd_get(struct da_fd *f) DA_HIDDEN;
void da_fd_put(struct da_fd *f) DA_HIDDEN;

/* ---- reading a directory in bounded batches ------------------------------------------------- */
struct da_entry {
	uint64_t ino;
	uint32_t name_off;  /* into da_batch.names */
	uint8_t type;       /* DT_* */
};

struct da_batch {
	uint64_t base;          /* directory index of the first entry */
	uint32_t n, cap;        /* entries, most entries */
	uint32_t ents_cap;      /* allocated */
	struct da_entry *ents;
	char *names;
	size_t names_len, names_cap;
	uint32_t *hash;         /* open addressing, slot = entry index + 1; built by da_batch_finish */
	uint32_t hash_mask;
};

#define DA_BATCH_DEFAULT 8192
#define DA_BATCH_MAX_NAMES (1u << 20)  /* a batch also ends when its names fill 1 MiB (64 bytes
					* an entry for batches above 16,384) */

struct da_dirstream {
	int fd;
	char *buf;
	size_t len, pos;
	bool eof;
	int64_t cookie;         /* d_off of the last entry returned: lseek() here to continue */
	uint64_t first_ns;      /* how long its first getdents64 took (0: not called yet) */
};

int da_ds_init(struct da_dirstream *ds, int fd) DA_HIDDEN;
void da_ds_fini(struct da_dirstream *ds) DA_HIDDEN;
/* Next entry other than "." and "..": 1 (name, ino, type set), 0 at the end, -errno. */
int da_ds_next(struct da_dirstream *ds, const char **name, uint64_t *ino, uint8_t *type) DA_HIDDEN;

struct da_batch *da_batch_new(uint64_t base, uint32_t cap) DA_HIDDEN;
void da_batch_free(struct da_batch *b) DA_HIDDEN;
int da_batch_add(struct da_batch *b, const char *name, uint64_t ino, uint8_t type) DA_HIDDEN;
/* True when the batch cannot take another entry. */
bool da_batch_full(const struct da_batch *b) DA_HIDDEN;
/* Sorts by `order` and builds the name index. */
int da_batch_finish(struct da_batch *b, enum dirahead_order order) DA_HIDDEN;
static inline const char *da_batch_name(const struct da_batch *b, uint32_t i)
{
	return b->names + b->ents[i].name_off;
}
/* Position of name in the batch, or -1. */
int64_t da_batch_find(const struct da_batch *b, const char *name) DA_HIDDEN;

/* ---- credentials (cred.c; engine.c interns them per engine) ---------------------------------- */
struct da_cred {
	struct dirahead_cred c;
	int refs;           /* atomic: ops holding it may end in a worker */
	int personality;    /* io_uring personality registered with them, -1: none yet */
	unsigned inflight;  /* its requests until they return, stalled and abandoned ones too
			     * (owner thread only) */
	struct da_cred *next;
};
struct da_cred *da_cred_ref(struct da_cred *c) DA_HIDDEN;
/* Frees at the last reference (a personality dies with its ring: nothing to unregister). */
void da_cred_unref(struct da_cred *c) DA_HIDDEN;
/* fn in a child process with c's ids in full (see dirahead_cred_call()): 0 with out, or -errno
 * (out->res -ECHILD: it died before it could say). */
int da_cred_call_child(const struct dirahead_cred *c, dirahead_call_fn fn, void *arg,
		       struct dirahead_call_out *out) DA_HIDDEN;

/* ---- io_uring backend (uring.c) ------------------------------------------------------------- */
struct da_uring;
/* -errno: EPERM (io_uring_disabled), ENOSYS, EOPNOTSUPP (no IORING_OP_STATX), ... */
int da_uring_new(struct da_uring **out, unsigned depth, int notify_fd) DA_HIDDEN;
void da_uring_free(struct da_uring *u) DA_HIDDEN;
/* Room for this many more requests (statx or cancel) without risking a CQ overflow. */
unsigned da_uring_room(const struct da_uring *u) DA_HIDDEN;
void da_uring_statx(struct da_uring *u, int dfd, const char *name, struct statx *stx,
		    int personality, void *data) DA_HIDDEN;
/* The same with the caller's flags and mask (dirahead_xreaddir). */
void da_uring_statx_as(struct da_uring *u, int dfd, const char *name, int flags, unsigned mask,
		       struct statx *stx, int personality, void *data) DA_HIDDEN;
/* Registers c's credentials, in full (a child process with them registers itself): a
 * personality id, or -errno.  Any thread. */
int da_uring_personality(struct da_uring *u, const struct dirahead_cred *c) DA_HIDDEN;
void da_uring_unpersonality(struct da_uring *u, int id) DA_HIDDEN;
void da_uring_cancel(struct da_uring *u, void *data) DA_HIDDEN;
int da_uring_flush(struct da_uring *u) DA_HIDDEN;
/* Calls fn for each completion of a statx (cancel results are dropped); returns how many. */
int da_uring_reap(struct da_uring *u, void (*fn)(void *data, int res, void *ctx), void *ctx)
	DA_HIDDEN;
/* Waits up to timeout_ms for at least one completion; 0 if one is ready. */
int da_uring_wait(struct da_uring *u, int timeout_ms) DA_HIDDEN;

/* ---- extended attributes of one entry (xattrs.c, for dirahead_xreaddir) --------------------- */
struct da_xattr_limits {
	size_t list, value, total;  /* bytes: names list, one value, everything of one entry */
};
struct da_xattrs {
	struct dirahead_xattr *v;   /* one block: the array, names and values (free(v)) */
	unsigned n;
	size_t bytes;               /* its size */
};
/* name's xattrs relative to dfd (atflags: AT_SYMLINK_NOFOLLOW or 0): 0 (none at all on a
 * filesystem without them), or -errno (E2BIG over a limit); *calls counts the syscalls. */
int da_xattrs_fetch(int dfd, const char *name, int atflags, const struct da_xattr_limits *l,
		    struct da_xattrs *out, unsigned *calls) DA_HIDDEN;
void da_xattrs_free(struct da_xattrs *x) DA_HIDDEN;

/* ---- engine hooks for dirreadahead() ------------------------------------------------------ */
/* Starts a directory whose entries were already read: fd (owned by the engine from now on) and
 * one finished batch (owned too); the directory ends after that batch. */
struct dirahead_dir *da_dir_submit_batch(struct dirahead_engine *e, int fd, struct da_batch *b,
					 void *data) DA_HIDDEN;
enum dirahead_order da_order_resolve(enum dirahead_order o) DA_HIDDEN;

#endif /* DIRAHEAD_INTERNAL_H */
