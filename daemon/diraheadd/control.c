/* SPDX-License-Identifier: LGPL-2.1-or-later OR BSD-2-Clause */
/* The control socket (control.h): who may ask, one request line per connection, and the replies
 * (status, stats from the statistics table of stats.h, scans, explain from the decision log of
 * decisions.h, metrics, reload). */
#include "control.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "arm.h"
#include "ctlproto.h"
#include "daemon.h"
#include "decisions.h"
#include "detector.h"
#include "log.h"
#include "metrics.h"
#include "monoclock.h"
#include "peer.h"
#include "fsmagic.h"
#include "policy.h"
#include "scan.h"
#include "statsview.h"

struct control {
	struct daemon *d;
	int fd;
	char *path;
	gid_t group;                /* (gid_t)-1: root only */
	sd_event_source *src;
};

struct conn {
	struct control *c;
	int fd;
	sd_event_source *io, *timeout;
	size_t len;
	char buf[DD_CTL_MAX_REQUEST];
};

static void conn_close(struct conn *k)
{
	sd_event_source_disable_unref(k->io);
	sd_event_source_disable_unref(k->timeout);
	close(k->fd);
	free(k);
}

/* One remembered filesystem, keyed "MAJOR:MINOR" (`diraheadctl stats` shows
 * filesystems.0:55.verdict ...), its fields from the table of stats.h. */
static void add_fs(const struct pol_fs *f, void *ctx)
{
	json_object *o = json_object_new_object(), *j;
	char key[32];
	const char *type = fsmagic_name(f->magic);
	snprintf(key, sizeof(key), "%u:%u", f->dev_major, f->dev_minor);
	json_object_object_add(o, "fstype", json_object_new_string(type ? type : "unknown"));
	for (size_t i = 0; i < dd_fs_nrows; i++) {
		const struct dd_fs_row *r = &dd_fs_rows[i];
		for (int k = 0; k < DD_STAT_PARTS_MAX && r->field[k].json; k++) {
			const void *at = (const char *)f + r->field[k].off;
			if (r->kind == DD_FS_VERDICT)
				j = json_object_new_string(pol_verdict_names[*(const enum pol_verdict *)at]);
			else if (r->kind == DD_FS_UINT)
				j = json_object_new_uint64(*(const unsigned *)at);
			else if (r->kind == DD_FS_U64)
				j = json_object_new_uint64(*(const uint64_t *)at);
			else if (r->kind == DD_FS_SECONDS)
				j = json_object_new_double(*(const double *)at);
			else
				j = json_object_new_double(*(const double *)at / 1e3);
			json_object_object_add(o, r->field[k].json, j);
		}
	}
	json_object_object_add((json_object *)ctx, key, o);
}

/* Arming (arm.h): the mode, armed now, and with all, what became of the sentinel's signals. */
static void add_arm(json_object *o, struct daemon *d, bool all)
{
	struct arm_stats a;
	if (!d->arm)
		return;
	arm_get_stats(d->arm, &a);
	json_object_object_add(o, "arm_mode", json_object_new_string(a.on_block ? "on-block" : "always"));
	json_object_object_add(o, "armed", json_object_new_uint64(a.armed));
	json_object_object_add(o, "arms", json_object_new_uint64(a.arms));
	json_object_object_add(o, "armed_seconds", json_object_new_double(a.armed_s));
	if (!all)
		return;
	json_object_object_add(o, "disarms", json_object_new_uint64(a.disarms));
	json_object *sig = json_object_new_object();
	for (int i = 0; i < ARM_SIG_MAX; i++)
		json_object_object_add(sig, arm_signal_names[i], json_object_new_uint64(a.signals[i]));
	json_object_object_add(sig, "rate_limited", json_object_new_uint64(a.rate_limited));
	json_object_object_add(sig, "lost", json_object_new_uint64(a.lost));
	json_object_object_add(o, "sentinel_signals", sig);
	json_object_object_add(o, "sentinel_blocked", json_object_new_uint64(a.blocked));
	/* what arming saves, and what the sentinel costs (with kernel.bpf_stats_enabled=1) */
	struct detector_prog_stat ps[32];
	int n = detector_prog_stats(d->det, ps, 32);
	for (int i = 0; i < n && i < 32; i++)
		if (!strcmp(ps[i].name, "dirahead_sys_exit"))
			json_object_object_add(o, "sys_exit_runs", json_object_new_uint64(ps[i].run_cnt));
	uint32_t id;
	uint64_t cnt, ns;
	bool att;
	if (arm_sentinel_prog(d->arm, &id, &cnt, &ns, &att)) {
		json_object_object_add(o, "sentinel_runs", json_object_new_uint64(cnt));
		json_object_object_add(o, "sentinel_run_ns", json_object_new_uint64(ns));
	}
}

