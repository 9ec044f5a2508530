/* SPDX-License-Identifier: LGPL-2.1-or-later OR BSD-2-Clause */
/* Shared directory fds, getdents64 streaming and entry batches. */
#include "internal.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "dirent64.h"
/* One getdents64 call fills this; with ~24-byte names that is ~1000 entries per syscall. */
#define DS_BUFSZ (32 * 1024)

uint64_t da_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

struct da_fd *da_fd_new(int fd)
{
	struct da_fd *f = malloc(sizeof(*f));
	if (f) {
		f->fd = fd;
		f->refs = 1;
	}
	return f;
}

struct da_fd *da_fd_get(struct da_fd *f)
{
	__atomic_add_fetch(&f->refs, 1, __ATOMIC_RELAXED);
	return f;
}

void da_fd_put(struct da_fd *f)
{
	if (!f || __atomic_sub_fetch(&f->refs, 1, __ATOMIC_ACQ_REL))
		return;
	if (f->fd >= 0)
		close(f->fd);
	free(f);
}

/* ---- getdents64 stream ----------------------------------------------------------------------- */
int da_ds_init(struct da_dirstream *ds, int fd)
{
	memset(ds, 0, sizeof(*ds));
	ds->fd = fd;
	ds->buf = malloc(DS_BUFSZ);
	return ds->buf ? 0 : -ENOMEM;
}

void da_ds_fini(struct da_dirstream *ds)
{
	free(ds->buf);
	ds->buf = NULL;
}

int da_ds_next(struct da_dirstream *ds, const char **name, uint64_t *ino, uint8_t *type)
{
	for (;;) {
		if (ds->pos >= ds->len) {
			if (ds->eof)
				return 0;
			uint64_t t0 = ds->first_ns ? 0 : da_now_ns();
			ssize_t n = getdents64(ds->fd, ds->buf, DS_BUFSZ);
			if (t0)
				ds->first_ns = da_now_ns() - t0 + 1; /* (never 0 once timed) */
			if (n < 0) {
				if (errno == EINTR)
					continue;
				return -errno;
			}
			ds->len = (size_t)n;
			ds->pos = 0;
			if (n == 0) {
				ds->eof = true;
				return 0;
			}
		}
		struct linux_dirent64 *d = (struct linux_dirent64 *)(void *)(ds->buf + ds->pos);
		ds->pos += d->d_reclen;
		ds->cookie = d->d_off;
		if (d->d_name[0] == '.' &&
		    (d->d_name[1] == '\0' || (d->d_name[1] == '.' && d->d_name[2] == '\0')))
			continue;
		*name = d->d_name;
		*ino = d->d_ino;
		*type = d->d_type;
		return 1;
	}
}

/* ---- batches --------------------------------------------------------------------------------- */
struct da_batch *da_batch_new(uint64_t base, uint32_t cap)
{
	struct da_batch *b = calloc(1, sizeof(*b));
	if (!b)
		return NULL;
	b->base = base;
	b->cap = cap ? cap : DA_BATCH_DEFAULT;
	return b;
}

void da_batch_free(struct da_batch *b)
{
	if (!b)
		return;
	free(b->ents);
	free(b->names);
	free(b->hash);
	free(b);
}

bool da_batch_full(const struct da_batch *b)
{
	/* a batch asked to be big (a whole directory sorted, as fts does) may hold longer names */
	size_t names_max = (size_t)b->cap * 64 > DA_BATCH_MAX_NAMES ? (size_t)b->cap * 64 :
			   DA_BATCH_MAX_NAMES;
	return b->n >= b->cap || b->names_len + NAME_MAX + 1 > names_max;
}

int da_batch_add(struct da_batch *b, const char *name, uint64_t ino, uint8_t type)
{
	size_t len = strlen(name) + 1;
	if (b->n == b->cap)
		return -ENOSPC;
	if (b->n == b->ents_cap) {
		/* grow geometrically: small directories stay small */
		uint32_t want = b->ents_cap ? b->ents_cap * 2 : 64;
		if (want > b->cap)
			want = b->cap;
		struct da_entry *e = realloc(b->ents, want * sizeof(*e));
		if (!e)
			return -ENOMEM;
		b->ents = e;
		b->ents_cap = want;
	}
	if (b->names_len + len > b->names_cap) {
		size_t want = b->names_cap ? b->names_cap * 2 : 4096;
		while (want < b->names_len + len)
			want *= 2;
		char *nm = realloc(b->names, want);
		if (!nm)
			return -ENOMEM;
		b->names = nm;
		b->names_cap = want;
	}
	memcpy(b->names + b->names_len, name, len);
	b->ents[b->n++] = (struct da_entry){
		.ino = ino, .name_off = (uint32_t)b->names_len, .type = type,
	};
	b->names_len += len;
	return 0;
}

static int cmp_name(const void *a, const void *b, void *arg)
{
	const char *names = arg;
	return strcmp(names + ((const struct da_entry *)a)->name_off,
		      names + ((const struct da_entry *)b)->name_off);
}

static int cmp_inode(const void *a, const void *b, void *arg)
{
	const struct da_entry *x = a, *y = b;
	if (x->ino != y->ino)
		return x->ino < y->ino ? -1 : 1;
	return cmp_name(a, b, arg); /* hard links: keep the order deterministic */
}

static uint64_t hash_name(const char *s)
{
	uint64_t h = 0xcbf29ce484222325ull; /* FNV-1a */
	while (*s)
		h = (h ^ (unsigned char)*s++) * 0x100000001b3ull;
	return h;
}

int da_batch_finish(struct da_batch *b, enum dirahead_order order)
{
	bool sort = b->n > 1; /* an empty batch has no ents array */
	if (sort && order == DIRAHEAD_ORDER_NAME)
		qsort_r(b->ents, b->n, sizeof(*b->ents), cmp_name, b->names);
	else if (sort && order == DIRAHEAD_ORDER_INODE)
		qsort_r(b->ents, b->n, sizeof(*b->ents), cmp_inode, b->names);
	uint32_t size = 16;
	while (size < 2 * b->n)
		size *= 2;
	free(b->hash);
	b->hash = calloc(size, sizeof(*b->hash));
	if (!b->hash)
		return -ENOMEM;
	b->hash_mask = size - 1;
	for (uint32_t i = 0; i < b->n; i++) {
		uint32_t s = (uint32_t)hash_name(da_batch_name(b, i)) & b->hash_mask;
		while (b->hash[s])
			s = (s + 1) & b->hash_mask;
		b->hash[s] = i + 1;
	}
	return 0;
}

int64_t da_batch_find(const struct da_batch *b, const char *name)
{
	if (!b || !b->hash)
		return -1;
	uint32_t s = (uint32_t)hash_name(name) & b->hash_mask;
	for (; b->hash[s]; s = (s + 1) & b->hash_mask) {
		uint32_t i = b->hash[s] - 1;
		if (!strcmp(da_batch_name(b, i), name))
			return i;
	}
	return -1;
}
