/* SPDX-License-Identifier: LGPL-2.1-or-later OR BSD-2-Clause */
/* Defaults and the INI config file (parsed with inih). */
#include "config.h"

#include <arpa/inet.h>
#include <assert.h>
#include <errno.h>
#include <grp.h>
#include <ini.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <syslog.h>
#include <unistd.h>

#include "budget.h"
#include "hostcheck.h"

void dd_config_defaults(struct dd_config *c)
{
	*c = (struct dd_config){
		.enabled = true,
		.confirm_stats = 2,
		.unlisted_stats = 8,
		.table_share_per_user = 25, /* four users' idle listings fill the tables, not one's */
		.arm_always = false,   /* on-block: nothing on the syscall path while caches are warm */
		.quiet_s = 5,
		.window_start = 8,     /* Lustre statahead_min */
		.window_max = 1024,    /* above Lustre's 128: one stat is one round trip here, no batching */
		.max_scans = 16,       /* Lustre statahead_running_max */
		.max_scans_per_process = 4,
		.max_scans_per_user = 8,     /* half of max_scans: one user cannot take them all */
		.max_scans_per_cgroup = 8,
		.depth_per_user = 64,        /* half of depth_total */
		.depth_per_scan = 64,
		.depth_total = 128,
		.engine = DIRAHEAD_BACKEND_AUTO,
		.order = DIRAHEAD_ORDER_DEFAULT,
		.min_dir_size = 0,
		.idle_timeout_ms = 5000,
		.stop_min_hits = 32,
		.stop_hit_ratio = 0.8,
		.stop_consecutive_misses = 32,
		.policy_enabled = true,
		.probe_stats = 8,
		.start_factor = 1.5,   /* our CPU is the program's loss only where both need it */
		.entry_cost_us = 10,
		.gain_stats = 64,
		.min_gain = 1.3,
		.reprobe_s = 60,
		.remember_days = 30,
		.mute_ms = 2000,
		.depth_min = 4,
		.max_filesystems = 256,
		.walk_enabled = true,
		.walk_list_only = true,
		.walk_max = 8,
		.walk_open_dirs = 8,
		.walk_ahead_dirs = 64,
		.walk_ahead_entries = 8192,
		.log_level = LOG_INFO,
		.log_summary_s = 60,
		.metrics_access = DD_METRICS_ALL,
	};
	c->proc_path = strdup("/proc");
	c->state_dir = strdup("/var/lib/dirahead");
	c->metrics_address = strdup("127.0.0.1:9567");
	c->socket_path = strdup(DD_SOCKET_PATH);
	c->socket_group = strdup("");
}

static void strlist_free(struct dd_strlist *l)
{
	for (int i = 0; i < l->n; i++)
		free(l->v[i]);
	l->n = 0;
}

/* ------------------------------------------------------------------------------------------ */
/* The keys: one typed table.  A key's type parses and stores its value and words its error
 * ("[section] key: 'VALUE' is not <expect>"); a check of its own only where the type is not all. */

enum key_type {
	KEY_BOOL,   /* bool: yes, true, on, 1 or no, false, off, 0 */
	KEY_UINT,   /* unsigned, a whole number from lo to hi */
	KEY_U64,    /* uint64_t, a whole number from lo to hi */
	KEY_DOUBLE, /* double, a number from dlo to dhi */
	KEY_ENUM,   /* an int-sized (or bool) field: one of values[] */
	KEY_STR,    /* char *, malloc'ed */
	KEY_LIST,   /* struct dd_strlist: words between blanks or commas; empty clears it */
	KEY_LINES,  /* struct dd_strlist: each line of the key adds its whole value; empty clears */
};

struct key_enum {
	const char *name;
	int value;
};

struct key {
	const char *section, *name;
	enum key_type type;
	size_t off, size;           /* the field in struct dd_config */
	unsigned long long lo, hi;  /* UINT, U64 */
	double dlo, dhi;            /* DOUBLE */
	const struct key_enum *values; /* ENUM, ended by a NULL name */
	bool nocase;                /* ENUM: names in any case */
	const char *expect;         /* the error's "is not <expect>"; NULL: the type's own words */
	/* The key's own rule on a value its type accepted: numbers as parsed (unsigned long long),
	 * lists once stored (struct dd_strlist), strings before (NULL).  false breaks it: the error
	 * is why, or with why left empty, "is not <expect>". */
	bool (*check)(const char *value, const void *parsed, char *why, size_t len);
};

