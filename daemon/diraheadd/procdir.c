/* SPDX-License-Identifier: LGPL-2.1-or-later OR BSD-2-Clause */
#include "procdir.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <linux/capability.h>

#define DIR_FLAGS (O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NONBLOCK)
#define PROC_SUPER_MAGIC 0x9fa0
#define PROC_PID_INIT_INO 0xEFFFFFFCU	/* the initial PID namespace's inode: fixed in the kernel */
/* open_held(): the directory fds of the program looked at, at most (a walker holds a few: its
 * ancestors, its virtual cwd), and its fds of any kind (a program holding a million fds costs
 * the opener thread no more than this) */
#define HELD_MAX_DIRS 16
/* What path_as() reports of a directory: its device (2), inode, size, magic, mount, parent. */
#define PROCDIR_VALS 7
_Static_assert(PROCDIR_VALS <= DIRAHEAD_CALL_VALS, "path_as reports more than a call returns");
#define HELD_MAX_FDS 256

/* The procfs BPF's PIDs are found in, and this process's PID there (set once, at start). */
static int proc_fd = AT_FDCWD;
static uint32_t self_tgid;

int procdir_setup(const char *proc, bool *host, char *err, size_t errlen)
{
	int fd = open(proc, O_PATH | O_DIRECTORY | O_CLOEXEC);
	struct statfs sf;
	char buf[32];
	ssize_t n;
	if (fd < 0 || fstatfs(fd, &sf) < 0 || sf.f_type != PROC_SUPER_MAGIC) {
		snprintf(err, errlen, "[daemon] proc: %s: %s", proc, fd < 0 ? strerror(errno) :
			 "not a proc filesystem");
		if (fd >= 0)
			close(fd);
		return -1;
	}
	/* "self" there is this process as that PID namespace numbers it; from a procfs of a
	 * namespace below ours it does not exist */
	n = readlinkat(fd, "self", buf, sizeof(buf) - 1);
	unsigned long v = 0;
	char *end = NULL;
	if (n > 0) {
		buf[n] = '\0';
		v = strtoul(buf, &end, 10);
	}
	if (n <= 0 || *end || !v || v > UINT32_MAX) {
		snprintf(err, errlen, "[daemon] proc: %s does not show this process (the procfs of "
			 "another PID namespace)", proc);
		close(fd);
		return -1;
	}
	/* In the initial namespace ourselves, any procfs that shows us is its.  Otherwise ask its
	 * PID 1 (which needs ptrace access: unknown counts as yes, the warning is only a hint). */
	struct stat st;
	*host = (fstatat(fd, "self/ns/pid", &st, 0) == 0 && st.st_ino == PROC_PID_INIT_INO) ||
		fstatat(fd, "1/ns/pid", &st, 0) < 0 || st.st_ino == PROC_PID_INIT_INO;
	if (proc_fd >= 0)
		close(proc_fd);
	proc_fd = fd;
	self_tgid = (uint32_t)v;
	return 0;
}

uint32_t procdir_self_tgid(void)
{
	return self_tgid ? self_tgid : (uint32_t)getpid();
}

int procdir_open_pid(uint32_t pid, const char *what, int flags)
{
	char p[64];
	snprintf(p, sizeof(p), "%s%u/%s", proc_fd == AT_FDCWD ? "/proc/" : "", pid, what);
	return openat(proc_fd, p, flags);
}

