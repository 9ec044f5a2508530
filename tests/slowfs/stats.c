// SPDX-License-Identifier: LGPL-2.1-or-later OR BSD-2-Clause
/*
 * Counters: requests by operation, in total and per calling process, and the peak number of
 * requests in flight.  The kernel reports the calling *thread* (fuse_req_ctx()->pid is a TID);
 * tests reason about processes, so each TID is mapped to its thread group via /proc and cached.
 * The watch counts apart the requests that reach into one directory (`watch PREFIX`).
 */
#include "slowfs.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

const char *const sf_op_names[SF_OP_COUNT] = {
	[SF_OP_LOOKUP] = "lookup",
	[SF_OP_GETATTR] = "getattr",
	[SF_OP_READLINK] = "readlink",
	[SF_OP_OPEN] = "open",
	[SF_OP_READ] = "read",
	[SF_OP_RELEASE] = "release",
	[SF_OP_FLUSH] = "flush",
	[SF_OP_OPENDIR] = "opendir",
	[SF_OP_READDIR] = "readdir",
	[SF_OP_READDIRPLUS] = "readdirplus",
	[SF_OP_RELEASEDIR] = "releasedir",
	[SF_OP_STATFS] = "statfs",
	[SF_OP_ACCESS] = "access",
	[SF_OP_GETXATTR] = "getxattr",
	[SF_OP_LISTXATTR] = "listxattr",
	[SF_OP_FORGET] = "forget",
};

#define TID_CACHE_MAX 65536
/* A cached mapping is trusted this long: a TID recycled for another process within a second
 * is unlikely, and re-reading /proc once a second per thread costs nothing. */
#define TID_CACHE_TTL_NS 1000000000ULL
#define NBUCKETS 1024

struct tid_ent {		/* TID -> thread group id */
	pid_t tid, tgid;
	uint64_t when_ns;	/* when read from /proc */
	struct tid_ent *next;
};

struct pid_ent {		/* per thread group counters */
	pid_t tgid;
	uint64_t n[SF_OP_COUNT];
	uint64_t cached;	/* replies the listing cache sent at once (--cache-listing) */
	uint64_t delayed;	/* requests given a delay (by operation, or --depth-latency) */
	uid_t uids[4];		/* the (fs)uids its requests came with: a daemon acting for */
	unsigned nuids;		/* a program must show that program's (more: the first 4) */
	uint64_t watched[SF_OP_COUNT];	/* its requests into the watched directory */
	struct pid_ent *next;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct tid_ent *tids[NBUCKETS];
static size_t ntids;
static struct pid_ent *pids[NBUCKETS];
static uint64_t total[SF_OP_COUNT], total_cached;
static uint64_t inflight, inflight_attr, max_inflight, max_inflight_attr;
static uint64_t start_ns;
/* The watched directory, as node paths name it ("a/b"; "" for the root), or NULL. */
static char *watch_prefix;
static volatile bool watch_on;	/* read without the lock: handlers skip the path when off */
static uint64_t watch_total[SF_OP_COUNT];

static size_t bucket(pid_t p)
{
	return ((uint32_t)p * 2654435761u >> 8) & (NBUCKETS - 1);
}

void sf_stats_init(void)
{
	start_ns = sf_now_ns();
}

static void clear_tids_locked(void)
{
	size_t i;

	for (i = 0; i < NBUCKETS; i++) {
		struct tid_ent *t = tids[i], *next;

		for (; t; t = next) {
			next = t->next;
			free(t);
		}
		tids[i] = NULL;
	}
	ntids = 0;
}

/* Tgid of thread @tid from /proc/TID/status; the TID itself if the thread is already gone. */
static pid_t read_tgid(pid_t tid)
{
	char path[64], buf[1024];
	ssize_t n;
	char *p;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)tid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return tid;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return tid;
	buf[n] = '\0';
	p = strstr(buf, "\nTgid:");
	if (!p)
		return tid;
	return (pid_t)strtol(p + 6, NULL, 10);
}

