/* SPDX-License-Identifier: LGPL-2.1-or-later OR BSD-2-Clause */
/*
 * Credentials: a thread that does a program's I/O takes on what the kernel's permission checks
 * read (filesystem uid and gid, supplementary groups, and of the capabilities that bear on
 * reading those the program really has), so that every check is the program's own.
 *
 * Never the real, effective or saved ids: signals and prlimit compare those, so a thread that
 * took a user's uid could be killed (SIGKILL to one thread ends the process), stopped or limited
 * by that user.  setfsuid()/setfsgid() change only the filesystem ids, and moving the fsuid off 0
 * also clears the filesystem capabilities.  They are per thread; glibc's set*id() wrappers change
 * every thread of the process at once, so the raw system calls are used.
 *
 * What needs the ids in full (a FUSE mount without allow_other admits only processes whose real,
 * effective and saved ids are its owner's; an io_uring personality registers its registrant's
 * credentials) runs in a short-lived child process that takes them: dirahead_cred_call() falls
 * back to one when the thread's attempt was refused.  The child is a process of its own, not a
 * thread of ours: the user may kill it, which costs that one call, never the daemon.
 */
#include "internal.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include <linux/capability.h>

/* How long a call in a child may take: a filesystem that hangs costs the caller this, and the
 * child is killed (a FUSE request waits killably). */
#define CHILD_TIMEOUT_MS 2000

/* The identity the process had when the first credentials were applied (all its threads share
 * it: nothing here changes the process's ids). */
static pthread_once_t own_once = PTHREAD_ONCE_INIT;
static struct dirahead_cred own;
static int own_err;
static uint64_t own_permitted;

/* What this thread acts as now. */
static __thread bool acting;
static __thread struct dirahead_cred now;

static int caps_get(uint64_t *eff, uint64_t *perm)
{
	struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct d[2];
	if (syscall(SYS_capget, &h, d) < 0)
		return -errno;
	*eff = d[0].effective | (uint64_t)d[1].effective << 32;
	*perm = d[0].permitted | (uint64_t)d[1].permitted << 32;
	return 0;
}

/* This thread's capabilities: effective eff (of the permitted set); with perm, the permitted set
 * becomes eff too (a child that keeps nothing else). */
static int caps_set(uint64_t eff, bool perm)
{
	struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct d[2];
	if (syscall(SYS_capget, &h, d) < 0)
		return -errno;
	eff &= d[0].permitted | (uint64_t)d[1].permitted << 32;
	d[0].effective = (uint32_t)eff;
	d[1].effective = (uint32_t)(eff >> 32);
	if (perm) {
		d[0].permitted = d[0].effective;
		d[1].permitted = d[1].effective;
		d[0].inheritable = d[1].inheritable = 0;
	}
	return syscall(SYS_capset, &h, d) < 0 ? -errno : 0;
}

static void own_read(void)
{
	uid_t r, e, s;
	gid_t gr, ge, gs;
	gid_t groups[DIRAHEAD_CRED_GROUPS];
	uint64_t eff = 0;
	if (getresuid(&r, &e, &s) || getresgid(&gr, &ge, &gs)) {
		own_err = -errno;
		return;
	}
	int n = getgroups(DIRAHEAD_CRED_GROUPS, groups);
	if (n < 0) {
		own_err = -errno;
		return;
	}
	own = (struct dirahead_cred){ .uid = r, .euid = e, .suid = s,
				      .fsuid = (uint32_t)syscall(SYS_setfsuid, -1),
				      .gid = gr, .egid = ge, .sgid = gs,
				      .fsgid = (uint32_t)syscall(SYS_setfsgid, -1),
				      .ngroups = (uint32_t)n };
	for (int i = 0; i < n; i++)
		own.groups[i] = groups[i];
	own_err = caps_get(&eff, &own_permitted);
	own.caps = eff;
}

static int set_groups(const struct dirahead_cred *c)
{
	gid_t groups[DIRAHEAD_CRED_GROUPS];
	for (uint32_t i = 0; i < c->ngroups; i++)
		groups[i] = c->groups[i];
	return syscall(SYS_setgroups, (size_t)c->ngroups, groups) < 0 ? -errno : 0;
}

/* setfsuid/setfsgid say nothing of failure: ask again (an invalid id changes nothing and
 * returns the current one). */
static bool fs_ids_are(uint32_t fsuid, uint32_t fsgid)
{
	return (uint32_t)syscall(SYS_setfsuid, -1) == fsuid &&
	       (uint32_t)syscall(SYS_setfsgid, -1) == fsgid;
}

