/* SPDX-License-Identifier: LGPL-2.1-or-later OR BSD-2-Clause */
/* The request budget per filesystem: rules, their matching and token buckets (budget.h). */
#include "budget.h"

#include <assert.h>
#include <errno.h>
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "persist.h"

/* Buckets kept (filesystems under a rule at once); an idle one is full again, so when they are
 * all taken the least recently used is given up without changing what it would grant. */
#define BUDGET_BUCKETS 256
/* Devices whose mount facts are cached; forgotten all at once when full (a remount or a new
 * mount gets a fresh look). */
#define BUDGET_MOUNTS 64
#define BUDGET_FSTYPE_MAX 64
#define BUDGET_SOURCE_MAX 256

static const struct { const char *name; enum budget_sel sel; } selectors[] = {
	{ "fstype", BUDGET_FSTYPE }, { "source", BUDGET_SOURCE }, { "path", BUDGET_PATH },
};

/* A positive number up to max. */
static bool parse_number(const char *s, double max, double *out)
{
	char *end;
	errno = 0;
	double d = strtod(s, &end);
	if (errno || end == s || *end || !(d > 0 && d <= max))
		return false;
	*out = d;
	return true;
}

int budget_rule_parse(const char *text, struct budget_rule *r, char *why, size_t len)
{
	char buf[512], *save = NULL;
	if (strlen(text) >= sizeof(buf)) {
		snprintf(why, len, "rule longer than %zu characters", sizeof(buf) - 1);
		return -1;
	}
	strcpy(buf, text);
	char *sel = strtok_r(buf, " \t", &save), *rate = strtok_r(NULL, " \t", &save);
	char *burst = strtok_r(NULL, " \t", &save), *more = strtok_r(NULL, " \t", &save);
	if (!sel || !rate || more) {
		snprintf(why, len, "'%s' is not SELECTOR:PATTERN RATE [BURST] (fstype:fuse.rclone 50)",
			 text);
		return -1;
	}
	char *colon = strchr(sel, ':');
	size_t i, n = sizeof(selectors) / sizeof(selectors[0]);
	for (i = 0; colon && i < n; i++)
		if (strlen(selectors[i].name) == (size_t)(colon - sel) &&
		    !strncmp(sel, selectors[i].name, (size_t)(colon - sel)))
			break;
	if (!colon || i == n) {
		snprintf(why, len, "unknown selector '%.*s' (fstype:, source: or path:)",
			 colon ? (int)(colon - sel) : (int)strlen(sel), sel);
		return -1;
	}
	const char *pat = colon + 1;
	if (!pat[0] || strlen(pat) >= sizeof(r->pattern)) {
		snprintf(why, len, "'%s': the pattern after %s: is empty or too long", text,
			 selectors[i].name);
		return -1;
	}
	if (selectors[i].sel == BUDGET_PATH && pat[0] != '/') {
		snprintf(why, len, "'%s' is not an absolute path", pat);
		return -1;
	}
	*r = (struct budget_rule){ .sel = selectors[i].sel };
	strcpy(r->pattern, pat);
	if (!parse_number(rate, BUDGET_RATE_MAX, &r->rate)) {
		snprintf(why, len, "rate '%s' is not a number of requests per second above 0, up to %.0f",
			 rate, BUDGET_RATE_MAX);
		return -1;
	}
	r->burst = r->rate < 1 ? 1 : r->rate;
	if (burst && (!parse_number(burst, BUDGET_RATE_MAX, &r->burst) || r->burst < 1)) {
		snprintf(why, len, "burst '%s' is not a number of requests from 1 to %.0f", burst,
			 BUDGET_RATE_MAX);
		return -1;
	}
	return 0;
}

/* As [filter] path_include: the prefix, then the end or a slash. */
static bool path_under(const char *prefix, const char *path)
{
	size_t n = strlen(prefix);
	while (n > 1 && prefix[n - 1] == '/')
		n--;
	return !strncmp(path, prefix, n) && (path[n] == '/' || path[n] == '\0' || n == 1);
}

static bool rule_matches(const struct budget_rule *r, const struct budget_fs *fs)
{
	switch (r->sel) {
	case BUDGET_FSTYPE:
		/* mountinfo's name (fuse.rclone) or the superblock's (fuse): either selects */
		return (fs->fstype && !fnmatch(r->pattern, fs->fstype, 0)) ||
		       (fs->magic_name && !fnmatch(r->pattern, fs->magic_name, 0));
	case BUDGET_SOURCE:
		return fs->source && !fnmatch(r->pattern, fs->source, 0);
	case BUDGET_PATH:
		return fs->path && path_under(r->pattern, fs->path);
	}
	return false;
}

int budget_match(const struct budget_rule *rules, int n, const struct budget_fs *fs)
{
	for (int i = 0; i < n; i++)
		if (rule_matches(&rules[i], fs))
			return i;
	return -1;
}

bool budget_needs_mount(const struct budget_rule *rules, int n)
{
	for (int i = 0; i < n; i++)
		if (rules[i].sel != BUDGET_PATH)
			return true;
	return false;
}

uint64_t budget_bucket_take(struct budget_bucket *b, const struct budget_rule *r, uint64_t want,
			    uint64_t now_ns)
{
	assert(r->rate > 0 && r->burst >= 1);
	if (!b->started) {
		*b = (struct budget_bucket){ .tokens = r->burst, .last_ns = now_ns, .started = true };
	} else if (now_ns > b->last_ns) {
		b->tokens += (double)(now_ns - b->last_ns) * r->rate / 1e9;
		if (b->tokens > r->burst)
			b->tokens = r->burst;
		b->last_ns = now_ns;
	}
	/* whole requests only; the fraction stays for the next call */
	double whole = b->tokens < 0 ? 0 : (double)(uint64_t)b->tokens;
	uint64_t got = (double)want < whole ? want : (uint64_t)whole;
	b->tokens -= (double)got;
	return got;
}

