// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * A stat matched to the directory being listed, and counted for its scan (confirming it, then
 * PROGRESS every step):
 *   dirfd + "name"          dirfd resolved through task->files to dev/ino (fts: du/find stat via a
 *                           dup of the listing fd; tar and rsync via the listing fd);
 *   AT_FDCWD + "name"       the cwd's dev/ino, cached per process and refreshed on chdir/fchdir
 *                           (`ls -l` in the directory, rsync after chdir);
 *   AT_FDCWD + "p/name", "/abs/p/name"
 *                           hash of "p" (runs of slashes as one, trailing ones dropped) looked up
 *                           in `names`, filled at the first getdents64 from the process's last
 *                           O_DIRECTORY openat of that directory (`ls -l DIR`, Python os.walk +
 *                           os.stat).  Relative names are seeded with the cwd identity, so after a
 *                           chdir they no longer match; all names with a per-process seed.
 * A repeated stat of the same name (tar stats each entry twice) counts once.
 */
#ifndef DIRAHEAD_DETECTOR_STAT_MATCH_H
#define DIRAHEAD_DETECTOR_STAT_MATCH_H

#include "detector_model.h"
#include "kernel_id.h"
#include "names.h"
#include "emit.h"
#include "slots.h"
#include "mutes.h"
#include "stat_timing.h"

/* A stat of one of the entries of the directory `key` succeeded; s->name holds its name. */
static __always_inline void scan_stat(struct dirahead_scan_key *key, struct scan *sc,
				      struct proc *p, struct scratch *s, long n, int dfd,
				      const struct dirahead_bpf_config *cfg,
				      struct task_struct *task, __u64 lat)
{
	struct dirahead_scan_ctl *ctl = NULL;
	__u32 confirm;
	__u64 now, gen;

	if (sc->flags & SCAN_FORGOTTEN)
		return;
	gen = ctl_gen;
	if ((sc->flags & SCAN_CONFIRMED) && sc->ctl_gen != gen) {
		ctl = bpf_map_lookup_elem(&scan_ctl, &sc->scan_id);
		if (ctl && (ctl->flags & DIRAHEAD_CTL_FORGET)) {
			forget_scan(p, key, sc, ctl->flags);
			return;
		}
		if (!ctl)
			sc->ctl_gen = gen;	/* nothing for this scan */
	}
	/* Same name as last time (tar stats every entry twice): one entry, one count. */
	if (same_name(s->name, sc->name))
		return;
	__builtin_memcpy(sc->name, s->name, NAME_LEN);
	sc->name_len = n;
	sc->stats++;
	now = bpf_ktime_get_ns();
	if (!sc->t_first)
		sc->t_first = now;
	sc->t_last = now;
	if (lat) {
		sc->lat_sum += lat;
		sc->lat_n++;
	}
	if (dfd != DA_AT_FDCWD)
		sc->fd = dfd;
	count(DIRAHEAD_CNT_STATS_MATCHED, 1);

	if (!(sc->flags & SCAN_CONFIRMED)) {
		confirm = cfg->confirm_stats ? cfg->confirm_stats : DEFAULT_CONFIRM;
		if (sc->stats < confirm)
			return;
		sc->flags |= SCAN_CONFIRMED;
		sc->step = cfg->progress_step;
		sc->next_progress = sc->stats + sc->step;
		count(DIRAHEAD_CNT_SCANS, 1);
		emit(DIRAHEAD_EV_SCAN, DIRAHEAD_END_NONE, key, sc, p, task);
		return;
	}
	if (ctl) {
		sc->ctl_gen = gen;
		if (ctl->seq != sc->ctl_seq) {
			/* The daemon changed this scan's step: count from now. */
			sc->ctl_seq = ctl->seq;
			sc->step = ctl->step;
			sc->next_progress = sc->stats + sc->step;
		}
	}
	if (sc->step && sc->stats >= sc->next_progress) {
		sc->next_progress = sc->stats + sc->step;
		emit(DIRAHEAD_EV_PROGRESS, DIRAHEAD_END_NONE, key, sc, p, task);
	}
}

enum { MATCH_NONE, MATCH_DONE };

/*
 * A stat of a process with live scans, matched by the cheapest test first: the dirfd's inode,
 * or the cwd, against the live slots, before any string is read; a path's directory by its
 * hash in `names`.  MATCH_DONE: it concerned one of them (counted, or ignored on purpose).
 */
static __always_inline int tracked_stat(struct proc *p, __u32 tgid, int dfd, const char *upath,
					long nr, const struct dirahead_bpf_config *cfg,
					struct task_struct *task, struct scratch *s)
{
	struct dirahead_scan_key key = { .tgid = tgid };
	bool cwd_live = false;
	struct path_hash ph;
	struct scan *sc;
	int off = 0;
	long n;

	if (dfd != DA_AT_FDCWD) {
		if (!fd_id(task, dfd, &key.dev, &key.ino) || live_slot(p, key.dev, key.ino) < 0)
			return MATCH_NONE;
	} else {
		cwd_live = live_slot(p, p->cwd_dev, p->cwd_ino) >= 0;
		if (!cwd_live && !p->npath)
			return MATCH_NONE;
	}
	n = bpf_probe_read_user_str(s->path, PATH_LEN, upath);
	/* "": an fstat (AT_EMPTY_PATH); PATH_LEN: maybe truncated, and a truncated path would
	 * hash like the shorter one it was cut to: never matched */
	if (n <= 1 || n >= PATH_LEN)
		return MATCH_NONE;
	n--;
	hash_path((const struct path_buf *)s->path, n, s->path[0] == '/' ? p->seed : p->rel_seed,
		  &ph);
	if (not_an_entry(s, n, &ph))
		return MATCH_NONE;
	if (ph.last_slash < 0) {
		if (dfd == DA_AT_FDCWD) {
			if (!cwd_live)
				return MATCH_NONE;
			key.dev = p->cwd_dev;
			key.ino = p->cwd_ino;
		}
	} else {
		struct name_key nk = { .tgid = tgid, .hash = ph.prefix };
		struct name_val *nv;

		/* "sub/name" below a dirfd, or an absolute path with one: not a form tools use */
		if (dfd != DA_AT_FDCWD || !p->npath)
			return MATCH_NONE;
		nv = bpf_map_lookup_elem(&names, &nk);
		if (!nv)
			return MATCH_NONE;
		key.dev = nv->dev;
		key.ino = nv->ino;
		off = ph.last_slash + 1;
	}
	sc = bpf_map_lookup_elem(&scans, &key);
	if (!sc)
		return MATCH_NONE;
	n = take_name(s, off);
	scan_stat(&key, sc, p, s, n, off ? DA_AT_FDCWD : dfd, cfg, task,
		  app_stat_latency(task, nr, cfg));
	return MATCH_DONE;
}

#endif /* DIRAHEAD_DETECTOR_STAT_MATCH_H */