static pid_t tgid_of(pid_t tid)
{
	struct tid_ent *t;
	pid_t tgid;

	uint64_t now = sf_now_ns();

	pthread_mutex_lock(&lock);
	for (t = tids[bucket(tid)]; t; t = t->next)
		if (t->tid == tid && now - t->when_ns < TID_CACHE_TTL_NS) {
			tgid = t->tgid;
			pthread_mutex_unlock(&lock);
			return tgid;
		}
	pthread_mutex_unlock(&lock);

	tgid = read_tgid(tid);	/* outside the lock: it is a file read */

	pthread_mutex_lock(&lock);
	for (t = tids[bucket(tid)]; t; t = t->next)
		if (t->tid == tid)
			break;
	if (!t) {
		if (ntids >= TID_CACHE_MAX)	/* bounded */
			clear_tids_locked();
		t = malloc(sizeof(*t));
		if (t) {
			t->tid = tid;
			t->next = tids[bucket(tid)];
			tids[bucket(tid)] = t;
			ntids++;
		}
	}
	if (t) {
		t->tgid = tgid;
		t->when_ns = now;
	}
	pthread_mutex_unlock(&lock);
	return tgid;
}

static bool is_attr_op(enum sf_op op)
{
	return op == SF_OP_LOOKUP || op == SF_OP_GETATTR;
}

/* The counters of thread group tgid, created if new (lock held); NULL if out of memory. */
static struct pid_ent *pid_ent_locked(pid_t tgid)
{
	struct pid_ent *p;

	for (p = pids[bucket(tgid)]; p; p = p->next)
		if (p->tgid == tgid)
			return p;
	if ((p = calloc(1, sizeof(*p))) != NULL) {
		p->tgid = tgid;
		p->next = pids[bucket(tgid)];
		pids[bucket(tgid)] = p;
	}
	return p;
}

void sf_stats_cached(pid_t tid)
{
	pid_t tgid = tid > 0 ? tgid_of(tid) : 0;
	struct pid_ent *p;

	pthread_mutex_lock(&lock);
	total_cached++;
	if (tgid > 0 && (p = pid_ent_locked(tgid)) != NULL)
		p->cached++;
	pthread_mutex_unlock(&lock);
}

void sf_stats_delayed(pid_t tgid)
{
	struct pid_ent *p;

	if (tgid <= 0)
		return;
	pthread_mutex_lock(&lock);
	if ((p = pid_ent_locked(tgid)) != NULL)
		p->delayed++;
	pthread_mutex_unlock(&lock);
}

pid_t sf_stats_begin(enum sf_op op, pid_t tid, uid_t uid)
{
	/* pid 0: kernel-internal requests (forget, async release) */
	pid_t tgid = tid > 0 ? tgid_of(tid) : 0;
	struct pid_ent *p;

	pthread_mutex_lock(&lock);
	total[op]++;
	if (tgid > 0 && (p = pid_ent_locked(tgid)) != NULL) {
		unsigned i;

		p->n[op]++;
		for (i = 0; i < p->nuids && p->uids[i] != uid; i++)
			;
		if (i == p->nuids && p->nuids < 4)
			p->uids[p->nuids++] = uid;
	}
	if (++inflight > max_inflight)
		max_inflight = inflight;
	if (is_attr_op(op) && ++inflight_attr > max_inflight_attr)
		max_inflight_attr = inflight_attr;
	pthread_mutex_unlock(&lock);
	return tgid;
}

void sf_stats_done(enum sf_op op)
{
	pthread_mutex_lock(&lock);
	inflight--;
	if (is_attr_op(op))
		inflight_attr--;
	pthread_mutex_unlock(&lock);
}

void sf_stats_reset(void)
{
	size_t i;

	pthread_mutex_lock(&lock);
	memset(total, 0, sizeof(total));
	memset(watch_total, 0, sizeof(watch_total));
	total_cached = 0;
	for (i = 0; i < NBUCKETS; i++) {
		struct pid_ent *p = pids[i], *next;

		for (; p; p = next) {
			next = p->next;
			free(p);
		}
		pids[i] = NULL;
	}
	/* A test that resets is about to start new processes; forget old TID mappings. */
	clear_tids_locked();
	/* Peaks restart from what is in flight right now. */
	max_inflight = inflight;
	max_inflight_attr = inflight_attr;
	start_ns = sf_now_ns();
	pthread_mutex_unlock(&lock);
}

