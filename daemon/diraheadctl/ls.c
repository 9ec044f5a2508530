/* SPDX-License-Identifier: LGPL-2.1-or-later OR BSD-2-Clause */
/*
 * diraheadctl ls [-l] [-R] [-A] DIR...: what `ls -l` (C locale, output to a pipe) prints, through
 * dirahead_xreaddir(): the simplest real user of the iterator.  Without -l it asks for the type
 * alone, so on a filesystem whose getdents gives types it sends no stat at all; with -l it asks
 * for exactly what the long format shows.  Entries are sorted by strcmp(), as ls does in the C
 * locale; ACL and security-context marks ('+', '.') are not shown.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <grp.h>
#include <pwd.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include "dirahead.h"
#include "diraheadctl.h"

#define LS_LONG_MASK (STATX_TYPE | STATX_MODE | STATX_NLINK | STATX_UID | STATX_GID | \
		      STATX_SIZE | STATX_BLOCKS | STATX_MTIME)
#define SIX_MONTHS (31556952 / 2) /* GNU ls: older (or in the future) shows the year */

struct ent {
	char *name;
	char *link;                 /* symlink target (-l) */
	char *xattrs;               /* --xattrs: its lines, as getfattr -d -e hex prints them */
	struct statx stx;
	unsigned char type;
};

struct opts {
	bool lng, rec, stats, all, xattrs;
	enum dirahead_backend backend;
	unsigned flags;
	bool many;                  /* print "DIR:" headers */
	bool first;                 /* nothing printed yet (blank line before later headers) */
	int rc;
	time_t now;
};

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: diraheadctl ls [OPTION...] DIR...\n"
		"List each DIR as `ls` does in the C locale, to a pipe (one name per line; with -l the\n"
		"long format), through libdirahead's dirahead_xreaddir(): with -l, the attributes are\n"
		"fetched in parallel as soon as they are not cached; without it, only the types, which\n"
		"the listing gives (no stat at all on most filesystems).\n\n"
		"  -l                     the long format: mode, links, owner, group, size, mtime\n"
		"  -R                     subdirectories too, recursively (symlinks not followed)\n"
		"  -A                     names starting with '.' too\n"
		"      --engine=ENGINE    auto, io_uring or threads (default auto)\n"
		"      --parallel         fetch in parallel from the first entry (never inline)\n"
		"      --xattrs           instead of the listing, each entry's extended attributes as\n"
		"                         `getfattr -h -d -m - -e hex DIR/*` prints them\n"
		"      --stats            one line per directory on stderr: entries, statx calls,\n"
		"                         how many inline, backend\n"
		"  -h, --help             this text\n\n"
		"Exit status: 0 listed; 1 a DIR, subdirectory or entry could not be read (the rest is\n"
		"still listed); 2 bad usage.\n");
}

static int cmp_ent(const void *a, const void *b)
{
	return strcmp(((const struct ent *)a)->name, ((const struct ent *)b)->name);
}

/* ---- the long format ------------------------------------------------------------------------ */
static void mode_string(mode_t m, char s[11])
{
	s[0] = S_ISDIR(m) ? 'd' : S_ISLNK(m) ? 'l' : S_ISCHR(m) ? 'c' : S_ISBLK(m) ? 'b' :
	       S_ISFIFO(m) ? 'p' : S_ISSOCK(m) ? 's' : '-';
	const char *rwx = "rwxrwxrwx";
	for (int i = 0; i < 9; i++)
		s[1 + i] = (m & (0400 >> i)) ? rwx[i] : '-';
	if (m & S_ISUID)
		s[3] = (m & S_IXUSR) ? 's' : 'S';
	if (m & S_ISGID)
		s[6] = (m & S_IXGRP) ? 's' : 'S';
	if (m & S_ISVTX)
		s[9] = (m & S_IXOTH) ? 't' : 'T';
	s[10] = '\0';
}

/* Names of ids, remembering the last one (a directory mostly has one owner). */
static const char *user_name(uint32_t uid, char *buf, size_t n)
{
	static uint32_t last = UINT32_MAX;
	static char name[64];
	if (uid != last) {
		struct passwd *pw = getpwuid(uid);
		if (pw)
			snprintf(name, sizeof(name), "%s", pw->pw_name);
		else
			snprintf(name, sizeof(name), "%u", uid);
		last = uid;
	}
	snprintf(buf, n, "%s", name);
	return buf;
}

