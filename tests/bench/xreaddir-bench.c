// SPDX-License-Identifier: LGPL-2.1-or-later OR BSD-2-Clause
/*
 * xreaddir-bench MODE DIR: list DIR once with the attributes `ls -l` needs, and time it.
 *
 *   -m loop   the classic: getdents64 into a buffer, fstatat(AT_SYMLINK_NOFOLLOW) each entry
 *   -m iter   dirahead_xreaddir() with the ls -l mask (inline while cached, parallel once not)
 *
 * Both add up the sizes, so that each really uses what it fetched.  Prints
 * "mode=M entries=N errors=E elapsed_ns=X parallel=yes|no sum=S" on stdout.  Used by
 * tests/bench/xreaddir.sh.  Exit 0, 1 on an error, 2 on bad usage.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "benchutil.h"

#include "dirahead.h"

#define LS_MASK (STATX_TYPE | STATX_MODE | STATX_NLINK | STATX_UID | STATX_GID | STATX_SIZE | \
		 STATX_BLOCKS | STATX_MTIME)

struct result {
	long entries, errors;
	uint64_t sum;
	int parallel;
};

static int run_loop(int fd, struct result *r)
{
	static char buf[32768];
	long n;
	struct stat st;
	while ((n = syscall(SYS_getdents64, fd, buf, sizeof(buf))) > 0) {
		for (long off = 0; off < n;) {
			struct linux_dirent64 *d = (struct linux_dirent64 *)(buf + off);
			off += d->d_reclen;
			const char *nm = d->d_name;
			if (nm[0] == '.' && (!nm[1] || (nm[1] == '.' && !nm[2])))
				continue;
			r->entries++;
			if (fstatat(fd, nm, &st, AT_SYMLINK_NOFOLLOW) < 0)
				r->errors++;
			else
				r->sum += (uint64_t)st.st_size;
		}
	}
	return n < 0 ? -errno : 0;
}

static int run_iter(int fd, struct result *r)
{
	struct dirahead_xreaddir_opts o = { .size = sizeof(o), .mask = LS_MASK };
	struct dirahead_xdir *x = dirahead_xreaddir_open(fd, &o);
	const struct dirahead_xent *e;
	int rc;
	if (!x)
		return -errno;
	while ((rc = dirahead_xreaddir(x, &e)) > 0) {
		r->entries++;
		if (e->error)
			r->errors++;
		else
			r->sum += e->stx->stx_size;
	}
	struct dirahead_xreaddir_stats st;
	dirahead_xreaddir_get_stats(x, &st);
	r->parallel = st.parallel;
	dirahead_xreaddir_close(x);
	return rc;
}

int main(int argc, char **argv)
{
	const char *mode = NULL;
	int c;
	while ((c = getopt(argc, argv, "m:")) != -1) {
		if (c != 'm')
			goto usage;
		mode = optarg;
	}
	if (!mode || optind != argc - 1 || (strcmp(mode, "loop") && strcmp(mode, "iter")))
		goto usage;

	struct result r = { 0 };
	uint64_t t0 = mono_ns();
	int fd = open(argv[optind], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0) {
		fprintf(stderr, "xreaddir-bench: %s: %s\n", argv[optind], strerror(errno));
		return 1;
	}
	int rc = !strcmp(mode, "loop") ? run_loop(fd, &r) : run_iter(fd, &r);
	close(fd);
	uint64_t t = mono_ns() - t0;
	if (rc < 0) {
		fprintf(stderr, "xreaddir-bench: %s: %s\n", argv[optind], strerror(-rc));
		return 1;
	}
	printf("mode=%s entries=%ld errors=%ld elapsed_ns=%llu parallel=%s sum=%llu\n", mode,
	       r.entries, r.errors, (unsigned long long)t, r.parallel ? "yes" : "no",
	       (unsigned long long)r.sum);
	return 0;
usage:
	fprintf(stderr, "usage: xreaddir-bench -m loop|iter DIR\n");
	return 2;
}
