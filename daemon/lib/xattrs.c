/* SPDX-License-Identifier: LGPL-2.1-or-later OR BSD-2-Clause */
/*
 * One entry's extended attributes, names and values, looked up by name relative to its
 * directory's fd (listxattrat/getxattrat, Linux 6.13; before that through an O_PATH fd of the
 * entry), within the caller's size limits.  For dirahead_xreaddir() (xreaddir.c).
 */
#include "internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/xattr.h>
#include <unistd.h>

/* The *xattrat calls have the same numbers on every architecture of the unified table; where
 * the libc headers predate them, only those we know are defined (elsewhere: the O_PATH way). */
#if !defined(__NR_getxattrat) && (defined(__x86_64__) || defined(__aarch64__) || \
				   defined(__i386__) || defined(__riscv))
#define __NR_getxattrat 464
#define __NR_listxattrat 465
#endif

struct xattr_args_k {          /* struct xattr_args of <linux/xattr.h> (6.13) */
	uint64_t value;
	uint32_t size;
	uint32_t flags;
};

/* 1: the *xattrat calls work, 0: unknown yet, -1: ENOSYS (use O_PATH) */
static int have_at;

/* How to name the entry to the xattr calls: (dfd, name) for the *at calls, else a /proc path to
 * an O_PATH fd of it (getxattr() on a magic link acts on the file the fd is open on, the link
 * itself for a symlink opened with O_NOFOLLOW). */
struct target {
	int dfd, atflags, pathfd;
	const char *name;
	char proc[40];
};

static int target_fallback(struct target *t)
{
	if (t->pathfd >= 0)
		return 0;
	int fl = O_PATH | O_CLOEXEC | ((t->atflags & AT_SYMLINK_NOFOLLOW) ? O_NOFOLLOW : 0);
	t->pathfd = openat(t->dfd, t->name, fl);
	if (t->pathfd < 0)
		return -errno;
	snprintf(t->proc, sizeof(t->proc), "/proc/self/fd/%d", t->pathfd);
	return 0;
}

static ssize_t x_list(struct target *t, char *buf, size_t size)
{
#ifdef __NR_listxattrat
	if (__atomic_load_n(&have_at, __ATOMIC_RELAXED) >= 0) {
		long r = syscall(__NR_listxattrat, t->dfd, t->name, t->atflags, buf, size);
		if (r >= 0 || errno != ENOSYS) {
			__atomic_store_n(&have_at, 1, __ATOMIC_RELAXED);
			return r < 0 ? -errno : r;
		}
		__atomic_store_n(&have_at, -1, __ATOMIC_RELAXED);
	}
#endif
	int r = target_fallback(t);
	if (r < 0)
		return r;
	ssize_t n = listxattr(t->proc, buf, size);
	return n < 0 ? -errno : n;
}

static ssize_t x_get(struct target *t, const char *name, void *buf, size_t size)
{
#ifdef __NR_getxattrat
	if (__atomic_load_n(&have_at, __ATOMIC_RELAXED) > 0) {
		struct xattr_args_k a = { .value = (uint64_t)(uintptr_t)buf, .size = (uint32_t)size };
		long r = syscall(__NR_getxattrat, t->dfd, t->name, t->atflags, name, &a, sizeof(a));
		return r < 0 ? -errno : r;
	}
#endif
	int r = target_fallback(t);
	if (r < 0)
		return r;
	ssize_t n = getxattr(t->proc, name, buf, size);
	return n < 0 ? -errno : n;
}

void da_xattrs_free(struct da_xattrs *x)
{
	free(x->v);
	x->v = NULL;
	x->n = 0;
	x->bytes = 0;
}

/* The names list, within the limit: its length, or -errno (E2BIG over the limit). */
static ssize_t get_list(struct target *t, const struct da_xattr_limits *l, char **out,
			unsigned *calls)
{
	for (int tries = 0; tries < 3; tries++) {
		ssize_t n = x_list(t, NULL, 0);
		(*calls)++;
		if (n <= 0)
			return n;
		if ((size_t)n > l->list)
			return -E2BIG;
		char *buf = malloc((size_t)n);
		if (!buf)
			return -ENOMEM;
		ssize_t m = x_list(t, buf, (size_t)n);
		(*calls)++;
		if (m >= 0) {
			*out = buf;
			return m;
		}
		free(buf);
		if (m != -ERANGE) /* ERANGE: attributes were added meanwhile */
			return m;
	}
	return -E2BIG;
}

