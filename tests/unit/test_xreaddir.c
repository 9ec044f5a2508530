/* SPDX-License-Identifier: LGPL-2.1-or-later OR BSD-2-Clause */
/*
 * dirahead_xreaddir(): every field asked for matches fstatat(), inline and in parallel on both
 * backends; a type-only mask sends no statx; entries removed between listing and fetch give
 * their error; an early stop closes every fd (and, under SANITIZE=1, leaks nothing); 100,000
 * entries go through a bounded window; xattrs match getxattr and respect the caller's limits.
 */
#include <dirent.h>
#include <grp.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <unistd.h>
#include <cmocka.h>

#include "dirahead.h"

#define LS_MASK (STATX_TYPE | STATX_MODE | STATX_NLINK | STATX_UID | STATX_GID | STATX_SIZE | \
		 STATX_BLOCKS | STATX_MTIME | STATX_INO)

static char top[PATH_MAX];

static void path(char *out, size_t n, const char *dir, const char *name)
{
	snprintf(out, n, "%s/%s/%s", top, dir, name);
}

static void mkfile(const char *dir, const char *name, size_t size)
{
	char p[PATH_MAX + 64];
	path(p, sizeof(p), dir, name);
	int fd = open(p, O_CREAT | O_WRONLY | O_CLOEXEC, 0640);
	if (fd < 0)
		abort();
	if (size && ftruncate(fd, (off_t)size) < 0)
		abort();
	close(fd);
}

static void mksub(const char *dir)
{
	char p[PATH_MAX + 64];
	snprintf(p, sizeof(p), "%s/%s", top, dir);
	if (mkdir(p, 0755) < 0)
		abort();
}