static bool check_not_one(const char *value, const void *parsed, char *why, size_t len)
{
	(void)value, (void)why, (void)len;
	/* BPF counts distinct names by bits of a 64-bit set: a few dozen at most, and 1 is no run */
	return *(const unsigned long long *)parsed != 1;
}

static bool check_absolute(const char *value, const void *parsed, char *why, size_t len)
{
	(void)parsed, (void)why, (void)len;
	return value[0] == '/';
}

static bool check_absolute_or_empty(const char *value, const void *parsed, char *why, size_t len)
{
	(void)parsed, (void)why, (void)len;
	return !value[0] || value[0] == '/';
}

static bool check_group(const char *value, const void *parsed, char *why, size_t len)
{
	(void)parsed;
	/* Checked here so that a typo is an error with a line number, not a failed start. */
	if (value[0] && !getgrnam(value)) {
		snprintf(why, len, "no group named '%s'", value);
		return false;
	}
	return true;
}

static bool check_address(const char *value, const void *parsed, char *why, size_t len)
{
	struct sockaddr_storage ss;
	struct sockaddr_un sa;
	const char *up = dd_unix_address(value);
	(void)parsed;
	if (up && (up[0] != '/' || up[strlen(up) - 1] == '/'))
		snprintf(why, len, "'%s' is not unix:/ABSOLUTE/PATH of a socket", value);
	else if (up && strlen(up) >= sizeof(sa.sun_path))
		snprintf(why, len, "'%s': the path is longer than %zu bytes", value, sizeof(sa.sun_path) - 1);
	else if (!up && value[0] && dd_parse_address(value, &ss) < 0)
		snprintf(why, len, "'%s' is not ADDRESS:PORT (127.0.0.1:9567, [::1]:9567, :9567), "
			 "unix:/PATH or empty", value);
	return !why[0];
}

/* cgroup patterns are matched against absolute paths: anything else never would match */
static bool check_cgroups(const char *value, const void *parsed, char *why, size_t len)
{
	const struct dd_strlist *l = parsed;
	(void)value;
	for (int i = 0; i < l->n; i++)
		if (l->v[i][0] != '/') {
			snprintf(why, len, "'%s' is not a cgroup path (one starting with /, as in "
				 "/proc/PID/cgroup)", l->v[i]);
			return false;
		}
	return true;
}

static bool check_hosts(const char *value, const void *parsed, char *why, size_t len)
{
	const struct dd_strlist *l = parsed;
	struct dd_host h;
	(void)value;
	for (int i = 0; i < l->n; i++)
		if (dd_host_parse(l->v[i], &h) < 0) {
			snprintf(why, len, "'%s' is not NAME or NAME:PORT (a host name, IPv4 address or "
				 "[IPv6 address])", l->v[i]);
			return false;
		}
	return true;
}

/* [budget] rule: SELECTOR:PATTERN RATE [BURST] (budget.h) */
static bool check_budget_rule(const char *value, const void *parsed, char *why, size_t len)
{
	struct budget_rule r;
	(void)parsed;
	return !value[0] || budget_rule_parse(value, &r, why, len) == 0;
}

static const struct key_enum arm_modes[] = { { "on-block", false }, { "always", true }, { NULL, 0 } };
static const struct key_enum engines[] = {
	{ "auto", DIRAHEAD_BACKEND_AUTO }, { "io_uring", DIRAHEAD_BACKEND_URING },
	{ "threads", DIRAHEAD_BACKEND_THREADS }, { NULL, 0 },
};
static const struct key_enum orders[] = {
	{ "auto", DIRAHEAD_ORDER_DEFAULT }, { "readdir", DIRAHEAD_ORDER_READDIR },
	{ "inode", DIRAHEAD_ORDER_INODE }, { "name", DIRAHEAD_ORDER_NAME }, { NULL, 0 },
};
static const struct key_enum access_modes[] = {
	{ "all", DD_METRICS_ALL }, { "control-group", DD_METRICS_CONTROL_GROUP }, { NULL, 0 },
};
/* syslog's levels; the error names the useful ones */
static const struct key_enum log_levels[] = {
	{ "emerg", LOG_EMERG }, { "alert", LOG_ALERT }, { "crit", LOG_CRIT }, { "err", LOG_ERR },
	{ "warning", LOG_WARNING }, { "notice", LOG_NOTICE }, { "info", LOG_INFO }, { "debug", LOG_DEBUG },
	{ NULL, 0 },
};

