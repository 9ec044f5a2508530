// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * Per-architecture facts the detector needs and vmlinux.h does not carry: syscall numbers, the
 * syscall number in pt_regs at sys_exit, and UAPI constants (macros are not in BTF).
 */
#ifndef DIRAHEAD_DETECTOR_SYS_H
#define DIRAHEAD_DETECTOR_SYS_H

#define DA_AT_FDCWD		-100
#define DA_AT_EMPTY_PATH	0x1000
#define DA_AT_SYMLINK_NOFOLLOW	0x100
#define DA_STATX_INO		0x100U
#define DA_S_IFMT		00170000
#define DA_S_IFDIR		0040000

#if defined(__TARGET_ARCH_x86)
#define DA_NR_STAT		4
#define DA_NR_LSTAT		6
#define DA_NR_CHDIR		80
#define DA_NR_FCHDIR		81
#define DA_NR_GETDENTS64	217
#define DA_NR_OPENAT		257
#define DA_NR_NEWFSTATAT	262
#define DA_NR_STATX		332
#define DA_NR_OPENAT2		437
#define DA_O_DIRECTORY		00200000
#define DA_O_PATH		010000000
/* The syscall number survives in orig_ax; ax already holds the return value. */
#define DA_SYSCALL_NR(regs)	((long)(regs)->orig_ax)
/* thread_info.status bit set while a task runs an ia32 syscall (other numbering). */
#define DA_TS_COMPAT		0x0002
#elif defined(__TARGET_ARCH_arm64)
/* asm-generic numbering: no stat/lstat; -2/-3 never match a real number. */
#define DA_NR_STAT		-2
#define DA_NR_LSTAT		-3
#define DA_NR_CHDIR		49
#define DA_NR_FCHDIR		50
#define DA_NR_GETDENTS64	61
#define DA_NR_OPENAT		56
#define DA_NR_NEWFSTATAT	79
#define DA_NR_STATX		291
#define DA_NR_OPENAT2		437
#define DA_O_DIRECTORY		040000
#define DA_O_PATH		010000000
#define DA_SYSCALL_NR(regs)	((long)(regs)->syscallno)
#else
#error "dirahead detector: syscall numbers for this architecture are missing"
#endif

/* Superblock magics of pseudo filesystems whose listings are never worth prefetching. */
#define DA_PROC_SUPER_MAGIC	0x9fa0
#define DA_SYSFS_MAGIC		0x62656572
#define DA_CGROUP_SUPER_MAGIC	0x27e0eb
#define DA_CGROUP2_SUPER_MAGIC	0x63677270
#define DA_DEVPTS_SUPER_MAGIC	0x1cd1
#define DA_DEBUGFS_MAGIC	0x64626720
#define DA_TRACEFS_MAGIC	0x74726163
#define DA_BPF_FS_MAGIC		0xcafe4a11
#define DA_SECURITYFS_MAGIC	0x73636673
#define DA_SELINUX_MAGIC	0xf97cff8c
#define DA_PSTOREFS_MAGIC	0x6165676c
#define DA_CONFIGFS_MAGIC	0x62656570
#define DA_NSFS_MAGIC		0x6e736673
/* FUSE (fuse and fuseblk, virtiofs): its connection says how lookups and listings behave. */
#define DA_FUSE_SUPER_MAGIC	0x65735546

#endif /* DIRAHEAD_DETECTOR_SYS_H */
