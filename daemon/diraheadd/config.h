/* SPDX-License-Identifier: LGPL-2.1-or-later OR BSD-2-Clause */
/* The daemon's settings: built-in defaults, and (config.c) the INI file that overrides them. */
#ifndef DIRAHEAD_CONFIG_H
#define DIRAHEAD_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include "ctlproto.h"
#include "dirahead.h"

#define DD_CONFIG_PATH "/etc/dirahead/dirahead.conf"
#define DD_SOCKET_PATH DD_DEFAULT_SOCKET
#define DD_LIST_MAX 32

struct dd_strlist {
	int n;
	char *v[DD_LIST_MAX];
};

/* [metrics] access (0, the default, is today's: every local user). */
enum dd_metrics_access {
	DD_METRICS_ALL,           /* anyone who can connect */
	DD_METRICS_CONTROL_GROUP, /* root and members of the [control] group; others get 403 */
};

struct dd_config {
	bool enabled;
	bool dry_run;               /* detect and log scans, never prefetch */
	unsigned confirm_stats;     /* stats of a directory's entries before a scan counts */
	unsigned unlisted_stats;    /* distinct names of an unlisted directory stat'ed in a row
				     * before that counts as a scan; 0: never */
	unsigned table_share_per_user; /* percent of the detector's tables one uid may hold; 0: all */
	bool arm_always;            /* [detect] arm = always: syscall hooks attached all the time;
				     * on-block (false): only while metadata calls block (arm.h) */
	unsigned quiet_s;           /* [detect] quiet_s: detached after this long without one */
	unsigned window_start;      /* entries prefetched ahead of the application at first */
	unsigned window_max;        /* the window doubles on hits up to this */
	unsigned max_scans;         /* concurrent scans, all processes together */
	unsigned max_scans_per_process;
	unsigned max_scans_per_user;   /* scans and walks at once for one uid */
	unsigned max_scans_per_cgroup; /* ... for one cgroup */
	unsigned depth_per_user;       /* requests in flight for one program's credentials */
	unsigned depth_per_scan;    /* requests in flight per scan */
	unsigned depth_total;       /* requests in flight in total */
	enum dirahead_backend engine;
	enum dirahead_order order;  /* DEFAULT: follow the application (readdir or name order) */
	uint64_t min_dir_size;      /* directories with a smaller i_size are not worth it */
	unsigned idle_timeout_ms;   /* a scan with no progress for this long ends */
	unsigned stop_min_hits;     /* Lustre: stop when hits > this and hits < ratio * misses */
	double stop_hit_ratio;      /* minimum hits / (hits + misses) once stop_min_hits is passed */
	unsigned stop_consecutive_misses;
	/* [policy]: the cost model (policy.h) */
	bool policy_enabled;        /* no: prefetch every confirmed scan (no judgment) */
	unsigned probe_stats;       /* stats timed before the first prefetch where nothing is known */
	double start_factor;        /* prefetch if the program's stat costs >= this x ours per entry */
	unsigned entry_cost_us;     /* our cost per prefetched entry until measured */
	unsigned gain_stats;        /* stats per pay-off judgment */
	double min_gain;            /* the program's stat cost must fall by this factor */
	unsigned reprobe_s;         /* a no_gain filesystem is tried again after this (backoff x16) */
	unsigned mute_ms;           /* a muted process's listings there are not tracked this long */
	unsigned depth_min;         /* adaptive depth per scan: from this to depth_per_scan */
	unsigned max_filesystems;   /* filesystems remembered */
	unsigned remember_days;     /* ... across restarts, unused for at most this; 0: not saved */
	/* [walk]: tree-ahead (walk.h) */
	bool walk_enabled;          /* no: every directory of a walk is a scan of its own */
	bool walk_list_only;        /* walks that list only, where stats need no prefetch */
	unsigned walk_max;          /* walks at once, all processes together */
	unsigned walk_open_dirs;    /* directories one walk lists and prefetches at once */
	unsigned walk_ahead_dirs;   /* directories listed ahead of the program, per walk */
	unsigned walk_ahead_entries;/* entries prefetched ahead of the program, per walk */
	struct dd_strlist fs_include, fs_exclude;     /* filesystem type names */
	struct dd_strlist path_include, path_exclude; /* mount point / path prefixes */
	struct dd_strlist comm_include, comm_exclude; /* process names */
	struct dd_strlist cgroup_include, cgroup_exclude;
	struct dd_strlist budget_rules; /* [budget] rule lines, checked at load (budget.h) */
	char *proc_path;            /* the procfs whose PIDs are BPF's (the host's); restart to change */
	char *state_dir;            /* memory across restarts (persist.h); "": none; restart to change */
	char *metrics_address;      /* host:port or unix:/path, empty = off */
	struct dd_strlist metrics_hosts; /* [metrics] allowed_hosts: more names for the Host check */
	enum dd_metrics_access metrics_access; /* [metrics] access: who gets the page */
	char *socket_path;
	char *socket_group;         /* group allowed on the control socket besides root; empty = root only */
	int log_level;              /* syslog levels: LOG_ERR .. LOG_DEBUG */
	unsigned log_summary_s;     /* a summary line this often while scans happen; 0: never */
};

void dd_config_defaults(struct dd_config *c);
void dd_config_free(struct dd_config *c);
/* Parses FILE over the defaults.  Missing file: defaults, *missing = true, returns 0.  Errors:
 * returns -1 and writes "file:line: key: reason" into err. */
int dd_config_load(struct dd_config *c, const char *path, bool *missing, char *err, size_t errlen);
/* [metrics] address: "127.0.0.1:9567", "[::1]:9567" or ":9567" (loopback).  0, or -1 if invalid. */
int dd_parse_address(const char *a, struct sockaddr_storage *ss);
/* [metrics] address "unix:/PATH": PATH; NULL for any other address. */
const char *dd_unix_address(const char *a);

#endif