#define FIELD(f) .off = offsetof(struct dd_config, f), .size = sizeof(((struct dd_config *)0)->f)
#define BOOL(sec, key, f) { .section = sec, .name = key, .type = KEY_BOOL, FIELD(f) }
#define UINT(sec, key, f, min, max) \
	{ .section = sec, .name = key, .type = KEY_UINT, FIELD(f), .lo = min, .hi = max }
#define DOUBLE(sec, key, f, min, max) \
	{ .section = sec, .name = key, .type = KEY_DOUBLE, FIELD(f), .dlo = min, .dhi = max }
#define ENUM(sec, key, f, vals, words) \
	{ .section = sec, .name = key, .type = KEY_ENUM, FIELD(f), .values = vals, .expect = words }
#define STR(sec, key, f, chk, words) \
	{ .section = sec, .name = key, .type = KEY_STR, FIELD(f), .check = chk, .expect = words }
#define LIST(sec, key, f, chk) { .section = sec, .name = key, .type = KEY_LIST, FIELD(f), .check = chk }
#define LINES(sec, key, f, chk) { .section = sec, .name = key, .type = KEY_LINES, FIELD(f), .check = chk }
#define KEY(sec, key, t, f, ...) { .section = sec, .name = key, .type = t, FIELD(f), __VA_ARGS__ }

/* Every key of dirahead.conf(5), each as NAME("section", "key", ...) (tests/integration/pkg-man.sh
 * reads them so). */
