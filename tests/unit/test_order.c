/* SPDX-License-Identifier: LGPL-2.1-or-later OR BSD-2-Clause */
/*
 * order_learn (daemon/diraheadd/order.c) on a real directory: the name a program stat'ed last,
 * after k stats, is the k-th entry of the order it uses.  The directory's readdir, inode and name
 * orders are read here and differ (ext4 and tmpfs hash or reverse their listings); for each order
 * its k-th name must be learnt as that order, a name of none of them as readdir, and the file
 * offset is left at 0.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "order.h"

#define N 3000

struct ent {
	char name[32];
	uint64_t ino;
	unsigned rd;	/* readdir index */
};

static char dir[64];
static struct ent ents[N];
static unsigned n;

static int by_ino(const void *a, const void *b)
{
	const struct ent *x = a, *y = b;
	return x->ino < y->ino ? -1 : x->ino > y->ino;
}

static int by_name(const void *a, const void *b)
{
	return strcmp(((const struct ent *)a)->name, ((const struct ent *)b)->name);
}

static int setup(void **state)
{
	(void)state;
	snprintf(dir, sizeof(dir), "/tmp/test_order.XXXXXX");
	if (!mkdtemp(dir))
		return -1;
	for (unsigned i = 0; i < N; i++) {
		char p[96];
		/* names not in creation order, so that name order is neither inode nor readdir */
		snprintf(p, sizeof(p), "%s/f%06u", dir, (i * 7919u) % N);
		int fd = open(p, O_CREAT | O_WRONLY | O_CLOEXEC, 0600);
		if (fd < 0)
			return -1;
		close(fd);
	}
	DIR *d = opendir(dir);
	struct dirent *de;
	while (d && (de = readdir(d)) && n < N) {
		if (de->d_name[0] == '.')
			continue;
		snprintf(ents[n].name, sizeof(ents[n].name), "%.31s", de->d_name);
		ents[n].ino = de->d_ino;
		ents[n].rd = n;
		n++;
	}
	if (d)
		closedir(d);
	return n == N ? 0 : -1;
}

static int teardown(void **state)
{
	(void)state;
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	return system(cmd) == 0 ? 0 : -1;
}

static enum dirahead_order learn(const char *name, uint64_t stats)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_true(fd >= 0);
	enum dirahead_order o = order_learn(fd, name, stats);
	assert_int_equal(lseek(fd, 0, SEEK_CUR), 0);
	close(fd);
	return o;
}

/* the k-th (from 1) entry of ents sorted by cmp whose readdir index is >= k */
static const struct ent *kth(int (*cmp)(const void *, const void *), unsigned k)
{
	static struct ent s[N];
	memcpy(s, ents, sizeof(s));
	qsort(s, N, sizeof(s[0]), cmp);
	assert_true(s[k - 1].rd >= k); /* else the orders agree there: pick another k */
	return &s[k - 1];
}

static void test_readdir(void **state)
{
	(void)state;
	assert_int_equal(learn(ents[2].name, 3), DIRAHEAD_ORDER_READDIR);
	/* tar stats each entry twice: the name is earlier than the count */
	assert_int_equal(learn(ents[9].name, 20), DIRAHEAD_ORDER_READDIR);
}

static void test_inode(void **state)
{
	(void)state;
	assert_int_equal(learn(kth(by_ino, 5)->name, 5), DIRAHEAD_ORDER_INODE);
}

static void test_name(void **state)
{
	(void)state;
	const struct ent *e = kth(by_name, 4);
	static struct ent s[N];
	memcpy(s, ents, sizeof(s));
	qsort(s, N, sizeof(s[0]), by_ino);
	for (unsigned i = 0; i < 4; i++)
		assert_string_not_equal(s[i].name, e->name); /* not also inode order there */
	assert_int_equal(learn(e->name, 4), DIRAHEAD_ORDER_NAME);
}

/* Both fit, name order nearer: a name that is k-th by name but early by inode (a reused inode
 * number in a directory made in name order) is name order, not inode order. */