/* Back to the process's own filesystem ids, groups and capabilities. */
static int come_back(void)
{
	/* CAP_SETUID and CAP_SETGID are not filesystem capabilities: still permitted */
	if (caps_set((1ull << CAP_SETUID) | (1ull << CAP_SETGID), false) < 0)
		return -errno;
	syscall(SYS_setfsuid, own.fsuid);
	syscall(SYS_setfsgid, own.fsgid);
	if (set_groups(&own) < 0 || !fs_ids_are(own.fsuid, own.fsgid))
		return -EPERM;
	return caps_set(own.caps, false);
}

/* The calling thread takes on c's filesystem ids, groups and capabilities (raw syscalls: this
 * thread only).  On failure the caller comes back. */
static int become(const struct dirahead_cred *c)
{
	/* perhaps acting as another program, with only its capabilities effective */
	int r = caps_set((1ull << CAP_SETUID) | (1ull << CAP_SETGID), false);
	if (r == 0)
		r = set_groups(c);
	if (r < 0)
		return r;
	syscall(SYS_setfsgid, c->fsgid);
	syscall(SYS_setfsuid, c->fsuid);
	if (!fs_ids_are(c->fsuid, c->fsgid))
		return -EPERM;
	/* only what the program itself may do: of the capabilities it has, those kept here */
	return caps_set(c->caps & own_permitted, false);
}

struct da_cred *da_cred_ref(struct da_cred *c)
{
	if (c)
		__atomic_add_fetch(&c->refs, 1, __ATOMIC_RELAXED);
	return c;
}

void da_cred_unref(struct da_cred *c)
{
	if (c && __atomic_sub_fetch(&c->refs, 1, __ATOMIC_ACQ_REL) == 0)
		free(c);
}

int dirahead_cred_apply(const struct dirahead_cred *c)
{
	pthread_once(&own_once, own_read);
	if (own_err)
		return own_err;
	if (c && c->ngroups > DIRAHEAD_CRED_GROUPS)
		return -E2BIG;
	if (!c) {
		if (!acting)
			return 0;
		int r = come_back();
		if (r < 0)
			return r;
		acting = false;
		return 0;
	}
	if (acting && !memcmp(&now, c, sizeof(now)))
		return 0;
	int r = become(c);
	if (r < 0) {
		/* half-changed: the thread must not go on with a mixed identity */
		if (come_back() < 0)
			abort();
		acting = false;
		return r;
	}
	now = *c;
	acting = true;
	return 0;
}

/* ---- calls in a child with the ids in full ------------------------------------------------- */

/* The child's whole identity: ids, groups, and of the program's capabilities those we have
 * (permitted = effective = those, nothing inheritable).  Raw syscalls: one thread, after fork. */
static int become_fully(const struct dirahead_cred *c)
{
	/* forked from a thread acting as c: only the program's capabilities were effective */
	if (caps_set(own_permitted, false) < 0)
		return -errno;
	if (set_groups(c) < 0 || syscall(SYS_setresgid, c->gid, c->egid, c->sgid) < 0)
		return -errno;
	syscall(SYS_setfsgid, c->fsgid);
	/* keep the permitted set past the uid change, to grant the program's own capabilities */
	if (prctl(PR_SET_KEEPCAPS, 1, 0, 0, 0) < 0 ||
	    syscall(SYS_setresuid, c->uid, c->euid, c->suid) < 0)
		return -errno;
	if (c->fsuid != c->euid) {
		if (caps_set(1ull << CAP_SETUID, false) < 0)
			return -errno;
		syscall(SYS_setfsuid, c->fsuid);
	}
	if (!fs_ids_are(c->fsuid, c->fsgid))
		return -EPERM;
	prctl(PR_SET_KEEPCAPS, 0, 0, 0, 0);
	return caps_set(c->caps & own_permitted, true);
}

static void child_run(int sock, const struct dirahead_cred *c, dirahead_call_fn fn, void *arg)
{
	struct dirahead_call_out o = { 0 };
	union {
		char buf[CMSG_SPACE(sizeof(int) * DIRAHEAD_CALL_FDS)];
		struct cmsghdr align;
	} u;
	struct iovec iov = { .iov_base = &o, .iov_len = sizeof(o) };
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1 };

	/* the forking thread's end is ours too: never outlive it */
	prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
	o.res = become_fully(c);
	if (o.res == 0)
		fn(arg, &o);
	if (o.nfds > DIRAHEAD_CALL_FDS)
		o.nfds = DIRAHEAD_CALL_FDS;
	if (o.nfds) {
		memset(&u, 0, sizeof(u));
		m.msg_control = u.buf;
		m.msg_controllen = CMSG_SPACE(sizeof(int) * o.nfds);
		struct cmsghdr *cm = CMSG_FIRSTHDR(&m);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(sizeof(int) * o.nfds);
		memcpy(CMSG_DATA(cm), o.fds, sizeof(int) * o.nfds);
	}
	_exit(sendmsg(sock, &m, MSG_NOSIGNAL) == (ssize_t)sizeof(o) ? 0 : 1);
}