static const struct key keys[] = {
	BOOL("daemon", "enabled", enabled),
	BOOL("daemon", "dry_run", dry_run),
	KEY("daemon", "log_level", KEY_ENUM, log_level, .values = log_levels, .nocase = true,
	    .expect = "one of err, warning, notice, info, debug"),
	UINT("daemon", "log_summary_s", log_summary_s, 0, 86400),
	STR("daemon", "proc", proc_path, check_absolute, "an absolute path"),
	STR("daemon", "state_dir", state_dir, check_absolute_or_empty,
	    "an absolute path, or nothing (no memory across restarts)"),
	UINT("detect", "confirm_stats", confirm_stats, 1, 1000),
	KEY("detect", "unlisted_stats", KEY_UINT, unlisted_stats, .lo = 0, .hi = 32,
	    .check = check_not_one, .expect = "0 (off) or a whole number from 2 to 32"),
	KEY("detect", "min_dir_size", KEY_U64, min_dir_size, .lo = 0, .hi = 1ull << 40,
	    .expect = "a size in bytes"),
	UINT("detect", "table_share_per_user", table_share_per_user, 0, 100),
	ENUM("detect", "arm", arm_always, arm_modes, "on-block or always"),
	UINT("detect", "quiet_s", quiet_s, 1, 3600),
	UINT("prefetch", "window_start", window_start, 1, 1u << 20),
	UINT("prefetch", "window_max", window_max, 1, 1u << 20),
	UINT("prefetch", "max_scans", max_scans, 1, 4096),
	UINT("prefetch", "max_scans_per_process", max_scans_per_process, 1, 4096),
	UINT("prefetch", "max_scans_per_user", max_scans_per_user, 1, 4096),
	UINT("prefetch", "max_scans_per_cgroup", max_scans_per_cgroup, 1, 4096),
	UINT("prefetch", "depth_per_user", depth_per_user, 1, 65536),
	UINT("prefetch", "depth_per_scan", depth_per_scan, 1, 4096),
	UINT("prefetch", "depth_total", depth_total, 1, 65536),
	UINT("prefetch", "idle_timeout_ms", idle_timeout_ms, 10, 3600000),
	ENUM("prefetch", "engine", engine, engines, "auto, io_uring or threads"),
	ENUM("prefetch", "order", order, orders, "auto, readdir, inode or name"),
	UINT("stop", "min_hits", stop_min_hits, 0, 1u << 30),
	DOUBLE("stop", "hit_ratio", stop_hit_ratio, 0, 1),
	UINT("stop", "consecutive_misses", stop_consecutive_misses, 1, 1u << 30),
	BOOL("policy", "enabled", policy_enabled),
	UINT("policy", "probe_stats", probe_stats, 2, 100000),
	DOUBLE("policy", "start_factor", start_factor, 0, 1000),
	UINT("policy", "entry_cost_us", entry_cost_us, 1, 1000000),
	UINT("policy", "gain_stats", gain_stats, 8, 1000000),
	DOUBLE("policy", "min_gain", min_gain, 1, 100),
	UINT("policy", "reprobe_s", reprobe_s, 1, 86400),
	UINT("policy", "mute_ms", mute_ms, 0, 3600000),
	UINT("policy", "depth_min", depth_min, 1, 4096),
	UINT("policy", "max_filesystems", max_filesystems, 1, 65536),
	UINT("policy", "remember_days", remember_days, 0, 3650),
	BOOL("walk", "enabled", walk_enabled),
	BOOL("walk", "list_only", walk_list_only),
	UINT("walk", "max_walks", walk_max, 1, 4096),
	UINT("walk", "open_dirs", walk_open_dirs, 1, 1024),
	UINT("walk", "ahead_dirs", walk_ahead_dirs, 1, 65536),
	UINT("walk", "ahead_entries", walk_ahead_entries, 1, 1u << 24),
	LIST("filter", "fs_include", fs_include, NULL),
	LIST("filter", "fs_exclude", fs_exclude, NULL),
	LIST("filter", "path_include", path_include, NULL),
	LIST("filter", "path_exclude", path_exclude, NULL),
	LIST("filter", "comm_include", comm_include, NULL),
	LIST("filter", "comm_exclude", comm_exclude, NULL),
	LIST("filter", "cgroup_include", cgroup_include, check_cgroups),
	LIST("filter", "cgroup_exclude", cgroup_exclude, check_cgroups),
	LINES("budget", "rule", budget_rules, check_budget_rule),
	STR("metrics", "address", metrics_address, check_address, NULL),
	ENUM("metrics", "access", metrics_access, access_modes, "all or control-group"),
	LIST("metrics", "allowed_hosts", metrics_hosts, check_hosts),
	STR("control", "socket", socket_path, check_absolute, "an absolute path"),
	STR("control", "group", socket_group, check_group, NULL),
};
#define NKEYS (sizeof(keys) / sizeof(keys[0]))

/* Keys whose values must not be in reverse order: checked once the whole file is in. */
static const struct { const char *section, *low, *high; } ordered_keys[] = {
	{ "prefetch", "window_start", "window_max" },
	{ "prefetch", "depth_per_scan", "depth_total" },
};

static const struct key *key_find(const char *section, const char *name)
{
	for (size_t i = 0; i < NKEYS; i++)
		if (!strcmp(section, keys[i].section) && !strcmp(name, keys[i].name))
			return &keys[i];
	return NULL;
}

static bool section_known(const char *section)
{
	for (size_t i = 0; i < NKEYS; i++)
		if (!strcmp(section, keys[i].section))
			return true;
	return false;
}

void dd_config_free(struct dd_config *c)
{
	for (size_t i = 0; i < NKEYS; i++) {
		void *field = (char *)c + keys[i].off;
		if (keys[i].type == KEY_LIST || keys[i].type == KEY_LINES) {
			strlist_free(field);
		} else if (keys[i].type == KEY_STR) {
			free(*(char **)field);
			*(char **)field = NULL;
		}
	}
}

struct parse_ctx {
	struct dd_config *c;
	FILE *f;
	int line;               /* the line inih is on: our reader counts them */
	int err_line;           /* line of err, or of an over-long line */
	char err[256];          /* first error only */
	int key_line[NKEYS];    /* the line of each key set, for the keys checked against each other */
};

/* inih's reader, counting lines so that errors found after the fact (keys checked against each
 * other) can still name one.  inih reads into a fixed buffer: a longer line would come back in
 * pieces, the rest parsed as lines of their own, so it is an error here; so is a NUL byte, after
 * which inih would see nothing of the line (the rest of it, a setting an editor shows as part of
 * a comment, was read as a line of its own).  Byte by byte: only that sees where a line ends. */
