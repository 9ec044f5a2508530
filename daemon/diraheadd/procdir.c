/* SPDX-License-Identifier: LGPL-2.1-or-later OR BSD-2-Clause */
#include "procdir.h"

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

static int sys_openat2(int dfd, const char *path, struct open_how *how)
{
	return (int)syscall(SYS_openat2, dfd, path, how, sizeof(*how));
}

#ifndef STATX_MNT_ID_UNIQUE
#define STATX_MNT_ID_UNIQUE 0x4000U	/* Linux 6.8 */
#endif

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

void procdir_cred(const struct dirahead_event *ev, struct dirahead_cred *c)
{
	uint32_t n = ev->cred_ngroups < DIRAHEAD_EV_GROUPS ? ev->cred_ngroups : DIRAHEAD_EV_GROUPS;
	*c = (struct dirahead_cred){
		.uid = ev->cred_uid, .euid = ev->cred_euid, .suid = ev->cred_suid,
		.fsuid = ev->cred_fsuid, .gid = ev->cred_gid, .egid = ev->cred_egid,
		.sgid = ev->cred_sgid, .fsgid = ev->cred_fsgid, .ngroups = n,
	};
	/* More groups than an event carries: the first ones only, which can only refuse the daemon
	 * what the program could do, never the other way round. */
	memcpy(c->groups, ev->cred_groups, n * sizeof(c->groups[0]));
	/* Of its capabilities, what bears on reading directories and stat'ing their entries (a
	 * backup agent running as root): the daemon's own CAP_DAC_READ_SEARCH stands for both. */
	if (ev->cred_caps & ((1ull << CAP_DAC_READ_SEARCH) | (1ull << CAP_DAC_OVERRIDE)))
		c->caps = 1ull << CAP_DAC_READ_SEARCH;
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

	if (!(ev->flags & DIRAHEAD_EVF_NAME_ID) ||
	    statx(pfd, "", AT_EMPTY_PATH | AT_STATX_DONT_SYNC, STATX_INO, &stx) < 0)
		return -ESTALE;
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
		return -ESTALE;
	int r = statx(fd, "", AT_EMPTY_PATH | AT_STATX_DONT_SYNC, STATX_INO, &stx);
	close(fd);
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

/* An O_PATH fd of `path` (below the root, root_path()) resolved as the program: with its
 * credentials, confined to its root, no magic links.  Nothing is opened for reading before it
 * is checked.  RESOLVE_IN_ROOT resolution fails with EAGAIN when a rename raced with a ".."
 * in it: tried again, a few times. */
static int open_in_root(int task, const char *path, const struct dirahead_cred *c)
{
	struct open_how how = { .flags = O_PATH | O_DIRECTORY | O_CLOEXEC,
				.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS };
	int root = openat(task, "root", O_PATH | O_DIRECTORY | O_CLOEXEC);
	int fd = -1, r, tries = 0;

	if (root < 0)
		return -errno;
	if ((r = dirahead_cred_apply(c)) == 0) {
		do
			fd = sys_openat2(root, path, &how);
		while (fd < 0 && errno == EAGAIN && ++tries < 3);
		r = fd < 0 ? -errno : fd;
	}
	dirahead_cred_apply(NULL);
	close(root);
	return r;
}

/*
 * Resolve the process's `path` as the kernel resolves it for the process (root_path(),
 * open_in_root()), then check what was found, as the program: the directory BPF saw (ev with
 * dev and inode) or, for a run by path (by_name), the directory holding the file the program's
 * stat returned (same_name()); and open it for reading.  So a crafted or swapped path never
 * makes the daemon open, list or prefetch anything outside what the program itself sees, or
 * anything else than what the program stat'ed.  -EXDEV: a cwd outside the root; -ESTALE:
 * something else was found.
 */
static int open_path(int task, const char *path, const struct dirahead_event *ev, bool by_name,
		     const struct dirahead_cred *c)
{
	char rel[PATH_MAX + DIRAHEAD_PATH_LEN];
	int pfd, r;

	if ((r = root_path(task, path, rel, sizeof(rel))) < 0)
		return r;
	if ((pfd = open_in_root(task, rel, c)) < 0)
		return pfd;
	if (by_name && (r = same_dev(task, pfd, ev)) < 0) {
		close(pfd);
		return r;
	}
	if ((r = dirahead_cred_apply(c)) == 0)
		r = by_name ? same_name(pfd, ev) : reopen(pfd, ev);
	if (by_name && r == 0)
		r = reopen_dir(pfd);
	dirahead_cred_apply(NULL);
	close(pfd);
	return r;
}

/* The fd or cwd link of the process, followed as the daemon (another process's links need
 * CAP_SYS_PTRACE), then checked and reopened as the program. */
static int open_link(int task, const char *what, const struct dirahead_event *ev,
		     const struct dirahead_cred *c)
{
	int pfd = openat(task, what, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (pfd < 0)
		return -errno;
	int r = dirahead_cred_apply(c);
	if (r == 0)
		r = reopen(pfd, ev);
	dirahead_cred_apply(NULL);
	close(pfd);
	return r;
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
	procdir_cred(ev, &c);

	if (task < 0)
		return task == -ENOTDIR ? -ENOENT : task;
	if (ev->ref & DIRAHEAD_REF_FD) {
		snprintf(p, sizeof(p), "fd/%d", ev->fd);
		r = open_link(task, p, ev, &c);
		if (r >= 0)
			goto out;
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
		fd = open_path(task, path, ev, false, &c);
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

int procdir_resolve(const struct dirahead_event *ev, struct procdir_id *id)
{
	char path[DIRAHEAD_PATH_LEN];
	struct statx stx;
	struct statfs sf;
	struct dirahead_cred c;
	int task, fd;

	if (!(ev->ref & DIRAHEAD_REF_PATH) || !ev->path[0])
		return -ENOENT;
	task = open_task(ev);
	if (task < 0)
		return task;
	memcpy(path, ev->path, sizeof(path));
	path[sizeof(path) - 1] = '\0';
	procdir_cred(ev, &c);
	fd = open_path(task, path, ev, true, &c);
	close(task);
	if (fd < 0)
		return fd == -ENOTDIR ? -ENOENT : fd;
	int e;
	if (statx(fd, "", AT_EMPTY_PATH, STATX_TYPE | STATX_INO | STATX_SIZE | STATX_MNT_ID |
		  STATX_MNT_ID_UNIQUE, &stx) < 0 || fstatfs(fd, &sf) < 0) {
		e = errno;
		close(fd);
		return -e;
	}
	*id = (struct procdir_id){
		.dev_major = stx.stx_dev_major, .dev_minor = stx.stx_dev_minor, .ino = stx.stx_ino,
		.size = stx.stx_size, .magic = (uint64_t)sf.f_type,
		.mnt_id = stx.stx_mask & (STATX_MNT_ID | STATX_MNT_ID_UNIQUE) ? stx.stx_mnt_id : 0,
	};
	return fd;
}
