// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * What the kernel's objects are, read from BPF: whether the task runs a compat syscall, the file
 * behind an fd, an inode's and a mount's identity, what the detector keeps of a directory, and
 * the pseudo filesystems never worth prefetching.  Shared by the detector and the sentinel (both
 * one compilation unit each: these are inlined where they are used).
 */
#ifndef DIRAHEAD_KERNEL_ID_H
#define DIRAHEAD_KERNEL_ID_H

#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "detector_sys.h"
#include "dirahead_event.h"

struct dirinfo {
	__u64 ino;
	__u64 size;
	__u64 magic;
	__u64 mnt_id;
	__u64 parent_ino;
	__u32 dev;
	__u32 mode;
};

/* An ia32 syscall numbers differently: ignore it rather than misread it. */
static __always_inline bool compat_syscall(struct task_struct *task)
{
#ifdef DA_TS_COMPAT
	if (bpf_core_field_exists(task->thread_info.status))
		return task->thread_info.status & DA_TS_COMPAT;
#endif
	return false;
}

static __always_inline struct file *fd_file(struct task_struct *task, int fd)
{
	struct files_struct *files;
	struct fdtable *fdt;
	struct file **arr;
	struct file *f = NULL;

	if (fd < 0)
		return NULL;
	files = task->files;
	if (!files)
		return NULL;
	fdt = files->fdt;
	if (!fdt || (unsigned int)fd >= fdt->max_fds)
		return NULL;
	arr = fdt->fd;
	if (bpf_probe_read_kernel(&f, sizeof(f), &arr[fd]))
		return NULL;
	return f;
}

static __always_inline bool inode_id(struct inode *inode, __u32 *dev, __u64 *ino)
{
	if (!inode)
		return false;
	*ino = BPF_CORE_READ(inode, i_ino);
	*dev = BPF_CORE_READ(inode, i_sb, s_dev);
	return true;
}

static __always_inline bool fd_id(struct task_struct *task, int fd, __u32 *dev, __u64 *ino)
{
	struct file *f = fd_file(task, fd);

	return f && inode_id(BPF_CORE_READ(f, f_inode), dev, ino);
}

/*
 * The mount the directory was reached through, as an ID that a later mount never gets again
 * (mnt_id_unique, 6.8+; before that the reusable mnt_id): a filesystem unmounted and mounted
 * again (a FUSE client restarted) often gets the same anonymous device number, and must not
 * inherit what the daemon learned about the old one.
 */
static __always_inline __u64 vfsmount_id(struct vfsmount *vm)
{
	struct mount *m = (struct mount *)((char *)vm - bpf_core_field_offset(struct mount, mnt));

	if (bpf_core_field_exists(m->mnt_id_unique))
		return BPF_CORE_READ(m, mnt_id_unique);
	return (__u32)BPF_CORE_READ(m, mnt_id);
}

/*
 * The FUSE connection's negotiated behaviour, as local types so that the detector builds where
 * FUSE is a module (its types are then not in vmlinux.h; libbpf finds them in the module's BTF).
 * Since 5.10 the superblock's s_fs_info is a struct fuse_mount pointing at the connection.
 */
struct fuse_conn___da {
	unsigned int parallel_dirops : 1;
	unsigned int do_readdirplus : 1;
} __attribute__((preserve_access_index));
struct fuse_mount___da {
	struct fuse_conn___da *fc;
} __attribute__((preserve_access_index));

/*
 * One bit of the FUSE connection, read into *scratch, as BPF_CORE_READ_BITFIELD_PROBED does.
 */
#define FUSE_BIT(fc, field, scratch)                                                           \
	({                                                                                     \
		*(scratch) = 0;                                                                \
		__CORE_BITFIELD_PROBE_READ(scratch, fc, field);                                \
		(*(scratch) << __CORE_RELO(fc, field, LSHIFT_U64)) >>                          \
			__CORE_RELO(fc, field, RSHIFT_U64);                                    \
	})

