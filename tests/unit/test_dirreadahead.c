/* SPDX-License-Identifier: LGPL-2.1-or-later OR BSD-2-Clause */
/*
 * dirreadahead(): the offset walk, argument errors, and that the caller's fd is left alone.
 * The whole suite runs twice, in a child process per backend (the process-wide engine reads
 * DIRAHEAD_BACKEND once).
 */
#include <dirent.h>
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
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "dirahead.h"

#define NFILES 10000

static char dir[PATH_MAX];

static void make_tree(void)
{
	char p[PATH_MAX + 32];
	snprintf(dir, sizeof(dir), "/tmp/dirahead-test-dra.XXXXXX");
	if (!mkdtemp(dir))
		abort();
	for (int i = 0; i < NFILES; i++) {
		snprintf(p, sizeof(p), "%s/e%05d", dir, i);
		int fd = open(p, O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
		if (fd < 0)
			abort();
		close(fd);
	}
	snprintf(p, sizeof(p), "%s.file", dir);
	int fd = open(p, O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
	if (fd < 0)
		abort();
	close(fd);
}

static void remove_tree(void)
{
	char cmd[PATH_MAX * 2 + 32];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s' '%s.file'", dir, dir);
	if (system(cmd) != 0)
		fprintf(stderr, "cleanup failed: %s\n", cmd);
}

static int open_dir(void)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
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

/* The engine closes its directory fds once the started entries are fetched (the baseline may
 * still include one from an earlier call, hence "at most"). */
static void wait_fds(int want)
{
	for (int i = 0; i < 300 && count_fds() > want; i++)
		usleep(10000);
	assert_in_range(count_fds(), 0, want);
}

static bool has_uring_fd(void)
{
	char link[300], target[64];
	bool found = false;
	DIR *d = opendir("/proc/self/fd");
	struct dirent *de;
	while ((de = readdir(d))) {
		snprintf(link, sizeof(link), "/proc/self/fd/%s", de->d_name);
		ssize_t n = readlink(link, target, sizeof(target) - 1);
		if (n > 0) {
			target[n] = '\0';
			found |= strstr(target, "io_uring") != NULL;
		}
	}
	closedir(d);
	return found;
}

static void test_walk(void **state)
{
	(void)state;
	{
		/* the process-wide engine starts on the first call, with the asked-for backend */
		int fd = open_dir();
		loff_t off = 0;
		assert_int_equal(dirreadahead((unsigned)fd, &off, 1), 1);
		close(fd);
		assert_int_equal(has_uring_fd(), !strcmp(getenv("DIRAHEAD_BACKEND"), "io_uring"));
	}
	static const unsigned counts[] = { 1000, 777, 1, 100000 };
	int base = count_fds();
	for (size_t k = 0; k < sizeof(counts) / sizeof(counts[0]); k++) {
		int fd = open_dir();
		loff_t off = 0;
		long sum = 0;
		int n, calls = 0;
		/* count 1 would take 10,000 calls: cap that case */
		unsigned limit = counts[k] == 1 ? 50 : UINT_MAX;
		while ((unsigned)calls < limit && (n = dirreadahead((unsigned)fd, &off, counts[k])) > 0) {
			assert_true((unsigned)n <= counts[k]);
			sum += n;
			calls++;
			assert_int_equal(off, sum);
		}
		if (counts[k] == 1) {
			assert_int_equal(sum, 50);
			off = NFILES - 3; /* jump: re-read from the start */
			sum = NFILES - 3;
			while ((n = dirreadahead((unsigned)fd, &off, 1)) > 0)
				sum += n;
		}
		assert_int_equal(n, 0);
		assert_int_equal(sum, NFILES);
		assert_int_equal(off, NFILES);
		/* at the end: 0 again, offset unchanged */
		assert_int_equal(dirreadahead((unsigned)fd, &off, 10), 0);
		assert_int_equal(off, NFILES);
		off = NFILES + 5;
		assert_int_equal(dirreadahead((unsigned)fd, &off, 10), 0);
		assert_int_equal(off, NFILES + 5);
		close(fd);
	}
	wait_fds(base);
}

static void test_mid_offset(void **state)
{
	(void)state;
	int fd = open_dir();
	loff_t off = NFILES - 10;
	assert_int_equal(dirreadahead((unsigned)fd, &off, 100), 10);
	assert_int_equal(off, NFILES);
	off = 5000; /* backwards after a resume point: still right */
	assert_int_equal(dirreadahead((unsigned)fd, &off, 20), 20);
	assert_int_equal(off, 5020);
	close(fd);
}

static void test_count_zero(void **state)
{
	(void)state;
	int fd = open_dir();
	loff_t off = 123;
	assert_int_equal(dirreadahead((unsigned)fd, &off, 0), 0);
	assert_int_equal(off, 123);
	close(fd);
}

static void test_errors(void **state)
{
	(void)state;
	loff_t off = 0;
	char p[PATH_MAX + 8];

	errno = 0;
	assert_int_equal(dirreadahead((unsigned)-1, &off, 10), -1);
	assert_int_equal(errno, EBADF);

	int fd = open_dir();
	close(fd); /* closed fd */
	errno = 0;
	assert_int_equal(dirreadahead((unsigned)fd, &off, 10), -1);
	assert_int_equal(errno, EBADF);

	snprintf(p, sizeof(p), "%s.file", dir);
	fd = open(p, O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	errno = 0;
	assert_int_equal(dirreadahead((unsigned)fd, &off, 10), -1);
	assert_int_equal(errno, ENOTDIR);
	close(fd);

	fd = open_dir();
	errno = 0;
	assert_int_equal(dirreadahead((unsigned)fd, NULL, 10), -1);
	assert_int_equal(errno, EFAULT);
	off = -1;
	errno = 0;
	assert_int_equal(dirreadahead((unsigned)fd, &off, 10), -1);
	assert_int_equal(errno, EINVAL);
	assert_int_equal(off, -1);
	close(fd);

	/* an O_PATH fd of the directory works */
	fd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	assert_true(fd >= 0);
	off = 0;
	assert_int_equal(dirreadahead((unsigned)fd, &off, 10), 10);
	close(fd);
}

static long getdents_one(int fd, char *name, size_t len)
{
	/* Records here are 24 ("." and "..") or 32 bytes ("e00000"): 40 bytes hold exactly one. */
	char buf[40] __attribute__((aligned(8)));
	long n = getdents64(fd, buf, sizeof(buf));
	/* no struct access: the buffer is smaller than a whole struct dirent64 */
	if (n > 0)
		snprintf(name, len, "%s", buf + offsetof(struct dirent64, d_name));
	return n;
}

static void test_fd_position_unchanged(void **state)
{
	(void)state;
	int fd = open_dir(), ref = open_dir();
	char a[NAME_MAX + 1], b[NAME_MAX + 1];

	/* move both fds a few entries in, identically */
	for (int i = 0; i < 5; i++) {
		assert_true(getdents_one(fd, a, sizeof(a)) > 0);
		assert_true(getdents_one(ref, b, sizeof(b)) > 0);
		assert_string_equal(a, b);
	}
	off_t pos = lseek(fd, 0, SEEK_CUR);
	loff_t off = 0;
	assert_int_equal(dirreadahead((unsigned)fd, &off, 3000), 3000);
	assert_int_equal(dirreadahead((unsigned)fd, &off, 3000), 3000);
	assert_int_equal(lseek(fd, 0, SEEK_CUR), pos);
	/* and the caller's next getdents goes on where it was */
	assert_true(getdents_one(fd, a, sizeof(a)) > 0);
	assert_true(getdents_one(ref, b, sizeof(b)) > 0);
	assert_string_equal(a, b);
	close(fd);
	close(ref);
}

static void test_close_right_after(void **state)
{
	(void)state;
	int base = count_fds();
	for (int i = 0; i < 20; i++) {
		int fd = open_dir();
		loff_t off = (loff_t)i * 100;
		assert_int_equal(dirreadahead((unsigned)fd, &off, 100), 100);
		close(fd);
	}
	wait_fds(base);
}

static int run_suite(const char *backend)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_walk),
		cmocka_unit_test(test_mid_offset),
		cmocka_unit_test(test_count_zero),
		cmocka_unit_test(test_errors),
		cmocka_unit_test(test_fd_position_unchanged),
		cmocka_unit_test(test_close_right_after),
	};
	char name[64];
	setenv("DIRAHEAD_BACKEND", backend, 1);
	snprintf(name, sizeof(name), "dirreadahead/%s", backend);
	return cmocka_run_group_tests_name(name, tests, NULL, NULL);
}

int main(void)
{
	static const char *const backends[] = { "io_uring", "threads" };
	int failed = 0;

	make_tree();
	for (size_t i = 0; i < 2; i++) {
		fflush(NULL);
		pid_t pid = fork();
		if (pid == 0)
			_exit(run_suite(backends[i]) ? 1 : 0);
		int st;
		if (pid < 0 || waitpid(pid, &st, 0) < 0 || !WIFEXITED(st) || WEXITSTATUS(st))
			failed++;
	}
	remove_tree();
	return failed ? 1 : 0;
}
