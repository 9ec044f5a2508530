/* SPDX-License-Identifier: LGPL-2.1-or-later OR BSD-2-Clause */
#include "fsmagic.h"

#include <linux/magic.h>
#include <stddef.h>

#ifndef CGROUP_SUPER_MAGIC
#define CGROUP_SUPER_MAGIC 0x27e0eb
#endif
#ifndef CGROUP2_SUPER_MAGIC
#define CGROUP2_SUPER_MAGIC 0x63677270
#endif
#ifndef DEVPTS_SUPER_MAGIC
#define DEVPTS_SUPER_MAGIC 0x1cd1
#endif
#ifndef CONFIGFS_MAGIC
#define CONFIGFS_MAGIC 0x62656570
#endif
#define FUSECTL_MAGIC 0x65735543
#define MQUEUE_MAGIC 0x19800202
#define AUTOFS_MAGIC 0x0187
#define CIFS_MAGIC 0xff534d42
#define SMB2_MAGIC 0xfe534d42
#define CEPH_MAGIC 0x00c36400
#define F2FS_MAGIC 0xf2f52010
#define EXFAT_MAGIC 0x2011bab0
#define MSDOS_MAGIC 0x4d44
#define ISOFS_MAGIC 0x9660
#define NILFS_MAGIC 0x3434
#define BCACHEFS_MAGIC 0xca451a4e
#define RDTGROUP_MAGIC 0x7655821

static const struct {
	uint64_t magic;
	const char *name;
	bool pseudo;
} table[] = {
	{ EXT4_SUPER_MAGIC, "ext4", false },  /* also ext2/ext3 */
	{ XFS_SUPER_MAGIC, "xfs", false },
	{ BTRFS_SUPER_MAGIC, "btrfs", false },
	{ TMPFS_MAGIC, "tmpfs", false },
	{ RAMFS_MAGIC, "ramfs", false },
	{ OVERLAYFS_SUPER_MAGIC, "overlay", false },
	{ FUSE_SUPER_MAGIC, "fuse", false },
	{ NFS_SUPER_MAGIC, "nfs", false },
	{ CIFS_MAGIC, "cifs", false },
	{ SMB2_MAGIC, "smb3", false },
	{ CEPH_MAGIC, "ceph", false },
	{ V9FS_MAGIC, "9p", false },
	{ F2FS_MAGIC, "f2fs", false },
	{ EXFAT_MAGIC, "exfat", false },
	{ MSDOS_MAGIC, "vfat", false },
	{ ISOFS_MAGIC, "iso9660", false },
	{ SQUASHFS_MAGIC, "squashfs", false },
	{ NILFS_MAGIC, "nilfs2", false },
	{ BCACHEFS_MAGIC, "bcachefs", false },
	{ ZONEFS_MAGIC, "zonefs", false },
	{ AUTOFS_MAGIC, "autofs", true },  /* never trigger automounts */
	{ PROC_SUPER_MAGIC, "proc", true },
	{ SYSFS_MAGIC, "sysfs", true },
	{ CGROUP_SUPER_MAGIC, "cgroup", true },
	{ CGROUP2_SUPER_MAGIC, "cgroup2", true },
	{ TRACEFS_MAGIC, "tracefs", true },
	{ DEBUGFS_MAGIC, "debugfs", true },
	{ DEVPTS_SUPER_MAGIC, "devpts", true },
	{ BPF_FS_MAGIC, "bpf", true },
	{ SECURITYFS_MAGIC, "securityfs", true },
	{ SELINUX_MAGIC, "selinuxfs", true },
	{ SMACK_MAGIC, "smackfs", true },
	{ PSTOREFS_MAGIC, "pstore", true },
	{ EFIVARFS_MAGIC, "efivarfs", true },
	{ CONFIGFS_MAGIC, "configfs", true },
	{ FUSECTL_MAGIC, "fusectl", true },
	{ HUGETLBFS_MAGIC, "hugetlbfs", true },
	{ MQUEUE_MAGIC, "mqueue", true },
	{ BINFMTFS_MAGIC, "binfmt_misc", true },
	{ NSFS_MAGIC, "nsfs", true },
	{ PIPEFS_MAGIC, "pipefs", true },
	{ SOCKFS_MAGIC, "sockfs", true },
	{ RDTGROUP_MAGIC, "resctrl", true },
};

const char *fsmagic_name(uint64_t magic)
{
	for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++)
		if (table[i].magic == magic)
			return table[i].name;
	return NULL;
}

bool fsmagic_is_pseudo(uint64_t magic)
{
	for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++)
		if (table[i].magic == magic)
			return table[i].pseudo;
	return false;
}