static const char *group_name(uint32_t gid, char *buf, size_t n)
{
	static uint32_t last = UINT32_MAX;
	static char name[64];
	if (gid != last) {
		struct group *gr = getgrgid(gid);
		if (gr)
			snprintf(name, sizeof(name), "%s", gr->gr_name);
		else
			snprintf(name, sizeof(name), "%u", gid);
		last = gid;
	}
	snprintf(buf, n, "%s", name);
	return buf;
}

static int digits(uint64_t v)
{
	int n = 1;
	while (v >= 10) {
		v /= 10;
		n++;
	}
	return n;
}

static void print_long(struct opts *op, struct ent *es, size_t n)
{
	int wl = 1, wu = 1, wg = 1, ws = 1, wmaj = 0, wmin = 0;
	uint64_t blocks = 0;
	char u[64], g[64];
	for (size_t i = 0; i < n; i++) {
		const struct statx *s = &es[i].stx;
		if (!s->stx_mask)
			continue;
		blocks += s->stx_blocks;
		if (digits(s->stx_nlink) > wl)
			wl = digits(s->stx_nlink);
		if ((int)strlen(user_name(s->stx_uid, u, sizeof(u))) > wu)
			wu = (int)strlen(u);
		if ((int)strlen(group_name(s->stx_gid, g, sizeof(g))) > wg)
			wg = (int)strlen(g);
		if (S_ISCHR(s->stx_mode) || S_ISBLK(s->stx_mode)) {
			if (digits(s->stx_rdev_major) > wmaj)
				wmaj = digits(s->stx_rdev_major);
			if (digits(s->stx_rdev_minor) > wmin)
				wmin = digits(s->stx_rdev_minor);
		} else if (digits(s->stx_size) > ws) {
			ws = digits(s->stx_size);
		}
		if (s->stx_mtime.tv_sec > op->now)
			op->now = time(NULL); /* GNU ls: a file newer than "now" refreshes it */
	}
	if (wmaj && wmaj + 2 + wmin > ws)
		ws = wmaj + 2 + wmin;
	printf("total %llu\n", (unsigned long long)(blocks + 1) / 2); /* 1 KiB units, rounded up */
	for (size_t i = 0; i < n; i++) {
		const struct statx *s = &es[i].stx;
		if (!s->stx_mask)
			continue; /* its error was reported */
		char m[11], when[32];
		mode_string(s->stx_mode, m);
		time_t t = (time_t)s->stx_mtime.tv_sec;
		struct tm tm;
		localtime_r(&t, &tm);
		bool recent = t > op->now - SIX_MONTHS && t <= op->now;
		strftime(when, sizeof(when), recent ? "%b %e %H:%M" : "%b %e  %Y", &tm);
		printf("%s %*llu %-*s %-*s ", m, wl, (unsigned long long)s->stx_nlink, wu,
		       user_name(s->stx_uid, u, sizeof(u)), wg, group_name(s->stx_gid, g, sizeof(g)));
		if (S_ISCHR(s->stx_mode) || S_ISBLK(s->stx_mode)) {
			int pad = ws - (wmaj + 2 + wmin);
			printf("%*u, %*u", wmaj + (pad > 0 ? pad : 0), s->stx_rdev_major, wmin,
			       s->stx_rdev_minor);
		} else {
			printf("%*llu", ws, (unsigned long long)s->stx_size);
		}
		printf(" %s %s", when, es[i].name);
		if (es[i].link)
			printf(" -> %s", es[i].link);
		putchar('\n');
	}
}

/* ---- --xattrs ---------------------------------------------------------------------------------- */
static int cmp_xattr(const void *a, const void *b)
{
	return strcmp((*(const struct dirahead_xattr *const *)a)->name,
		      (*(const struct dirahead_xattr *const *)b)->name);
}

/* "name=0x..." lines of an entry's xattrs, sorted by name as getfattr does (NULL: none). */
static char *format_xattrs(const struct dirahead_xent *e)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f;
	const struct dirahead_xattr **v = e->nxattrs ? calloc(e->nxattrs, sizeof(*v)) : NULL;
	if (!v || !(f = open_memstream(&buf, &len))) {
		free(v);
		return NULL;
	}
	for (unsigned i = 0; i < e->nxattrs; i++)
		v[i] = &e->xattrs[i];
	qsort(v, e->nxattrs, sizeof(*v), cmp_xattr);
	for (unsigned i = 0; i < e->nxattrs; i++) {
		fprintf(f, "%s=0x", v[i]->name);
		for (size_t k = 0; k < v[i]->size; k++)
			fprintf(f, "%02x", ((const unsigned char *)v[i]->value)[k]);
		fputc('\n', f);
	}
	fclose(f);
	free(v);
	return buf;
}

