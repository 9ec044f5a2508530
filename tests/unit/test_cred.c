/* SPDX-License-Identifier: LGPL-2.1-or-later OR BSD-2-Clause */
/*
 * Credentials (daemon/lib/cred.c, dirahead_dir_opts.cred): a thread takes on a program's
 * filesystem ids, groups and capabilities and comes back, without touching the process's other
 * threads and never taking its real, effective or saved ids (which would let that user signal
 * it); what needs them in full runs in a child; with them, the engine opens, reads and stats as
 * that program would (both backends).  Needs root (CAP_SETUID); skips
 * otherwise.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <time.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
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
	if (read(go[0], &c, 1) != 1)
		return NULL;
	return (void *)(uintptr_t)(syscall(SYS_setfsuid, -1) == 0);
}

static uint32_t fsuid_now(void)
{
	return (uint32_t)syscall(SYS_setfsuid, -1);
}

/* Whether a process with uid `uid` may send signal 0 to thread tid of this process (kill
 * permission compares the target's real and saved uids with the sender's). */
static int signal_as(uid_t uid, pid_t tid)
{
	pid_t pid = fork();
	if (pid == 0) {
		/* (forked from a thread acting as a program: its capabilities back first) */
		if (dirahead_cred_apply(NULL) || syscall(SYS_setresgid, uid, uid, uid) ||
		    syscall(SYS_setresuid, uid, uid, uid))
			_exit(2);
		_exit(syscall(SYS_tgkill, getppid(), tid, 0) == 0 ? 0 : errno == EPERM ? 1 : 3);
	}
	int st;
	assert_true(waitpid(pid, &st, 0) == pid && WIFEXITED(st));
	return WEXITSTATUS(st);
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
	gid_t groups[8];
	getresuid(&r, &e, &s);
	/* what permission checks read is the program's ... */
	assert_int_equal(fsuid_now(), NOBODY);
	assert_int_equal((uint32_t)syscall(SYS_setfsgid, -1), NOBODY);
	assert_int_equal(getgroups(8, groups), 1);
	assert_int_equal(groups[0], 4242);
	/* ... the ids that signals and prlimit compare are still ours: nobody cannot signal us */
	assert_int_equal(r | e | s, 0);
	assert_int_equal(signal_as(NOBODY, (pid_t)syscall(SYS_gettid)), 1);
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
	c.fsuid = NOBODY - 1;
	assert_int_equal(dirahead_cred_apply(&c), 0);
	assert_int_equal(effective_caps(), 0);
	assert_int_equal(fsuid_now(), NOBODY - 1);
	/* back */
	assert_int_equal(dirahead_cred_apply(NULL), 0);
	assert_true(ok != NULL);
	assert_int_equal(fsuid_now(), 0);
	assert_int_equal(effective_caps(), caps0);
	assert_int_equal(dirahead_cred_apply(NULL), 0);
	c.ngroups = DIRAHEAD_CRED_GROUPS + 1;
	assert_int_equal(dirahead_cred_apply(&c), -E2BIG);
}

/* Groups beyond the 32 an event carries are all taken (none dropped: a dropped group can be
 * the one an ACL denies). */
static void test_many_groups(void **state)
{
	(void)state;
	struct dirahead_cred c = nobody();
	gid_t got[64];
	c.ngroups = 40;
	for (uint32_t i = 0; i < c.ngroups; i++)
		c.groups[i] = 5000 + i;
	assert_int_equal(dirahead_cred_apply(&c), 0);
	assert_int_equal(getgroups(64, got), 40);
	assert_int_equal(got[39], 5039);
	assert_int_equal(dirahead_cred_apply(NULL), 0);
}

/* Succeeds only with the ids in full (as a FUSE mount without allow_other admits). */
static void only_nobody(void *arg, struct dirahead_call_out *out)
{
	uid_t r, e, s;
	getresuid(&r, &e, &s);
	if (r != NOBODY || e != NOBODY || s != NOBODY) {
		out->res = -EACCES;
		return;
	}
	out->vals[0] = r;
	int fd = open((const char *)arg, O_PATH | O_DIRECTORY | O_CLOEXEC);
	out->res = fd < 0 ? -errno : 0;
	if (fd >= 0)
		out->fds[out->nfds++] = fd;
}

static void always_refused(void *arg, struct dirahead_call_out *out)
{
	(void)arg;
	out->res = -EACCES;
}

/* As nobody (in a child), stops itself: what a user may do to the child acting as it. */
static void stops_itself(void *arg, struct dirahead_call_out *out)
{
	(void)arg;
	if (getuid() != NOBODY) {
		out->res = -EACCES;
		return;
	}
	syscall(SYS_kill, syscall(SYS_getpid), SIGSTOP);
	out->res = 0;
}

/* A child stopped (or stuck on a hung filesystem) is killed by the watchdog: the call fails,
 * the thread goes on. */
static void test_call_stopped(void **state)
{
	(void)state;
	struct dirahead_cred c = nobody();
	struct dirahead_call_out out;
	struct timespec a, b;
	clock_gettime(CLOCK_MONOTONIC, &a);
	assert_int_equal(dirahead_cred_call(&c, stops_itself, NULL, &out), 0);
	clock_gettime(CLOCK_MONOTONIC, &b);
	assert_int_equal(out.res, -EACCES); /* the thread's answer stands */
	assert_int_equal(out.nfds, 0);
	assert_true(b.tv_sec - a.tv_sec < 60); /* (returned at all: the watchdog's 2 s, or more) */
	assert_int_equal(dirahead_cred_apply(NULL), 0);
}

static void test_call(void **state)
{
	(void)state;
	struct dirahead_cred c = nobody();
	struct dirahead_call_out out;
	/* refused to the thread's filesystem ids: done by a child with the ids in full, its fd
	 * handed over */
	assert_int_equal(dirahead_cred_call(&c, only_nobody, root, &out), 0);
	assert_int_equal(out.res, 0);
	assert_int_equal(out.vals[0], NOBODY);
	assert_int_equal(out.nfds, 1);
	struct stat st, want;
	assert_int_equal(fstat(out.fds[0], &st), 0);
	assert_int_equal(stat(root, &want), 0);
	assert_true(st.st_ino == want.st_ino);
	dirahead_call_close(&out);
	/* the thread acts as c on return, still with its own ids */
	assert_int_equal(fsuid_now(), NOBODY);
	uid_t r, e, s;
	getresuid(&r, &e, &s);
	assert_int_equal(r | e | s, 0);
	assert_int_equal(dirahead_cred_apply(NULL), 0);
	/* refused either way: refused */
	assert_int_equal(dirahead_cred_call(&c, always_refused, NULL, &out), 0);
	assert_int_equal(out.res, -EACCES);
	assert_int_equal(out.nfds, 0);
	assert_int_equal(dirahead_cred_apply(NULL), 0);
	/* the daemon's own ids: no child (it would change nothing) */
	assert_int_equal(dirahead_cred_call(NULL, only_nobody, root, &out), 0);
	assert_int_equal(out.res, -EACCES);
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
		cmocka_unit_test(test_many_groups),
		cmocka_unit_test(test_call),
		cmocka_unit_test(test_call_stopped),
		cmocka_unit_test(test_engine_uring),
		cmocka_unit_test(test_engine_threads),
	};
	return cmocka_run_group_tests_name("cred", tests, setup, teardown);
}
