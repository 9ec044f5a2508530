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
 * thread of ours (it shares our memory and fds, as vfork() does, while the calling thread
 * waits): the user may kill it, which costs that one call, never the daemon, and may not trace
 * or read it (its change of ids makes it, and us meanwhile, not dumpable).
 */
#include "internal.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <sys/mman.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include <linux/capability.h>

/* The identity the process had when the first credentials were applied (all its threads share
 * it: nothing here changes the process's ids). */
static pthread_once_t own_once = PTHREAD_ONCE_INIT;
static struct dirahead_cred own;
static int own_err;
static uint64_t own_permitted;

/* What this thread acts as now; whether its groups are not the process's (only changing them
 * back needs a capability, CAP_SETGID: the filesystem ids may always return to the real ids). */
static __thread bool acting, groups_changed;
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

/* fs.suid_dumpable at start (1: processes that change ids stay traceable). */
static int suid_dumpable;

static void own_read(void)
{
	int fd = open("/proc/sys/fs/suid_dumpable", O_RDONLY | O_CLOEXEC);
	char b[4] = "";
	if (fd >= 0) {
		if (read(fd, b, sizeof(b) - 1) > 0)
			suid_dumpable = atoi(b);
		close(fd);
	}
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
	if (groups_changed) {
		if (set_groups(&own) < 0)
			return -EPERM;
		groups_changed = false;
	}
	if (!fs_ids_are(own.fsuid, own.fsgid))
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
	groups_changed = true;
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
 * (permitted = effective = those, nothing inheritable).  Raw syscalls: credentials are per
 * task. */
static int become_fully(const struct dirahead_cred *c)
{
	/* cloned from a thread acting as c: only the program's capabilities were effective */
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
	prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
	return caps_set(c->caps & own_permitted, true);
}

/* The child: shares our memory and fd table (so what fn opens is ours, and what it writes into
 * out is read here), not our credentials, which it sets in full. */
struct child {
	const struct dirahead_cred *c;
	dirahead_call_fn fn;
	void *arg;
	struct dirahead_call_out *out;
};

static int child_main(void *p)
{
	struct child *x = p;
	x->out->res = become_fully(x->c);
	if (x->out->res == 0) {
		x->out->res = -ECHILD; /* until fn says otherwise */
		x->fn(x->arg, x->out);
	}
	/* exit, not exit_group: (a thread group of its own, but say only what is meant) */
	syscall(SYS_exit, 0);
	return 0;
}

#define CHILD_STACK (256u << 10)

/*
 * The children's stacks: one per thread that has made a call, handed back when the thread ends
 * (pool threads come and go) and taken again by the next; never unmapped, so that a sanitizer's
 * marks of a child's frames never linger over a mapping made later at the same address.  As many
 * as threads have made calls at once.
 */
struct stack_node { struct stack_node *next; };
static pthread_mutex_t stacks_lock = PTHREAD_MUTEX_INITIALIZER;
static struct stack_node *stacks_free;
static pthread_once_t stack_key_once = PTHREAD_ONCE_INIT;
static pthread_key_t stack_key;

static void stack_give_back(void *p)
{
	struct stack_node *n = p;
	pthread_mutex_lock(&stacks_lock);
	n->next = stacks_free;
	stacks_free = n;
	pthread_mutex_unlock(&stacks_lock);
}

static void stack_key_make(void)
{
	pthread_key_create(&stack_key, stack_give_back);
}

static void *child_stack(void)
{
	pthread_once(&stack_key_once, stack_key_make);
	void *p = pthread_getspecific(stack_key);
	if (p)
		return p;
	pthread_mutex_lock(&stacks_lock);
	if ((p = stacks_free))
		stacks_free = stacks_free->next;
	pthread_mutex_unlock(&stacks_lock);
	if (!p) {
		p = mmap(NULL, CHILD_STACK, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
		if (p == MAP_FAILED)
			return NULL;
	}
	if (pthread_setspecific(stack_key, p)) {
		stack_give_back(p);
		return NULL;
	}
	return p;
}

/*
 * The children under way, each killed once it has run CHILD_TIMEOUT_NS: one stuck on a hung
 * filesystem, or stopped by the user it acts as (SIGSTOP), would otherwise hold the calling
 * thread for ever and, sharing our fd table, every fd of ours after we exit too (an unmount
 * that never succeeds).  The calling thread waits as for vfork(), so a watchdog thread kills
 * them; it sleeps while no child runs.
 */
#define CHILD_TIMEOUT_NS 2000000000ull
#define MAX_CHILDREN 64
static pthread_mutex_t kids_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t kids_cond = PTHREAD_COND_INITIALIZER;
static struct kid {
	pid_t tid;          /* written by the kernel at clone (CLONE_PARENT_SETTID) */
	bool used;
	uint64_t start_ns;
} kids[MAX_CHILDREN];
static bool watchdog_running;

static uint64_t mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static bool kids_in_use(void)
{
	for (int i = 0; i < MAX_CHILDREN; i++)
		if (kids[i].used)
			return true;
	return false;
}

static void *watchdog(void *arg)
{
	(void)arg;
	/* started by a thread acting as a program, whose credentials it inherited: its own back,
	 * or it could not kill a child of another user's ids */
	groups_changed = true;
	if (come_back() < 0)
		abort();
	pthread_mutex_lock(&kids_lock);
	for (;;) {
		uint64_t now = mono_ns(), next = 0;
		for (int i = 0; i < MAX_CHILDREN; i++) {
			pid_t tid = __atomic_load_n(&kids[i].tid, __ATOMIC_RELAXED);
			if (!kids[i].used)
				continue;
			/* (a tid of 0: being cloned; its deadline counts all the same) */
			if (now - kids[i].start_ns >= CHILD_TIMEOUT_NS && tid > 0) {
				kill(tid, SIGKILL); /* (not reaped yet: the pid is still its) */
				kids[i].start_ns = now;
			}
			uint64_t due = kids[i].start_ns + CHILD_TIMEOUT_NS;
			if (!next || due < next)
				next = due;
		}
		if (!next) {
			/* nothing to watch: gone after a while, as idle pool threads are (an idle
			 * daemon keeps no thread it does not need) */
			struct timespec ts;
			clock_gettime(CLOCK_REALTIME, &ts);
			ts.tv_sec += 5;
			if (pthread_cond_timedwait(&kids_cond, &kids_lock, &ts) == ETIMEDOUT &&
			    !kids_in_use())
				break;
			continue;
		}
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		uint64_t at = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec + (next - now);
		ts.tv_sec = (time_t)(at / 1000000000ull);
		ts.tv_nsec = (long)(at % 1000000000ull);
		pthread_cond_timedwait(&kids_cond, &kids_lock, &ts);
	}
	watchdog_running = false;
	pthread_mutex_unlock(&kids_lock);
	return NULL;
}

/* A slot for a child about to start, or NULL (all taken, or no watchdog could start). */
static struct kid *kid_take(void)
{
	struct kid *k = NULL;
	pthread_mutex_lock(&kids_lock);
	if (!watchdog_running) {
		pthread_t t;
		pthread_attr_t a;
		pthread_attr_init(&a);
		pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
		watchdog_running = pthread_create(&t, &a, watchdog, NULL) == 0;
		pthread_attr_destroy(&a);
	}
	for (int i = 0; watchdog_running && i < MAX_CHILDREN && !k; i++)
		if (!kids[i].used)
			k = &kids[i];
	if (k)
		*k = (struct kid){ .used = true, .start_ns = mono_ns() };
	pthread_cond_signal(&kids_cond);
	pthread_mutex_unlock(&kids_lock);
	return k;
}

static void kid_give_back(struct kid *k)
{
	pthread_mutex_lock(&kids_lock);
	*k = (struct kid){ 0 };
	pthread_mutex_unlock(&kids_lock);
}

int da_cred_call_child(const struct dirahead_cred *c, dirahead_call_fn fn, void *arg,
		       struct dirahead_call_out *out)
{
	pthread_once(&own_once, own_read);
	if (own_err)
		return own_err;
	if (c->ngroups > DIRAHEAD_CRED_GROUPS)
		return -E2BIG;
	/* fs.suid_dumpable = 1 would leave a child that took a user's ids traceable by that user,
	 * and it shares our memory */
	if (suid_dumpable == 1)
		return -EPERM;
	*out = (struct dirahead_call_out){ .res = -ECHILD };
	/* A process of its own (not CLONE_THREAD: its ids are not ours, and a signal to it is not a
	 * signal to us), sharing memory and fds like vfork(): no copy of our address space per
	 * call, which a walk on a user's FUSE mount makes per directory.  This thread waits until
	 * it exits (or the watchdog kills it). */
	void *stack = child_stack();
	if (!stack)
		return -ENOMEM;
	struct kid *k = kid_take();
	if (!k)
		return -EAGAIN;
	/* Its change of ids makes our shared address space not dumpable, and it stays so: were it
	 * made dumpable again while another thread's child runs as a user, that user could trace
	 * the child, and through it read and write our memory. */
	prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
	struct child x = { .c = c, .fn = fn, .arg = arg, .out = out };
	pid_t pid = clone(child_main, (char *)stack + CHILD_STACK,
			  CLONE_VM | CLONE_VFORK | CLONE_FILES | CLONE_PARENT_SETTID | SIGCHLD, &x,
			  &k->tid);
	int r = pid < 0 ? -errno : 0, st = 0;
	kid_give_back(k); /* (exited, not reaped: the watchdog can no longer kill another) */
	if (pid > 0)
		while (waitpid(pid, &st, __WALL) < 0 && errno == EINTR)
			;
	if (r < 0)
		return r;
	if (!WIFEXITED(st)) {
		/* killed (by the watchdog, or by the user it acted as) before it could say: nothing
		 * it opened is trusted */
		dirahead_call_close(out);
		out->res = -ECHILD;
	}
	if (out->nfds > DIRAHEAD_CALL_FDS)
		out->nfds = DIRAHEAD_CALL_FDS;
	return 0;
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
	if (r < 0 || o.res == -ECHILD) {
		dirahead_call_close(&o);
		return 0; /* keep the thread's answer */
	}
	dirahead_call_close(out);
	*out = o;
	return 0;
}