bool procdir_alive(uint32_t pid)
{
	char buf[256];
	int fd = procdir_open_pid(pid, "stat", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return false;
	buf[n] = '\0';
	/* "pid (comm) S ...": the state follows the last ')' (a comm may hold one) */
	const char *st = strrchr(buf, ')');
	return st && st[1] == ' ' && st[2] != 'Z' && st[2] != 'X';
}

static int sys_openat2(int dfd, const char *path, struct open_how *how)
{
	return (int)syscall(SYS_openat2, dfd, path, how, sizeof(*how));
}

#ifndef STATX_MNT_ID_UNIQUE
#define STATX_MNT_ID_UNIQUE 0x4000U	/* Linux 6.8 */
#endif

/*
 * The device of the superblock of the mount with this unique id (statmount(2), Linux 6.8) into
 * *maj, *min, where the kernel tells it and its magic is `magic`; else they stay as they are.
 * BPF and the sentinel name a filesystem by its superblock's s_dev, statx by what the filesystem
 * reports, on btrfs a per-subvolume anonymous device: a directory found by path was judged under
 * another number than the one the sentinel asks about (a warm btrfs `ls -l` judged fast there
 * armed the hooks run after run).  Debian 12's headers predate the call: its ABI (uapi
 * linux/mount.h) is spelt out here.  A mount in another namespace, or an older kernel: as is.
 */
#define DA_NR_STATMOUNT 457	/* the same on every architecture but alpha and mips */
#define DA_STATMOUNT_SB_BASIC 0x1U
struct da_mnt_id_req {
	uint32_t size, spare;
	uint64_t mnt_id, param;
};
struct da_statmount_head {
	uint32_t size, spare;
	uint64_t mask;
	uint32_t sb_dev_major, sb_dev_minor;
	uint64_t sb_magic;
};
static void sb_dev(uint64_t mnt_id, uint64_t magic, uint32_t *maj, uint32_t *min)
{
	struct da_mnt_id_req req = { .size = sizeof(req), .mnt_id = mnt_id,
				     .param = DA_STATMOUNT_SB_BASIC };
	uint64_t buf[128] = { 0 }; /* the kernel's struct statmount is 512 bytes */
	struct da_statmount_head *sm = (struct da_statmount_head *)buf;
	if (syscall(DA_NR_STATMOUNT, &req, buf, sizeof(buf), 0) < 0 ||
	    !(sm->mask & DA_STATMOUNT_SB_BASIC) || sm->sb_magic != magic)
		return;
	*maj = sm->sb_dev_major;
	*min = sm->sb_dev_minor;
}

/* Identity by the mount and inode BPF saw.  Not by device number: BPF sees the superblock's
 * s_dev, while stat reports what the filesystem says, and on btrfs that is a per-subvolume
 * anonymous device.  The mount id is what BPF read from the file's vfsmount (unique where the
 * kernel has mnt_id_unique, which statx then also returns); the device is the fallback where
 * statx knows no mount id. */
int procdir_same(int dfd, const char *name, const struct dirahead_event *ev, uint64_t ino)
{
	struct statx stx;
	if (statx(dfd, name, AT_SYMLINK_NOFOLLOW | (*name ? 0 : AT_EMPTY_PATH),
		  STATX_TYPE | STATX_INO | STATX_MNT_ID | STATX_MNT_ID_UNIQUE, &stx) < 0)
		return -errno;
	if (!S_ISDIR(stx.stx_mode) || stx.stx_ino != ino)
		return -ESTALE;
	if (ev->mnt_id && (stx.stx_mask & (STATX_MNT_ID | STATX_MNT_ID_UNIQUE)))
		return stx.stx_mnt_id == ev->mnt_id ? 0 : -ESTALE;
	return stx.stx_dev_major == ev->dev_major && stx.stx_dev_minor == ev->dev_minor ? 0 : -ESTALE;
}

/* What the event itself says of the program's credentials (its first DIRAHEAD_EV_GROUPS
 * groups). */
static void cred_of_event(const struct dirahead_event *ev, struct dirahead_cred *c)
{
	uint32_t n = ev->cred_ngroups < DIRAHEAD_EV_GROUPS ? ev->cred_ngroups : DIRAHEAD_EV_GROUPS;
	*c = (struct dirahead_cred){
		.uid = ev->cred_uid, .euid = ev->cred_euid, .suid = ev->cred_suid,
		.fsuid = ev->cred_fsuid, .gid = ev->cred_gid, .egid = ev->cred_egid,
		.sgid = ev->cred_sgid, .fsgid = ev->cred_fsgid, .ngroups = n,
	};
	memcpy(c->groups, ev->cred_groups, n * sizeof(c->groups[0]));
	/* Of its capabilities (BPF reports only those held in the initial user namespace), what
	 * bears on reading directories and stat'ing their entries (a backup agent running as
	 * root): the daemon's own CAP_DAC_READ_SEARCH stands for both. */
	if (ev->cred_caps & ((1ull << CAP_DAC_READ_SEARCH) | (1ull << CAP_DAC_OVERRIDE)))
		c->caps = 1ull << CAP_DAC_READ_SEARCH;
}

/* The thread's whole group list from its status in our procfs (kernel ids: the initial user
 * namespace's view), into c; -ESTALE if it is not the list the event's prefix and count say. */
static int groups_from_proc(const struct dirahead_event *ev, struct dirahead_cred *c)
{
	char p[64], *line = NULL;
	size_t cap = 0;
	int r = -ESTALE;
	snprintf(p, sizeof(p), "task/%u/status", ev->tid ? ev->tid : ev->tgid);
	int sfd = procdir_open_pid(ev->tgid, p, O_RDONLY | O_CLOEXEC);
	FILE *f = sfd < 0 ? NULL : fdopen(sfd, "r");
	if (!f) {
		if (sfd >= 0)
			close(sfd);
		return -ESRCH;
	}
	while (getline(&line, &cap, f) > 0) {
		if (strncmp(line, "Groups:", 7))
			continue;
		uint32_t n = 0;
		char *q = line + 7, *end;
		for (;;) {
			unsigned long g = strtoul(q, &end, 10);
			if (end == q)
				break;
			if (n == DIRAHEAD_CRED_GROUPS) {
				n++;
				break;
			}
			c->groups[n++] = (uint32_t)g;
			q = end;
		}
		if (n > DIRAHEAD_CRED_GROUPS)
			r = -E2BIG;
		else if (n == ev->cred_ngroups &&
			 !memcmp(c->groups, ev->cred_groups, DIRAHEAD_EV_GROUPS * sizeof(uint32_t))) {
			c->ngroups = n;
			r = 0;
		}
		break;
	}
	free(line);
	fclose(f);
	return r;
}

int procdir_cred(const struct dirahead_event *ev, struct dirahead_cred *c)
{
	cred_of_event(ev, c);
	if (ev->cred_ngroups <= DIRAHEAD_EV_GROUPS)
		return 0;
	if (ev->cred_ngroups > DIRAHEAD_CRED_GROUPS)
		return -E2BIG;
	/* More groups than an event carries: all of them, or none served (a group dropped can be
	 * the one a directory's ACL denies, and the daemon would then read what the program may
	 * not). */
	return groups_from_proc(ev, c);
}

bool procdir_cred_same(const struct dirahead_cred *c, const struct dirahead_event *ev)
{
	struct dirahead_cred e;
	cred_of_event(ev, &e);
	return c->uid == e.uid && c->euid == e.euid && c->suid == e.suid && c->fsuid == e.fsuid &&
	       c->gid == e.gid && c->egid == e.egid && c->sgid == e.sgid && c->fsgid == e.fsgid &&
	       c->caps == e.caps && c->ngroups == ev->cred_ngroups &&
	       !memcmp(c->groups, e.groups, e.ngroups * sizeof(e.groups[0]));
}

/* pfd (an O_PATH fd of a directory checked already) opened for reading, called acting as the
 * program: its open of the directory checked read permission, so does this one (by the fd's
 * magic link: no lookup in it, which would need search permission too). */
static int reopen_dir(int pfd)
{
	char p[40];
	snprintf(p, sizeof(p), "/proc/self/fd/%d", pfd);
	int fd = open(p, DIR_FLAGS);
	return fd < 0 ? -errno : fd;
}

/* Checked to be ev's directory and opened for reading as the program (called acting as it: a
 * FUSE mount without allow_other refuses even a stat to anyone else), pfd being an O_PATH fd of
 * it. */
static int reopen(int pfd, const struct dirahead_event *ev)
{
	int r = procdir_same(pfd, "", ev, ev->ino);
	return r < 0 ? r : reopen_dir(pfd);
}

/*
 * Whether pfd's mount is an overlayfs, by the thread's mountinfo (task: its /proc directory):
 * there, with layers on several filesystems, a file reports its layer's device and a directory
 * the overlay's.  Read as the daemon; no request to the filesystem (fstatfs would be one on
 * FUSE).  Asked only when a directory's device is not its entry's, which is rare.
 */
static bool on_overlay(int task, int pfd)
{
	struct statx stx;
	char *line = NULL;
	size_t cap = 0;
	bool overlay = false;
	unsigned long long id;

	if (statx(pfd, "", AT_EMPTY_PATH | AT_STATX_DONT_SYNC, STATX_MNT_ID, &stx) < 0 ||
	    !(stx.stx_mask & STATX_MNT_ID))
		return false;
	int fd = openat(task, "mountinfo", O_RDONLY | O_CLOEXEC);
	FILE *f = fd < 0 ? NULL : fdopen(fd, "r");
	if (!f) {
		if (fd >= 0)
			close(fd);
		return false;
	}
	while (getline(&line, &cap, f) > 0) {
		const char *sep = strstr(line, " - ");
		if (sscanf(line, "%llu", &id) == 1 && id == stx.stx_mnt_id && sep) {
			overlay = !strncmp(sep + 3, "overlay ", 8);
			break;
		}
	}
	free(line);
	fclose(f);
	return overlay;
}

/*
 * -ESTALE if the directory pfd is on another filesystem than the file the program's stat
 * returned (ev->name_*, DIRAHEAD_EVF_NAME_ID), told by its cached device without a request to
 * it (but on an overlayfs, where they may differ), else 0.  As the daemon.
 */
static int same_dev(int task, int pfd, const struct dirahead_event *ev)
{
	struct statx stx;

	if (!(ev->flags & DIRAHEAD_EVF_NAME_ID))
		return -ESTALE;
	/* (refused: a FUSE mount without allow_other answers no one but its owner's ids) */
	if (statx(pfd, "", AT_EMPTY_PATH | AT_STATX_DONT_SYNC, STATX_INO, &stx) < 0)
		return errno == EACCES ? -EACCES : -ESTALE;
	if (stx.stx_dev_major == ev->name_dev_major && stx.stx_dev_minor == ev->name_dev_minor)
		return 0;
	return on_overlay(task, pfd) ? 0 : -ESTALE;
}

/*
 * 0 if the directory pfd holds, under ev->name, the file that the program's own stat of that
 * name returned (DIRAHEAD_EVF_NAME_ID: its device as user space sees it, and inode), -ESTALE
 * otherwise or if that cannot be told.  Called acting as the program, after same_dev().  The
 * name is looked up once, as the program's stat did: not following a symbolic link (lstat), or
 * following it only where it stays in the directory and on its mount (a link leading elsewhere
 * cannot be checked without resolving outside the directory: refused).
 */
static int same_name(int pfd, const struct dirahead_event *ev)
{
	char name[DIRAHEAD_NAME_LEN];
	struct statx stx;
	bool follow = ev->flags & DIRAHEAD_EVF_NAME_FOLLOW;
	struct open_how how = { .flags = O_PATH | O_CLOEXEC | (follow ? 0 : O_NOFOLLOW),
				.resolve = RESOLVE_BENEATH | RESOLVE_NO_XDEV | RESOLVE_NO_MAGICLINKS };

	memcpy(name, ev->name, sizeof(name));
	name[sizeof(name) - 1] = '\0';
	if (!(ev->flags & DIRAHEAD_EVF_NAME_ID) || ev->name_len >= sizeof(name) || !name[0] ||
	    strchr(name, '/') || !strcmp(name, ".") || !strcmp(name, ".."))
		return -ESTALE;
	int fd = sys_openat2(pfd, name, &how);
	if (fd < 0)
		return errno == EACCES ? -EACCES : -ESTALE;
	int r = statx(fd, "", AT_EMPTY_PATH | AT_STATX_DONT_SYNC, STATX_INO, &stx);
	int e = errno;
	close(fd);
	if (r < 0 && e == EACCES)
		return -EACCES;
	if (r < 0 || stx.stx_ino != ev->name_ino || stx.stx_dev_major != ev->name_dev_major ||
	    stx.stx_dev_minor != ev->name_dev_minor)
		return -ESTALE;
	return 0;
}

/* A /proc link of the thread (its "root" or "cwd"), as the daemon sees it: a path from the
 * daemon's root (or from the top of the program's mount namespace, where the daemon's root does
 * not reach), NUL-terminated; -ENOENT for anything else (a deleted directory). */
static int task_link(int task, const char *what, char *buf, size_t len)
{
	static const char deleted[] = " (deleted)";
	ssize_t n = readlinkat(task, what, buf, len - 1);
	if (n < 0)
		return -errno;
	buf[n] = '\0';
	if ((size_t)n >= len - 1 || buf[0] != '/' ||
	    ((size_t)n >= sizeof(deleted) - 1 && !strcmp(buf + n - (sizeof(deleted) - 1), deleted)))
		return -ENOENT;
	return 0;
}

/*
 * `path` of the process as a path below its root ("." for the root): an absolute one as it is;
 * a relative one behind where its cwd is below its root, read from the two links.  Both are
 * then resolved from the root with RESOLVE_IN_ROOT, which is how the kernel treats the process's
 * own lookups: ".." never goes above the root, absolute symbolic links start at it.  The links'
 * paths are only a way to name the cwd under the root: what is found is checked afterwards
 * (the directory BPF saw, or the file the program's stat returned), and whatever they say,
 * resolution stays inside the root.
 *
 * A cwd outside the root (a chroot without chdir, which takes CAP_SYS_CHROOT, in some user
 * namespace) is refused with -EXDEV: the kernel would resolve such a path from the cwd with no
 * root above it, so the program can reach the whole tree; the daemon does not follow it out of
 * the confinement it was set up in (the scan goes without prefetch, counted as outside_root).
 */
static int root_path(int task, const char *path, char *out, size_t len)
{
	char root[PATH_MAX], cwd[PATH_MAX];
	const char *rel;
	int r;

	if (path[0] == '/') {
		while (*path == '/')
			path++;
		r = snprintf(out, len, "%s", *path ? path : ".");
		return r < 0 || (size_t)r >= len ? -ENAMETOOLONG : 0;
	}
	if ((r = task_link(task, "root", root, sizeof(root))) < 0 ||
	    (r = task_link(task, "cwd", cwd, sizeof(cwd))) < 0)
		return r;
	size_t rl = strcmp(root, "/") ? strlen(root) : 0;
	if (strncmp(cwd, root, rl) || (cwd[rl] != '/' && cwd[rl] != '\0'))
		return -EXDEV;
	for (rel = cwd + rl; *rel == '/'; rel++)
		;
	r = *rel ? snprintf(out, len, "%s/%s", rel, path) : snprintf(out, len, "%s", path);
	return r < 0 || (size_t)r >= len ? -ENAMETOOLONG : 0;
}

/* What one resolution as the program needs (dirahead_cred_call(): in this thread, or in a child
 * with the program's ids in full). */
struct path_as {
	int task;                          /* the thread's /proc directory */
	int root;                          /* O_PATH fd of its root */
	const char *rel;                   /* the path below the root (root_path()) */
	const struct dirahead_event *ev;
	bool by_name;                      /* checked by the file the program's stat returned */
	bool want_id;                      /* report what it is in vals (procdir_resolve) */
};

/*
 * An O_PATH fd of a->rel resolved as the program: confined to its root, no magic links.
 * RESOLVE_IN_ROOT resolution fails with EAGAIN when a rename raced with a ".." in it: tried
 * again, a few times.  Then checked (the directory BPF saw, or the directory holding the file
 * the program's stat returned) before anything is opened for reading, and opened, in fds[0].
 */
static void path_as(void *arg, struct dirahead_call_out *out)
{
	const struct path_as *a = arg;
	struct open_how how = { .flags = O_PATH | O_DIRECTORY | O_CLOEXEC,
				.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS };
	int pfd, r, tries = 0;

	do
		pfd = sys_openat2(a->root, a->rel, &how);
	while (pfd < 0 && errno == EAGAIN && ++tries < 3);
	if (pfd < 0) {
		out->res = -errno;
		return;
	}
	r = a->by_name ? same_dev(a->task, pfd, a->ev) : 0;
	if (r == 0)
		r = a->by_name ? same_name(pfd, a->ev) : reopen(pfd, a->ev);
	if (a->by_name && r == 0)
		r = reopen_dir(pfd);
	close(pfd);
	out->res = r < 0 ? r : 0;
	if (r < 0)
		return;
	out->fds[out->nfds++] = r;
	if (!a->want_id)
		return;
	/* what it is, asked as the program too (a FUSE mount without allow_other answers no one
	 * else, not even a stat of an open fd) */
	struct statx stx;
	struct statfs sf;
	if (statx(r, "", AT_EMPTY_PATH, STATX_TYPE | STATX_INO | STATX_SIZE | STATX_MNT_ID |
		  STATX_MNT_ID_UNIQUE, &stx) < 0 || fstatfs(r, &sf) < 0) {
		out->res = -errno;
		return;
	}
	uint32_t maj = stx.stx_dev_major, min = stx.stx_dev_minor;
	if (stx.stx_mask & STATX_MNT_ID_UNIQUE)
		sb_dev(stx.stx_mnt_id, (uint64_t)sf.f_type, &maj, &min);
	out->vals[0] = maj;
	out->vals[1] = min;
	out->vals[2] = stx.stx_ino;
	out->vals[3] = stx.stx_size;
	out->vals[4] = (uint64_t)sf.f_type;
	out->vals[5] = stx.stx_mask & (STATX_MNT_ID | STATX_MNT_ID_UNIQUE) ? stx.stx_mnt_id : 0;
	/* its parent on the same filesystem, for a walk that follows the program's runs (the
	 * attributes the kernel has: the inode number never changes, no round trip for it) */
	struct statx up;
	out->vals[6] = statx(r, "..", AT_SYMLINK_NOFOLLOW | AT_STATX_DONT_SYNC, STATX_INO, &up) == 0 &&
			       up.stx_dev_major == stx.stx_dev_major &&
			       up.stx_dev_minor == stx.stx_dev_minor && up.stx_ino != stx.stx_ino
		       ? up.stx_ino : 0;
}

/* fn's fd as c (vals copied when asked), or -errno.  The calling thread has the daemon's own
 * credentials again on return. */
static int call_for_fd(const struct dirahead_cred *c, dirahead_call_fn fn, void *arg,
		       uint64_t *vals)
{
	struct dirahead_call_out out;
	int r = dirahead_cred_call(c, fn, arg, &out);
	dirahead_cred_apply(NULL);
	if (r < 0 || out.res < 0 || out.nfds != 1) {
		dirahead_call_close(&out);
		return r < 0 ? r : out.res < 0 ? out.res : -EPROTO;
	}
	if (vals)
		memcpy(vals, out.vals, PROCDIR_VALS * sizeof(*vals));
	return out.fds[0];
}

/*
 * Resolve the process's `path` as the kernel resolves it for the process (root_path(), then
 * from its root), then check what was found, as the program: the directory BPF saw (ev with
 * dev and inode) or, for a run by path (by_name), the directory holding the file the program's
 * stat returned (same_name()); and open it for reading.  So a crafted or swapped path never
 * makes the daemon open, list or prefetch anything outside what the program itself sees, or
 * anything else than what the program stat'ed.  -EXDEV: a cwd outside the root; -ESTALE:
 * something else was found.  vals (by procdir_resolve): what it is.
 */
static int open_path(int task, const char *path, const struct dirahead_event *ev, bool by_name,
		     const struct dirahead_cred *c, uint64_t *vals)
{
	char rel[PATH_MAX + DIRAHEAD_PATH_LEN];
	int r;

	if ((r = root_path(task, path, rel, sizeof(rel))) < 0)
		return r;
	struct path_as a = { .task = task, .rel = rel, .ev = ev, .by_name = by_name,
			     .want_id = vals != NULL };
	/* the root link followed as the daemon (another process's links need CAP_SYS_PTRACE) */
	a.root = openat(task, "root", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (a.root < 0)
		return -errno;
	r = call_for_fd(c, path_as, &a, vals);
	close(a.root);
	return r;
}

/* Reopens a checked O_PATH fd as the program, in fds[0]. */
static void link_as(void *arg, struct dirahead_call_out *out)
{
	const struct path_as *a = arg;
	int fd = reopen(a->root, a->ev);
	out->res = fd < 0 ? fd : 0;
	if (fd >= 0)
		out->fds[out->nfds++] = fd;
}

/* The fd or cwd link of the process, followed as the daemon (another process's links need
 * CAP_SYS_PTRACE), then checked and reopened as the program. */
static int open_link(int task, const char *what, const struct dirahead_event *ev,
		     const struct dirahead_cred *c)
{
	struct path_as a = { .task = task, .ev = ev };
	a.root = openat(task, what, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (a.root < 0)
		return -errno;
	int r = call_for_fd(c, link_as, &a, NULL);
	close(a.root);
	return r;
}

/*
 * ev's directory held open by the program under another fd than the one it named: fts closes a
 * directory's fd once it has read it, and GNU find keeps working in it through another (its
 * virtual cwd, a dup), so by the time a walk opens its top the named fd is gone or another
 * directory's.  Each fd that is a directory is checked and reopened as the program (open_link):
 * only what the program holds open, so only what it could open.
 */
static int open_held(int task, const struct dirahead_event *ev, const struct dirahead_cred *c)
{
	int dfd = openat(task, "fd", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return -errno;
	DIR *d = fdopendir(dfd);
	if (!d) {
		close(dfd);
		return -ENOENT;
	}
	int r = -ENOENT;
	unsigned dirs = 0, fds = 0;
	for (struct dirent *de; dirs < HELD_MAX_DIRS && fds < HELD_MAX_FDS && (de = readdir(d));) {
		char p[32], *end;
		long n = strtol(de->d_name, &end, 10);
		if (*end || end == de->d_name || n == ev->fd)
			continue; /* ".", "..", or the fd tried already */
		fds++;
		snprintf(p, sizeof(p), "fd/%ld", n);
		/* as the daemon, no request to the filesystem: not a directory, next */
		int pfd = openat(task, p, O_PATH | O_DIRECTORY | O_CLOEXEC);
		if (pfd < 0)
			continue;
		close(pfd);
		dirs++;
		r = open_link(task, p, ev, c);
		if (r >= 0)
			break;
	}
	closedir(d);
	return r == -ENOTDIR || r == -ESTALE ? -ENOENT : r;
}

/*
 * The /proc directory of the thread that made the event's call: a thread may have a cwd
 * (unshare(CLONE_FS)) and an fd table (CLONE_FILES off) of its own, and /proc/PID shows the
 * main thread's.  The process's when that thread is gone.  -errno if neither is there.
 */
static int open_task(const struct dirahead_event *ev)
{
	char p[64];
	int fd = -1;

	if (ev->tid && ev->tid != ev->tgid) {
		snprintf(p, sizeof(p), "%s%u/task/%u", proc_fd == AT_FDCWD ? "/proc/" : "", ev->tgid,
			 ev->tid);
		fd = openat(proc_fd, p, O_PATH | O_DIRECTORY | O_CLOEXEC);
	}
	if (fd < 0) {
		snprintf(p, sizeof(p), "%s%u", proc_fd == AT_FDCWD ? "/proc/" : "", ev->tgid);
		fd = openat(proc_fd, p, O_PATH | O_DIRECTORY | O_CLOEXEC);
	}
	return fd < 0 ? -errno : fd;
}

int procdir_open(const struct dirahead_event *ev)
{
	char p[32];
	int r = -ENOENT, fd, task = open_task(ev);
	struct dirahead_cred c;

	if (task < 0)
		return task == -ENOTDIR ? -ENOENT : task;
	if ((fd = procdir_cred(ev, &c)) < 0) {
		close(task);
		return fd;
	}
	if (ev->ref & DIRAHEAD_REF_FD) {
		snprintf(p, sizeof(p), "fd/%d", ev->fd);
		r = open_link(task, p, ev, &c);
		if (r >= 0)
			goto out;
		if ((fd = open_held(task, ev, &c)) >= 0) {
			r = fd;
			goto out;
		}
	}
	if (ev->ref & DIRAHEAD_REF_CWD) {
		fd = open_link(task, "cwd", ev, &c);
		if (fd >= 0) {
			r = fd;
			goto out;
		}
		if (r == -ENOENT)
			r = fd;
	}
	if ((ev->ref & DIRAHEAD_REF_PATH) && ev->path[0]) {
		char path[DIRAHEAD_PATH_LEN];
		memcpy(path, ev->path, sizeof(path));
		path[sizeof(path) - 1] = '\0';
		fd = open_path(task, path, ev, false, &c, NULL);
		if (fd >= 0) {
			r = fd;
			goto out;
		}
		if (r == -ENOENT)
			r = fd;
	}
	r = r == -ENOTDIR ? -ENOENT : r;
out:
	close(task);
	return r;
}

int procdir_open_held(const struct dirahead_event *ev, uint64_t ino)
{
	struct dirahead_event e = *ev;
	struct dirahead_cred c;
	int r, task = open_task(ev);
	if (task < 0)
		return task == -ENOTDIR ? -ENOENT : task;
	e.ino = ino;
	e.fd = -1;
	r = procdir_cred(ev, &c);
	if (r == 0)
		r = open_held(task, &e, &c);
	close(task);
	return r;
}

int procdir_resolve(const struct dirahead_event *ev, struct procdir_id *id)
{
	char path[DIRAHEAD_PATH_LEN];
	struct dirahead_cred c;
	uint64_t v[PROCDIR_VALS];
	int task, fd;

	if (!(ev->ref & DIRAHEAD_REF_PATH) || !ev->path[0])
		return -ENOENT;
	task = open_task(ev);
	if (task < 0)
		return task;
	memcpy(path, ev->path, sizeof(path));
	path[sizeof(path) - 1] = '\0';
	fd = procdir_cred(ev, &c);
	if (fd == 0)
		fd = open_path(task, path, ev, true, &c, v);
	close(task);
	if (fd < 0)
		return fd == -ENOTDIR ? -ENOENT : fd;
	*id = (struct procdir_id){ .dev_major = (uint32_t)v[0], .dev_minor = (uint32_t)v[1],
				   .ino = v[2], .size = v[3], .magic = v[4], .mnt_id = v[5],
				   .parent_ino = v[6] };
	return fd;
}