static json_object *jvalue(bool f64, const struct dd_stats_view *v, size_t off)
{
	return f64 ? json_object_new_double(dd_stat_f64(v, off)) : json_object_new_uint64(dd_stat_u64(v, off));
}

/* One row of the statistics table (stats.h) into the stats object o. */
static void add_row(json_object *o, struct daemon *d, const struct dd_stat_row *r,
		    const struct dd_stats_view *v)
{
	json_object *sub;
	switch (r->shape) {
	case DD_STAT_VALUE:
		if (r->json)
			json_object_object_add(o, r->json, jvalue(r->f64, v, r->json_off));
		break;
	case DD_STAT_REASONS:
		if (!r->json)
			break;
		sub = json_object_new_object();
		for (int i = 0; i < r->n; i++)
			if (r->names[i]) /* NULL: a reason of the family that never ends this kind */
				json_object_object_add(sub, r->names[i],
						       jvalue(false, v, r->json_off + (size_t)i * sizeof(uint64_t)));
		json_object_object_add(o, r->json, sub);
		break;
	case DD_STAT_PARTS:
		for (int i = 0; i < DD_STAT_PARTS_MAX && r->part[i].label; i++)
			if (r->part[i].json)
				json_object_object_add(o, r->part[i].json, jvalue(r->f64, v, r->part[i].json_off));
		break;
	case DD_STAT_HOOK:
		if (r->hook == DD_STAT_HOOK_ARM) {
			add_arm(o, d, true);
		} else if (r->hook == DD_STAT_HOOK_FILESYSTEMS) {
			sub = json_object_new_object();
			policy_foreach(scan_mgr_policy(d->mgr), add_fs, sub);
			json_object_object_add(o, "filesystems", sub);
		}
		break; /* the histograms, build info and programs are metrics only */
	}
}

static json_object *jstats(struct daemon *d)
{
	struct dd_stats_view v;
	json_object *o = json_object_new_object();
	statsview_read(d, &v);
	for (size_t i = 0; i < dd_stat_nrows; i++)
		add_row(o, d, &dd_stat_rows[i], &v);
	return o;
}

static char *to_string(json_object *o)
{
	char *s = strdup(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_NOSLASHESCAPE));
	json_object_put(o);
	return s;
}

char *control_stats_json(struct daemon *d) { return to_string(jstats(d)); }

char *control_status_json(struct daemon *d)
{
	json_object *o = json_object_new_object();
	uint64_t now = wall_us();
	json_object_object_add(o, "running", json_object_new_boolean(1));
	json_object_object_add(o, "attached", json_object_new_boolean(d->det != NULL));
	json_object_object_add(o, "enabled", json_object_new_boolean(d->cfg.enabled));
	json_object_object_add(o, "dry_run", json_object_new_boolean(d->cfg.dry_run));
	json_object_object_add(o, "pid", json_object_new_int(getpid()));
	json_object_object_add(o, "version", json_object_new_string(DIRAHEAD_VERSION));
	json_object_object_add(o, "uptime_seconds", json_object_new_double((double)(now - d->start_usec) / 1e6));
	json_object_object_add(o, "engine", json_object_new_string(scan_mgr_backend(d->mgr)));
	json_object_object_add(o, "config", json_object_new_string(d->config_path));
	json_object_object_add(o, "active_scans", json_object_new_uint64(scan_mgr_active(d->mgr)));
	json_object_object_add(o, "scans_confirmed", json_object_new_uint64(d->stats.scans_confirmed));
	json_object_object_add(o, "entries_prefetched", json_object_new_uint64(d->stats.entries_prefetched));
	add_arm(o, d, false);
	return to_string(o);
}