/* One value into a malloc'd buffer: its size, or -errno (-ENODATA: removed meanwhile). */
static ssize_t get_value(struct target *t, const char *name, const struct da_xattr_limits *l,
			 void **out, unsigned *calls)
{
	char small[512];
	ssize_t n = x_get(t, name, small, sizeof(small));
	(*calls)++;
	for (int tries = 0; n == -ERANGE && tries < 3; tries++) {
		n = x_get(t, name, NULL, 0);
		(*calls)++;
		if (n < 0)
			return n;
		if ((size_t)n > l->value)
			return -E2BIG;
		void *buf = malloc(n ? (size_t)n : 1);
		if (!buf)
			return -ENOMEM;
		ssize_t m = x_get(t, name, buf, (size_t)n);
		(*calls)++;
		if (m >= 0) {
			*out = buf;
			return m;
		}
		free(buf);
		n = m;
	}
	if (n < 0)
		return n;
	if ((size_t)n > l->value)
		return -E2BIG;
	*out = malloc(n ? (size_t)n : 1);
	if (!*out)
		return -ENOMEM;
	memcpy(*out, small, (size_t)n);
	return n;
}

int da_xattrs_fetch(int dfd, const char *name, int atflags, const struct da_xattr_limits *l,
		    struct da_xattrs *out, unsigned *calls)
{
	struct target t = { .dfd = dfd, .name = name, .atflags = atflags & AT_SYMLINK_NOFOLLOW,
			    .pathfd = -1 };
	char *list = NULL;
	void **vals = NULL;
	ssize_t *sizes = NULL;
	unsigned n = 0, k = 0;
	size_t total = 0;
	int r = 0;

	memset(out, 0, sizeof(*out));
	ssize_t len = get_list(&t, l, &list, calls);
	if (len == -EOPNOTSUPP || len == 0) /* a filesystem without xattrs: none, no error */
		goto out;
	if (len < 0) {
		r = (int)len;
		goto out;
	}
	for (ssize_t i = 0; i < len; i += (ssize_t)strlen(list + i) + 1)
		n++;
	vals = calloc(n, sizeof(*vals));
	sizes = calloc(n, sizeof(*sizes));
	if (!vals || !sizes) {
		r = -ENOMEM;
		goto out;
	}
	total = (size_t)len;
	for (ssize_t i = 0; i < len; i += (ssize_t)strlen(list + i) + 1) {
		ssize_t s = get_value(&t, list + i, l, &vals[k], calls);
		if (s == -ENODATA) { /* removed since the listing: not there */
			sizes[k++] = -1;
			continue;
		}
		if (s < 0) {
			r = (int)s;
			goto out;
		}
		sizes[k++] = s;
		total += (size_t)s;
		if (total > l->total) {
			r = -E2BIG;
			goto out;
		}
	}
	/* One block: the array, then the names, then the values. */
	size_t hdr = n * sizeof(struct dirahead_xattr);
	char *blk = malloc(hdr + total);
	if (!blk) {
		r = -ENOMEM;
		goto out;
	}
	struct dirahead_xattr *v = (struct dirahead_xattr *)(void *)blk;
	char *names = blk + hdr, *data = names + len;
	memcpy(names, list, (size_t)len);
	unsigned m = 0;
	ssize_t i = 0;
	for (k = 0; k < n; k++, i += (ssize_t)strlen(list + i) + 1) {
		if (sizes[k] < 0)
			continue;
		memcpy(data, vals[k], (size_t)sizes[k]);
		v[m++] = (struct dirahead_xattr){ .name = names + i, .value = data,
						  .size = (size_t)sizes[k] };
		data += sizes[k];
	}
	out->v = v;
	out->n = m;
	out->bytes = hdr + total;
out:
	if (vals)
		for (k = 0; k < n; k++)
			free(vals[k]);
	free(vals);
	free(sizes);
	free(list);
	if (t.pathfd >= 0)
		close(t.pathfd);
	return r;
}