void sf_stats_watch_set(const char *prefix)
{
	char *p = NULL;
	size_t n;

	if (prefix) {
		/* as node paths are written: no leading "/" or "./", no trailing "/", "" = root */
		for (;;) {
			if (*prefix == '/')
				prefix++;
			else if (prefix[0] == '.' && prefix[1] == '/')
				prefix += 2;
			else
				break;
		}
		if (strcmp(prefix, ".") == 0)
			prefix = "";
		p = strdup(prefix);
		if (!p)
			return;
		for (n = strlen(p); n && p[n - 1] == '/'; n--)
			p[n - 1] = '\0';
	}
	pthread_mutex_lock(&lock);
	free(watch_prefix);
	watch_prefix = p;
	watch_on = p != NULL;
	memset(watch_total, 0, sizeof(watch_total));
	for (n = 0; n < NBUCKETS; n++)
		for (struct pid_ent *e = pids[n]; e; e = e->next)
			memset(e->watched, 0, sizeof(e->watched));
	pthread_mutex_unlock(&lock);
}

bool sf_stats_watching(void)
{
	return watch_on;
}

/* Whether a request of op on path reaches into directory prefix: anything below it, or the
 * listing of the directory itself (what needs read or search permission on it; a lookup or
 * getattr of its own name needs them only on its parent). */
static bool watched(const char *prefix, enum sf_op op, const char *path)
{
	size_t n = strlen(prefix);
	bool self = n ? strcmp(path, prefix) == 0 : strcmp(path, ".") == 0;
	bool below = n ? strncmp(path, prefix, n) == 0 && path[n] == '/' : !self;

	return below || (self && (op == SF_OP_OPENDIR || op == SF_OP_READDIR ||
				  op == SF_OP_READDIRPLUS));
}

void sf_stats_watch(enum sf_op op, pid_t tid, const char *path)
{
	pid_t tgid;
	struct pid_ent *p;

	if (!watch_on)
		return;
	tgid = tid > 0 ? tgid_of(tid) : 0;
	pthread_mutex_lock(&lock);
	if (watch_prefix && watched(watch_prefix, op, path)) {
		watch_total[op]++;
		if (tgid > 0 && (p = pid_ent_locked(tgid)) != NULL)
			p->watched[op]++;
	}
	pthread_mutex_unlock(&lock);
}

static int cmp_pid(const void *a, const void *b)
{
	const struct pid_ent *x = *(struct pid_ent *const *)a, *y = *(struct pid_ent *const *)b;

	return (x->tgid > y->tgid) - (x->tgid < y->tgid);
}

