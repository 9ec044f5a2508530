/* SPDX-License-Identifier: LGPL-2.1-or-later OR BSD-2-Clause */
/* Defaults and the INI config file (parsed with inih). */
#include "config.h"

#include <arpa/inet.h>
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

#include "hostcheck.h"

void da_config_defaults(struct da_config *c)
{
	*c = (struct da_config){
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
		.metrics_access = DA_METRICS_ALL,
	};
	c->proc_path = strdup("/proc");
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
	strlist_free(&c->metrics_hosts);
	free(c->proc_path);
	free(c->metrics_address);
	free(c->socket_path);
	free(c->socket_group);
	c->proc_path = c->metrics_address = c->socket_path = c->socket_group = NULL;
}

struct parse_ctx {
	struct da_config *c;
	FILE *f;
	int line;               /* the line inih is on: our reader counts them */
	int err_line;           /* line of err, or of an over-long line */
	char err[256];          /* first error only */
	/* lines of the keys that are checked against each other once the whole file is read */
	int line_window_start, line_window_max, line_depth_per_scan, line_depth_total;
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

#define ERR(...) (snprintf(p->err, sizeof(p->err), __VA_ARGS__), p->err_line = p->line, 0)

struct uint_key {
	const char *section, *name;
	size_t off;
	unsigned long long lo, hi;
};

#define U(sec, key, field, lo, hi) { sec, key, offsetof(struct da_config, field), lo, hi }
static const struct uint_key uint_keys[] = {
	U("detect", "confirm_stats", confirm_stats, 1, 1000),
	U("detect", "table_share_per_user", table_share_per_user, 0, 100),
	U("detect", "quiet_s", quiet_s, 1, 3600),
	U("prefetch", "window_start", window_start, 1, 1u << 20),
	U("prefetch", "window_max", window_max, 1, 1u << 20),
	U("prefetch", "max_scans", max_scans, 1, 4096),
	U("prefetch", "max_scans_per_process", max_scans_per_process, 1, 4096),
	U("prefetch", "max_scans_per_user", max_scans_per_user, 1, 4096),
	U("prefetch", "max_scans_per_cgroup", max_scans_per_cgroup, 1, 4096),
	U("prefetch", "depth_per_user", depth_per_user, 1, 65536),
	U("prefetch", "depth_per_scan", depth_per_scan, 1, 4096),
	U("prefetch", "depth_total", depth_total, 1, 65536),
	U("prefetch", "idle_timeout_ms", idle_timeout_ms, 10, 3600000),
	U("stop", "min_hits", stop_min_hits, 0, 1u << 30),
	U("stop", "consecutive_misses", stop_consecutive_misses, 1, 1u << 30),
	U("policy", "probe_stats", probe_stats, 2, 100000),
	U("policy", "entry_cost_us", entry_cost_us, 1, 1000000),
	U("policy", "gain_stats", gain_stats, 8, 1000000),
	U("policy", "reprobe_s", reprobe_s, 1, 86400),
	U("policy", "mute_ms", mute_ms, 0, 3600000),
	U("policy", "depth_min", depth_min, 1, 4096),
	U("policy", "max_filesystems", max_filesystems, 1, 65536),
	U("walk", "max_walks", walk_max, 1, 4096),
	U("walk", "open_dirs", walk_open_dirs, 1, 1024),
	U("walk", "ahead_dirs", walk_ahead_dirs, 1, 65536),
	U("walk", "ahead_entries", walk_ahead_entries, 1, 1u << 24),
	U("daemon", "log_summary_s", log_summary_s, 0, 86400),
};

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
		if (!strcmp(name, "window_start"))
			p->line_window_start = p->line;
		else if (!strcmp(name, "window_max"))
			p->line_window_max = p->line;
		else if (!strcmp(name, "depth_per_scan"))
			p->line_depth_per_scan = p->line;
		else if (!strcmp(name, "depth_total"))
			p->line_depth_total = p->line;
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
		if (!strcmp(name, "proc")) {
			if (value[0] != '/')
				return ERR("[daemon] proc: '%s' is not an absolute path", value);
			return set_str(&c->proc_path, value);
		}
	} else if (!strcmp(section, "detect")) {
		if (!strcmp(name, "arm")) {
			if (!strcmp(value, "on-block"))
				c->arm_always = false;
			else if (!strcmp(value, "always"))
				c->arm_always = true;
			else
				return ERR("[detect] arm: '%s' is not on-block or always", value);
			return 1;
		}
		if (!strcmp(name, "unlisted_stats")) {
			/* BPF counts distinct names by bits of a 64-bit set: a few dozen at most */
			if (!parse_uint(value, 0, 32, &u) || u == 1)
				return ERR("[detect] unlisted_stats: '%s' is not 0 (off) or a whole "
					   "number from 2 to 32", value);
			c->unlisted_stats = (unsigned)u;
			return 1;
		}
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
			if (!parse_double(value, 0, 1, &c->stop_hit_ratio))
				return ERR("[stop] hit_ratio: '%s' is not a number from 0 to 1", value);
			return 1;
		}
	} else if (!strcmp(section, "walk")) {
		if (!strcmp(name, "enabled"))
			return parse_bool(value, &c->walk_enabled) ? 1 : ERR("[walk] enabled: '%s' is not yes or no", value);
		if (!strcmp(name, "list_only"))
			return parse_bool(value, &c->walk_list_only) ? 1 : ERR("[walk] list_only: '%s' is not yes or no", value);
	} else if (!strcmp(section, "policy")) {
		if (!strcmp(name, "enabled"))
			return parse_bool(value, &c->policy_enabled) ? 1 : ERR("[policy] enabled: '%s' is not yes or no", value);
		if (!strcmp(name, "start_factor")) {
			if (!parse_double(value, 0, 1000, &c->start_factor))
				return ERR("[policy] start_factor: '%s' is not a number from 0 to 1000", value);
			return 1;
		}
		if (!strcmp(name, "min_gain")) {
			if (!parse_double(value, 1, 100, &c->min_gain))
				return ERR("[policy] min_gain: '%s' is not a number from 1 to 100", value);
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
		for (size_t i = 0; i < sizeof(lists) / sizeof(lists[0]); i++) {
			if (strcmp(name, lists[i].n))
				continue;
			struct da_strlist *l = (struct da_strlist *)((char *)c + lists[i].off);
			if (!parse_list(value, l))
				return ERR("[filter] %s: more than %d entries", name, DA_LIST_MAX);
			/* cgroup patterns are matched against absolute paths: anything else never would */
			for (int j = 0; !strncmp(name, "cgroup_", 7) && j < l->n; j++)
				if (l->v[j][0] != '/')
					return ERR("[filter] %s: '%s' is not a cgroup path (one starting with /, "
						   "as in /proc/PID/cgroup)", name, l->v[j]);
			return 1;
		}
	} else if (!strcmp(section, "metrics")) {
		if (!strcmp(name, "address")) {
			struct sockaddr_storage ss;
			const char *up = da_unix_address(value);
			if (up) {
				struct sockaddr_un sa;
				if (up[0] != '/' || up[strlen(up) - 1] == '/')
					return ERR("[metrics] address: '%s' is not unix:/ABSOLUTE/PATH of a socket", value);
				if (strlen(up) >= sizeof(sa.sun_path))
					return ERR("[metrics] address: '%s': the path is longer than %zu bytes", value,
						   sizeof(sa.sun_path) - 1);
			} else if (value[0] && da_parse_address(value, &ss) < 0) {
				return ERR("[metrics] address: '%s' is not ADDRESS:PORT (127.0.0.1:9567, "
					   "[::1]:9567, :9567), unix:/PATH or empty", value);
			}
			return set_str(&c->metrics_address, value);
		}
		if (!strcmp(name, "access")) {
			if (!strcmp(value, "all"))
				c->metrics_access = DA_METRICS_ALL;
			else if (!strcmp(value, "control-group"))
				c->metrics_access = DA_METRICS_CONTROL_GROUP;
			else
				return ERR("[metrics] access: '%s' is not all or control-group", value);
			return 1;
		}
		if (!strcmp(name, "allowed_hosts")) {
			struct da_host h;
			if (!parse_list(value, &c->metrics_hosts))
				return ERR("[metrics] allowed_hosts: more than %d entries", DA_LIST_MAX);
			for (int i = 0; i < c->metrics_hosts.n; i++)
				if (da_host_parse(c->metrics_hosts.v[i], &h) < 0)
					return ERR("[metrics] allowed_hosts: '%s' is not NAME or NAME:PORT (a host "
						   "name, IPv4 address or [IPv6 address])", c->metrics_hosts.v[i]);
			return 1;
		}
	} else if (!strcmp(section, "control")) {
		if (!strcmp(name, "socket")) {
			if (value[0] != '/')
				return ERR("[control] socket: '%s' is not an absolute path", value);
			return set_str(&c->socket_path, value);
		}
		if (!strcmp(name, "group")) {
			/* Checked here so that a typo is an error with a line number, not a failed start. */
			if (value[0] && !getgrnam(value))
				return ERR("[control] group: no group named '%s'", value);
			return set_str(&c->socket_group, value);
		}
	} else if (!section[0]) {
		return ERR("%s: key before any [section]", name);
	} else {
		return ERR("[%s] %s: unknown section", section, name);
	}
	return ERR("[%s] %s: unknown key", section, name);
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

int da_config_load(struct da_config *c, const char *path, bool *missing, char *err, size_t errlen)
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
	/* Checked once the whole file is in; the line is that of the later of the two keys. */
	if (c->window_start > c->window_max) {
		int l = p.line_window_start > p.line_window_max ? p.line_window_start : p.line_window_max;
		snprintf(err, errlen, "%s:%d: [prefetch] window_start (%u) is above window_max (%u)", path,
			 l, c->window_start, c->window_max);
		return -1;
	}
	if (c->depth_per_scan > c->depth_total) {
		int l = p.line_depth_per_scan > p.line_depth_total ? p.line_depth_per_scan : p.line_depth_total;
		snprintf(err, errlen, "%s:%d: [prefetch] depth_per_scan (%u) is above depth_total (%u)", path,
			 l, c->depth_per_scan, c->depth_total);
		return -1;
	}
	return 0;
}

/* "127.0.0.1:9567", "[::1]:9567", ":9567" (loopback is the default for a bare port). */
int da_parse_address(const char *a, struct sockaddr_storage *ss)
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

const char *da_unix_address(const char *a)
{
	return strncmp(a, "unix:", 5) ? NULL : a + 5;
}