/*
 * What the kernel knows about how the filesystem of a directory (its dentry) answers per-entry
 * prefetch (DIRAHEAD_FSI_* of include/dirahead_event.h), read when a scan is made: a compare
 * for every filesystem but FUSE, six loads for FUSE; never per stat.  *scratch: 8 bytes of map
 * memory (the scan being made), for every intermediate pointer: the detector's stack is at the
 * verifier's limit.
 */
static __always_inline __u32 fs_info(__u64 dentry, __u64 magic, __u64 *scratch)
{
	__u32 info = DIRAHEAD_FSI_FUSE;	/* its connection was read */
	struct fuse_conn___da *fc;

	if (magic != DA_FUSE_SUPER_MAGIC || !dentry)
		return 0;
	if (!bpf_core_type_exists(struct fuse_mount___da) ||
	    !bpf_core_field_exists(struct fuse_conn___da, parallel_dirops))
		return 0;
	if (bpf_core_read(scratch, 8, &((struct dentry *)dentry)->d_inode) || !*scratch ||
	    bpf_core_read(scratch, 8, &((struct inode *)*scratch)->i_sb) || !*scratch ||
	    bpf_core_read(scratch, 8, &((struct super_block *)*scratch)->s_fs_info) || !*scratch ||
	    bpf_core_read(scratch, 8, &((struct fuse_mount___da *)*scratch)->fc) || !*scratch)
		return 0;
	fc = (struct fuse_conn___da *)*scratch;
	if (!FUSE_BIT(fc, parallel_dirops, scratch))
		info |= DIRAHEAD_FSI_SERIAL_LOOKUPS;
	if (bpf_core_field_exists(fc->do_readdirplus) && FUSE_BIT(fc, do_readdirplus, scratch))
		info |= DIRAHEAD_FSI_READDIRPLUS;
	*scratch = 0;
	return info;
}

/* What the detector keeps of a directory, from the mount and dentry it was reached by. */
static __always_inline bool path_dirinfo(struct vfsmount *vm, struct dentry *dentry,
					 struct dirinfo *di)
{
	struct inode *inode = BPF_CORE_READ(dentry, d_inode);
	struct super_block *sb;

	if (!inode)
		return false;
	sb = BPF_CORE_READ(inode, i_sb);
	di->ino = BPF_CORE_READ(inode, i_ino);
	di->mode = BPF_CORE_READ(inode, i_mode);
	di->size = BPF_CORE_READ(inode, i_size);
	di->dev = BPF_CORE_READ(sb, s_dev);
	di->magic = BPF_CORE_READ(sb, s_magic);
	di->mnt_id = vfsmount_id(vm);
	di->parent_ino = BPF_CORE_READ(dentry, d_parent, d_inode, i_ino);
	return true;
}

static __always_inline bool file_dirinfo(struct file *f, struct dirinfo *di)
{
	return path_dirinfo(BPF_CORE_READ(f, f_path.mnt), BPF_CORE_READ(f, f_path.dentry), di);
}

static __always_inline bool pseudo_fs(__u64 magic)
{
	switch (magic) {
	case DA_PROC_SUPER_MAGIC:
	case DA_SYSFS_MAGIC:
	case DA_CGROUP_SUPER_MAGIC:
	case DA_CGROUP2_SUPER_MAGIC:
	case DA_DEVPTS_SUPER_MAGIC:
	case DA_DEBUGFS_MAGIC:
	case DA_TRACEFS_MAGIC:
	case DA_BPF_FS_MAGIC:
	case DA_SECURITYFS_MAGIC:
	case DA_SELINUX_MAGIC:
	case DA_PSTOREFS_MAGIC:
	case DA_CONFIGFS_MAGIC:
	case DA_NSFS_MAGIC:
		return true;
	}
	return false;
}

#endif /* DIRAHEAD_KERNEL_ID_H */
