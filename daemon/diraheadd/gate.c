/* SPDX-License-Identifier: LGPL-2.1-or-later OR BSD-2-Clause */
/* The gate: every admission filter, as functions returning a verdict (gate.h). */
#include "gate.h"

#include <assert.h>
#include <fnmatch.h>
#include <stdio.h>
#include <string.h>

#include "cgroup.h"
#include "fsknow.h"
#include "fsmagic.h"
#include "log.h"

static bool list_match(const struct dd_strlist *l, const char *s)
{
	for (int i = 0; i < l->n; i++)
		if (fnmatch(l->v[i], s, 0) == 0)
			return true;
	return false;
}

static bool prefix_match(const struct dd_strlist *l, const char *path)
{
	for (int i = 0; i < l->n; i++) {
		size_t n = strlen(l->v[i]);
		while (n > 1 && l->v[i][n - 1] == '/')
			n--;
		if (!strncmp(path, l->v[i], n) && (path[n] == '/' || path[n] == '\0' || n == 1))
			return true;
	}
	return false;
}

/* include list empty = everything; exclude wins. */
static bool allowed(const struct dd_strlist *inc, const struct dd_strlist *exc, const char *s,
		    bool (*match)(const struct dd_strlist *, const char *))
{
	if (match(exc, s))
		return false;
	return inc->n == 0 || match(inc, s);
}

/* The [filter] cgroup lists, checked against the process's cgroup v2 path now.  A cgroup that
 * cannot be read (the process is gone) admits nothing a cgroup filter would have to judge. */
static bool cgroup_allowed(const struct dd_config *cfg, uint32_t pid)
{
	char cg[4096];
	if (!cfg->cgroup_include.n && !cfg->cgroup_exclude.n)
		return true;
	int r = cgroup_of(pid, cg, sizeof(cg));
	if (r < 0) {
		log_debug("pid %u: cannot read its cgroup: %s", pid, strerror(-r));
		return false;
	}
	return allowed(&cfg->cgroup_include, &cfg->cgroup_exclude, cg, cgroup_match);
}

static struct gate_verdict skip(enum dd_skip_reason why)
{
	return (struct gate_verdict){ .act = GATE_SKIP, .why = why };
}

static const struct gate_verdict admit = { .act = GATE_ADMIT };

struct gate_verdict gate_event(const struct dd_config *cfg, const struct dirahead_event *ev)
{
	if (!cfg->enabled)
		return (struct gate_verdict){ .act = GATE_IGNORE };
	char comm[DIRAHEAD_COMM_LEN + 1];
	memcpy(comm, ev->comm, DIRAHEAD_COMM_LEN);
	comm[DIRAHEAD_COMM_LEN] = '\0';
	if (!allowed(&cfg->comm_include, &cfg->comm_exclude, comm, list_match))
		return skip(DD_SKIP_FILTERED);
	if (!cgroup_allowed(cfg, ev->tgid))
		return skip(DD_SKIP_FILTERED);
	/* a run of stats by path: BPF knows no directory (0:0 and a hash of the path) */
	if ((ev->flags & DIRAHEAD_EVF_UNLISTED) && !ev->dev_major && !ev->dev_minor)
		return cfg->dry_run ? skip(DD_SKIP_DRY_RUN) : (struct gate_verdict){ .act = GATE_RESOLVE };
	return admit;
}

bool gate_blocked(const struct dd_config *cfg, uint32_t tgid, const char *comm, bool fs_known,
		  uint64_t magic)
{
	if (!allowed(&cfg->comm_include, &cfg->comm_exclude, comm, list_match))
		return false;
	if (fs_known) {
		if (fsmagic_is_pseudo(magic))
			return false;
		const char *fsname = fsmagic_name(magic);
		if (!allowed(&cfg->fs_include, &cfg->fs_exclude, fsname ? fsname : "unknown", list_match))
			return false;
	}
	/* last: the only filter that reads a file (/proc/TGID/cgroup) */
	return cgroup_allowed(cfg, tgid);
}

struct gate_verdict gate_dir(const struct dd_config *cfg, const struct dirahead_event *ev,
			     const struct gate_facts *f)
{
	assert(f && f->hung && f->dup && f->walking);
	if (fsmagic_is_pseudo(ev->magic))
		return skip(DD_SKIP_PSEUDO_FS);
	const char *fsname = fsmagic_name(ev->magic);
	if (!allowed(&cfg->fs_include, &cfg->fs_exclude, fsname ? fsname : "unknown", list_match))
		return skip(DD_SKIP_FILTERED);
	if (ev->dir_size < cfg->min_dir_size)
		return skip(DD_SKIP_SMALL);
	/* the breaker: its requests (or an opener) hang there, send it nothing new */
	if (f->hung(f->ctx, ev))
		return skip(DD_SKIP_FS_HUNG);
	struct gate_verdict v = admit;
	switch (f->dup(f->ctx, ev)) {
	case GATE_DUP_OTHER:
		return skip(DD_SKIP_DUPLICATE); /* listed, and stat'ed by path as well */
	case GATE_DUP_STALE:
		/* BPF keeps one scan per process and directory: it ended that one */
		v.end_stale = true;
		break;
	case GATE_DUP_NONE:
		break;
	}
	/* its stats are served by the walk: timing them would judge our own prefetch (a walk covers
	 * one filesystem: the detector reports the walker's listings there only) */
	if (f->walking(f->ctx, ev)) {
		v.act = GATE_SKIP;
		v.why = DD_SKIP_WALKED;
	} else if (fsknow_entries(ev->fsinfo) == FSKNOW_NO_LOOKUPS) {
		/* each lookup sent there would queue in front of the program's own */
		v.act = GATE_SKIP;
		v.why = DD_SKIP_SERIAL_LOOKUPS;
	} else if (cfg->dry_run) {
		v.act = GATE_SKIP;
		v.why = DD_SKIP_DRY_RUN;
	}
	return v;
}

struct gate_verdict gate_path(const struct dd_config *cfg, const char *real_path)
{
	if ((cfg->path_include.n || cfg->path_exclude.n) &&
	    !allowed(&cfg->path_include, &cfg->path_exclude, real_path, prefix_match))
		return skip(DD_SKIP_FILTERED);
	return admit;
}