struct budget_slot {
	uint32_t major, minor;
	int rule;                   /* -1: free */
	uint64_t used_ns;
	struct budget_bucket bucket;
};

struct budget_mount {
	uint32_t major, minor;
	bool known;
	char fstype[BUDGET_FSTYPE_MAX], source[BUDGET_SOURCE_MAX];
};

struct budget {
	struct budget_rule rules[DD_LIST_MAX];
	int nrules;
	bool need_mount;
	budget_lookup_fn lookup;
	void *ctx;
	struct budget_slot slots[BUDGET_BUCKETS];
	struct budget_mount mounts[BUDGET_MOUNTS];
	unsigned nmounts;
};

struct budget *budget_new(const struct dd_strlist *rules, budget_lookup_fn lookup, void *ctx)
{
	struct budget *b = calloc(1, sizeof(*b));
	char why[256];
	if (!b)
		return NULL;
	for (int i = 0; i < rules->n && b->nrules < DD_LIST_MAX; i++)
		if (budget_rule_parse(rules->v[i], &b->rules[b->nrules], why, sizeof(why)) == 0)
			b->nrules++;
	b->need_mount = budget_needs_mount(b->rules, b->nrules);
	b->lookup = lookup;
	b->ctx = ctx;
	for (int i = 0; i < BUDGET_BUCKETS; i++)
		b->slots[i].rule = -1;
	return b;
}

void budget_free(struct budget *b)
{
	free(b);
}

bool budget_empty(const struct budget *b)
{
	return !b || b->nrules == 0;
}

/* The device's mount facts, looked up once. */
static const struct budget_mount *mount_of(struct budget *b, uint32_t major, uint32_t minor)
{
	for (unsigned i = 0; i < b->nmounts; i++)
		if (b->mounts[i].major == major && b->mounts[i].minor == minor)
			return &b->mounts[i];
	if (b->nmounts == BUDGET_MOUNTS)
		b->nmounts = 0;
	struct budget_mount *m = &b->mounts[b->nmounts++];
	*m = (struct budget_mount){ .major = major, .minor = minor };
	m->known = b->lookup && b->lookup(b->ctx, major, minor, m->fstype, sizeof(m->fstype),
					  m->source, sizeof(m->source));
	return m;
}

/* The bucket of (device, rule): found, or a free or the least recently used slot. */
static struct budget_bucket *bucket_of(struct budget *b, uint32_t major, uint32_t minor, int rule,
				       uint64_t now_ns)
{
	struct budget_slot *victim = &b->slots[0];
	for (int i = 0; i < BUDGET_BUCKETS; i++) {
		struct budget_slot *s = &b->slots[i];
		if (s->rule == rule && s->major == major && s->minor == minor) {
			s->used_ns = now_ns;
			return &s->bucket;
		}
		if (victim->rule >= 0 && (s->rule < 0 || s->used_ns < victim->used_ns))
			victim = s;
	}
	*victim = (struct budget_slot){ .major = major, .minor = minor, .rule = rule, .used_ns = now_ns };
	return &victim->bucket;
}

/* The rule fs falls under, its mount facts looked up if a rule needs them; -1: none. */
static int rule_of(struct budget *b, const struct budget_fs *fs)
{
	struct budget_fs f = *fs;
	if (b->need_mount && (!f.fstype || !f.source)) {
		const struct budget_mount *m = mount_of(b, fs->dev_major, fs->dev_minor);
		if (m->known) {
			f.fstype = f.fstype ? f.fstype : m->fstype;
			f.source = f.source ? f.source : m->source;
		}
	}
	return budget_match(b->rules, b->nrules, &f);
}

bool budget_holds(struct budget *b, const struct budget_fs *fs)
{
	return !budget_empty(b) && rule_of(b, fs) >= 0;
}

uint64_t budget_grant(struct budget *b, const struct budget_fs *fs, uint64_t want, uint64_t now_ns,
		      bool *ruled)
{
	*ruled = false;
	if (budget_empty(b) || !want)
		return want;
	int rule = rule_of(b, fs);
	if (rule < 0)
		return want;
	*ruled = true;
	return budget_bucket_take(bucket_of(b, fs->dev_major, fs->dev_minor, rule, now_ns),
				  &b->rules[rule], want, now_ns);
}

/* The mount of major:minor in one mountinfo file. */
static bool facts_in(const char *path, uint32_t major, uint32_t minor, char *fstype, size_t tlen,
		     char *source, size_t slen)
{
	FILE *f = fopen(path, "re");
	char *line = NULL;
	size_t len = 0;
	bool found = false;
	while (f && !found && getline(&line, &len, f) > 0) {
		struct persist_mount m;
		if (persist_parse_mountinfo(line, &m) < 0 || m.dev_major != major || m.dev_minor != minor)
			continue;
		snprintf(fstype, tlen, "%s", m.fstype);
		snprintf(source, slen, "%s", m.source);
		found = true;
	}
	free(line);
	if (f)
		fclose(f);
	return found;
}

bool budget_mount_facts(void *ctx, uint32_t major, uint32_t minor, char *fstype, size_t tlen,
			char *source, size_t slen)
{
	/* the host's table first; a mount made in the daemon's own namespace only, then */
	return facts_in(ctx, major, minor, fstype, tlen, source, slen) ||
	       facts_in("/proc/self/mountinfo", major, minor, fstype, tlen, source, slen);
}