static void add_scan(const struct scan_info *i, void *ctx)
{
	json_object *a = ctx, *o = json_object_new_object();
	json_object_object_add(o, "pid", json_object_new_int((int)i->pid));
	json_object_object_add(o, "comm", json_object_new_string(i->comm));
	json_object_object_add(o, "directory", json_object_new_string(i->path));
	json_object_object_add(o, "state", json_object_new_string(i->state));
	json_object_object_add(o, "entries", json_object_new_uint64(i->entries));
	json_object_object_add(o, "progress", json_object_new_uint64(i->app_pos));
	json_object_object_add(o, "window", json_object_new_uint64(i->window));
	json_object_object_add(o, "hits", json_object_new_uint64(i->hits));
	json_object_object_add(o, "misses", json_object_new_uint64(i->misses));
	json_object_object_add(o, "age_seconds", json_object_new_double(i->age_s));
	json_object_array_add(a, o);
}

char *control_scans_json(struct daemon *d)
{
	json_object *a = json_object_new_array();
	scan_mgr_foreach(d->mgr, add_scan, a);
	return to_string(a);
}

static void add_decision(const struct decision *dc, void *ctx)
{
	json_object *o = json_object_new_object(), *n = json_object_new_object();
	const struct dec_nums *x = &dc->n;
	json_object_object_add(o, "time", json_object_new_double((double)dc->wall_us / 1e6));
	json_object_object_add(o, "pid", json_object_new_int((int)dc->pid));
	json_object_object_add(o, "comm", json_object_new_string(dc->comm));
	json_object_object_add(o, "directory", json_object_new_string(dc->dir));
	json_object_object_add(o, "what", json_object_new_string(dc->what == DEC_WALK ? "walk" : "scan"));
	json_object_object_add(o, "decision", json_object_new_string(dec_kind_names[dc->kind]));
	json_object_object_add(o, "reason", json_object_new_string(dc->reason));
	json_object_object_add(o, "dry_run", json_object_new_boolean(x->dry_run));
	json_object_object_add(o, "text", json_object_new_string(dc->text));
	/* the numbers known, in microseconds */
	const struct { const char *k; double v; } us[] = {
		{ "cost_us", x->cost_ns }, { "with_prefetch_us", x->with_ns },
		{ "entry_cost_us", x->entry_ns }, { "threshold_us", x->threshold_ns },
	};
	for (size_t i = 0; i < sizeof(us) / sizeof(us[0]); i++)
		if (us[i].v >= 0)
			json_object_object_add(n, us[i].k, json_object_new_double(us[i].v / 1e3));
	if (x->min_gain > 0)
		json_object_object_add(n, "min_gain", json_object_new_double(x->min_gain));
	if (x->reprobe_s >= 0)
		json_object_object_add(n, "reprobe_seconds", json_object_new_double(x->reprobe_s));
	if (dc->kind == DEC_ENDED) {
		json_object_object_add(n, "stats", json_object_new_uint64(x->stats));
		json_object_object_add(n, "prefetched", json_object_new_uint64(x->prefetched));
		json_object_object_add(n, "hits", json_object_new_uint64(x->hits));
		json_object_object_add(n, "misses", json_object_new_uint64(x->misses));
		if (x->has_saved)
			json_object_object_add(n, "saved_seconds", json_object_new_double(x->saved_s));
	}
	json_object_object_add(o, "numbers", n);
	json_object_array_add(ctx, o);
}

/* The decision log, oldest first; of one process if pid is not 0. */
char *control_explain_json(uint32_t pid)
{
	json_object *a = json_object_new_array();
	decisions_foreach(pid, add_decision, a);
	return to_string(a);
}

/* "explain" or "explain PID": the PID in *pid (0: all); false if what follows is no PID. */
static bool explain_pid(const char *cmd, uint32_t *pid)
{
	char *end;
	*pid = 0;
	if (!strcmp(cmd, "explain"))
		return true;
	if (strncmp(cmd, "explain ", 8) || cmd[8] < '1' || cmd[8] > '9')
		return false;
	errno = 0;
	unsigned long v = strtoul(cmd + 8, &end, 10);
	if (errno || *end || v > INT32_MAX)
		return false;
	*pid = (uint32_t)v;
	return true;
}