static void print_xattrs(const char *path, const struct ent *es, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (es[i].xattrs)
			printf("# file: %s%s%s\n%s\n", path,
			       path[strlen(path) - 1] == '/' ? "" : "/", es[i].name, es[i].xattrs);
}

/* ---- one directory -------------------------------------------------------------------------- */
static void list_dir(struct opts *op, int dirfd, const char *path);

static char *read_link(int dfd, const char *name, size_t size)
{
	size_t cap = size ? size + 1 : 256;
	for (;;) {
		char *b = malloc(cap);
		if (!b)
			return NULL;
		ssize_t r = readlinkat(dfd, name, b, cap);
		if (r < 0) {
			free(b);
			return NULL;
		}
		if ((size_t)r < cap) {
			b[r] = '\0';
			return b;
		}
		free(b);
		cap *= 2;
	}
}

static void err(struct opts *op, const char *path, const char *name, int e)
{
	fflush(stdout);
	fprintf(stderr, "diraheadctl: ls: %s%s%s: %s\n", path, name ? "/" : "", name ? name : "",
		strerror(e));
	op->rc = 1;
}

/* The entries of one directory, as read. */
struct ents {
	struct ent *v;
	size_t n, cap;
};

/* A new slot at the end of es, or NULL (the error reported). */
static struct ent *ents_push(struct opts *op, const char *path, struct ents *es)
{
	if (es->n == es->cap) {
		size_t cap = es->cap ? es->cap * 2 : 256;
		struct ent *nv = realloc(es->v, cap * sizeof(*nv));
		if (!nv) {
			err(op, path, NULL, ENOMEM);
			return NULL;
		}
		es->v = nv;
		es->cap = cap;
	}
	return &es->v[es->n];
}

static void ents_free(struct ents *es)
{
	for (size_t i = 0; i < es->n; i++) {
		free(es->v[i].name);
		free(es->v[i].link);
		free(es->v[i].xattrs);
	}
	free(es->v);
}

/* One entry into es (its link target read through x's fd): false to stop, out of memory. */
static bool add_ent(struct opts *op, const char *path, struct dirahead_xdir *x,
		    const struct dirahead_xent *e, struct ents *es)
{
	struct ent *en = ents_push(op, path, es);
	if (!en)
		return false;
	en->name = strdup(e->name);
	en->link = NULL;
	en->xattrs = op->xattrs ? format_xattrs(e) : NULL;
	if (e->xattr_error)
		err(op, path, e->name, e->xattr_error);
	en->type = e->type;
	en->stx = *e->stx;
	if (!en->name) {
		free(en->xattrs);
		err(op, path, NULL, ENOMEM);
		return false;
	}
	if (op->lng && S_ISLNK(e->stx->stx_mode))
		en->link = read_link(dirahead_xreaddir_fd(x), e->name, e->stx->stx_size);
	es->n++;
	return true;
}

/* Every entry ls would show into es; the others, and errors, reported as ls does. */
static void read_ents(struct opts *op, const char *path, struct dirahead_xdir *x, struct ents *es)
{
	const struct dirahead_xent *e;
	int r;
	while ((r = dirahead_xreaddir(x, &e)) > 0) {
		if (e->name[0] == '.' && !op->all)
			continue; /* hidden, as ls hides them */
		if (e->error) { /* ls names it on stderr and leaves it out */
			err(op, path, e->name, e->error);
			continue;
		}
		if (!add_ent(op, path, x, e, es))
			break;
	}
	if (r < 0)
		err(op, path, NULL, -r);
}

static void print_stats(const char *path, struct dirahead_xdir *x)
{
	struct dirahead_xreaddir_stats st;
	dirahead_xreaddir_get_stats(x, &st);
	fprintf(stderr, "ls-stats: %s entries=%llu statx=%llu inline=%llu xattr_calls=%llu "
		"errors=%llu parallel=%s backend=%s mem_peak=%llu\n", path,
		(unsigned long long)st.entries, (unsigned long long)st.statx,
		(unsigned long long)st.statx_inline, (unsigned long long)st.xattr_calls,
		(unsigned long long)st.errors, st.parallel ? "yes" : "no",
		st.parallel ? dirahead_backend_name(st.backend) : "none",
		(unsigned long long)st.mem_peak);
}

static void print_dir(struct opts *op, const char *path, const struct ents *es)
{
	if (op->many) {
		printf("%s%s:\n", op->first ? "" : "\n", path);
	}
	op->first = false;
	if (op->xattrs)
		print_xattrs(path, es->v, es->n);
	else if (op->lng)
		print_long(op, es->v, es->n);
	else
		for (size_t i = 0; i < es->n; i++)
			printf("%s\n", es->v[i].name);
}

