/* SPDX-License-Identifier: LGPL-2.1-or-later OR BSD-2-Clause */
#include "procdir.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#define DIR_FLAGS (O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NONBLOCK)

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

/* Only the directory BPF saw counts: paths and fds can be renamed or reused under us. */
static int verify(int fd, const struct dirahead_event *ev)
{
	if (fd < 0)
		return -errno;
	int r = procdir_same(fd, "", ev, ev->ino);
	if (r < 0) {
		close(fd);
		return r;
	}
	return fd;
}

/* Resolve `path` as the process would: relative to its cwd, or absolute within its root.  Path
 * resolution is confined to the process's root (RESOLVE_IN_ROOT) and refuses magic links, so a
 * crafted path cannot make the daemon open something outside what the process itself sees. */
static int open_path(pid_t pid, const char *path)
{
	char base[64];
	int bfd, fd;
	struct open_how how = { .flags = DIR_FLAGS, .resolve = RESOLVE_NO_MAGICLINKS };

	if (path[0] == '/') {
		snprintf(base, sizeof(base), "/proc/%d/root", pid);
		how.resolve |= RESOLVE_IN_ROOT;
		while (*path == '/')
			path++;
		if (!*path)
			path = ".";
	} else {
		snprintf(base, sizeof(base), "/proc/%d/cwd", pid);
	}
	bfd = open(base, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (bfd < 0)
		return -1;
	fd = sys_openat2(bfd, path, &how);
	int e = errno;
	close(bfd);
	errno = e;
	return fd;
}

int procdir_open(const struct dirahead_event *ev)
{
	char p[64];
	int r = -ENOENT, fd;

	if (ev->ref & DIRAHEAD_REF_FD) {
		snprintf(p, sizeof(p), "/proc/%u/fd/%d", ev->tgid, ev->fd);
		r = verify(open(p, DIR_FLAGS), ev);
		if (r >= 0)
			return r;
	}
	if (ev->ref & DIRAHEAD_REF_CWD) {
		snprintf(p, sizeof(p), "/proc/%u/cwd", ev->tgid);
		fd = verify(open(p, DIR_FLAGS), ev);
		if (fd >= 0)
			return fd;
		if (r == -ENOENT)
			r = fd;
	}
	if ((ev->ref & DIRAHEAD_REF_PATH) && ev->path[0]) {
		char path[DIRAHEAD_PATH_LEN];
		memcpy(path, ev->path, sizeof(path));
		path[sizeof(path) - 1] = '\0';
		fd = verify(open_path((pid_t)ev->tgid, path), ev);
		if (fd >= 0)
			return fd;
		if (r == -ENOENT)
			r = fd;
	}
	return r == -ENOTDIR ? -ENOENT : r;
}