static void reply(struct conn *k, bool ok, const char *body)
{
	/* Replies are small and the peer is waiting for them: a blocking write with a short
	 * timeout keeps this simple without letting a stuck client hold the loop for long. */
	struct timeval tv = { .tv_sec = 1 };
	int fl = fcntl(k->fd, F_GETFL);
	fcntl(k->fd, F_SETFL, fl & ~O_NONBLOCK);
	setsockopt(k->fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	const char *head = ok ? "ok\n" : "error ";
	size_t n = strlen(body);
	if (send(k->fd, head, strlen(head), MSG_NOSIGNAL) < 0)
		return;
	for (size_t off = 0; off < n;) {
		ssize_t w = send(k->fd, body + off, n - off, MSG_NOSIGNAL);
		if (w <= 0)
			return;
		off += (size_t)w;
	}
	if (!ok)
		send(k->fd, "\n", 1, MSG_NOSIGNAL);
}

char *control_answer(struct daemon *d, const char *cmd, bool *ok)
{
	char *body = NULL;
	*ok = true;
	if (!strcmp(cmd, "status")) {
		body = control_status_json(d);
	} else if (!strcmp(cmd, "stats")) {
		body = control_stats_json(d);
	} else if (!strcmp(cmd, "scans")) {
		body = control_scans_json(d);
	} else if (!strncmp(cmd, "explain", 7) && (!cmd[7] || cmd[7] == ' ')) {
		uint32_t pid;
		if (!explain_pid(cmd, &pid)) {
			*ok = false;
			return strdup("explain: not a process ID");
		}
		body = control_explain_json(pid);
	} else if (!strcmp(cmd, "metrics")) {
		body = metrics_text(d);
	} else if (!strcmp(cmd, "reload")) {
		char err[512];
		if (daemon_reload(d, err, sizeof(err)) < 0) {
			*ok = false;
			return strdup(err);
		}
		body = strdup("");
	} else {
		*ok = false;
		return strdup("unknown command");
	}
	return body;
}

static void handle(struct conn *k, const char *cmd)
{
	bool ok;
	char *body = control_answer(k->c->d, cmd, &ok);
	reply(k, body && ok, body ? body : "out of memory");
	free(body);
}

int control_request_line(char *buf, size_t len, size_t size)
{
	/* memchr, not strchr: a NUL byte before the newline must not hide it (the client would
	 * wait for the timeout instead of an answer) */
	char *nl = memchr(buf, '\n', len);
	buf[len] = '\0';
	if (!nl)
		return len == size - 1 ? -1 : 0; /* too long to be a command */
	*nl = '\0';
	if (strlen(buf) != (size_t)(nl - buf))
		buf[0] = '\0'; /* a NUL byte in it: no command (an empty one is unknown) */
	return 1;
}

static int on_conn_io(sd_event_source *src, int fd, uint32_t revents, void *userdata)
{
	struct conn *k = userdata;
	(void)src;
	(void)revents;
	ssize_t n = read(fd, k->buf + k->len, sizeof(k->buf) - 1 - k->len);
	if (n < 0 && errno == EAGAIN)
		return 0;
	if (n <= 0) {
		conn_close(k);
		return 0;
	}
	k->len += (size_t)n;
	int r = control_request_line(k->buf, k->len, sizeof(k->buf));
	if (r <= 0) {
		if (r < 0)
			conn_close(k);
		return 0;
	}
	handle(k, k->buf);
	conn_close(k);
	return 0;
}

static int on_conn_timeout(sd_event_source *src, uint64_t usec, void *userdata)
{
	(void)src;
	(void)usec;
	conn_close(userdata);
	return 0;
}

/* Root, or a member of the [control] group: as its primary group or among its supplementary
 * groups, as the kernel recorded them when the peer connected (peer.h). */
static bool peer_allowed(struct control *c, int fd)
{
	struct dd_peer p;
	return dd_peer_identify(fd, &p) == 0 && p.kind == DD_PEER_UNIX && dd_peer_member(&p, fd, c->group);
}

static int on_accept(sd_event_source *src, int fd, uint32_t revents, void *userdata)
{
	struct control *c = userdata;
	(void)src;
	(void)revents;
	int cfd = accept4(fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
	if (cfd < 0)
		return 0;
	if (!peer_allowed(c, cfd)) {
		/* Paths and PIDs are shown only to root: close without an answer. */
		close(cfd);
		return 0;
	}
	struct conn *k = calloc(1, sizeof(*k));
	if (!k) {
		close(cfd);
		return 0;
	}
	k->c = c;
	k->fd = cfd;
	if (sd_event_add_io(c->d->loop, &k->io, cfd, EPOLLIN, on_conn_io, k) < 0 ||
	    sd_event_add_time_relative(c->d->loop, &k->timeout, CLOCK_MONOTONIC, 2000000, 0,
				       on_conn_timeout, k) < 0) {
		sd_event_source_disable_unref(k->io);
		close(cfd);
		free(k);
	}
	return 0;
}

struct control *control_new(struct daemon *d, char *err, size_t errlen)
{
	struct control *c = calloc(1, sizeof(*c));
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	const char *path = d->cfg.socket_path;
	if (!c)
		return NULL;
	c->d = d;
	c->fd = -1;
	c->group = (gid_t)-1;
	if (strlen(path) >= sizeof(sa.sun_path)) {
		snprintf(err, errlen, "control socket path too long: %s", path);
		goto fail;
	}
	strcpy(sa.sun_path, path);
	/* The directory: systemd's RuntimeDirectory= makes it; by hand we make it root-only. */
	char *dir = strdup(path), *slash = strrchr(dir, '/');
	if (slash && slash != dir) {
		*slash = '\0';
		if (mkdir(dir, 0755) < 0 && errno != EEXIST) {
			snprintf(err, errlen, "cannot create %s: %s", dir, strerror(errno));
			free(dir);
			goto fail;
		}
	}
	free(dir);
	c->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (c->fd < 0) {
		snprintf(err, errlen, "socket: %s", strerror(errno));
		goto fail;
	}
	/* A stale socket from a killed daemon would make bind fail; a live daemon answers. */
	char *probe = NULL;
	if (ctl_request(path, "status", &probe, 500) >= 0) {
		free(probe);
		snprintf(err, errlen, "another diraheadd is running (%s answers)", path);
		goto fail;
	}
	unlink(path);
	mode_t old = umask(0177);
	int r = bind(c->fd, (struct sockaddr *)&sa, sizeof(sa));
	umask(old);
	if (r < 0 || listen(c->fd, 16) < 0) {
		snprintf(err, errlen, "cannot listen on %s: %s", path, strerror(errno));
		goto fail;
	}
	c->path = strdup(path);
	if (!c->path || control_set_group(c, d->cfg.socket_group, err, errlen) < 0)
		goto fail;
	if (sd_event_add_io(d->loop, &c->src, c->fd, EPOLLIN, on_accept, c) < 0) {
		snprintf(err, errlen, "event loop: cannot watch the control socket");
		goto fail;
	}
	return c;
fail:
	control_free(c);
	return NULL;
}

int control_set_group(struct control *c, const char *group, char *err, size_t errlen)
{
	gid_t gid = (gid_t)-1;
	if (group && group[0]) {
		struct group *g = getgrnam(group);
		if (!g) {
			snprintf(err, errlen, "[control] group: no group named '%s'", group);
			return -1;
		}
		gid = g->gr_gid;
	}
	if (gid == c->group)
		return 0;
	/* Two gates: the file's group and mode decide who can connect, peer_allowed() whom the
	 * daemon answers.  Root only: 0600 root:root. */
	if (chown(c->path, 0, gid == (gid_t)-1 ? 0 : gid) < 0 ||
	    chmod(c->path, gid == (gid_t)-1 ? 0600 : 0660) < 0) {
		snprintf(err, errlen, "[control] group: cannot give %s to group %s: %s", c->path,
			 gid == (gid_t)-1 ? "root" : group, strerror(errno));
		/* try to leave it as it was */
		if (chown(c->path, 0, c->group == (gid_t)-1 ? 0 : c->group) == 0)
			chmod(c->path, c->group == (gid_t)-1 ? 0600 : 0660);
		return -1;
	}
	c->group = gid;
	return 0;
}

void control_free(struct control *c)
{
	if (!c)
		return;
	sd_event_source_disable_unref(c->src);
	if (c->fd >= 0)
		close(c->fd);
	if (c->path)
		unlink(c->path);
	free(c->path);
	free(c);
}
