// SPDX-License-Identifier: LGPL-2.1-or-later OR BSD-2-Clause
/*
 * /dev/fuse I/O hooks: get FUSE_PARALLEL_DIROPS into the INIT reply.
 *
 * libfuse before 3.16 (Debian 12 ships 3.14) accepts FUSE_CAP_PARALLEL_DIROPS in conn->want but
 * never copies it into the INIT reply (do_init has no line for it; fixed upstream by libfuse
 * PR #861).  Without the bit the kernel takes the directory inode lock around every LOOKUP, so
 * all lookups in one directory are serialized and a parallel prefetcher cannot overlap them.
 *
 * libfuse's public fuse_session_custom_io() lets the filesystem supply the read/writev used on
 * the device.  The read hook notes the INIT request (its unique id and the kernel's flags); the
 * writev hook recognises the reply to that unique id and ORs FUSE_PARALLEL_DIROPS into
 * fuse_init_out.flags when the kernel offered it.  This needs no symbol interposition, works
 * with the sanitizers, and is harmless with a libfuse that already sets the bit.
 *
 * The wire structs come from the kernel's <linux/fuse.h>.
 */
#define SLOWFS_WANT_FUSE
#include "slowfs.h"

#include <errno.h>
#include <linux/fuse.h>
#include <stddef.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>


static uint64_t init_unique;
static volatile int init_state;		/* 0 none, 1 request seen, 2 reply sent */
static uint64_t kernel_flags, sent_flags;
static unsigned proto_minor;

static ssize_t dev_read(int fd, void *buf, size_t len, void *userdata)
{
	ssize_t n = read(fd, buf, len);

	(void)userdata;
	if (init_state == 0 && n >= (ssize_t)(sizeof(struct fuse_in_header) +
					      offsetof(struct fuse_init_in, flags2))) {
		const struct fuse_in_header *h = buf;
		const struct fuse_init_in *in = (const void *)(h + 1);

		if (h->opcode == FUSE_INIT) {
			kernel_flags = in->flags;
			if ((in->flags & FUSE_INIT_EXT) &&
			    (size_t)n >= sizeof(*h) + offsetof(struct fuse_init_in, unused))
				kernel_flags |= (uint64_t)in->flags2 << 32;
			proto_minor = in->minor;
			init_unique = h->unique;
			__atomic_store_n(&init_state, 1, __ATOMIC_RELEASE);
		}
	}
	return n;
}

static ssize_t dev_writev(int fd, struct iovec *iov, int count, void *userdata)
{
	const size_t need = sizeof(struct fuse_out_header) + offsetof(struct fuse_init_out,
								      max_background);
	struct fuse_out_header out;
	unsigned char msg[sizeof(struct fuse_out_header) + sizeof(struct fuse_init_out)];
	size_t len = 0;
	int i;

	(void)userdata;
	if (__atomic_load_n(&init_state, __ATOMIC_ACQUIRE) != 1 || count < 1 ||
	    iov[0].iov_len < sizeof(out))
		return writev(fd, iov, count);
	memcpy(&out, iov[0].iov_base, sizeof(out));
	if (out.unique != init_unique)
		return writev(fd, iov, count);

	/* This is the INIT reply: flatten it so the flags can be edited in our own copy. */
	for (i = 0; i < count; i++) {
		if (iov[i].iov_len > sizeof(msg) - len) {
			init_state = 2;		/* larger than any known INIT reply: leave alone */
			return writev(fd, iov, count);
		}
		memcpy(msg + len, iov[i].iov_base, iov[i].iov_len);
		len += iov[i].iov_len;
	}
	if (out.error == 0 && len >= need) {
		struct fuse_init_out *io = (void *)(msg + sizeof(out));
		uint32_t before = io->flags;

		if (sf_cfg.parallel_dirops && (kernel_flags & FUSE_PARALLEL_DIROPS))
			io->flags |= FUSE_PARALLEL_DIROPS;
		if (!sf_cfg.parallel_dirops)
			io->flags &= ~FUSE_PARALLEL_DIROPS;
		sent_flags = io->flags;
		if ((io->flags & FUSE_INIT_EXT) &&
		    len >= sizeof(out) + offsetof(struct fuse_init_out, unused))
			sent_flags |= (uint64_t)io->flags2 << 32;
		sf_debug("INIT: kernel 7.%u offered flags 0x%llx; libfuse replied 0x%x, sent 0x%llx "
			 "(parallel_dirops=%d readdirplus=%d)", proto_minor,
			 (unsigned long long)kernel_flags, before, (unsigned long long)sent_flags,
			 !!(sent_flags & FUSE_PARALLEL_DIROPS), !!(sent_flags & FUSE_DO_READDIRPLUS));
	}
	__atomic_store_n(&init_state, 2, __ATOMIC_RELEASE);
	return write(fd, msg, len);
}

int sf_devio_install(struct fuse_session *se)
{
	static const struct fuse_custom_io io = {
		.writev = dev_writev,
		.read = dev_read,
	};

	/* Same fd fuse_session_mount() opened: only the I/O functions change. */
	return fuse_session_custom_io(se, &io, fuse_session_fd(se));
}

bool sf_init_done(void)
{
	return __atomic_load_n(&init_state, __ATOMIC_ACQUIRE) == 2;
}

uint64_t sf_init_kernel_flags(void)
{
	return kernel_flags;
}

uint64_t sf_init_sent_flags(void)
{
	return sf_init_done() ? sent_flags : 0;
}

unsigned sf_init_proto_minor(void)
{
	return proto_minor;
}
