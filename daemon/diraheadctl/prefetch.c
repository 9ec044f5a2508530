/* SPDX-License-Identifier: LGPL-2.1-or-later OR BSD-2-Clause */
/*
 * diraheadctl prefetch: warm directories (and with -r whole trees) through libdirahead, without
 * the daemon.  Subdirectories are discovered from the prefetch results themselves (the statx of
 * each entry says whether it is a directory) and submitted to the same engine, so the listing of
 * a tree runs in parallel too; the engine keeps at most --max-open directories open at once.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "dirahead.h"
#include "diraheadctl.h"
#include "fsgroups.h"

/* One directory being prefetched: for error messages and for cancelling on a signal. */
struct node {
	struct node *prev, *next;
	struct dirahead_dir *dir;
	bool top;
	unsigned flags;               /* DIRAHEAD_DIR_*: its top's, the same filesystem */
	char path[];
};

struct ctx {
	struct dirahead_engine *e;
	struct node *live;            /* directories not finished yet */
	bool recursive;
	enum dirahead_order order;
	int groups;                   /* --groups: -1 auto, 0 no, 1 yes */
	uint64_t dirs, entries, requests, errors;
	bool top_failed;
};

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: diraheadctl prefetch [OPTION...] DIR...\n"
		"Fetch the attributes of every entry of each DIR in parallel (what `ls -l` needs), so\n"
		"that a following listing finds them cached.  Symlinks are not followed.\n\n"
		"  -r, --recursive        the whole tree below DIR (subdirectories listed in parallel,\n"
		"                         staying on DIR's filesystem)\n"
		"      --order=ORDER      readdir, inode or name (default: readdir)\n"
		"      --groups=WHEN      one request per group of 16 inode numbers: auto (on a\n"
		"                         block device's filesystem, not FUSE), yes or no\n"
		"      --depth=N          requests in flight (default 64)\n"
		"      --engine=ENGINE    auto, io_uring or threads (default auto)\n"
		"      --max-open=N       with -r: directories open at once (default 32)\n"
		"  -q, --quiet            no summary line\n"
		"  -h, --help             this text\n\n"
		"Prints one summary line: directories, entries, errors, elapsed, backend, peak RSS.\n"
		"Exit status: 0 done (entries or subdirectories that failed are counted as errors);\n"
		"1 a DIR could not be opened or read (the others are still warmed); 2 bad usage;\n"
		"130/143 interrupted by SIGINT/SIGTERM (the prefetch is cancelled at once).\n");
}

static struct node *node_new(struct ctx *c, const char *parent, const char *name, bool top)
{
	size_t lp = parent ? strlen(parent) : 0, ln = strlen(name);
	struct node *n = malloc(sizeof(*n) + lp + ln + 2);
	if (!n)
		return NULL;
	if (parent) {
		memcpy(n->path, parent, lp);
		n->path[lp] = '/';
		memcpy(n->path + lp + 1, name, ln + 1);
	} else {
		memcpy(n->path, name, ln + 1);
	}
	n->top = top;
	n->dir = NULL;
	n->prev = NULL;
	n->next = c->live;
	if (c->live)
		c->live->prev = n;
	c->live = n;
	return n;
}

static void node_free(struct ctx *c, struct node *n)
{
	if (n->prev)
		n->prev->next = n->next;
	else
		c->live = n->next;
	if (n->next)
		n->next->prev = n->prev;
	free(n);
}

static void on_complete(const struct dirahead_completion *cp, void *data)
{
	struct ctx *c = data;
	struct node *parent = cp->dir_data;

	c->entries += 1 + cp->covered; /* with those read in its inode group */
	c->requests++;
	if (cp->error) {
		c->errors++;
		return;
	}
	/* A real directory on the same filesystem (statx ran with AT_SYMLINK_NOFOLLOW and
	 * AT_NO_AUTOMOUNT, so symlinks and automount points show as what they are). */
	if (!c->recursive || !S_ISDIR(cp->stx->stx_mode) ||
	    (cp->stx->stx_attributes & (STATX_ATTR_AUTOMOUNT | STATX_ATTR_MOUNT_ROOT)))
		return;
	struct node *n = node_new(c, parent->path, cp->name, false);
	if (n)
		n->flags = parent->flags;
	struct dirahead_dir_opts o = {
		.size = sizeof(o), .order = c->order, .limit = UINT64_MAX, .data = n,
		.flags = parent->flags,
	};
	if (!n || !(n->dir = dirahead_dir_submitat(c->e, cp->dir, cp->name, &o))) {
		fprintf(stderr, "diraheadctl: prefetch: %s/%s: %s\n", parent->path, cp->name,
			strerror(errno));
		c->errors++;
		if (n)
			node_free(c, n);
	}
}

