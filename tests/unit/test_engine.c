/* SPDX-License-Identifier: LGPL-2.1-or-later OR BSD-2-Clause */
/*
 * The prefetch engine: every entry completes exactly once, in the requested order; windows
 * (set_limit), find, cancel, errors, subdirectories, list-only, one request per inode group
 * (shared reads), max_open, the pollable fd, and the fallback
 * to threads when io_uring is forbidden.  Each engine test runs once per backend.  Stalled
 * requests (a statx that never returns, made with a seccomp user notification nobody answers)
 * leave the engine's depth but keep counting against their credentials' cred_depth.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <cmocka.h>

#include "dirahead.h"

#define NBIG 3000

static char root[PATH_MAX];
static char big[PATH_MAX + 8], empty[PATH_MAX + 8], tree[PATH_MAX + 8], plain[PATH_MAX + 8];
static char *readdir_names[NBIG]; /* big, in readdir order */

struct rec {
	char name[64];
	uint64_t index, ino;
	uint32_t covered;
	int error;
};

struct t {
	enum dirahead_backend backend;
	struct dirahead_engine *e;
	struct rec *recs;
	size_t n, cap;
	int dones, done_error;
	char done_names[16][64];
	int done_errors[64];   /* in completion order, which the threads backend does not fix */
	size_t cancel_after;             /* cancel the dir from on_complete after this many */
	struct dirahead_dir *dir;
	bool submit_children;
	uint64_t max_dirs_open;
	struct dirahead_dir_info done_info; /* of the directory done last */
};