static char *read_line(char *str, int num, void *stream)
{
	struct parse_ctx *p = stream;
	int ch, n = 0;
	bool nul = false;
	while ((ch = getc(p->f)) != EOF && ch != '\n') {
		nul |= ch == '\0';
		if (n < num - 1)
			str[n] = (char)ch;
		n++;
	}
	if (ch == EOF && n == 0)
		return NULL;
	p->line++;
	str[n < num - 1 ? n : num - 1] = '\0';
	if (nul || n > num - 1) {
		if (!p->err[0]) {
			/* name the key (or whatever starts the line) */
			int k = (int)strspn(str, " \t");
			int klen = (int)strcspn(str + k, " \t=:");
			if (nul)
				snprintf(p->err, sizeof(p->err), "a NUL byte in the line (not a text file?)");
			else
				snprintf(p->err, sizeof(p->err), "%.*s: line longer than %d characters",
					 klen > 64 ? 64 : klen, str + k, num - 1);
			p->err_line = p->line;
		}
		str[0] = '\0'; /* an empty line: nothing more to say about it */
	}
	return str;
}

static bool parse_uint(const char *v, unsigned long long lo, unsigned long long hi,
		       unsigned long long *out)
{
	char *end;
	if (*v == '-' || *v == '\0')
		return false;
	errno = 0;
	unsigned long long x = strtoull(v, &end, 10);
	if (errno || *end || x < lo || x > hi)
		return false;
	*out = x;
	return true;
}

static bool parse_bool(const char *v, bool *out)
{
	if (!strcasecmp(v, "yes") || !strcasecmp(v, "true") || !strcmp(v, "1") || !strcasecmp(v, "on"))
		*out = true;
	else if (!strcasecmp(v, "no") || !strcasecmp(v, "false") || !strcmp(v, "0") ||
		 !strcasecmp(v, "off"))
		*out = false;
	else
		return false;
	return true;
}

/* A decimal number from lo to hi. */
static bool parse_double(const char *v, double lo, double hi, double *out)
{
	char *end;
	errno = 0;
	double d = strtod(v, &end);
	if (errno || *end || end == v || !(d >= lo && d <= hi))
		return false;
	*out = d;
	return true;
}

static bool parse_enum(const struct key *k, const char *v, int *out)
{
	for (const struct key_enum *e = k->values; e->name; e++)
		if (k->nocase ? !strcasecmp(v, e->name) : !strcmp(v, e->name)) {
			*out = e->value;
			return true;
		}
	return false;
}

/* Whitespace-separated words; an empty value clears the list. */
static bool parse_list(const char *v, struct dd_strlist *l)
{
	strlist_free(l);
	char *dup = strdup(v), *save = NULL;
	if (!dup)
		return false;
	for (char *w = strtok_r(dup, " \t,", &save); w; w = strtok_r(NULL, " \t,", &save)) {
		if (l->n == DD_LIST_MAX) {
			free(dup);
			return false;
		}
		l->v[l->n++] = strdup(w);
	}
	free(dup);
	return true;
}

/* One more line of a repeated key; an empty value clears the lines before it. */
static bool add_line(const char *v, struct dd_strlist *l)
{
	if (!v[0]) {
		strlist_free(l);
		return true;
	}
	if (l->n == DD_LIST_MAX)
		return false;
	l->v[l->n] = strdup(v);
	return l->v[l->n++] != NULL;
}

static int set_str(char **dst, const char *v)
{
	char *s = strdup(v);
	if (!s)
		return 0;
	free(*dst);
	*dst = s;
	return 1;
}

#define ERR(...) (snprintf(p->err, sizeof(p->err), __VA_ARGS__), p->err_line = p->line, 0)

/* The type's words for a value it does not take: "yes or no", "a whole number from 1 to 8". */
static void expected(const struct key *k, char *buf, size_t len)
{
	if (k->expect)
		snprintf(buf, len, "%s", k->expect);
	else if (k->type == KEY_BOOL)
		snprintf(buf, len, "yes or no");
	else if (k->type == KEY_UINT || k->type == KEY_U64)
		snprintf(buf, len, "a whole number from %llu to %llu", k->lo, k->hi);
	else if (k->type == KEY_DOUBLE)
		snprintf(buf, len, "a number from %g to %g", k->dlo, k->dhi);
	else
		buf[0] = '\0'; /* lists and strings: their checks say what is wrong */
}

