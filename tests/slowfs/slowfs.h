// SPDX-License-Identifier: LGPL-2.1-or-later OR BSD-2-Clause
/*
 * slowfs: a read-only FUSE mirror of a backing directory that answers metadata requests only
 * after a configurable latency, so tests can model a network filesystem where every lookup is a
 * round trip.  Shared declarations of the slowfs translation units.
 */
#ifndef SLOWFS_H
#define SLOWFS_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/types.h>

#ifdef SLOWFS_WANT_FUSE
#define FUSE_USE_VERSION 312
#include <fuse_lowlevel.h>
#endif

/* Operation types, for latency settings and counters.  Order = order of the stats output. */
enum sf_op {
	SF_OP_LOOKUP,
	SF_OP_GETATTR,
	SF_OP_READLINK,
	SF_OP_OPEN,
	SF_OP_READ,
	SF_OP_RELEASE,
	SF_OP_FLUSH,
	SF_OP_OPENDIR,
	SF_OP_READDIR,
	SF_OP_READDIRPLUS,
	SF_OP_RELEASEDIR,
	SF_OP_STATFS,
	SF_OP_ACCESS,
	SF_OP_GETXATTR,
	SF_OP_LISTXATTR,
	SF_OP_FORGET,
	SF_OP_COUNT
};

extern const char *const sf_op_names[SF_OP_COUNT];

/* --depth-latency rules at most */
#define SF_MAX_DEPTH_RULES 8

struct sf_config {
	const char *backing;
	const char *mountpoint;
	const char *control;		/* control socket path, or NULL */
	const char *extra_opts;		/* extra -o mount options, or NULL */
	uint64_t lat_ns[SF_OP_COUNT];	/* reply delay per operation */
	uint64_t jitter_ns;		/* uniform extra delay 0..jitter_ns */
	/* --depth-latency DEPTH:US: metadata requests on entries at DEPTH or deeper wait US; the
	 * rule with the greatest DEPTH not above the request's applies (sorted by depth) */
	struct sf_depth_lat {
		unsigned depth;
		uint64_t ns;
	} depth_lat[SF_MAX_DEPTH_RULES];
	unsigned n_depth_lat;
	double attr_timeout;
	double entry_timeout;
	double negative_timeout;	/* >0: cache ENOENT lookups that long */
	unsigned max_threads;
	bool readdirplus;
	bool allow_other;		/* false: --no-allow-other */
	bool acl;			/* --acl: xattrs served, POSIX ACLs enforced by the kernel */
	uint64_t cache_listing_ns;	/* >0: a directory listed to its end answers at once so long */
	bool cache_readdir;		/* --cache-readdir: FOPEN_CACHE_DIR | FOPEN_KEEP_CACHE */
	bool parallel_dirops;
	bool serial;			/* --serial: delayed replies one after another */
	bool debug;
	bool fuse_debug;
};

extern struct sf_config sf_cfg;
extern int sf_rootfd;			/* O_PATH fd of the backing directory */

void sf_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
#define sf_debug(...) do { if (sf_cfg.debug) sf_log(__VA_ARGS__); } while (0)

uint64_t sf_now_ns(void);

/* inode table (ops.c) */
void sf_nodes_init(const struct stat *root);
void sf_node_forget(uint64_t id, uint64_t nlookup);
size_t sf_nodes_count(void);

/* statistics (stats.c) */
void sf_stats_init(void);
/* Count one request of @op from thread @tid as received and in flight. */
/* uid: the caller's fsuid.  Returns the caller's thread group (0 if not known). */
pid_t sf_stats_begin(enum sf_op op, pid_t tid, uid_t uid);
void sf_stats_cached(pid_t tid);	/* a reply sent at once from the listing cache */
void sf_stats_delayed(pid_t tgid);	/* a request of process tgid was given a delay */
void sf_stats_done(enum sf_op op);
void sf_stats_print(FILE *out);
void sf_stats_reset(void);
/* The watch (control command `watch PREFIX`): requests that reach into the directory PREFIX
 * (relative to the mount's root; NULL: no watch) are counted apart, per process. */
void sf_stats_watch_set(const char *prefix);
bool sf_stats_watching(void);
/* Count one request of @op from thread @tid on @path (relative to the backing root; for a
 * lookup, the name looked up) if it reaches into the watched directory. */
void sf_stats_watch(enum sf_op op, pid_t tid, const char *path);

/* the INIT reply patch (devio.c) */
struct fuse_session;
int sf_devio_install(struct fuse_session *se);
uint64_t sf_init_kernel_flags(void);	/* flags the kernel offered in INIT */
uint64_t sf_init_sent_flags(void);	/* flags slowfs actually replied with */
bool sf_init_done(void);
unsigned sf_init_proto_minor(void);

/* control socket (control.c) */
int sf_control_start(const char *path);	/* binds now; serves from a thread */
void sf_control_stop(void);

extern volatile int sf_fail_lookups;	/* errno lookups fail with, 0 = off */

/* delayed replies (sched.c) */
int sf_sched_start(void);
void sf_sched_stop(void);		/* answers everything still pending, then returns */
void sf_sched_stall(bool on);		/* on: hold every reply, new and pending, until off */
bool sf_sched_stalled(void);
/* tgid > 0: hold the replies to process tgid's metadata requests from now on until a stall ends
 * (a server that never answers one client); 0: no more. */
void sf_sched_stall_pid(pid_t tgid);
pid_t sf_sched_stalled_pid(void);
size_t sf_sched_pending(void);

#ifdef SLOWFS_WANT_FUSE
enum sf_reply_kind {
	SF_R_ERR,
	SF_R_ENTRY,
	SF_R_ATTR,
	SF_R_BUF,
	SF_R_OPEN,
	SF_R_STATFS,
	SF_R_XATTR,	/* the size of an xattr or list, in len (a getxattr of size 0) */
};

struct sf_reply {
	uint64_t due_ns;
	uint64_t seq;
	fuse_req_t req;
	pid_t tgid;			/* the caller's process (0: not known) */
	enum sf_op op;
	enum sf_reply_kind kind;
	int err;
	union {
		struct fuse_entry_param entry;
		struct {
			struct stat st;
			double timeout;
		} attr;
		struct fuse_file_info fi;
		struct statvfs sv;
	} u;
	char *buf;
	size_t len;
	/* Undo the side effect of the request (node reference, open fd) if the kernel no longer
	 * wants the reply, e.g. because the caller was interrupted. */
	void (*undo)(struct sf_reply *r);
};

/* Allocate a reply for @req, zeroed; the delay starts now. */
struct sf_reply *sf_reply_new(fuse_req_t req, enum sf_op op);
/* The same for a request on entries at @depth (the mount's root is 0, its entries 1; a listing
 * counts at its entries' depth): --depth-latency may set its delay.  depth < 0: unknown. */
struct sf_reply *sf_reply_new_at(fuse_req_t req, enum sf_op op, int depth);
/* The delay of @op at @depth (< 0: unknown): a --depth-latency rule's for metadata, else the
 * operation's own. */
uint64_t sf_delay_ns(enum sf_op op, int depth);
/* Hand @r over: it is sent when its delay has passed (and the filesystem is not stalled). */
void sf_reply_submit(struct sf_reply *r);
void sf_reply_err(fuse_req_t req, enum sf_op op, int err);

extern struct fuse_lowlevel_ops sf_ops;
void sf_ops_setup(void);
#endif

#endif