static void on_dir_done(struct dirahead_dir *dir, void *dir_data, int error, void *data)
{
	struct ctx *c = data;
	struct node *n = dir_data;
	(void)dir;
	if (!error) {
		c->dirs++;
	} else if (error != ECANCELED) {
		fprintf(stderr, "diraheadctl: prefetch: %s: %s\n", n->path, strerror(error));
		c->errors++;
		if (n->top)
			c->top_failed = true;
	}
	node_free(c, n);
}

static int parse_uint(const char *opt, const char *s, unsigned lo, unsigned hi, unsigned *out)
{
	char *end;
	errno = 0;
	unsigned long v = strtoul(s, &end, 10);
	if (errno || !*s || *end || v < lo || v > hi || *s == '-') {
		fprintf(stderr, "diraheadctl: prefetch: --%s: '%s' is not a number from %u to %u\n",
			opt, s, lo, hi);
		return -1;
	}
	*out = (unsigned)v;
	return 0;
}

static void raise_nofile(void)
{
	/* Each open directory, and each parent of a waiting subdirectory, holds an fd. */
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
}

/* --order's names: 0, or -1 for a name that is none of them. */
static int parse_order(const char *s, enum dirahead_order *out)
{
	if (!strcmp(s, "readdir"))
		*out = DIRAHEAD_ORDER_READDIR;
	else if (!strcmp(s, "inode"))
		*out = DIRAHEAD_ORDER_INODE;
	else if (!strcmp(s, "name"))
		*out = DIRAHEAD_ORDER_NAME;
	else if (!strcmp(s, "default"))
		*out = DIRAHEAD_ORDER_DEFAULT;
	else
		return -1;
	return 0;
}

/* --engine's names: 0, or -1 for a name that is none of them. */
static int parse_backend(const char *s, enum dirahead_backend *out)
{
	if (!strcmp(s, "auto"))
		*out = DIRAHEAD_BACKEND_AUTO;
	else if (!strcmp(s, "io_uring"))
		*out = DIRAHEAD_BACKEND_URING;
	else if (!strcmp(s, "threads"))
		*out = DIRAHEAD_BACKEND_THREADS;
	else
		return -1;
	return 0;
}

/* One option: -1 to go on, else the exit status to return at once. */
static int parse_opt(int opt, struct ctx *c, struct dirahead_engine_opts *eo, unsigned *max_open,
		     bool *quiet)
{
	switch (opt) {
	case 'r':
		c->recursive = true;
		return -1;
	case 'o':
		if (parse_order(optarg, &c->order) == 0)
			return -1;
		fprintf(stderr, "diraheadctl: prefetch: --order: '%s' is not readdir, "
			"inode or name\n", optarg);
		return 2;
	case 'd':
		return parse_uint("depth", optarg, 1, 4096, &eo->depth) < 0 ? 2 : -1;
	case 'e':
		if (parse_backend(optarg, &eo->backend) == 0)
			return -1;
		fprintf(stderr, "diraheadctl: prefetch: --engine: '%s' is not auto, "
			"io_uring or threads\n", optarg);
		return 2;
	case 'm':
		return parse_uint("max-open", optarg, 1, 65536, max_open) < 0 ? 2 : -1;
	case 'g':
		c->groups = !strcmp(optarg, "auto") ? -1 : !strcmp(optarg, "yes") ? 1
			  : !strcmp(optarg, "no") ? 0 : -2;
		if (c->groups >= -1)
			return -1;
		fprintf(stderr, "diraheadctl: prefetch: --groups: '%s' is not auto, yes or no\n",
			optarg);
		return 2;
	case 'q':
		*quiet = true;
		return -1;
	case 'h':
		usage(stdout);
		return 0;
	default:
		usage(stderr);
		return 2;
	}
}

