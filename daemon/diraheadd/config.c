/* SPDX-License-Identifier: LGPL-2.1-or-later OR BSD-2-Clause */
/* Defaults and the INI config file (parsed with inih). */
#include "config.h"

#include <errno.h>
#include <ini.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <syslog.h>
#include <unistd.h>

void da_config_defaults(struct da_config *c)
{
	*c = (struct da_config){
		.enabled = true,
		.confirm_stats = 2,
		.window_start = 8,     /* Lustre statahead_min */
		.window_max = 1024,    /* above Lustre's 128: one stat is one round trip here, no batching */
		.max_scans = 16,       /* Lustre statahead_running_max */
		.max_scans_per_process = 4,
		.depth_per_scan = 64,
		.depth_total = 128,
		.engine = DIRAHEAD_BACKEND_AUTO,
		.order = DIRAHEAD_ORDER_DEFAULT,
		.min_dir_size = 0,
		.idle_timeout_ms = 5000,
		.stop_min_hits = 32,
		.stop_hit_ratio = 0.8,
		.stop_consecutive_misses = 32,
		.log_level = LOG_INFO,
	};
	c->metrics_address = strdup("127.0.0.1:9567");
	c->socket_path = strdup(DA_SOCKET_PATH);
	c->socket_group = strdup("");
}

static void strlist_free(struct da_strlist *l)
{
	for (int i = 0; i < l->n; i++)
		free(l->v[i]);
	l->n = 0;
}

void da_config_free(struct da_config *c)
{
	strlist_free(&c->fs_include);
	strlist_free(&c->fs_exclude);
	strlist_free(&c->path_include);
	strlist_free(&c->path_exclude);
	strlist_free(&c->comm_include);
	strlist_free(&c->comm_exclude);
	strlist_free(&c->cgroup_include);
	strlist_free(&c->cgroup_exclude);
	free(c->metrics_address);
	free(c->socket_path);
	free(c->socket_group);
	c->metrics_address = c->socket_path = c->socket_group = NULL;
}

struct parse_ctx {
	struct da_config *c;
	char err[256];          /* first error only: inih reports the line of the first one */
};

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