/* -R: each subdirectory among es, opened below dfd (without following symlinks), listed in turn. */
static void list_subdirs(struct opts *op, int dfd, const char *path, const struct ents *es)
{
	for (size_t i = 0; i < es->n; i++) {
		const struct ent *en = &es->v[i];
		bool dir = op->lng ? S_ISDIR(en->stx.stx_mode) : en->type == DT_DIR;
		if (!dir)
			continue;
		int fd = openat(dfd, en->name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		size_t lp = strlen(path) + strlen(en->name) + 2;
		char *sub = malloc(lp);
		if (!sub) {
			if (fd >= 0)
				close(fd);
			err(op, path, NULL, ENOMEM);
			break;
		}
		snprintf(sub, lp, "%s%s%s", path, path[strlen(path) - 1] == '/' ? "" : "/", en->name);
		if (fd < 0) {
			err(op, sub, NULL, errno);
		} else {
			list_dir(op, fd, sub);
			close(fd);
		}
		free(sub);
	}
}

static void list_dir(struct opts *op, int dirfd, const char *path)
{
	struct dirahead_xreaddir_opts o = {
		.size = sizeof(o), .mask = op->lng ? LS_LONG_MASK : STATX_TYPE,
		.flags = op->flags | (op->xattrs ? DIRAHEAD_XREADDIR_XATTRS : 0),
		.backend = op->backend,
	};
	struct dirahead_xdir *x = dirahead_xreaddir_open(dirfd, &o);
	if (!x) {
		err(op, path, NULL, errno);
		return;
	}
	struct ents es = { 0 };
	read_ents(op, path, x, &es);
	if (op->stats)
		print_stats(path, x);
	/* kept for the subdirectories (the iterator's own, relative to which they open) */
	int keep = op->rec ? fcntl(dirahead_xreaddir_fd(x), F_DUPFD_CLOEXEC, 3) : -1;
	dirahead_xreaddir_close(x);
	if (es.v)
		qsort(es.v, es.n, sizeof(*es.v), cmp_ent);
	print_dir(op, path, &es);
	if (op->rec && keep >= 0)
		list_subdirs(op, keep, path, &es);
	if (keep >= 0)
		close(keep);
	ents_free(&es);
}

int cmd_ls(int argc, char **argv)
{
	static const struct option lopts[] = {
		{ "engine", required_argument, NULL, 'e' },
		{ "parallel", no_argument, NULL, 'P' },
		{ "stats", no_argument, NULL, 's' },
		{ "xattrs", no_argument, NULL, 'x' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	struct opts op = { .first = true };
	int c;

	optind = 1;
	while ((c = getopt_long(argc, argv, "lRAh", lopts, NULL)) != -1) {
		switch (c) {
		case 'l': op.lng = true; break;
		case 'R': op.rec = true; break;
		case 'A': op.all = true; break;
		case 'P': op.flags |= DIRAHEAD_XREADDIR_PARALLEL; break;
		case 's': op.stats = true; break;
		case 'x': op.xattrs = true; break;
		case 'e':
			if (!strcmp(optarg, "auto"))
				op.backend = DIRAHEAD_BACKEND_AUTO;
			else if (!strcmp(optarg, "io_uring"))
				op.backend = DIRAHEAD_BACKEND_URING;
			else if (!strcmp(optarg, "threads"))
				op.backend = DIRAHEAD_BACKEND_THREADS;
			else {
				fprintf(stderr, "diraheadctl: ls: unknown engine '%s'\n", optarg);
				return CTL_EXIT_USAGE;
			}
			break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return CTL_EXIT_USAGE;
		}
	}
	if (optind >= argc) {
		fprintf(stderr, "diraheadctl: ls: no directory given\n");
		usage(stderr);
		return CTL_EXIT_USAGE;
	}
	static char buf[1 << 16];
	setvbuf(stdout, buf, _IOFBF, sizeof(buf));
	op.now = time(NULL);
	op.many = !op.xattrs && (op.rec || argc - optind > 1);
	for (int i = optind; i < argc; i++) {
		int fd = open(argv[i], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (fd < 0) {
			err(&op, argv[i], NULL, errno);
			continue;
		}
		list_dir(&op, fd, argv[i]);
		close(fd);
	}
	if (fflush(stdout) != 0)
		op.rc = CTL_EXIT_FAILURE;
	return op.rc;
}
