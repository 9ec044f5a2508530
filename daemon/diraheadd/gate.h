/* SPDX-License-Identifier: LGPL-2.1-or-later OR BSD-2-Clause */
/*
 * The gate: whether a confirmed scan is admitted, as functions returning a verdict and touching
 * nothing (scan.c acts on it in one place: mute, forget, walk candidate).  Every filter is here:
 * [filter] comm and cgroup at the event, the filesystem (pseudo, [filter] fs), min_dir_size, the
 * breaker, duplicates, a walk covering it, a filesystem that serializes lookups (fsknow.h), dry
 * run, and [filter] path once the directory is open.  The limits (max_scans...) and the start rule (judge.h) come after the gate.
 */
#ifndef DIRAHEAD_GATE_H
#define DIRAHEAD_GATE_H

#include <stdbool.h>
#include "config.h"
#include "dirahead_event.h"
#include "stats.h"

enum gate_act {
	GATE_IGNORE,    /* the daemon is disabled: not even counted as skipped */
	GATE_SKIP,      /* skipped, for `why` */
	GATE_RESOLVE,   /* a run of stats by path: find its directory first, then gate_dir */
	GATE_ADMIT,     /* on to the next stage */
};

struct gate_verdict {
	enum gate_act act;
	enum dd_skip_reason why;    /* GATE_SKIP's */
	bool end_stale;             /* the process's scan of that directory is over for BPF (its END
				     * lost or queued behind this): end it, whatever the verdict */
};

/* What the gate asks the daemon about, only when it gets that far (each is a lookup: the
 * filesystem's record is made on the first). */
enum gate_dup { GATE_DUP_NONE, GATE_DUP_STALE, GATE_DUP_OTHER };
struct gate_facts {
	bool (*hung)(void *ctx, const struct dirahead_event *ev);      /* breaker, stuck opener */
	enum gate_dup (*dup)(void *ctx, const struct dirahead_event *ev);
	bool (*walking)(void *ctx, const struct dirahead_event *ev);   /* its walk covers it */
	void *ctx;
};

/* At the SCAN event: the comm and cgroup filters; a run by path goes to be resolved. */
struct gate_verdict gate_event(const struct dd_config *cfg, const struct dirahead_event *ev);
/* A sentinel's blocked call (arm.h): would the [filter] rules let a scan of that process, on
 * that filesystem (when the sentinel knew it), through?  The path filter is not known yet. */
bool gate_blocked(const struct dd_config *cfg, uint32_t tgid, const char *comm, bool fs_known,
		  uint64_t magic);
/* Once its directory is known (ev names it): filesystem, size, breaker, duplicates, walks. */
struct gate_verdict gate_dir(const struct dd_config *cfg, const struct dirahead_event *ev,
			     const struct gate_facts *f);
/* Once it is open: the [filter] path lists against where it really is. */
struct gate_verdict gate_path(const struct dd_config *cfg, const char *real_path);

#endif