/* The child's answer: out with the fds it passed (numbers of ours), or -errno. */
static int child_answer(int sock, pid_t pid, struct dirahead_call_out *out)
{
	union {
		char buf[CMSG_SPACE(sizeof(int) * DIRAHEAD_CALL_FDS)];
		struct cmsghdr align;
	} u;
	struct dirahead_call_out o;
	struct iovec iov = { .iov_base = &o, .iov_len = sizeof(o) };
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf,
			    .msg_controllen = sizeof(u.buf) };
	struct pollfd p = { .fd = sock, .events = POLLIN };
	int r;

	do
		r = poll(&p, 1, CHILD_TIMEOUT_MS);
	while (r < 0 && errno == EINTR);
	if (r == 0) {
		kill(pid, SIGKILL);
		return -ETIMEDOUT;
	}
	ssize_t n = recvmsg(sock, &m, MSG_CMSG_CLOEXEC);
	if (n != (ssize_t)sizeof(o))
		return n < 0 ? -errno : -ECHILD; /* it died (killed by the user, perhaps) */
	unsigned got = 0;
	for (struct cmsghdr *cm = CMSG_FIRSTHDR(&m); cm; cm = CMSG_NXTHDR(&m, cm)) {
		if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS)
			continue;
		got = (unsigned)((cm->cmsg_len - CMSG_LEN(0)) / sizeof(int));
		if (got > DIRAHEAD_CALL_FDS)
			got = DIRAHEAD_CALL_FDS;
		memcpy(o.fds, CMSG_DATA(cm), got * sizeof(int));
	}
	if (got != o.nfds || (m.msg_flags & MSG_CTRUNC)) {
		for (unsigned i = 0; i < got; i++)
			close(o.fds[i]);
		return -EPROTO;
	}
	*out = o;
	return 0;
}

int da_cred_call_child(const struct dirahead_cred *c, dirahead_call_fn fn, void *arg,
		       struct dirahead_call_out *out)
{
	int sv[2], r;
	pthread_once(&own_once, own_read);
	if (own_err)
		return own_err;
	if (c->ngroups > DIRAHEAD_CRED_GROUPS)
		return -E2BIG;
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
		return -errno;
	/* fork(), not a raw clone: glibc makes malloc usable in the child, which fn may need */
	pid_t pid = fork();
	if (pid < 0) {
		r = -errno;
		close(sv[0]);
		close(sv[1]);
		return r;
	}
	if (pid == 0) {
		close(sv[0]);
		child_run(sv[1], c, fn, arg);
	}
	close(sv[1]);
	r = child_answer(sv[0], pid, out);
	close(sv[0]);
	while (waitpid(pid, NULL, __WALL) < 0 && errno == EINTR)
		;
	return r;
}

/* Whether c's real, effective and saved ids are the process's own: then a child would change
 * nothing the thread did not already have. */
static bool ids_are_own(const struct dirahead_cred *c)
{
	return c->uid == own.uid && c->euid == own.euid && c->suid == own.suid &&
	       c->gid == own.gid && c->egid == own.egid && c->sgid == own.sgid;
}

void dirahead_call_close(struct dirahead_call_out *out)
{
	for (unsigned i = 0; i < out->nfds && i < DIRAHEAD_CALL_FDS; i++)
		if (out->fds[i] >= 0)
			close(out->fds[i]);
	out->nfds = 0;
}

int dirahead_cred_call(const struct dirahead_cred *c, dirahead_call_fn fn, void *arg,
		       struct dirahead_call_out *out)
{
	*out = (struct dirahead_call_out){ 0 };
	int r = dirahead_cred_apply(c);
	if (r < 0)
		return r;
	fn(arg, out);
	if (!c || (out->res != -EACCES && out->res != -EPERM) || ids_are_own(c) ||
	    !(own_permitted & (1ull << CAP_SETUID)))
		return 0;
	/* refused to the filesystem ids: perhaps only the ids in full are admitted */
	struct dirahead_call_out o;
	r = da_cred_call_child(c, fn, arg, &o);
	if (r < 0)
		return 0; /* keep the thread's answer */
	dirahead_call_close(out);
	*out = o;
	return 0;
}