static int opendirfd(const char *dir)
{
	char p[PATH_MAX + 64];
	snprintf(p, sizeof(p), "%s/%s", top, dir);
	int fd = open(p, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_true(fd >= 0);
	return fd;
}

static int count_fds(void)
{
	int n = 0;
	DIR *d = opendir("/proc/self/fd");
	while (readdir(d))
		n++;
	closedir(d);
	return n;
}

static int setup(void **state)
{
	(void)state;
	snprintf(top, sizeof(top), "/tmp/dirahead-test-xrd.XXXXXX");
	if (!mkdtemp(top))
		return -1;
	/* "mixed": every file type, sizes, a hard link, a symlink to a directory */
	mksub("mixed");
	for (int i = 0; i < 300; i++) {
		char n[32];
		snprintf(n, sizeof(n), "f%03d", i);
		mkfile("mixed", n, (size_t)i * 1000);
	}
	mksub("mixed/sub");
	char p[PATH_MAX + 64], q[PATH_MAX + 64];
	path(p, sizeof(p), "mixed", "link");
	if (symlink("sub", p) < 0)
		abort();
	path(p, sizeof(p), "mixed", "fifo");
	if (mkfifo(p, 0600) < 0)
		abort();
	path(p, sizeof(p), "mixed", "f001");
	path(q, sizeof(q), "mixed", "hardlink");
	if (link(p, q) < 0)
		abort();
	mksub("many");
	for (int i = 0; i < 3000; i++) {
		char n[32];
		snprintf(n, sizeof(n), "e%05d", i);
		mkfile("many", n, 0);
	}
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	char cmd[PATH_MAX + 32];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", top);
	return system(cmd) == 0 ? 0 : -1;
}

static struct dirahead_xdir *xopen(const char *dir, unsigned mask, unsigned flags,
				   enum dirahead_backend be)
{
	int fd = opendirfd(dir);
	struct dirahead_xreaddir_opts o = { .size = sizeof(o), .mask = mask, .flags = flags,
					    .backend = be };
	struct dirahead_xdir *x = dirahead_xreaddir_open(fd, &o);
	assert_non_null(x);
	close(fd); /* the iterator has its own */
	return x;
}

/* ---- every field asked for matches fstatat ------------------------------------------------- */
static void check_fields(unsigned flags, enum dirahead_backend be)
{
	struct dirahead_xdir *x = xopen("mixed", LS_MASK, flags, be);
	int dfd = dirahead_xreaddir_fd(x);
	const struct dirahead_xent *e;
	int r, n = 0;
	while ((r = dirahead_xreaddir(x, &e)) > 0) {
		struct stat st;
		assert_int_equal(e->error, 0);
		assert_non_null(e->stx);
		assert_int_equal(fstatat(dfd, e->name, &st, AT_SYMLINK_NOFOLLOW), 0);
		assert_int_equal(e->stx->stx_mask & LS_MASK, LS_MASK);
		assert_int_equal(e->stx->stx_mode, st.st_mode);
		assert_int_equal(e->stx->stx_nlink, st.st_nlink);
		assert_int_equal(e->stx->stx_uid, st.st_uid);
		assert_int_equal(e->stx->stx_gid, st.st_gid);
		assert_int_equal(e->stx->stx_size, st.st_size);
		assert_int_equal(e->stx->stx_blocks, st.st_blocks);
		assert_int_equal(e->stx->stx_mtime.tv_sec, st.st_mtim.tv_sec);
		assert_int_equal(e->stx->stx_mtime.tv_nsec, st.st_mtim.tv_nsec);
		assert_int_equal(e->stx->stx_ino, st.st_ino);
		assert_int_equal(e->ino, st.st_ino);
		assert_int_equal(e->type, IFTODT(st.st_mode));
		n++;
	}
	assert_int_equal(r, 0);
	assert_int_equal(n, 300 + 4);
	struct dirahead_xreaddir_stats s;
	dirahead_xreaddir_get_stats(x, &s);
	assert_int_equal(s.entries, 304);
	assert_int_equal(s.statx, 304);
	if (flags & DIRAHEAD_XREADDIR_PARALLEL)
		assert_true(s.parallel);
	if (flags & DIRAHEAD_XREADDIR_PARALLEL) {
		assert_int_equal(s.statx_inline, 0);
		if (be != DIRAHEAD_BACKEND_AUTO)
			assert_int_equal(s.backend, be);
	} else {
		assert_true(s.statx_inline >= 1); /* starts inline (stays so while fast) */
	}
	dirahead_xreaddir_close(x);
}

static void test_fields_inline(void **state) { (void)state; check_fields(0, 0); }
static void test_fields_uring(void **state)
{
	(void)state;
	check_fields(DIRAHEAD_XREADDIR_PARALLEL, DIRAHEAD_BACKEND_URING);
}
static void test_fields_threads(void **state)
{
	(void)state;
	check_fields(DIRAHEAD_XREADDIR_PARALLEL, DIRAHEAD_BACKEND_THREADS);
}

/* Only what is asked for: a size-only mask; FOLLOW stats the target. */
static void test_mask_follow(void **state)
{
	(void)state;
	struct dirahead_xdir *x = xopen("mixed", STATX_SIZE, DIRAHEAD_XREADDIR_FOLLOW, 0);
	const struct dirahead_xent *e;
	bool seen = false;
	while (dirahead_xreaddir(x, &e) > 0) {
		assert_true(e->stx->stx_mask & STATX_SIZE);
		if (!strcmp(e->name, "link")) {
			struct stat st;
			assert_int_equal(fstatat(dirahead_xreaddir_fd(x), "link", &st, 0), 0);
			assert_true(S_ISDIR(e->stx->stx_mode)); /* the target's */
			assert_int_equal(e->type, DT_LNK);      /* getdents' */
			seen = true;
		}
	}
	assert_true(seen);
	dirahead_xreaddir_close(x);
}

/* ---- a type-only mask sends no statx where d_type answers ----------------------------------- */
static void test_type_only(void **state)
{
	(void)state;
	unsigned masks[] = { STATX_TYPE, 0 };
	for (int m = 0; m < 2; m++) {
		struct dirahead_xdir *x = xopen("mixed", masks[m], 0, 0);
		const struct dirahead_xent *e;
		int n = 0;
		while (dirahead_xreaddir(x, &e) > 0) {
			struct stat st;
			assert_int_equal(fstatat(dirahead_xreaddir_fd(x), e->name, &st,
						 AT_SYMLINK_NOFOLLOW), 0);
			assert_int_equal(e->stx->stx_mask, STATX_TYPE);
			assert_int_equal(e->stx->stx_mode, st.st_mode & S_IFMT);
			assert_int_equal(e->type, IFTODT(st.st_mode));
			n++;
		}
		struct dirahead_xreaddir_stats s;
		dirahead_xreaddir_get_stats(x, &s);
		assert_int_equal(n, 304);
		assert_int_equal(s.statx, 0);
		assert_false(s.parallel);
		dirahead_xreaddir_close(x);
	}
	/* following symlinks: their type is the target's, so they alone are stat'ed */
	struct dirahead_xdir *x = xopen("mixed", STATX_TYPE, DIRAHEAD_XREADDIR_FOLLOW, 0);
	const struct dirahead_xent *e;
	while (dirahead_xreaddir(x, &e) > 0)
		if (!strcmp(e->name, "link"))
			assert_true(S_ISDIR(e->stx->stx_mode));
	struct dirahead_xreaddir_stats s;
	dirahead_xreaddir_get_stats(x, &s);
	assert_int_equal(s.statx, 1);
	dirahead_xreaddir_close(x);
}

/* ---- entries removed between listing and fetch ---------------------------------------------- */
static void check_removed(unsigned flags, enum dirahead_backend be)
{
	mksub("gone");
	for (int i = 0; i < 100; i++) {
		char n[32];
		snprintf(n, sizeof(n), "g%03d", i);
		mkfile("gone", n, 0);
	}
	int fd = opendirfd("gone");
	/* depth 1: when the first entry comes back, the others are listed and at most the second
	 * one fetched (in parallel, the next fetch starts before an entry is handed out) */
	struct dirahead_xreaddir_opts o = { .size = sizeof(o), .mask = LS_MASK, .flags = flags,
					    .backend = be, .window = 1000, .depth = 1 };
	struct dirahead_xdir *x = dirahead_xreaddir_open(fd, &o);
	assert_non_null(x);
	const struct dirahead_xent *e;
	assert_int_equal(dirahead_xreaddir(x, &e), 1);
	assert_int_equal(e->error, 0);
	char first[NAME_MAX + 1];
	snprintf(first, sizeof(first), "%s", e->name);
	for (int i = 0; i < 100; i++) {
		char n[32];
		snprintf(n, sizeof(n), "g%03d", i);
		assert_int_equal(unlinkat(fd, n, 0), 0);
	}
	int n = 1, errs = 0, r;
	while ((r = dirahead_xreaddir(x, &e)) > 0) {
		assert_string_not_equal(e->name, first);
		if (n >= 2 || e->error) {
			assert_int_equal(e->error, ENOENT);
			assert_null(e->stx);
			errs++;
		}
		n++;
	}
	assert_int_equal(r, 0);
	assert_int_equal(n, 100);
	assert_true(errs >= 98);
	struct dirahead_xreaddir_stats s;
	dirahead_xreaddir_get_stats(x, &s);
	assert_int_equal(s.errors, (uint64_t)errs);
	dirahead_xreaddir_close(x);
	close(fd);
	char p[PATH_MAX + 16];
	snprintf(p, sizeof(p), "%s/gone", top);
	assert_int_equal(rmdir(p), 0);
}

static void test_removed(void **state)
{
	(void)state;
	check_removed(0, 0);
	check_removed(DIRAHEAD_XREADDIR_PARALLEL, DIRAHEAD_BACKEND_URING);
	check_removed(DIRAHEAD_XREADDIR_PARALLEL, DIRAHEAD_BACKEND_THREADS);
}

/* ---- an early stop closes everything -------------------------------------------------------- */
static void test_early_stop(void **state)
{
	(void)state;
	int before = count_fds();
	enum dirahead_backend bes[] = { DIRAHEAD_BACKEND_URING, DIRAHEAD_BACKEND_THREADS };
	for (int b = 0; b < 2; b++)
		for (int round = 0; round < 20; round++) {
			struct dirahead_xdir *x = xopen("many", LS_MASK, DIRAHEAD_XREADDIR_PARALLEL |
						       (b ? DIRAHEAD_XREADDIR_XATTRS : 0), bes[b]);
			const struct dirahead_xent *e;
			for (int i = 0; i < 1 + round * 7; i++)
				assert_int_equal(dirahead_xreaddir(x, &e), 1);
			struct dirahead_xreaddir_stats s;
			dirahead_xreaddir_get_stats(x, &s);
			/* at most the window was fetched, not the directory */
			assert_true(s.statx <= (uint64_t)(1 + round * 7) + 256);
			dirahead_xreaddir_close(x);
			assert_int_equal(count_fds(), before);
		}
	/* closing before the first entry, and right after open */
	struct dirahead_xdir *x = xopen("many", LS_MASK, 0, 0);
	dirahead_xreaddir_close(x);
	dirahead_xreaddir_close(NULL);
	assert_int_equal(count_fds(), before);
}

/* ---- 100,000 entries in bounded memory ------------------------------------------------------ */
static long status_kib(const char *key)
{
	FILE *f = fopen("/proc/self/status", "re");
	char line[256];
	long v = -1;
	size_t kl = strlen(key);
	while (f && fgets(line, sizeof(line), f))
		if (!strncmp(line, key, kl) && line[kl] == ':')
			v = strtol(line + kl + 1, NULL, 10);
	if (f)
		fclose(f);
	return v;
}

static void test_big_bounded(void **state)
{
	(void)state;
	enum { N = 100000 };
	mksub("big");
	int fd = opendirfd("big");
	for (int i = 0; i < N; i++) {
		char n[48];
		snprintf(n, sizeof(n), "entry-with-a-longish-name-%06d", i);
		int f = openat(fd, n, O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
		assert_true(f >= 0);
		close(f);
	}
	unsigned flags[] = { 0, DIRAHEAD_XREADDIR_PARALLEL, DIRAHEAD_XREADDIR_PARALLEL };
	enum dirahead_backend bes[] = { 0, DIRAHEAD_BACKEND_URING, DIRAHEAD_BACKEND_THREADS };
	for (int k = 0; k < 3; k++) {
		/* peak RSS from here on (5: reset VmHWM to the current RSS) */
		int cr = open("/proc/self/clear_refs", O_WRONLY | O_CLOEXEC);
		bool hwm = cr >= 0 && write(cr, "5", 1) == 1;
		if (cr >= 0)
			close(cr);
		long rss0 = status_kib("VmRSS");
		struct dirahead_xreaddir_opts o = { .size = sizeof(o), .mask = LS_MASK,
						    .flags = flags[k], .backend = bes[k] };
		struct dirahead_xdir *x = dirahead_xreaddir_open(fd, &o);
		assert_non_null(x);
		const struct dirahead_xent *e;
		long n = 0;
		int r;
		while ((r = dirahead_xreaddir(x, &e)) > 0) {
			assert_int_equal(e->error, 0);
			n++;
		}
		assert_int_equal(r, 0);
		assert_int_equal(n, N);
		struct dirahead_xreaddir_stats s;
		dirahead_xreaddir_get_stats(x, &s);
		/* the window (256 slots of < 1 KiB), the getdents buffer and the iterator: what
		 * holding 100,000 statx results (25 MB) would not fit in */
		print_message("backend %d: mem_peak %llu bytes\n", k,
			      (unsigned long long)s.mem_peak);
		assert_true(s.mem_peak < 512 * 1024);
		assert_int_equal(s.statx, N);
		dirahead_xreaddir_close(x);
		long grew = (hwm ? status_kib("VmHWM") : status_kib("VmRSS")) - rss0;
		print_message("backend %d: peak RSS growth %ld KiB\n", k, grew);
		/* worker stacks and the ring count here too; 100,000 results would be > 25 MiB */
		assert_true(grew < 12 * 1024);
	}
	close(fd);
}

/* ---- xattrs match getxattr, within the caller's limits -------------------------------------- */
static void test_xattrs(void **state)
{
	(void)state;
	mksub("xa");
	mkfile("xa", "none", 0);
	mkfile("xa", "two", 0);
	mkfile("xa", "big", 0);
	char p[PATH_MAX + 64];
	path(p, sizeof(p), "xa", "two");
	if (setxattr(p, "user.a", "alpha", 5, 0) < 0) {
		if (errno == ENOTSUP || errno == EOPNOTSUPP)
			skip();
		fail_msg("setxattr: %s", strerror(errno));
	}
	assert_int_equal(setxattr(p, "user.empty", "", 0, 0), 0);
	char big[2000];
	memset(big, 'x', sizeof(big));
	path(p, sizeof(p), "xa", "big");
	assert_int_equal(setxattr(p, "user.big", big, sizeof(big), 0), 0);

	for (int lim = 0; lim < 2; lim++) {
		int fd = opendirfd("xa");
		struct dirahead_xreaddir_opts o = { .size = sizeof(o), .mask = STATX_TYPE,
						    .flags = DIRAHEAD_XREADDIR_XATTRS |
							     (lim ? DIRAHEAD_XREADDIR_PARALLEL : 0),
						    .xattr_max_value = lim ? 1000 : 0 };
		struct dirahead_xdir *x = dirahead_xreaddir_open(fd, &o);
		assert_non_null(x);
		const struct dirahead_xent *e;
		int n = 0;
		while (dirahead_xreaddir(x, &e) > 0) {
			char names[4096];
			path(p, sizeof(p), "xa", e->name);
			ssize_t len = llistxattr(p, names, sizeof(names));
			unsigned want = 0;
			for (ssize_t i = 0; i < len; i += (ssize_t)strlen(names + i) + 1)
				if (!strncmp(names + i, "user.", 5))
					want++;
			if (lim && !strcmp(e->name, "big")) {
				assert_int_equal(e->xattr_error, E2BIG);
				assert_int_equal(e->nxattrs, 0);
				n++;
				continue;
			}
			assert_int_equal(e->xattr_error, 0);
			unsigned user = 0;
			for (unsigned i = 0; i < e->nxattrs; i++) {
				char v[4096];
				ssize_t vl = lgetxattr(p, e->xattrs[i].name, v, sizeof(v));
				assert_int_equal(vl, (ssize_t)e->xattrs[i].size);
				assert_memory_equal(v, e->xattrs[i].value, (size_t)vl);
				user += !strncmp(e->xattrs[i].name, "user.", 5);
			}
			assert_int_equal(user, want);
			n++;
		}
		assert_int_equal(n, 3);
		dirahead_xreaddir_close(x);
		close(fd);
	}
}

/* ---- bad arguments, and an unprivileged caller ---------------------------------------------- */
static void test_args(void **state)
{
	(void)state;
	int fd = opendirfd("mixed");
	struct dirahead_xreaddir_opts o = { .size = sizeof(o), .order = DIRAHEAD_ORDER_NAME };
	errno = 0;
	assert_null(dirahead_xreaddir_open(fd, &o));
	assert_int_equal(errno, EINVAL);
	o = (struct dirahead_xreaddir_opts){ .size = sizeof(o), .flags = 0x100 };
	assert_null(dirahead_xreaddir_open(fd, &o));
	assert_int_equal(errno, EINVAL);
	o = (struct dirahead_xreaddir_opts){ .size = 4 };
	assert_null(dirahead_xreaddir_open(fd, &o));
	assert_int_equal(errno, EINVAL);
	assert_null(dirahead_xreaddir_open(-1, NULL));
	assert_int_equal(errno, EBADF);
	int ffd = openat(fd, "f001", O_RDONLY | O_CLOEXEC);
	assert_null(dirahead_xreaddir_open(ffd, NULL));
	assert_int_equal(errno, ENOTDIR);
	close(ffd);
	const struct dirahead_xent *e;
	assert_int_equal(dirahead_xreaddir(NULL, &e), -EINVAL);
	/* inode order: the same entries */
	o = (struct dirahead_xreaddir_opts){ .size = sizeof(o), .order = DIRAHEAD_ORDER_INODE,
					     .window = 16 };
	struct dirahead_xdir *x = dirahead_xreaddir_open(fd, &o);
	assert_non_null(x);
	int n = 0;
	while (dirahead_xreaddir(x, &e) > 0)
		n++;
	assert_int_equal(n, 304);
	dirahead_xreaddir_close(x);
	close(fd);
}

static void test_unprivileged(void **state)
{
	(void)state;
	if (geteuid() != 0)
		skip(); /* we are unprivileged already: the other tests cover it */
	char p[PATH_MAX + 16];
	snprintf(p, sizeof(p), "%s", top);
	assert_int_equal(chmod(p, 0755), 0);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		if (setgroups(0, NULL) < 0 || setresgid(65534, 65534, 65534) < 0 ||
		    setresuid(65534, 65534, 65534) < 0)
			_exit(3);
		int fd = open(strcat(p, "/mixed"), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		struct dirahead_xreaddir_opts o = { .size = sizeof(o), .mask = LS_MASK,
						    .flags = DIRAHEAD_XREADDIR_PARALLEL };
		struct dirahead_xdir *x = dirahead_xreaddir_open(fd, &o);
		if (!x)
			_exit(4);
		const struct dirahead_xent *e;
		int n = 0;
		while (dirahead_xreaddir(x, &e) > 0)
			n += !e->error;
		dirahead_xreaddir_close(x);
		_exit(n == 304 ? 0 : 5);
	}
	int st;
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fields_inline),
		cmocka_unit_test(test_fields_uring),
		cmocka_unit_test(test_fields_threads),
		cmocka_unit_test(test_mask_follow),
		cmocka_unit_test(test_type_only),
		cmocka_unit_test(test_removed),
		cmocka_unit_test(test_early_stop),
		cmocka_unit_test(test_xattrs),
		cmocka_unit_test(test_args),
		cmocka_unit_test(test_unprivileged),
		cmocka_unit_test(test_big_bounded),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