/* Parses value as k's type: into field, or for numbers into *u (their check sees them before they
 * are stored).  false when the type does not take it. */
static bool parse_value(const struct key *k, void *field, const char *value, unsigned long long *u)
{
	int e;
	switch (k->type) {
	case KEY_BOOL:
		assert(k->size == sizeof(bool));
		return parse_bool(value, field);
	case KEY_UINT:
	case KEY_U64:
		assert(k->size == (k->type == KEY_UINT ? sizeof(unsigned) : sizeof(uint64_t)));
		return parse_uint(value, k->lo, k->hi, u);
	case KEY_DOUBLE:
		assert(k->size == sizeof(double));
		return parse_double(value, k->dlo, k->dhi, field);
	case KEY_ENUM:
		assert(k->values && (k->size == sizeof(int) || k->size == sizeof(bool)));
		if (!parse_enum(k, value, &e))
			return false;
		if (k->size == sizeof(bool))
			*(bool *)field = e != 0;
		else
			*(int *)field = e;
		return true;
	case KEY_STR:
		assert(k->size == sizeof(char *));
		return true; /* stored once checked */
	case KEY_LIST:
		assert(k->size == sizeof(struct dd_strlist));
		return parse_list(value, field); /* false: too many words */
	case KEY_LINES:
		assert(k->size == sizeof(struct dd_strlist));
		return add_line(value, field); /* false: too many lines */
	}
	return false;
}

/* Sets key k to value: 1, or 0 with the error in p (or out of memory: inih reports the line). */
static int set_key(struct parse_ctx *p, const struct key *k, const char *value)
{
	void *field = (char *)p->c + k->off;
	unsigned long long u = 0;
	char why[sizeof(p->err)] = "", words[96];
	bool number = k->type == KEY_UINT || k->type == KEY_U64;
	bool ok = parse_value(k, field, value, &u);
	if (ok && k->check)
		ok = k->check(value, number ? (const void *)&u : field, why, sizeof(why));
	if (!ok && k->type == KEY_LINES && !why[0])
		return ERR("[%s] %s: more than %d lines", k->section, k->name, DD_LIST_MAX);
	if (!ok && why[0])
		return ERR("[%s] %s: %s", k->section, k->name, why);
	if (!ok && k->type == KEY_LIST)
		return ERR("[%s] %s: more than %d entries", k->section, k->name, DD_LIST_MAX);
	if (!ok) {
		expected(k, words, sizeof(words));
		return ERR("[%s] %s: '%s' is not %s", k->section, k->name, value, words);
	}
	if (k->type == KEY_UINT)
		*(unsigned *)field = (unsigned)u;
	else if (k->type == KEY_U64)
		*(uint64_t *)field = u;
	else if (k->type == KEY_STR)
		return set_str(field, value);
	return 1;
}

static int handler(void *user, const char *section, const char *name, const char *value)
{
	struct parse_ctx *p = user;
	if (p->err[0])
		return 0; /* keep the first error */
	const struct key *k = key_find(section, name);
	if (k) {
		p->key_line[k - keys] = p->line;
		return set_key(p, k, value);
	}
	if (!section[0])
		return ERR("%s: key before any [section]", name);
	if (!section_known(section))
		return ERR("[%s] %s: unknown section", section, name);
	return ERR("[%s] %s: unknown key", section, name);
}

/* Keys whose values must not be in reverse order, checked once the whole file is in: 0, or -1
 * with err naming the line of the later of the two. */
static int check_order(const struct parse_ctx *p, const char *path, char *err, size_t errlen)
{
	for (size_t i = 0; i < sizeof(ordered_keys) / sizeof(ordered_keys[0]); i++) {
		const struct key *lo = key_find(ordered_keys[i].section, ordered_keys[i].low);
		const struct key *hi = key_find(ordered_keys[i].section, ordered_keys[i].high);
		assert(lo && hi && lo->type == KEY_UINT && hi->type == KEY_UINT);
		unsigned l = *(const unsigned *)((const char *)p->c + lo->off);
		unsigned h = *(const unsigned *)((const char *)p->c + hi->off);
		if (l <= h)
			continue;
		int ll = p->key_line[lo - keys], hl = p->key_line[hi - keys];
		snprintf(err, errlen, "%s:%d: [%s] %s (%u) is above %s (%u)", path, ll > hl ? ll : hl,
			 lo->section, lo->name, l, hi->name, h);
		return -1;
	}
	return 0;
}