static void test_nearest(void **state)
{
	(void)state;
	static struct ent s[N];
	memcpy(s, ents, sizeof(s));
	qsort(s, N, sizeof(s[0]), by_name);
	const struct ent *e = NULL;
	unsigned k;
	for (k = 3; k < N && !e; k++) {
		const struct ent *c = &s[k - 1];
		unsigned ino_rank = 0;
		for (unsigned i = 0; i < N; i++)
			ino_rank += ents[i].ino < c->ino;
		if (c->rd >= k && ino_rank + 1 < k)
			e = c;
	}
	assert_non_null(e);
	assert_int_equal(learn(e->name, k - 1), DIRAHEAD_ORDER_NAME);
}

static void test_none(void **state)
{
	(void)state;
	/* late in every order: nothing fits, readdir stays */
	static struct ent s[N];
	memcpy(s, ents, sizeof(s));
	qsort(s, N, sizeof(s[0]), by_name);
	const struct ent *mid = &s[N / 2];
	assert_int_equal(learn(mid->name, 3), DIRAHEAD_ORDER_READDIR);
	assert_int_equal(learn("no-such-name", 3), DIRAHEAD_ORDER_READDIR);
	assert_int_equal(learn("", 3), DIRAHEAD_ORDER_READDIR);
	assert_int_equal(learn(ents[0].name, 0), DIRAHEAD_ORDER_READDIR);
}

/* A directory of 300 names f000001..f000300 (name order = creation order), in *dir. */
static void make_small(char *dir, size_t len)
{
	char p[96];
	snprintf(dir, len, "/tmp/test_order_tie.XXXXXX");
	assert_non_null(mkdtemp(dir));
	for (unsigned i = 1; i <= 300; i++) {
		snprintf(p, sizeof(p), "%s/f%06u", dir, i);
		int fd = open(p, O_CREAT | O_WRONLY | O_CLOEXEC, 0600);
		assert_true(fd >= 0);
		close(fd);
	}
}

/* The first k >= 8 whose k-th name also has rank k - 1 by inode (a tie), or 0.  Inodes follow
 * creation order only on a quiet filesystem: where other programs free and create files at the
 * same time (a busy machine), some names get a freed, lower inode. */
static unsigned find_tie(const char *dir)
{
	static uint64_t by_name[301];
	uint64_t inos[300];
	unsigned nent = 0;
	DIR *d = opendir(dir);
	struct dirent *de;
	assert_non_null(d);
	while ((de = readdir(d)) && nent < 300) {
		unsigned i;
		if (de->d_name[0] == '.' || sscanf(de->d_name, "f%06u", &i) != 1 || !i || i > 300)
			continue;
		by_name[i] = de->d_ino;
		inos[nent++] = de->d_ino;
	}
	closedir(d);
	for (unsigned k = 8; k <= nent; k++) {
		unsigned rank = 0;
		for (unsigned i = 0; i < nent; i++)
			rank += inos[i] < by_name[k];
		if (rank == k - 1)
			return k;
	}
	return 0;
}

/* A small directory made in name order: inode and name order agree on its first entries (a tie)
 * and fts would not sort it by inode (10,000 entries or fewer): name order, as
 * sorted(os.listdir()) stats it (daemon-threads learnt inode order there and missed). */
static void test_tie_small(void **state)
{
	(void)state;
	char small[64], p[96], want[32];
	unsigned k = 0;
	for (int tries = 0; !k && tries < 8; tries++) {
		make_small(small, sizeof(small));
		k = find_tie(small);
		if (!k) {
			snprintf(p, sizeof(p), "rm -rf '%s'", small);
			assert_int_equal(system(p), 0);
		}
	}
	assert_true(k > 0); /* the precondition: a tie, in one of 8 directories */
	snprintf(want, sizeof(want), "f%06u", k);
	int fd = open(small, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_true(fd >= 0);
	enum dirahead_order o = order_learn(fd, want, k);
	close(fd);
	snprintf(p, sizeof(p), "rm -rf '%s'", small);
	assert_int_equal(system(p), 0);
	assert_int_equal(o, DIRAHEAD_ORDER_NAME);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_readdir),
		cmocka_unit_test(test_inode),
		cmocka_unit_test(test_name),
		cmocka_unit_test(test_nearest),
		cmocka_unit_test(test_tie_small),
		cmocka_unit_test(test_none),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
