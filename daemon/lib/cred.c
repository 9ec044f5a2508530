/* SPDX-License-Identifier: LGPL-2.1-or-later OR BSD-2-Clause */
/*
 * Credentials: a thread that does a program's I/O takes on the program's uid, gids,
 * supplementary groups and (of the capabilities that bear on reading) those the program has, so
 * that every permission check is the program's own, and a FUSE mount without allow_other, which
 * admits only its owner, serves it.
 *
 * Linux credentials are per thread; glibc's set*id() change every thread of the process at once,
 * so the raw system calls are used.  The thread keeps its permitted capabilities across the
 * change (PR_SET_KEEPCAPS) with none effective but those granted, and raises CAP_SETUID and
 * CAP_SETGID from its permitted set to change back.
 */
#include "internal.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <linux/capability.h>

/* The identity the process had when the first credentials were applied (all its threads share
 * it: nothing else here changes them). */
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

/* Effective capabilities of this thread; permitted and inheritable stay as they are. */
static int caps_set_effective(uint64_t eff)
{
	struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct d[2];
	if (syscall(SYS_capget, &h, d) < 0)
		return -errno;
	uint64_t perm = d[0].permitted | (uint64_t)d[1].permitted << 32;
	eff &= perm;
	d[0].effective = (uint32_t)eff;
	d[1].effective = (uint32_t)(eff >> 32);
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
	own = (struct dirahead_cred){ .uid = r, .euid = e, .suid = s, .fsuid = e,
				      .gid = gr, .egid = ge, .sgid = gs, .fsgid = ge,
				      .ngroups = (uint32_t)n };
	for (int i = 0; i < n; i++)
		own.groups[i] = groups[i];
	own_err = caps_get(&eff, &own_permitted);
	own.caps = eff;
}

static int own_groups(void)
{
	gid_t groups[DIRAHEAD_CRED_GROUPS];
	for (uint32_t i = 0; i < own.ngroups; i++)
		groups[i] = own.groups[i];
	return syscall(SYS_setgroups, (size_t)own.ngroups, groups) < 0 ? -errno : 0;
}

/* The caller's thread takes on c (raw syscalls: this thread only).  From the process's own
 * identity, which can change identities (CAP_SETUID, CAP_SETGID).  A step that fails undoes
 * the steps before it (so a process without those capabilities stays itself); *changed_uid
 * says whether the uids were changed (then only come_back() can undo). */
static int become(const struct dirahead_cred *c, bool *changed_uid)
{
	gid_t groups[DIRAHEAD_CRED_GROUPS];
	uint32_t n = c->ngroups < DIRAHEAD_CRED_GROUPS ? c->ngroups : DIRAHEAD_CRED_GROUPS;
	int r;
	for (uint32_t i = 0; i < n; i++)
		groups[i] = c->groups[i];
	*changed_uid = false;
	/* keep the permitted set when the uids stop being 0, so the thread can come back */
	if (prctl(PR_SET_KEEPCAPS, 1, 0, 0, 0) < 0)
		return -errno;
	if (syscall(SYS_setgroups, (size_t)n, groups) < 0)
		return -errno;
	if (syscall(SYS_setresgid, c->gid, c->egid, c->sgid) < 0) {
		r = -errno;
		own_groups();
		return r;
	}
	syscall(SYS_setfsgid, c->fsgid);
	if (syscall(SYS_setresuid, c->uid, c->euid, c->suid) < 0) {
		r = -errno;
		syscall(SYS_setresgid, own.gid, own.egid, own.sgid);
		own_groups();
		return r;
	}
	*changed_uid = true;
	/* setfsuid needs CAP_SETUID unless fsuid is one of the uids: raise it just for that */
	if (c->fsuid != c->euid) {
		if (caps_set_effective(1ull << CAP_SETUID) < 0)
			return -errno;
		syscall(SYS_setfsuid, c->fsuid);
	}
	/* only what the program itself may do: of the capabilities it has, those kept here */
	r = caps_set_effective(c->caps & own_permitted);
	return r < 0 ? r : 0;
}

/* Back to the process's own identity (needs the permitted set kept by become()). */
static int come_back(void)
{
	if (caps_set_effective((1ull << CAP_SETUID) | (1ull << CAP_SETGID)) < 0)
		return -errno;
	if (syscall(SYS_setresuid, own.uid, own.euid, own.suid) < 0)
		return -errno;
	syscall(SYS_setfsuid, own.fsuid);
	if (own_groups() < 0 || syscall(SYS_setresgid, own.gid, own.egid, own.sgid) < 0)
		return -errno;
	syscall(SYS_setfsgid, own.fsgid);
	return caps_set_effective(own.caps);
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
	if (acting) {
		int r = come_back();
		if (r < 0)
			return r;
		acting = false;
	}
	bool changed_uid;
	int r = become(c, &changed_uid);
	if (r < 0) {
		/* half-changed: the thread must not go on with a mixed identity */
		if (changed_uid && come_back() < 0)
			abort();
		return r;
	}
	now = *c;
	acting = true;
	return 0;
}