/* The text of line `line` of f (for a syntax error, which inih reports by number only). */
static void quote_line(FILE *f, int line, char *out, size_t outlen)
{
	char buf[256];
	int n = 0;
	out[0] = '\0';
	rewind(f);
	while (fgets(buf, sizeof(buf), f))
		if (++n == line) {
			size_t len = strcspn(buf, "\r\n");
			if (len >= outlen)
				len = outlen - 1;
			memcpy(out, buf, len);
			out[len] = '\0';
			return;
		}
}

int dd_config_load(struct dd_config *c, const char *path, bool *missing, char *err, size_t errlen)
{
	struct parse_ctx p = { .c = c };
	struct stat st;
	*missing = false;
	FILE *f = fopen(path, "re");
	if (!f) {
		if (errno == ENOENT) {
			*missing = true;
			return 0;
		}
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return -1;
	}
	if (fstat(fileno(f), &st) == 0 && S_ISDIR(st.st_mode)) {
		/* fopen() succeeds on a directory and reading it gives nothing: "valid" otherwise */
		snprintf(err, errlen, "%s: %s", path, strerror(EISDIR));
		fclose(f);
		return -1;
	}
	p.f = f;
	int line = ini_parse_stream(read_line, &p, handler, &p);
	if (line == -2) {
		fclose(f);
		snprintf(err, errlen, "%s: out of memory", path);
		return -1;
	}
	if (ferror(f)) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		fclose(f);
		return -1;
	}
	/* inih goes on after an error and returns the first failing line: a syntax error (no
	 * message of ours) or one of our errors, whichever came first. */
	if (line > 0 && (!p.err[0] || line < p.err_line)) {
		char text[128];
		quote_line(f, line, text, sizeof(text));
		fclose(f);
		snprintf(err, errlen, "%s:%d: syntax error in '%s' (expected [section] or key = value)",
			 path, line, text);
		return -1;
	}
	fclose(f);
	if (p.err[0]) {
		snprintf(err, errlen, "%s:%d: %s", path, p.err_line, p.err);
		return -1;
	}
	return check_order(&p, path, err, errlen);
}

/* "127.0.0.1:9567", "[::1]:9567", ":9567" (loopback is the default for a bare port). */
int dd_parse_address(const char *a, struct sockaddr_storage *ss)
{
	char host[128];
	const char *colon;
	memset(ss, 0, sizeof(*ss));
	if (a[0] == '[') {
		const char *end = strchr(a, ']');
		if (!end || end[1] != ':' || (size_t)(end - a - 1) >= sizeof(host))
			return -1;
		memcpy(host, a + 1, (size_t)(end - a - 1));
		host[end - a - 1] = '\0';
		colon = end + 1;
	} else {
		colon = strrchr(a, ':');
		if (!colon || (size_t)(colon - a) >= sizeof(host))
			return -1;
		memcpy(host, a, (size_t)(colon - a));
		host[colon - a] = '\0';
		if (!host[0])
			strcpy(host, "127.0.0.1");
	}
	char *end;
	errno = 0;
	long port = strtol(colon + 1, &end, 10);
	if (errno || end == colon + 1 || *end || port <= 0 || port > 65535)
		return -1;
	struct sockaddr_in *s4 = (struct sockaddr_in *)ss;
	struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)ss;
	if (inet_pton(AF_INET, host, &s4->sin_addr) == 1) {
		s4->sin_family = AF_INET;
		s4->sin_port = htons((uint16_t)port);
	} else if (inet_pton(AF_INET6, host, &s6->sin6_addr) == 1) {
		s6->sin6_family = AF_INET6;
		s6->sin6_port = htons((uint16_t)port);
	} else {
		return -1;
	}
	return 0;
}

const char *dd_unix_address(const char *a)
{
	return strncmp(a, "unix:", 5) ? NULL : a + 5;
}