void sf_stats_print(FILE *out)
{
	uint64_t sum = 0, kflags = sf_init_kernel_flags(), sflags = sf_init_sent_flags();
	struct pid_ent **list = NULL;
	size_t i, n = 0, cap = 0;
	int op;

	/* Configuration and negotiation first, then counters. */
	fprintf(out, "backing=%s\n", sf_cfg.backing);
	fprintf(out, "mountpoint=%s\n", sf_cfg.mountpoint);
	fprintf(out, "init_done=%d\n", sf_init_done());
	fprintf(out, "proto_minor=%u\n", sf_init_proto_minor());
	fprintf(out, "init_kernel_flags=0x%" PRIx64 "\n", kflags);
	fprintf(out, "init_flags=0x%" PRIx64 "\n", sflags);
	fprintf(out, "parallel_dirops=%d\n", !!(sflags & (1u << 18)));
	fprintf(out, "readdirplus=%d\n", !!(sflags & (1u << 13)));
	fprintf(out, "posix_acl=%d\n", !!(sflags & (1u << 20)));
	fprintf(out, "attr_timeout=%g\n", sf_cfg.attr_timeout);
	fprintf(out, "entry_timeout=%g\n", sf_cfg.entry_timeout);
	for (op = 0; op < SF_OP_COUNT; op++)
		fprintf(out, "latency_us.%s=%" PRIu64 "\n", sf_op_names[op], sf_cfg.lat_ns[op] / 1000);
	fprintf(out, "jitter_us=%" PRIu64 "\n", sf_cfg.jitter_ns / 1000);
	for (unsigned i = 0; i < sf_cfg.n_depth_lat; i++)
		fprintf(out, "depth_latency_us.%u=%" PRIu64 "\n", sf_cfg.depth_lat[i].depth,
			sf_cfg.depth_lat[i].ns / 1000);
	fprintf(out, "stalled=%d\n", sf_sched_stalled());
	fprintf(out, "stalled_pid=%d\n", (int)sf_sched_stalled_pid());
	fprintf(out, "fail_lookups=%d\n", sf_fail_lookups);
	fprintf(out, "nodes=%zu\n", sf_nodes_count());
	fprintf(out, "pending_replies=%zu\n", sf_sched_pending());

	pthread_mutex_lock(&lock);
	fprintf(out, "uptime_ms=%" PRIu64 "\n", (sf_now_ns() - start_ns) / 1000000);
	fprintf(out, "inflight=%" PRIu64 "\n", inflight);
	fprintf(out, "max_inflight=%" PRIu64 "\n", max_inflight);
	fprintf(out, "max_inflight_lookup_getattr=%" PRIu64 "\n", max_inflight_attr);
	for (op = 0; op < SF_OP_COUNT; op++) {
		fprintf(out, "total.%s=%" PRIu64 "\n", sf_op_names[op], total[op]);
		sum += total[op];
	}
	fprintf(out, "total.all=%" PRIu64 "\n", sum);
	fprintf(out, "total.cached=%" PRIu64 "\n", total_cached);
	for (i = 0; i < NBUCKETS; i++) {
		struct pid_ent *p;

		for (p = pids[i]; p; p = p->next) {
			if (n == cap) {
				size_t c = cap ? cap * 2 : 64;
				struct pid_ent **l = realloc(list, c * sizeof(*l));

				if (!l)
					break;
				list = l;
				cap = c;
			}
			list[n++] = p;
		}
	}
	if (n)
		qsort(list, n, sizeof(*list), cmp_pid);
	for (i = 0; i < n; i++) {
		uint64_t all = 0;

		for (op = 0; op < SF_OP_COUNT; op++) {
			if (list[i]->n[op])
				fprintf(out, "pid.%d.%s=%" PRIu64 "\n", (int)list[i]->tgid,
					sf_op_names[op], list[i]->n[op]);
			all += list[i]->n[op];
		}
		fprintf(out, "pid.%d.all=%" PRIu64 "\n", (int)list[i]->tgid, all);
		/* what it waited for: delayed requests, not those the listing cache answered */
		uint64_t slow = list[i]->delayed;
		slow -= list[i]->cached < slow ? list[i]->cached : slow;
		fprintf(out, "pid.%d.cached=%" PRIu64 "\n", (int)list[i]->tgid, list[i]->cached);
		fprintf(out, "pid.%d.uids=", (int)list[i]->tgid);
		for (unsigned u = 0; u < list[i]->nuids; u++)
			fprintf(out, "%s%u", u ? "," : "", (unsigned)list[i]->uids[u]);
		fputc('\n', out);
		fprintf(out, "pid.%d.slow=%" PRIu64 "\n", (int)list[i]->tgid, slow);
	}
	/* the watch: its directory, then its counters as above (per process: only those with any) */
	fprintf(out, "watch=%s\n", watch_prefix ? watch_prefix : "");
	sum = 0;
	for (op = 0; op < SF_OP_COUNT; op++) {
		fprintf(out, "watch.total.%s=%" PRIu64 "\n", sf_op_names[op], watch_total[op]);
		sum += watch_total[op];
	}
	fprintf(out, "watch.total.all=%" PRIu64 "\n", sum);
	for (i = 0; i < n; i++) {
		uint64_t all = 0;

		for (op = 0; op < SF_OP_COUNT; op++)
			all += list[i]->watched[op];
		if (!all)
			continue;
		for (op = 0; op < SF_OP_COUNT; op++)
			if (list[i]->watched[op])
				fprintf(out, "watch.pid.%d.%s=%" PRIu64 "\n", (int)list[i]->tgid,
					sf_op_names[op], list[i]->watched[op]);
		fprintf(out, "watch.pid.%d.all=%" PRIu64 "\n", (int)list[i]->tgid, all);
	}
	pthread_mutex_unlock(&lock);
	free(list);
}