/* The command line into c and eo: -1 to go on (DIRs from optind), else the exit status. */
static int parse_args(int argc, char **argv, struct ctx *c, struct dirahead_engine_opts *eo,
		      bool *quiet)
{
	static const struct option opts[] = {
		{ "recursive", no_argument, NULL, 'r' },
		{ "order", required_argument, NULL, 'o' },
		{ "groups", required_argument, NULL, 'g' },
		{ "depth", required_argument, NULL, 'd' },
		{ "engine", required_argument, NULL, 'e' },
		{ "max-open", required_argument, NULL, 'm' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	static char prog[] = "diraheadctl prefetch";
	unsigned max_open = 32;
	int opt, rc;

	argv[0] = prog; /* getopt's messages name it */
	optind = 1;
	while ((opt = getopt_long(argc, argv, "rqh", opts, NULL)) != -1)
		if ((rc = parse_opt(opt, c, eo, &max_open, quiet)) >= 0)
			return rc;
	if (optind >= argc) {
		fprintf(stderr, "diraheadctl: prefetch: no directory given\n");
		usage(stderr);
		return 2;
	}
	if (c->recursive) {
		eo->max_open = max_open;
		raise_nofile();
	}
	return -1;
}

/* Signals arrive through a signalfd, so the loop can cancel and report instead of dying with
 * requests in flight.  The fd, or -1 (the error printed). */
static int block_signals(void)
{
	sigset_t mask;
	sigemptyset(&mask);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGTERM);
	sigprocmask(SIG_BLOCK, &mask, NULL);
	int sfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
	if (sfd < 0)
		fprintf(stderr, "diraheadctl: prefetch: signalfd: %s\n", strerror(errno));
	return sfd;
}

/* The type of the mount `id` from /proc/self/mountinfo (which asks no filesystem anything), or
 * "" if not found. */
static void mount_fstype(uint64_t id, char *out, size_t len)
{
	FILE *f = fopen("/proc/self/mountinfo", "re");
	char line[4096];
	out[0] = '\0';
	while (f && fgets(line, sizeof(line), f)) {
		char *sep = strstr(line, " - ");
		unsigned long long mid;
		if (sscanf(line, "%llu", &mid) == 1 && mid == id && sep &&
		    sscanf(sep + 3, "%63s", out) == 1 && strlen(out) < len)
			break;
		out[0] = '\0';
	}
	if (f)
		fclose(f);
}

/* --groups for the filesystem of a DIR of the command line (a recursive walk stays on it).
 * Nothing here may wait on the filesystem (a hung FUSE server would hold the command before
 * its signal handling): statx from the cache, the type from mountinfo, no statfs. */
static unsigned top_flags(const struct ctx *c, int fd)
{
	struct statx stx;
	char type[64];
	if (c->groups >= 0)
		return c->groups ? DIRAHEAD_DIR_SHARED_READS : 0;
	if (statx(fd, "", AT_EMPTY_PATH | AT_STATX_DONT_SYNC, STATX_MNT_ID, &stx) < 0 ||
	    !(stx.stx_mask & STATX_MNT_ID))
		return 0;
	mount_fstype(stx.stx_mnt_id, type, sizeof(type));
	bool fuse = !strncmp(type, "fuse", 4);
	uint64_t magic = fuse ? FSGROUPS_FUSE_MAGIC : !strcmp(type, "btrfs") ? FSGROUPS_BTRFS_MAGIC : 0;
	return type[0] && fs_inode_groups(magic, stx.stx_dev_major) ? DIRAHEAD_DIR_SHARED_READS : 0;
}

/* One DIR of the command line into the engine; a failure is counted as a top one. */
static void submit_top(struct ctx *c, const char *path)
{
	/* O_PATH: only the lookup here; the real open (FUSE OPENDIR, permission check) happens in
	 * the engine's reader, so a hung filesystem cannot block this loop and a signal still
	 * cancels everything. */
	int fd = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0) {
		fprintf(stderr, "diraheadctl: prefetch: %s: %s\n", path, strerror(errno));
		c->errors++;
		c->top_failed = true;
		return;
	}
	struct node *n = node_new(c, NULL, path, true);
	if (n)
		n->flags = top_flags(c, fd);
	struct dirahead_dir_opts o = {
		.size = sizeof(o), .order = c->order, .limit = UINT64_MAX, .data = n,
		.flags = n ? n->flags : 0,
	};
	if (!n || !(n->dir = dirahead_dir_submit(c->e, fd, &o))) {
		fprintf(stderr, "diraheadctl: prefetch: %s: %s\n", path, strerror(errno));
		c->errors++;
		c->top_failed = true;
		if (n)
			node_free(c, n);
	}
	close(fd);
}

