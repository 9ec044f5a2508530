/* SPDX-License-Identifier: LGPL-2.1-or-later OR BSD-2-Clause */
#include "order.h"

#include <dirent.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "dirent64.h"
static int dot(const char *n)
{
	return n[0] == '.' && (!n[1] || (n[1] == '.' && !n[2]));
}

enum dirahead_order order_learn(int fd, const char *name, uint64_t stats)
{
	enum dirahead_order o = DIRAHEAD_ORDER_READDIR;
	char buf[32768] __attribute__((aligned(8)));
	uint64_t *inos = NULL, target = 0, n = 0, cap = 0, name_rank = 0;
	int found = 0;

	if (!name[0] || !stats || lseek(fd, 0, SEEK_SET) < 0)
		return o;
	for (;;) {
		long r = syscall(SYS_getdents64, fd, buf, sizeof(buf));
		if (r <= 0)
			break;
		for (long off = 0; off < r;) {
			struct linux_dirent64 *d = (struct linux_dirent64 *)(buf + off);
			off += d->d_reclen;
			if (dot(d->d_name))
				continue;
			if (!strcmp(d->d_name, name)) {
				if (n < stats)
					goto out; /* where readdir order has it */
				found = 1;
				target = d->d_ino;
			}
			name_rank += strcmp(d->d_name, name) < 0;
			if (n == cap) {
				uint64_t *p = realloc(inos, (cap ? cap * 2 : 4096) * sizeof(*inos));
				if (!p)
					goto out;
				inos = p;
				cap = cap ? cap * 2 : 4096;
			}
			inos[n++] = d->d_ino;
			if (n >= ORDER_FTS_CHUNK)
				goto sorted;
		}
	}
sorted:
	if (found) {
		uint64_t ino_rank = 0;
		for (uint64_t i = 0; i < n; i++)
			ino_rank += inos[i] < target;
		/* Its k-th stat is the k-th entry of its order (earlier if it stats some twice): of
		 * the orders that fit, the one that has the name latest, nearest k.  Where a directory's
		 * files were created in name order both fit, until a reused inode number puts a name
		 * early in inode order: name order is then the one that has it at k. */
		bool ino_fits = ino_rank < stats, name_fits = name_rank < stats;
		/* Where both have it at the same place (a directory made in name order), the orders
		 * cannot be told apart yet: fts sorts by inode above ORDER_FTS_INODE_MIN entries only,
		 * so a smaller directory is taken as name order (sorted(os.listdir()), ls). */
		bool tie_inode = n >= ORDER_FTS_INODE_MIN;
		if (ino_fits && (!name_fits || ino_rank > name_rank || (ino_rank == name_rank && tie_inode)))
			o = DIRAHEAD_ORDER_INODE;
		else if (name_fits)
			o = DIRAHEAD_ORDER_NAME;
	}
out:
	free(inos);
	lseek(fd, 0, SEEK_SET);
	return o;
}
