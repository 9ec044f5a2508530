// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * How the detector knows directories and entries by name: the per-process seeds (the relative one
 * mixed with the cwd), one-pass path hashing, a listed directory made findable by the name it was
 * opened by (`names`), and the names a stat passes (read, compared, told from "." and "..", keyed
 * for order).
 */
#ifndef DIRAHEAD_DETECTOR_NAMES_H
#define DIRAHEAD_DETECTOR_NAMES_H

#include "detector_model.h"
#include "kernel_id.h"

static __always_inline __u64 mix64(__u64 h)
{
	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdULL;
	h ^= h >> 33;
	h *= 0xc4ceb9fe1a85ec53ULL;
	h ^= h >> 33;
	return h;
}

static __always_inline void read_cwd(struct task_struct *task, struct proc *p)
{
	struct fs_struct *fs = task->fs;
	__u32 dev = 0;
	__u64 ino = 0;

	if (fs)
		inode_id(BPF_CORE_READ(fs, pwd.dentry, d_inode), &dev, &ino);
	p->cwd_dev = dev;
	p->cwd_ino = ino;
	p->rel_seed = mix64(p->seed ^ mix64(((__u64)dev << 32) ^ ino));
}

#define FNV_OFFSET	0xcbf29ce484222325ULL
#define FNV_PRIME	0x100000001b3ULL

/*
 * One pass over a path: FNV-1a of the whole path, of everything before its last run of slashes
 * and of what follows it (the name), normalized the same way (runs of '/' count as one, trailing
 * ones not at all), so "dir/", "dir//x" and "dir/x" agree on "dir".  Indexing only by the loop
 * counter keeps the verifier's work linear in PATH_LEN.
 */
struct path_hash {
	__u64 full;
	__u64 prefix;
	__u64 name;
	int last_slash;	/* index of the last '/', -1 if none */
	int prefix_end;	/* index of the first '/' of the last run of them */
};

struct path_buf {
	char c[PATH_LEN];
};

/*
 * A global (not inlined) function: the verifier checks it once, on its own, instead of once per
 * call site and caller state.
 */
__noinline int hash_path(const struct path_buf *buf, long n, __u64 seed, struct path_hash *ph)
{
	__u64 h = FNV_OFFSET ^ seed, prefix = h, name = FNV_OFFSET;
	int slash = -1, run = -1;
	bool pending = false;

	if (!buf || !ph)
		return 0;
	for (int i = 0; i < PATH_LEN; i++) {
		char c;

		if (i >= n)
			break;
		c = buf->c[i];
		if (c == '/') {
			if (!pending) {
				prefix = h;
				run = i;
			}
			pending = true;
			slash = i;
			continue;
		}
		if (pending) {
			h = (h ^ '/') * FNV_PRIME;
			name = FNV_OFFSET;
			pending = false;
		}
		h = (h ^ (__u8)c) * FNV_PRIME;
		name = (name ^ (__u8)c) * FNV_PRIME;
	}
	ph->full = h;
	ph->prefix = prefix;
	ph->name = name;
	ph->last_slash = slash;
	ph->prefix_end = run;
	return 0;
}

/*
 * The thread's last O_DIRECTORY open was of this directory: take the path it used and make it
 * findable by name.  By dev+ino, not fd: opendir(fd) and fts list through a dup.
 */
static __always_inline bool adopt_name(struct scan *sc, const struct proc *p, __u32 tgid,
				       __u32 tid, const struct dirinfo *di)
{
	struct lastopen *lo = bpf_map_lookup_elem(&lastopen, &tid);
	struct name_key nk = { .tgid = tgid };
	struct name_val nv = { .ino = di->ino, .dev = di->dev };
	struct path_hash ph;
	__u32 n;
	bool abs;

	if (!lo || lo->dev != di->dev || lo->ino != di->ino)
		return false;
	n = lo->len;
	if (n == 0 || n >= PATH_LEN)
		return false;
	abs = lo->path[0] == '/';
	__builtin_memcpy(sc->path, lo->path, PATH_LEN);
	sc->path_len = n;
	sc->flags |= SCAN_HAS_PATH | (abs ? SCAN_ABS_PATH : 0);
	sc->rel_seed = p->rel_seed;
	hash_path((const struct path_buf *)lo->path, n, abs ? p->seed : p->rel_seed, &ph);
	nk.hash = ph.full;
	bpf_map_update_elem(&names, &nk, &nv, BPF_ANY);
	bpf_map_delete_elem(&lastopen, &tid);
	return true;
}

static __always_inline bool same_name(const char *a, const char *b)
{
	const __u64 *x = (const __u64 *)a, *y = (const __u64 *)b;
	__u64 diff = 0;

	for (int i = 0; i < NAME_LEN / 8; i++)
		diff |= x[i] ^ y[i];
	return diff == 0;
}

/* s->name = the name at s->path[off], NUL-padded (same_name compares whole words); its length. */
static __always_inline long take_name(struct scratch *s, int off)
{
	long n;

	__builtin_memset(s->name, 0, NAME_LEN);
	n = bpf_probe_read_kernel_str(s->name, NAME_LEN, &s->path[off & (PATH_LEN - 1)]);
	return n > 0 ? n - 1 : 0;
}

/* Ignore a name that is no entry: "" (AT_EMPTY_PATH: an fstat), ".", "..", "dir/". */
static __always_inline bool not_an_entry(const struct scratch *s, long n,
					 const struct path_hash *ph)
{
	int b = ph->last_slash + 1;

	if (n <= 0 || ph->last_slash == n - 1)
		return true;
	if (b < 0 || b >= PATH_LEN - 2)
		return false;
	return s->path[b] == '.' &&
	       (b + 1 == n || (s->path[b + 1] == '.' && b + 2 == n));
}

/* A big-endian load of 8 bytes: compared as numbers, words order as their bytes do. */
static __always_inline __u64 be64(const char *p)
{
	__u64 w;

	__builtin_memcpy(&w, p, 8);
	return __builtin_bswap64(w);
}

/*
 * The first 16 bytes of the name at s->path[off] (the path is n bytes long), zero-padded, as two
 * words that compare as strcmp() would compare those bytes.
 */
static __always_inline void name_key(const struct scratch *s, int off, long n, __u64 *hi,
				     __u64 *lo)
{
	long len = n - off;
	int o = off & (PATH_LEN - 1);

	*hi = be64(&s->path[o]);
	*lo = be64(&s->path[o + 8]);
	/* bytes past the name are left over from earlier strings */
	if (len < 8) {
		*hi &= len <= 0 ? 0 : ~0ULL << (8 * (8 - len));
		*lo = 0;
	} else if (len < 16) {
		*lo &= ~0ULL << (8 * (16 - len));
	}
}

#endif /* DIRAHEAD_DETECTOR_NAMES_H */
