/* SPDX-License-Identifier: LGPL-2.1-or-later OR BSD-2-Clause */
/*
 * Credentials (daemon/lib/cred.c, dirahead_dir_opts.cred): a thread takes on a program's ids and
 * groups and comes back, without touching the process's other threads; with them, the engine
 * opens, reads and stats as that program would (both backends).  Needs root (CAP_SETUID); skips
 * otherwise.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <linux/capability.h>
#include <cmocka.h>

#include "dirahead.h"

#define NOBODY 65534u

static char root[64];

static struct dirahead_cred nobody(void)
{
	return (struct dirahead_cred){ .uid = NOBODY, .euid = NOBODY, .suid = NOBODY,
				       .fsuid = NOBODY, .gid = NOBODY, .egid = NOBODY,
				       .sgid = NOBODY, .fsgid = NOBODY, .ngroups = 1,
				       .groups = { 4242 } };
}

static uint64_t effective_caps(void)
{
	struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct d[2];
	assert_int_equal(syscall(SYS_capget, &h, d), 0);
	return d[0].effective | (uint64_t)d[1].effective << 32;
}

/* A thread started before the change (threads inherit their creator's credentials), asked
 * after it. */
static void *other_thread(void *arg)
{
	int *go = arg;
	char c;
	uid_t r, e, s;
	if (read(go[0], &c, 1) != 1)
		return NULL;
	getresuid(&r, &e, &s);
	return (void *)(uintptr_t)(r == 0 && e == 0 && s == 0);
}

static void test_apply(void **state)
{
	(void)state;
	uint64_t caps0 = effective_caps();
	int go[2];
	pthread_t t;
	assert_int_equal(pipe(go), 0);
	assert_int_equal(pthread_create(&t, NULL, other_thread, go), 0);
	struct dirahead_cred c = nobody();
	c.caps = 1ull << CAP_DAC_READ_SEARCH;
	assert_int_equal(dirahead_cred_apply(&c), 0);
	uid_t r, e, s;
	gid_t gr, ge, gs, groups[8];
	getresuid(&r, &e, &s);
	getresgid(&gr, &ge, &gs);
	assert_int_equal(r, NOBODY);
	assert_int_equal(e, NOBODY);
	assert_int_equal(s, NOBODY);
	assert_int_equal(gr, NOBODY);
	assert_int_equal(getgroups(8, groups), 1);
	assert_int_equal(groups[0], 4242);
	/* none effective but the one granted, which the process has */
	assert_int_equal(effective_caps(), 1ull << CAP_DAC_READ_SEARCH);
	/* the other threads keep the process's own identity */
	void *ok;
	assert_int_equal(write(go[1], "x", 1), 1);
	pthread_join(t, &ok);
	close(go[0]);
	close(go[1]);
	/* the same again: nothing to do; another one: changed in place */
	assert_int_equal(dirahead_cred_apply(&c), 0);
	c.caps = 0;
	assert_int_equal(dirahead_cred_apply(&c), 0);
	assert_int_equal(effective_caps(), 0);
	/* back */
	assert_int_equal(dirahead_cred_apply(NULL), 0);
	assert_true(ok != NULL);
	getresuid(&r, &e, &s);
	assert_int_equal(r | e | s, 0);
	assert_int_equal(effective_caps(), caps0);
	assert_int_equal(dirahead_cred_apply(NULL), 0);
	c.ngroups = DIRAHEAD_CRED_GROUPS + 1;
	assert_int_equal(dirahead_cred_apply(&c), -E2BIG);
}

struct t {
	int done, error;
	unsigned ok, eacces;
};

static void on_complete(const struct dirahead_completion *c, void *data)
{
	struct t *t = data;
	if (!c->error)
		t->ok++;
	else if (c->error == EACCES)
		t->eacces++;
}

static void on_dir_done(struct dirahead_dir *dir, void *dir_data, int error, void *data)
{
	struct t *t = data;
	(void)dir;
	(void)dir_data;
	t->done++;
	t->error = error;
}

/* One directory through an engine with nobody's credentials. */
static struct t run(enum dirahead_backend b, const char *dir)
{
	struct t t = { 0 };
	struct dirahead_engine_opts eo = { .size = sizeof(eo), .backend = b, .on_complete = on_complete,
					   .on_dir_done = on_dir_done, .data = &t };
	struct dirahead_engine *e = dirahead_engine_new(&eo);
	assert_non_null(e);
	int fd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	assert_true(fd >= 0);
	struct dirahead_cred c = nobody();
	struct dirahead_dir_opts o = { .size = sizeof(o), .limit = UINT64_MAX, .cred = &c };
	assert_non_null(dirahead_dir_submit(e, fd, &o));
	close(fd);
	assert_int_equal(dirahead_engine_run(e, 10000), 0);
	dirahead_engine_free(e);
	return t;
}

static void engine_creds(enum dirahead_backend b)
{
	char p[128];
	/* readable and searchable by all: fetched */
	snprintf(p, sizeof(p), "%s/open", root);
	struct t t = run(b, p);
	assert_int_equal(t.done, 1);
	assert_int_equal(t.error, 0);
	assert_int_equal(t.ok, 10);
	/* readable, not searchable by nobody (root could): listed, every stat refused */
	snprintf(p, sizeof(p), "%s/noexec", root);
	t = run(b, p);
	assert_int_equal(t.error, 0);
	assert_int_equal(t.ok, 0);
	assert_int_equal(t.eacces, 10);
	/* root's own: not even opened */
	snprintf(p, sizeof(p), "%s/private", root);
	t = run(b, p);
	assert_int_equal(t.done, 1);
	assert_int_equal(t.error, EACCES);
	assert_int_equal(t.ok + t.eacces, 0);
	/* the engine's owner thread is still root */
	uid_t r, e, s;
	getresuid(&r, &e, &s);
	assert_int_equal(r | e | s, 0);
}

static void test_engine_uring(void **state)
{
	(void)state;
	engine_creds(DIRAHEAD_BACKEND_URING);
}

static void test_engine_threads(void **state)
{
	(void)state;
	engine_creds(DIRAHEAD_BACKEND_THREADS);
}

static int setup(void **state)
{
	char p[160];
	(void)state;
	snprintf(root, sizeof(root), "/tmp/dirahead-test-cred.XXXXXX");
	if (!mkdtemp(root) || chmod(root, 0755))
		return -1;
	const char *dirs[] = { "open", "noexec", "private" };
	const mode_t modes[] = { 0755, 0744, 0700 };
	for (int d = 0; d < 3; d++) {
		snprintf(p, sizeof(p), "%s/%s", root, dirs[d]);
		if (mkdir(p, 0755))
			return -1;
		for (int i = 0; i < 10; i++) {
			snprintf(p, sizeof(p), "%s/%s/f%d", root, dirs[d], i);
			int fd = open(p, O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
			if (fd < 0)
				return -1;
			close(fd);
		}
		snprintf(p, sizeof(p), "%s/%s", root, dirs[d]);
		if (chmod(p, modes[d]))
			return -1;
	}
	return 0;
}

static int teardown(void **state)
{
	char cmd[128];
	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
	return system(cmd) == 0 ? 0 : -1;
}

int main(void)
{
	if (geteuid() != 0) {
		printf("SKIP: needs root (CAP_SETUID, CAP_SETGID)\n");
		return 77;
	}
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_apply),
		cmocka_unit_test(test_engine_uring),
		cmocka_unit_test(test_engine_threads),
	};
	return cmocka_run_group_tests_name("cred", tests, setup, teardown);
}