/* Runs the engine until every directory is done or a signal comes: that signal's number, or 0. */
static int run(struct ctx *c, int sfd)
{
	for (;;) {
		int r = dirahead_engine_process(c->e);
		if (r < 0)
			fprintf(stderr, "diraheadctl: prefetch: %s\n", strerror(-r));
		if (!c->live)
			return 0;
		struct pollfd p[2] = {
			{ .fd = dirahead_engine_fd(c->e), .events = POLLIN },
			{ .fd = sfd, .events = POLLIN },
		};
		if (poll(p, 2, -1) < 0 && errno != EINTR)
			return 0;
		struct signalfd_siginfo si;
		if (p[1].revents && read(sfd, &si, sizeof(si)) == sizeof(si)) {
			/* Cancel returns at once even if requests hang; the callbacks free the nodes. */
			for (struct node *n = c->live; n; n = n->next)
				dirahead_dir_cancel(n->dir);
			dirahead_engine_process(c->e);
			return (int)si.ssi_signo;
		}
	}
}

static void print_summary(const struct ctx *c, enum dirahead_backend backend,
			  const struct timespec *t0, const struct timespec *t1, int sig)
{
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	printf("prefetch: directories=%llu entries=%llu requests=%llu errors=%llu elapsed=%.3fs "
	       "backend=%s order=%s maxrss=%ldKiB%s\n",
	       (unsigned long long)c->dirs, (unsigned long long)c->entries,
	       (unsigned long long)c->requests, (unsigned long long)c->errors,
	       (double)(t1->tv_sec - t0->tv_sec) + (double)(t1->tv_nsec - t0->tv_nsec) / 1e9,
	       dirahead_backend_name(backend),
	       dirahead_order_name(c->order == DIRAHEAD_ORDER_DEFAULT
				   ? DIRAHEAD_ORDER_DEFAULT_MEANS : c->order),
	       ru.ru_maxrss, sig ? " interrupted" : "");
	fflush(stdout);
}

int cmd_prefetch(int argc, char **argv)
{
	struct ctx c = { .order = DIRAHEAD_ORDER_DEFAULT, .groups = -1 };
	struct dirahead_engine_opts eo = { .size = sizeof(eo), .on_complete = on_complete,
					   .on_dir_done = on_dir_done, .data = &c };
	bool quiet = false;

	int rc = parse_args(argc, argv, &c, &eo, &quiet);
	if (rc >= 0)
		return rc;
	int sfd = block_signals();
	if (sfd < 0)
		return 1;

	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	c.e = dirahead_engine_new(&eo);
	if (!c.e) {
		fprintf(stderr, "diraheadctl: prefetch: cannot start the %s engine: %s\n",
			dirahead_backend_name(eo.backend), strerror(errno));
		close(sfd);
		return 1;
	}
	for (int i = optind; i < argc; i++)
		submit_top(&c, argv[i]);
	int sig = run(&c, sfd);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	enum dirahead_backend backend = dirahead_engine_backend(c.e);
	dirahead_engine_free(c.e);
	while (c.live)
		node_free(&c, c.live);
	close(sfd);

	if (!quiet)
		print_summary(&c, backend, &t0, &t1, sig);
	if (sig)
		return 128 + sig;
	return c.top_failed ? 1 : 0;
}
