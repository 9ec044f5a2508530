/* SPDX-License-Identifier: LGPL-2.1-or-later OR BSD-2-Clause */
/*
 * The request budget ([budget] rule): on a metered backend (a cloud store behind rclone, an API
 * billed per call) the prefetch requests sent to one filesystem are held to a rate.  A rule
 *
 *     rule = SELECTOR:PATTERN RATE [BURST]
 *
 * selects filesystems by type (fstype:fuse.rclone, as mountinfo names it, or fuse as stat -f
 * does), mount source (source:b2:*) or path prefix (path:/mnt/b2), shell patterns for the first
 * two; RATE requests per second, BURST requests at once (default: one second's worth).  The first
 * rule that matches a filesystem applies, with one token bucket per filesystem and rule.  What
 * the budget does not grant is not sent at all (the program's own stat does it), never queued.
 *
 * The decisions are pure (the clock and the mount facts are given): budget_grant() says how many
 * requests may go now; scan.c acts on it where it moves a scan's window.  budget_mount_facts()
 * reads mountinfo for the facts (the only I/O here).
 */
#ifndef DIRAHEAD_BUDGET_H
#define DIRAHEAD_BUDGET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "config.h"

enum budget_sel { BUDGET_FSTYPE, BUDGET_SOURCE, BUDGET_PATH };

#define BUDGET_PATTERN_MAX 256
#define BUDGET_RATE_MAX 1e6
struct budget_rule {
	enum budget_sel sel;
	char pattern[BUDGET_PATTERN_MAX];
	double rate;                /* requests per second, > 0 */
	double burst;               /* requests at once, >= 1 */
};

/* Parses "SELECTOR:PATTERN RATE [BURST]": 0, or -1 with why ("unknown selector 'x' ..."). */
int budget_rule_parse(const char *text, struct budget_rule *r, char *why, size_t len);

/* What is known of the filesystem a request goes to. */
struct budget_fs {
	uint32_t dev_major, dev_minor;
	const char *fstype;         /* mountinfo's type ("fuse.rclone", "nfs4"); NULL: unknown */
	const char *magic_name;     /* fsmagic_name() ("fuse", "nfs"); NULL: unknown */
	const char *source;         /* mountinfo's source ("b2:bucket"); NULL: unknown */
	const char *path;           /* the directory's path as the daemon sees it; NULL: unknown */
};

/* The index of the first of rules[0..n) fs falls under, or -1. */
int budget_match(const struct budget_rule *rules, int n, const struct budget_fs *fs);
/* Whether any of them needs mountinfo's facts (type or source). */
bool budget_needs_mount(const struct budget_rule *rules, int n);

/* One token bucket: full at first (a burst may go at once), refilled at the rule's rate. */
struct budget_bucket {
	double tokens;
	uint64_t last_ns;
	bool started;
};
/* Up to want requests under rule r at now_ns: how many may go now (taken from the bucket). */
uint64_t budget_bucket_take(struct budget_bucket *b, const struct budget_rule *r, uint64_t want,
			    uint64_t now_ns);

/* The rules of one configuration and their buckets, one per filesystem and rule. */
struct budget;
/* The mount facts of a device: its type and source (copied into the budget); false if unknown. */
typedef bool (*budget_lookup_fn)(void *ctx, uint32_t major, uint32_t minor, char *fstype,
				 size_t tlen, char *source, size_t slen);
/* From the [budget] rule lines (checked at load: a bad one is skipped here); lookup is asked
 * once per device, only if a rule needs it.  NULL: out of memory. */
struct budget *budget_new(const struct dd_strlist *rules, budget_lookup_fn lookup, void *ctx);
void budget_free(struct budget *b);
/* No rules: every request goes (callers need not ask). */
bool budget_empty(const struct budget *b);

/* The decision: of `want` requests to fs (its dev, magic name and path; type and source are
 * looked up), how many may go at now_ns.  want when no rule applies; *ruled says whether one did. */
uint64_t budget_grant(struct budget *b, const struct budget_fs *fs, uint64_t want, uint64_t now_ns,
		      bool *ruled);

/* Whether a rule holds fs (tree-ahead keeps off such a filesystem: its listings and fetches
 * would go around the budget; each directory the program lists there is a budgeted scan). */
bool budget_holds(struct budget *b, const struct budget_fs *fs);

/* A lookup over a mountinfo file (ctx: its path, the host's), then /proc/self/mountinfo. */
bool budget_mount_facts(void *ctx, uint32_t major, uint32_t minor, char *fstype, size_t tlen,
			char *source, size_t slen);

#endif