static void touch(const char *path)
{
	int fd = open(path, O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
	if (fd < 0)
		abort();
	close(fd);
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static int make_tree(void **state)
{
	char p[PATH_MAX + 64];
	(void)state;
	snprintf(root, sizeof(root), "/tmp/dirahead-test-engine.XXXXXX");
	if (!mkdtemp(root))
		return -1;
	snprintf(big, sizeof(big), "%s/big", root);
	snprintf(empty, sizeof(empty), "%s/empty", root);
	snprintf(tree, sizeof(tree), "%s/tree", root);
	snprintf(plain, sizeof(plain), "%s/plain", root);
	mkdir(big, 0755);
	mkdir(empty, 0755);
	mkdir(tree, 0755);
	touch(plain);
	/* Names created in a scrambled order, so readdir, inode and name order all differ. */
	for (int i = 0; i < NBIG; i++) {
		snprintf(p, sizeof(p), "%s/n%05d", big, (i * 1237) % NBIG);
		touch(p);
	}
	for (int s = 1; s <= 2; s++) {
		snprintf(p, sizeof(p), "%s/sub%d", tree, s);
		mkdir(p, 0755);
		for (int i = 0; i < 10; i++) {
			snprintf(p, sizeof(p), "%s/sub%d/f%d", tree, s, i);
			touch(p);
		}
	}
	snprintf(p, sizeof(p), "%s/link", tree);
	if (symlink("sub1", p) < 0)
		return -1;
	snprintf(p, sizeof(p), "%s/file", tree);
	touch(p);

	DIR *d = opendir(big);
	struct dirent *de;
	int n = 0;
	while ((de = readdir(d)))
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
			readdir_names[n++] = strdup(de->d_name);
	closedir(d);
	return n == NBIG ? 0 : -1;
}

static int remove_tree(void **state)
{
	char cmd[PATH_MAX + 32];
	(void)state;
	for (int i = 0; i < NBIG; i++)
		free(readdir_names[i]);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
	return system(cmd) == 0 ? 0 : -1;
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

/* ---- callbacks ----------------------------------------------------------------------------- */
static void on_complete(const struct dirahead_completion *c, void *data)
{
	struct t *t = data;
	struct dirahead_engine_stats st;

	assert_true(t->cancel_after == 0 || t->n < t->cancel_after); /* nothing after a cancel */
	if (t->n == t->cap) { /* geometric: a realloc per entry is quadratic under ASan */
		t->cap = t->cap ? t->cap * 2 : 1024;
		t->recs = realloc(t->recs, t->cap * sizeof(*t->recs));
	}
	struct rec *r = &t->recs[t->n++];
	snprintf(r->name, sizeof(r->name), "%s", c->name);
	r->index = c->index;
	r->error = c->error;
	r->ino = c->stx ? c->stx->stx_ino : 0;
	r->covered = c->covered;
	assert_true(c->error || c->stx);
	assert_ptr_equal(c->dir_data, t);
	if (t->cancel_after && t->n == t->cancel_after)
		dirahead_dir_cancel(c->dir);
	if (t->submit_children) {
		struct dirahead_dir_opts o = { .size = sizeof(o), .limit = UINT64_MAX, .data = t };
		assert_non_null(dirahead_dir_submitat(t->e, c->dir, c->name, &o));
	}
	dirahead_engine_get_stats(t->e, &st);
	if (st.dirs_open > t->max_dirs_open)
		t->max_dirs_open = st.dirs_open;
}

static void on_dir_done(struct dirahead_dir *dir, void *dir_data, int error, void *data)
{
	struct t *t = data;
	struct dirahead_dir_info info;
	assert_ptr_equal(dir_data, t);
	assert_ptr_equal(dirahead_dir_data(dir), t);
	dirahead_dir_get_info(dir, &info);
	assert_false(info.open); /* the fd is closed before the callback */
	t->done_info = info;
	if (t->dones < 64)
		t->done_errors[t->dones] = error;
	if (t->dones < 16)
		t->done_names[t->dones][0] = '\0';
	t->dones++;
	t->done_error = error;
	if (dir == t->dir)
		t->dir = NULL;
}

static int setup(void **state)
{
	struct t *t = calloc(1, sizeof(*t));
	t->backend = (enum dirahead_backend)(intptr_t)*state;
	struct dirahead_engine_opts o = {
		.size = sizeof(o), .backend = t->backend, .on_complete = on_complete,
		.on_dir_done = on_dir_done, .data = t,
	};
	t->e = dirahead_engine_new(&o);
	if (!t->e)
		return -1;
	if (dirahead_engine_backend(t->e) != t->backend)
		return -1;
	*state = t;
	return 0;
}

static void reset(struct t *t)
{
	free(t->recs);
	t->recs = NULL;
	t->n = t->cap = 0;
	t->dones = 0;
	t->done_error = -1;
	t->cancel_after = 0;
	t->submit_children = false;
	t->max_dirs_open = 0;
}

static int teardown(void **state)
{
	struct t *t = *state;
	dirahead_engine_free(t->e);
	free(t->recs);
	*state = (void *)(intptr_t)t->backend;
	free(t);
	return 0;
}

static struct dirahead_dir *submit(struct t *t, const char *path, enum dirahead_order order,
				   uint64_t limit, unsigned depth, unsigned batch)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	struct dirahead_dir_opts o = {
		.size = sizeof(o), .order = order, .limit = limit, .depth = depth, .data = t,
		.batch = batch,
	};
	struct dirahead_dir *d = dirahead_dir_submit(t->e, fd, &o);
	close(fd);
	assert_non_null(d);
	t->dir = d;
	return d;
}

/* Processes events for ms milliseconds. */
static void pump(struct t *t, int ms)
{
	struct pollfd p = { .fd = dirahead_engine_fd(t->e), .events = POLLIN };
	for (int i = 0; i < ms; i++) {
		poll(&p, 1, 1);
		dirahead_engine_process(t->e);
	}
}

/* Processes until n completions (fails after 10 s). */
static void pump_until(struct t *t, size_t n)
{
	struct pollfd p = { .fd = dirahead_engine_fd(t->e), .events = POLLIN };
	for (int i = 0; i < 10000 && t->n < n; i++) {
		poll(&p, 1, 1);
		dirahead_engine_process(t->e);
	}
	assert_int_equal(t->n, n);
}

static int by_index(const void *a, const void *b)
{
	const struct rec *x = a, *y = b;
	return x->index < y->index ? -1 : x->index > y->index;
}

/* Every entry exactly once, indexes 0..n-1. */
static void check_all_once(struct t *t)
{
	assert_int_equal(t->n, NBIG);
	qsort(t->recs, t->n, sizeof(*t->recs), by_index);
	char **names = malloc(NBIG * sizeof(*names));
	for (size_t i = 0; i < t->n; i++) {
		assert_int_equal(t->recs[i].index, i);
		assert_int_equal(t->recs[i].error, 0);
		names[i] = t->recs[i].name;
	}
	qsort(names, NBIG, sizeof(*names), cmp_str);
	for (int i = 0; i < NBIG; i++) {
		char want[16];
		snprintf(want, sizeof(want), "n%05d", i);
		assert_string_equal(names[i], want);
	}
	free(names);
}

/* The index order of recs[from..to) follows `order`. */
static void check_order(struct t *t, enum dirahead_order order, size_t from, size_t to)
{
	for (size_t i = from + 1; i < to; i++) {
		const struct rec *a = &t->recs[i - 1], *b = &t->recs[i];
		if (order == DIRAHEAD_ORDER_NAME)
			assert_true(strcmp(a->name, b->name) < 0);
		else if (order == DIRAHEAD_ORDER_INODE)
			assert_true(a->ino <= b->ino);
	}
	if (order == DIRAHEAD_ORDER_READDIR)
		for (size_t i = from; i < to; i++)
			assert_string_equal(t->recs[i].name, readdir_names[i]);
}

/* ---- tests --------------------------------------------------------------------------------- */
static void test_orders(void **state)
{
	struct t *t = *state;
	static const enum dirahead_order orders[] = {
		DIRAHEAD_ORDER_READDIR, DIRAHEAD_ORDER_INODE, DIRAHEAD_ORDER_NAME,
		DIRAHEAD_ORDER_DEFAULT,
	};
	for (size_t k = 0; k < 4; k++) {
		reset(t);
		submit(t, big, orders[k], UINT64_MAX, 0, 0);
		assert_int_equal(dirahead_engine_run(t->e, 10000), 0);
		assert_int_equal(t->dones, 1);
		assert_int_equal(t->done_error, 0);
		check_all_once(t);
		enum dirahead_order want = orders[k] == DIRAHEAD_ORDER_DEFAULT
						   ? DIRAHEAD_ORDER_DEFAULT_MEANS : orders[k];
		check_order(t, want, 0, NBIG);
	}
	struct dirahead_engine_stats st;
	dirahead_engine_get_stats(t->e, &st);
	assert_int_equal(st.completed, 4 * NBIG);
	assert_int_equal(st.submitted, 4 * NBIG);
	assert_int_equal(st.inflight, 0);
	assert_int_equal(st.dirs_active, 0);
	assert_int_equal(st.dirs_open, 0);
	assert_int_equal(st.dirs_done, 4);
}

/* With one request in flight, completions arrive exactly in prefetch order. */
static void test_depth1_sequence(void **state)
{
	struct t *t = *state;
	reset(t);
	submit(t, big, DIRAHEAD_ORDER_NAME, UINT64_MAX, 1, 0);
	assert_int_equal(dirahead_engine_run(t->e, 20000), 0);
	assert_int_equal(t->n, NBIG);
	for (size_t i = 0; i < t->n; i++)
		assert_int_equal(t->recs[i].index, i);
	check_order(t, DIRAHEAD_ORDER_NAME, 0, NBIG);
}

/* Batches of 1000: sorted within each batch, each batch being the next 1000 of readdir order. */
static void test_batches(void **state)
{
	struct t *t = *state;
	reset(t);
	submit(t, big, DIRAHEAD_ORDER_NAME, UINT64_MAX, 0, 1000);
	assert_int_equal(dirahead_engine_run(t->e, 10000), 0);
	check_all_once(t);
	for (size_t b = 0; b < NBIG / 1000; b++) {
		check_order(t, DIRAHEAD_ORDER_NAME, b * 1000, b * 1000 + 1000);
		char **want = malloc(1000 * sizeof(*want));
		memcpy(want, readdir_names + b * 1000, 1000 * sizeof(*want));
		qsort(want, 1000, sizeof(*want), cmp_str);
		for (size_t i = 0; i < 1000; i++)
			assert_string_equal(t->recs[b * 1000 + i].name, want[i]);
		free(want);
	}
	struct dirahead_engine_stats st;
	dirahead_engine_get_stats(t->e, &st);
	assert_true(st.batches >= 3);
}

static void test_limit(void **state)
{
	struct t *t = *state;
	struct dirahead_dir_info info;
	reset(t);
	struct dirahead_dir *d = submit(t, big, DIRAHEAD_ORDER_READDIR, 100, 0, 0);
	pump_until(t, 100);
	pump(t, 100); /* nothing beyond the window, the directory stays */
	assert_int_equal(t->n, 100);
	assert_int_equal(t->dones, 0);
	for (size_t i = 0; i < t->n; i++)
		assert_true(t->recs[i].index < 100);
	dirahead_dir_get_info(d, &info);
	assert_int_equal(info.completed, 100);
	assert_int_equal(info.inflight, 0);
	assert_int_equal(info.limit, 100);
	assert_true(info.open);

	assert_int_equal(dirahead_dir_set_limit(d, 250), 0);
	pump_until(t, 250);
	pump(t, 50);
	assert_int_equal(t->n, 250);
	for (size_t i = 0; i < t->n; i++)
		assert_true(t->recs[i].index < 250);

	dirahead_dir_set_limit(d, UINT64_MAX);
	assert_int_equal(dirahead_engine_run(t->e, 10000), 0);
	assert_int_equal(t->dones, 1);
	assert_int_equal(t->done_error, 0);
	check_all_once(t);
	check_order(t, DIRAHEAD_ORDER_READDIR, 0, NBIG);
}

/* set_from: entries below it not submitted yet are never fetched, even across batches; the
 * directory still ends (all the rest fetched) */
static void test_from(void **state)
{
	struct t *t = *state;
	reset(t);
	struct dirahead_dir *d = submit(t, big, DIRAHEAD_ORDER_READDIR, 100, 0, 1000);
	pump_until(t, 100);
	assert_int_equal(dirahead_dir_set_from(d, 40), 0); /* all fetched already: no change */
	assert_int_equal(dirahead_dir_set_from(d, 1500), 0); /* into the second batch */
	assert_int_equal(dirahead_dir_set_from(d, 700), 0); /* never back */
	dirahead_dir_set_limit(d, UINT64_MAX);
	assert_int_equal(dirahead_engine_run(t->e, 10000), 0);
	assert_int_equal(t->dones, 1);
	assert_int_equal(t->done_error, 0);
	assert_int_equal(t->n, 100 + NBIG - 1500);
	for (size_t i = 0; i < t->n; i++)
		assert_true(t->recs[i].index < 100 || t->recs[i].index >= 1500);
	assert_int_equal(dirahead_dir_set_from(NULL, 1), -EINVAL);
}

static void test_find(void **state)
{
	struct t *t = *state;
	struct dirahead_dir_info info = { 0 };
	reset(t);
	struct dirahead_dir *d = submit(t, big, DIRAHEAD_ORDER_NAME, 0, 0, 0);
	assert_int_equal(dirahead_dir_find(d, "n00000"), -1); /* not read yet */
	for (int i = 0; i < 5000 && !info.read; i++) {
		pump(t, 1);
		dirahead_dir_get_info(d, &info);
	}
	assert_int_equal(info.read, NBIG);
	assert_int_equal(t->n, 0); /* limit 0: read, but nothing fetched */
	assert_int_equal(dirahead_dir_find(d, "n00000"), 0);
	assert_int_equal(dirahead_dir_find(d, "n01234"), 1234);
	assert_int_equal(dirahead_dir_find(d, "n02999"), NBIG - 1);
	assert_int_equal(dirahead_dir_find(d, "nope"), -1);
	assert_int_equal(dirahead_dir_find(d, "n0000"), -1);
	dirahead_dir_cancel(d);
	pump(t, 5);
	assert_int_equal(t->dones, 1);
	assert_int_equal(t->done_error, ECANCELED);

	reset(t);
	d = submit(t, big, DIRAHEAD_ORDER_READDIR, 0, 0, 0);
	info.read = 0;
	for (int i = 0; i < 5000 && !info.read; i++) {
		pump(t, 1);
		dirahead_dir_get_info(d, &info);
	}
	for (int i = 0; i < NBIG; i += 97)
		assert_int_equal(dirahead_dir_find(d, readdir_names[i]), i);
	dirahead_dir_cancel(d);
	pump(t, 5);
}

static void test_cancel(void **state)
{
	struct t *t = *state;
	int base = count_fds();

	/* before anything ran */
	reset(t);
	struct dirahead_dir *d = submit(t, big, DIRAHEAD_ORDER_INODE, UINT64_MAX, 0, 0);
	dirahead_dir_cancel(d);
	dirahead_dir_cancel(d); /* twice: no-op */
	assert_int_equal(t->dones, 0); /* never from inside the call */
	dirahead_engine_process(t->e);
	assert_int_equal(t->dones, 1);
	assert_int_equal(t->done_error, ECANCELED);
	assert_int_equal(t->n, 0);

	/* from a completion callback, mid-way: no completion after it */
	reset(t);
	t->cancel_after = 500;
	submit(t, big, DIRAHEAD_ORDER_INODE, UINT64_MAX, 0, 0);
	assert_int_equal(dirahead_engine_run(t->e, 10000), 0);
	assert_int_equal(t->n, 500);
	assert_int_equal(t->dones, 1);
	assert_int_equal(t->done_error, ECANCELED);
	struct dirahead_engine_stats st;
	dirahead_engine_get_stats(t->e, &st);
	assert_true(st.dirs_cancelled >= 2);
	/* abandoned requests drain, and every fd is closed again */
	for (int i = 0; i < 200 && (st.abandoned || count_fds() > base); i++) {
		pump(t, 5);
		dirahead_engine_get_stats(t->e, &st);
	}
	assert_int_equal(st.abandoned, 0);
	assert_int_equal(count_fds(), base);
}

static void test_errors(void **state)
{
	struct t *t = *state;
	reset(t);
	errno = 0;
	assert_null(dirahead_dir_submit(t->e, -1, NULL));
	assert_int_equal(errno, EBADF);
	struct dirahead_dir_opts bad = { .size = sizeof(bad), .order = 42 };
	int fd = open(big, O_RDONLY | O_CLOEXEC);
	errno = 0;
	assert_null(dirahead_dir_submit(t->e, fd, &bad));
	assert_int_equal(errno, EINVAL);
	close(fd);

	submit(t, plain, DIRAHEAD_ORDER_DEFAULT, UINT64_MAX, 0, 0);
	assert_int_equal(dirahead_engine_run(t->e, 5000), 0);
	assert_int_equal(t->dones, 1);
	assert_int_equal(t->done_error, ENOTDIR);

	reset(t);
	submit(t, empty, DIRAHEAD_ORDER_DEFAULT, UINT64_MAX, 0, 0);
	assert_int_equal(dirahead_engine_run(t->e, 5000), 0);
	assert_int_equal(t->dones, 1);
	assert_int_equal(t->done_error, 0);
	assert_int_equal(t->n, 0);
}

/* Subdirectories by name from on_complete: real directories are prefetched, a symlink is refused
 * (ELOOP: not followed) and a file too (ENOTDIR). */
static void test_submitat(void **state)
{
	struct t *t = *state;
	reset(t);
	t->submit_children = true;
	submit(t, tree, DIRAHEAD_ORDER_NAME, UINT64_MAX, 0, 0);
	t->dir = NULL;
	/* children submit their own entries' children too: f* files fail with ENOTDIR */
	assert_int_equal(dirahead_engine_run(t->e, 10000), 0);
	assert_int_equal(t->n, 4 + 20);
	int ok = 0, loop = 0, notdir = 0;
	for (int i = 0; i < t->dones && i < 64; i++) {
		ok += t->done_errors[i] == 0;
		loop += t->done_errors[i] == ELOOP;
		notdir += t->done_errors[i] == ENOTDIR;
	}
	assert_int_equal(t->dones, 3 + 1 + 1 + 20);
	assert_int_equal(loop, 1);
	(void)ok;
	(void)notdir;
	struct dirahead_engine_stats st;
	dirahead_engine_get_stats(t->e, &st);
	assert_int_equal(st.dirs_done, 3);          /* tree, sub1, sub2 */
	assert_int_equal(st.dirs_failed, 1 + 1 + 20); /* link, file, the f* files */
}

/* DIRAHEAD_DIR_LIST_ONLY: the whole directory is read, only what may be a directory fetched. */
static void test_list_only(void **state)
{
	struct t *t = *state;
	reset(t);
	int fd = open(tree, O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	struct dirahead_dir_opts o = { .size = sizeof(o), .order = DIRAHEAD_ORDER_NAME,
				       .limit = UINT64_MAX, .data = t,
				       .flags = DIRAHEAD_DIR_LIST_ONLY };
	assert_non_null(dirahead_dir_submit(t->e, fd, &o));
	assert_int_equal(dirahead_engine_run(t->e, 10000), 0);
	/* sub1, sub2: the symlink and the file are typed by getdents and left alone */
	assert_int_equal(t->n, 2);
	qsort(t->recs, t->n, sizeof(*t->recs), by_index);
	assert_string_equal(t->recs[0].name, "sub1");
	assert_string_equal(t->recs[1].name, "sub2");
	assert_int_equal(t->dones, 1);
	assert_int_equal(t->done_error, 0);
	assert_int_equal(t->done_info.read, 4);
	assert_int_equal(t->done_info.submitted, 2);
	assert_true(t->done_info.eof);

	/* No directory among 3,000 files, in batches of 100: nothing fetched, all read, done. */
	reset(t);
	o.batch = 100;
	close(fd);
	fd = open(big, O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	assert_non_null(dirahead_dir_submit(t->e, fd, &o));
	close(fd);
	assert_int_equal(dirahead_engine_run(t->e, 10000), 0);
	assert_int_equal(t->n, 0);
	assert_int_equal(t->dones, 1);
	assert_int_equal(t->done_error, 0);
	assert_int_equal(t->done_info.read, NBIG);
	assert_int_equal(t->done_info.submitted, 0);
	/* the readers' time is accounted: wall time, and CPU time within it */
	assert_true(t->done_info.list_ns > 0);
	assert_true(t->done_info.list_cpu_ns <= t->done_info.list_ns + 1000000);
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

/* Requests the rule of DIRAHEAD_DIR_SHARED_READS sends at least, for `big` in inode order: one
 * per run of inode numbers in one 16-aligned group counted from 0 and from 1 alike. */
static size_t group_runs(void)
{
	static uint64_t inos[NBIG];
	struct stat st;
	char p[2 * PATH_MAX];
	size_t runs = 0;
	for (int i = 0; i < NBIG; i++) {
		snprintf(p, sizeof(p), "%s/%s", big, readdir_names[i]);
		assert_int_equal(lstat(p, &st), 0);
		inos[i] = st.st_ino;
	}
	qsort(inos, NBIG, sizeof(inos[0]), cmp_u64);
	uint64_t lead = 0;
	for (int i = 0; i < NBIG; i++) {
		uint64_t a = lead, b = inos[i];
		if (!(i && (a >> 4) == (b >> 4) && ((a - 1) >> 4) == ((b - 1) >> 4))) {
			runs++;
			lead = b;
		}
	}
	return runs;
}

/* DIRAHEAD_DIR_SHARED_READS: one request per inode group stands for the entries it reads with
 * it (covered), every entry is accounted for once, and directories are always fetched. */
static void test_shared_reads(void **state)
{
	struct t *t = *state;
	reset(t);
	int fd = open(big, O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	struct dirahead_dir_opts o = { .size = sizeof(o), .order = DIRAHEAD_ORDER_INODE,
				       .limit = UINT64_MAX, .data = t,
				       .flags = DIRAHEAD_DIR_SHARED_READS };
	assert_non_null(dirahead_dir_submit(t->e, fd, &o));
	close(fd);
	assert_int_equal(dirahead_engine_run(t->e, 10000), 0);
	assert_int_equal(t->dones, 1);
	assert_int_equal(t->done_error, 0);
	size_t accounted = 0, runs = group_runs();
	for (size_t i = 0; i < t->n; i++) {
		assert_int_equal(t->recs[i].error, 0);
		assert_true(t->recs[i].covered <= 15); /* 16 inode numbers to a group */
		accounted += 1 + t->recs[i].covered;
	}
	assert_int_equal(accounted, NBIG);
	assert_int_equal(t->done_info.submitted, t->n);
	/* never fewer requests than runs of a group; fewer than entries where the filesystem
	 * numbers a directory's new files densely (ext4, xfs, tmpfs all do: runs < NBIG / 4) */
	assert_true(t->n >= runs);
	if (runs < NBIG / 4)
		assert_true(t->n < NBIG / 2);
	print_message("shared reads: %zu requests for %d entries (%zu runs of a group)\n", t->n,
		      NBIG, runs);

	/* the directories of a tree are fetched, whatever their inode numbers */
	reset(t);
	fd = open(tree, O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	assert_non_null(dirahead_dir_submit(t->e, fd, &o));
	close(fd);
	assert_int_equal(dirahead_engine_run(t->e, 10000), 0);
	int dirs = 0;
	accounted = 0;
	for (size_t i = 0; i < t->n; i++) {
		dirs += !strncmp(t->recs[i].name, "sub", 3);
		accounted += 1 + t->recs[i].covered;
	}
	assert_int_equal(dirs, 2);
	assert_int_equal(accounted, 4);
}

static void test_max_open(void **state)
{
	struct t *t = *state;
	struct dirahead_engine_opts o = {
		.size = sizeof(o), .backend = t->backend, .on_complete = on_complete,
		.on_dir_done = on_dir_done, .data = t, .max_open = 2,
	};
	struct dirahead_engine *saved = t->e;
	t->e = dirahead_engine_new(&o);
	assert_non_null(t->e);
	reset(t);
	for (int i = 0; i < 5; i++)
		submit(t, big, DIRAHEAD_ORDER_READDIR, UINT64_MAX, 0, 0);
	struct dirahead_engine_stats st;
	dirahead_engine_get_stats(t->e, &st);
	assert_int_equal(st.dirs_waiting, 5);
	assert_int_equal(dirahead_engine_run(t->e, 20000), 0);
	assert_int_equal(t->n, 5 * NBIG);
	assert_int_equal(t->dones, 5);
	assert_int_equal(t->max_dirs_open, 2);
	dirahead_engine_free(t->e);
	t->e = saved;
}

static void test_pollable(void **state)
{
	struct t *t = *state;
	struct pollfd p = { .fd = dirahead_engine_fd(t->e), .events = POLLIN };
	reset(t);
	dirahead_engine_process(t->e);
	assert_int_equal(poll(&p, 1, 0), 0); /* idle: not readable */
	submit(t, big, DIRAHEAD_ORDER_READDIR, UINT64_MAX, 0, 0);
	assert_int_equal(poll(&p, 1, 1000), 1); /* work to do */
	int spins = 0;
	while (t->dones == 0) {
		/* only ever woken by the fd: no busy loop needed */
		assert_int_equal(poll(&p, 1, 5000), 1);
		assert_true(dirahead_engine_process(t->e) >= 0);
		spins++;
	}
	assert_int_equal(t->n, NBIG);
	assert_true(spins < NBIG); /* completions are batched per wakeup */
}

/* ---- io_uring forbidden: AUTO falls back to threads, URING fails with EPERM ------------------ */
static void forbid_io_uring(void)
{
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_io_uring_setup, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = { .len = sizeof(f) / sizeof(f[0]), .filter = f };
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 ||
	    prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) < 0)
		_exit(10);
}

static void test_fallback(void **state)
{
	(void)state;
	fflush(NULL);
	pid_t pid = fork();
	if (pid == 0) {
		forbid_io_uring();
		struct dirahead_engine_opts o = { .size = sizeof(o), .backend = DIRAHEAD_BACKEND_URING };
		errno = 0;
		if (dirahead_engine_new(&o) || errno != EPERM)
			_exit(11);
		o.backend = DIRAHEAD_BACKEND_AUTO;
		struct dirahead_engine *e = dirahead_engine_new(&o);
		if (!e || dirahead_engine_backend(e) != DIRAHEAD_BACKEND_THREADS)
			_exit(12);
		int fd = open(big, O_RDONLY | O_CLOEXEC);
		if (!dirahead_dir_submit(e, fd, NULL) || dirahead_engine_run(e, 60000) != 0)
			_exit(13);
		struct dirahead_engine_stats st;
		dirahead_engine_get_stats(e, &st);
		if (st.completed != NBIG)
			_exit(14);
		dirahead_engine_free(e);
		_exit(0);
	}
	int st;
	assert_true(waitpid(pid, &st, 0) == pid);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
}

/* ---- a hung filesystem: statx never returns (thread backend) ------------------------------- */
/* Every statx of the process waits for a seccomp user notification that nobody answers: as a
 * hung filesystem, it returns only when the process dies.  The listener fd stays open. */
static int hang_statx(void)
{
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_statx, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_USER_NOTIF),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = { .len = sizeof(f) / sizeof(f[0]), .filter = f };
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		return -1;
	return (int)syscall(__NR_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_NEW_LISTENER,
			    &prog);
}

/* Two programs' directories, every request hangs: depth 6, cred_depth 4, stall_ms 10.  The
 * first 6 requests stall; stalled ones leave the engine's depth (the second program still gets
 * its share) but not their credentials' (neither program gets more than 4 stuck requests). */
static int stall_child(void)
{
	if (hang_statx() < 0)
		return 10;
	struct dirahead_engine_opts o = { .size = sizeof(o), .backend = DIRAHEAD_BACKEND_THREADS,
					  .depth = 6, .stall_ms = 10, .cred_depth = 4 };
	struct dirahead_engine *e = dirahead_engine_new(&o);
	if (!e)
		return 11;
	struct dirahead_cred a = { 0 }, b = { .ngroups = 1, .groups = { 4242 } };
	int fd = open(big, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	struct dirahead_dir_opts da = { .size = sizeof(da), .limit = UINT64_MAX, .cred = &a };
	struct dirahead_dir_opts db = { .size = sizeof(db), .limit = UINT64_MAX, .cred = &b };
	if (fd < 0 || !dirahead_dir_submit(e, fd, &da) || !dirahead_dir_submit(e, fd, &db))
		return 12;
	close(fd);
	struct pollfd p = { .fd = dirahead_engine_fd(e), .events = POLLIN };
	struct dirahead_engine_stats st;
	for (int i = 0; i < 300; i++) { /* 300 ms: 30 stall periods */
		poll(&p, 1, 1);
		dirahead_engine_process(e);
	}
	dirahead_engine_get_stats(e, &st);
	fprintf(stderr, "# stalled credentials: submitted %llu, stalled %llu, in flight %llu\n",
		(unsigned long long)st.submitted, (unsigned long long)st.stalled,
		(unsigned long long)st.inflight);
	if (st.submitted != 8) /* 4 each; without the share, one more batch per stall period */
		return 13;
	if (st.stalled != 8 || st.inflight != 0)
		return 14;
	return 0; /* the stuck workers die with the process */
}

static void test_stall_cred(void **state)
{
	(void)state;
	if (geteuid() != 0) {
		skip(); /* applying credentials needs CAP_SETUID */
		return;
	}
	fflush(NULL);
	pid_t pid = fork();
	if (pid == 0)
		_exit(stall_child());
	int st;
	assert_true(waitpid(pid, &st, 0) == pid);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
}

static void test_bad_engine_opts(void **state)
{
	(void)state;
	struct dirahead_engine_opts o = { .size = 8 };
	errno = 0;
	assert_null(dirahead_engine_new(&o));
	assert_int_equal(errno, EINVAL);
	struct dirahead_engine *e = dirahead_engine_new(NULL); /* all defaults */
	assert_non_null(e);
	dirahead_engine_free(e);
	dirahead_engine_free(NULL);
	assert_string_equal(dirahead_backend_name(DIRAHEAD_BACKEND_URING), "io_uring");
	assert_string_equal(dirahead_order_name(DIRAHEAD_ORDER_NAME), "name");
}

/* Each engine test twice, named after its backend. */
#define PER_BACKEND(f)                                                                           \
	{ #f "/io_uring", f, setup, teardown, (void *)(intptr_t)DIRAHEAD_BACKEND_URING },       \
	{ #f "/threads", f, setup, teardown, (void *)(intptr_t)DIRAHEAD_BACKEND_THREADS }

int main(void)
{
	const struct CMUnitTest tests[] = {
		PER_BACKEND(test_orders),
		PER_BACKEND(test_depth1_sequence),
		PER_BACKEND(test_batches),
		PER_BACKEND(test_limit),
		PER_BACKEND(test_from),
		PER_BACKEND(test_find),
		PER_BACKEND(test_cancel),
		PER_BACKEND(test_errors),
		PER_BACKEND(test_submitat),
		PER_BACKEND(test_list_only),
		PER_BACKEND(test_shared_reads),
		PER_BACKEND(test_max_open),
		PER_BACKEND(test_pollable),
		cmocka_unit_test(test_fallback),
		cmocka_unit_test(test_stall_cred),
		cmocka_unit_test(test_bad_engine_opts),
	};
	return cmocka_run_group_tests_name("engine", tests, make_tree, remove_tree);
}