/* Whitespace-separated words; an empty value clears the list. */
static bool parse_list(const char *v, struct da_strlist *l)
{
	strlist_free(l);
	char *dup = strdup(v), *save = NULL;
	if (!dup)
		return false;
	for (char *w = strtok_r(dup, " \t,", &save); w; w = strtok_r(NULL, " \t,", &save)) {
		if (l->n == DA_LIST_MAX) {
			free(dup);
			return false;
		}
		l->v[l->n++] = strdup(w);
	}
	free(dup);
	return true;
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

#define ERR(...) (snprintf(p->err, sizeof(p->err), __VA_ARGS__), 0)

struct uint_key {
	const char *section, *name;
	size_t off;
	unsigned long long lo, hi;
};

#define U(sec, key, field, lo, hi) { sec, key, offsetof(struct da_config, field), lo, hi }
static const struct uint_key uint_keys[] = {
	U("detect", "confirm_stats", confirm_stats, 1, 1000),
	U("prefetch", "window_start", window_start, 1, 1u << 20),
	U("prefetch", "window_max", window_max, 1, 1u << 20),
	U("prefetch", "max_scans", max_scans, 1, 4096),
	U("prefetch", "max_scans_per_process", max_scans_per_process, 1, 4096),
	U("prefetch", "depth_per_scan", depth_per_scan, 1, 4096),
	U("prefetch", "depth_total", depth_total, 1, 65536),
	U("prefetch", "idle_timeout_ms", idle_timeout_ms, 10, 3600000),
	U("stop", "min_hits", stop_min_hits, 0, 1u << 30),
	U("stop", "consecutive_misses", stop_consecutive_misses, 1, 1u << 30),
};

static int handler(void *user, const char *section, const char *name, const char *value)
{
	struct parse_ctx *p = user;
	struct da_config *c = p->c;
	unsigned long long u;

	if (p->err[0])
		return 0; /* keep the first error */
	for (size_t i = 0; i < sizeof(uint_keys) / sizeof(uint_keys[0]); i++) {
		const struct uint_key *k = &uint_keys[i];
		if (strcmp(section, k->section) || strcmp(name, k->name))
			continue;
		if (!parse_uint(value, k->lo, k->hi, &u))
			return ERR("[%s] %s: '%s' is not a whole number from %llu to %llu", section,
				   name, value, k->lo, k->hi);
		*(unsigned *)((char *)c + k->off) = (unsigned)u;
		return 1;
	}
	if (!strcmp(section, "daemon")) {
		if (!strcmp(name, "enabled"))
			return parse_bool(value, &c->enabled) ? 1 : ERR("[daemon] enabled: '%s' is not yes or no", value);
		if (!strcmp(name, "dry_run"))
			return parse_bool(value, &c->dry_run) ? 1 : ERR("[daemon] dry_run: '%s' is not yes or no", value);
		if (!strcmp(name, "log_level")) {
			static const char *lv[] = { "emerg", "alert", "crit", "err", "warning", "notice", "info", "debug" };
			for (int i = 0; i < 8; i++)
				if (!strcasecmp(value, lv[i])) {
					c->log_level = i;
					return 1;
				}
			return ERR("[daemon] log_level: '%s' is not one of err, warning, notice, info, debug", value);
		}
	} else if (!strcmp(section, "detect")) {
		if (!strcmp(name, "min_dir_size")) {
			if (!parse_uint(value, 0, 1ull << 40, &u))
				return ERR("[detect] min_dir_size: '%s' is not a size in bytes", value);
			c->min_dir_size = u;
			return 1;
		}
	} else if (!strcmp(section, "prefetch")) {
		if (!strcmp(name, "engine")) {
			if (!strcmp(value, "auto"))
				c->engine = DIRAHEAD_BACKEND_AUTO;
			else if (!strcmp(value, "io_uring"))
				c->engine = DIRAHEAD_BACKEND_URING;
			else if (!strcmp(value, "threads"))
				c->engine = DIRAHEAD_BACKEND_THREADS;
			else
				return ERR("[prefetch] engine: '%s' is not auto, io_uring or threads", value);
			return 1;
		}
		if (!strcmp(name, "order")) {
			if (!strcmp(value, "auto"))
				c->order = DIRAHEAD_ORDER_DEFAULT;
			else if (!strcmp(value, "readdir"))
				c->order = DIRAHEAD_ORDER_READDIR;
			else if (!strcmp(value, "inode"))
				c->order = DIRAHEAD_ORDER_INODE;
			else if (!strcmp(value, "name"))
				c->order = DIRAHEAD_ORDER_NAME;
			else
				return ERR("[prefetch] order: '%s' is not auto, readdir, inode or name", value);
			return 1;
		}
	} else if (!strcmp(section, "stop")) {
		if (!strcmp(name, "hit_ratio")) {
			char *end;
			errno = 0;
			double d = strtod(value, &end);
			if (errno || *end || end == value || d < 0 || d > 1)
				return ERR("[stop] hit_ratio: '%s' is not a number from 0 to 1", value);
			c->stop_hit_ratio = d;
			return 1;
		}
	} else if (!strcmp(section, "filter")) {
		static const struct { const char *n; size_t off; } lists[] = {
			{ "fs_include", offsetof(struct da_config, fs_include) },
			{ "fs_exclude", offsetof(struct da_config, fs_exclude) },
			{ "path_include", offsetof(struct da_config, path_include) },
			{ "path_exclude", offsetof(struct da_config, path_exclude) },
			{ "comm_include", offsetof(struct da_config, comm_include) },
			{ "comm_exclude", offsetof(struct da_config, comm_exclude) },
			{ "cgroup_include", offsetof(struct da_config, cgroup_include) },
			{ "cgroup_exclude", offsetof(struct da_config, cgroup_exclude) },
		};
		for (size_t i = 0; i < sizeof(lists) / sizeof(lists[0]); i++)
			if (!strcmp(name, lists[i].n))
				return parse_list(value, (struct da_strlist *)((char *)c + lists[i].off))
					       ? 1
					       : ERR("[filter] %s: more than %d entries", name, DA_LIST_MAX);
	} else if (!strcmp(section, "metrics")) {
		if (!strcmp(name, "address"))
			return set_str(&c->metrics_address, value);
	} else if (!strcmp(section, "control")) {
		if (!strcmp(name, "socket")) {
			if (value[0] != '/')
				return ERR("[control] socket: '%s' is not an absolute path", value);
			return set_str(&c->socket_path, value);
		}
		if (!strcmp(name, "group"))
			return set_str(&c->socket_group, value);
	} else {
		return ERR("unknown section [%s]", section);
	}
	return ERR("[%s] %s: unknown key", section, name);
}

int da_config_load(struct da_config *c, const char *path, bool *missing, char *err, size_t errlen)
{
	struct parse_ctx p = { .c = c };
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
	int line = ini_parse_file(f, handler, &p);
	fclose(f);
	if (line == -2) {
		snprintf(err, errlen, "%s: out of memory", path);
		return -1;
	}
	if (line != 0) {
		snprintf(err, errlen, "%s:%d: %s", path, line,
			 p.err[0] ? p.err : "syntax error (expected [section] or key = value)");
		return -1;
	}
	if (c->window_start > c->window_max) {
		snprintf(err, errlen, "%s: [prefetch] window_start (%u) is above window_max (%u)", path,
			 c->window_start, c->window_max);
		return -1;
	}
	if (c->depth_per_scan > c->depth_total) {
		snprintf(err, errlen, "%s: [prefetch] depth_per_scan (%u) is above depth_total (%u)", path,
			 c->depth_per_scan, c->depth_total);
		return -1;
	}
	return 0;
}
