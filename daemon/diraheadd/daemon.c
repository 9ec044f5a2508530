/* SPDX-License-Identifier: LGPL-2.1-or-later OR BSD-2-Clause */
/*
 * The daemon: builds its parts as peers on one sd-event loop (the detector, the events pump, the
 * scans with the engine and the walks, stat timing, arming, the control socket, the metrics
 * endpoint), reloads the configuration into them, and tells systemd and the log how it goes
 * (status line, periodic summary).  main() is diraheadd.c's.
 */
#include "daemon.h"

#include <errno.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <systemd/sd-daemon.h>
#include <time.h>
#include <unistd.h>

#include "arm.h"
#include "control.h"
#include "detector.h"
#include "events.h"
#include "hooks.h"
#include "host.h"
#include "httpd.h"
#include "log.h"
#include "monoclock.h"
#include "persist.h"
#include "policy.h"
#include "procdir.h"
#include "scan.h"
#include "walk.h"

static void bpf_config(const struct dd_config *c, struct dirahead_bpf_config *b)
{
	*b = (struct dirahead_bpf_config){
		.enabled = c->enabled,
		.self_tgid = procdir_self_tgid(),
		.confirm_stats = c->confirm_stats,
		.progress_step = c->window_start / 4 < 2 ? 2 : c->window_start / 4,
		.min_dir_size = c->min_dir_size,
		.unlisted_stats = c->unlisted_stats,
		.user_share_pct = c->table_share_per_user,
		/* END and walker events wait for the scan manager's poll (SCAN_POLL_USEC) */
		.flags = DIRAHEAD_CFG_LAZY_WAKEUP,
	};
}

static void notify_status(struct daemon *d)
{
	sd_notifyf(0, "STATUS=%u active scans, %llu confirmed, %llu entries prefetched%s",
		   scan_mgr_active(d->mgr), (unsigned long long)d->stats.scans_confirmed,
		   (unsigned long long)d->stats.entries_prefetched, d->cfg.enabled ? "" : " (disabled)");
}

/* Both TCP addresses, on the same port. */
static bool same_port(const char *a, const char *b)
{
	struct sockaddr_storage x, y;
	if (dd_parse_address(a, &x) < 0 || dd_parse_address(b, &y) < 0)
		return false; /* empty or unix: */
	in_port_t px = x.ss_family == AF_INET ? ((struct sockaddr_in *)&x)->sin_port
					      : ((struct sockaddr_in6 *)&x)->sin6_port;
	in_port_t py = y.ss_family == AF_INET ? ((struct sockaddr_in *)&y)->sin_port
					      : ((struct sockaddr_in6 *)&y)->sin6_port;
	return px == py;
}

/*
 * Moves the metrics endpoint to `addr` ("" turns it off).  The new listener starts first, so that
 * a failure leaves the old one serving; where the two cannot coexist (the same port on an
 * overlapping address, such as 127.0.0.1:9567 to 0.0.0.0:9567) the old one stops first and comes
 * back if the new one fails.  0, or -1 with err filled.
 */
static int switch_metrics(struct daemon *d, const char *addr, char *err, size_t errlen)
{
	char e[256];
	struct httpd *h = httpd_new(d, addr, e, sizeof(e));
	if (!h && addr[0] && d->http && same_port(addr, d->cfg.metrics_address)) {
		httpd_free(d->http);
		d->http = NULL;
		h = httpd_new(d, addr, e, sizeof(e));
		if (!h) {
			char e2[256];
			d->http = httpd_new(d, d->cfg.metrics_address, e2, sizeof(e2));
			if (!d->http)
				log_err("metrics: cannot listen on %s again either, metrics are off: %s",
					d->cfg.metrics_address, e2);
		}
	}
	if (!h && addr[0]) {
		snprintf(err, errlen, "[metrics] address: %s", e);
		return -1;
	}
	httpd_free(d->http);
	d->http = h;
	return 0;
}

int daemon_reload(struct daemon *d, char *err, size_t errlen)
{
	struct dd_config nc;
	bool missing;
	sd_notifyf(0, "RELOADING=1\nMONOTONIC_USEC=%llu", (unsigned long long)mono_us());

	dd_config_defaults(&nc);
	int r = dd_config_load(&nc, d->config_path, &missing, err, errlen);
	bool group_changed = false, addr_changed = false;
	if (r == 0) {
		nc.dry_run |= d->force_dry_run; /* command-line options outlive reloads */
		if (d->force_debug)
			nc.log_level = LOG_DEBUG;
		if (!d->force_socket && strcmp(nc.socket_path, d->cfg.socket_path))
			log_warn("[control] socket: %s until a restart", d->cfg.socket_path);
		free(nc.socket_path); /* the socket stays where it is until a restart */
		nc.socket_path = strdup(d->cfg.socket_path);
		if (strcmp(nc.proc_path, d->cfg.proc_path))
			log_warn("[daemon] proc: %s until a restart", d->cfg.proc_path);
		free(nc.proc_path);
		nc.proc_path = strdup(d->cfg.proc_path);
		if (strcmp(nc.state_dir, d->cfg.state_dir))
			log_warn("[daemon] state_dir: %s until a restart", d->cfg.state_dir);
		free(nc.state_dir);
		nc.state_dir = strdup(d->cfg.state_dir);
		/* The endpoints, all or nothing: the metrics listener is the hardest to put back, so
		 * it comes last and a failure there restores the control socket's group. */
		char e2[256];
		group_changed = strcmp(nc.socket_group, d->cfg.socket_group) != 0;
		addr_changed = strcmp(nc.metrics_address, d->cfg.metrics_address) != 0;
		if (group_changed && control_set_group(d->ctl, nc.socket_group, err, errlen) < 0) {
			r = -1;
		} else if (addr_changed && switch_metrics(d, nc.metrics_address, err, errlen) < 0) {
			if (group_changed && control_set_group(d->ctl, d->cfg.socket_group, e2, sizeof(e2)) < 0)
				log_err("cannot restore the control socket's group: %s", e2);
			r = -1;
		}
	}
	if (r == 0) {
		if (group_changed)
			log_notice("control socket: %s%s now", nc.socket_group[0] ? "root and group " : "root only",
				   nc.socket_group);
		if (addr_changed)
			log_notice("metrics: %s%s now", nc.metrics_address[0] ? "on " : "off", nc.metrics_address);
		struct dirahead_bpf_config bc;
		bpf_config(&nc, &bc);
		detector_configure(d->det, &bc);
		hooks_reconfigure(d->hooks, nc.enabled);
		host_reconfigure(d->host, &nc);
		walk_mgr_reconfigure(d->walks, &nc);
		scan_mgr_reconfigure(d->mgr, &nc);
		log_set_level(nc.log_level);
		if (d->persist)
			persist_set_days(d->persist, nc.remember_days);
		bool arm_changed = nc.arm_always != d->cfg.arm_always || nc.enabled != d->cfg.enabled;
		if (!nc.log_summary_s)
			sd_event_source_set_enabled(d->summary_src, SD_EVENT_OFF);
		dd_config_free(&d->cfg);
		d->cfg = nc;
		if (arm_changed)
			arm_reconfigure(d->arm);
		d->stats.reloads_ok++;
		log_notice("configuration reloaded from %s%s", d->config_path, missing ? " (missing: defaults)" : "");
	} else {
		dd_config_free(&nc);
		d->stats.reloads_failed++;
		log_err("reload failed, keeping the old configuration: %s", err);
	}
	sd_notify(0, "READY=1");
	notify_status(d);
	return r;
}

static int on_signal(sd_event_source *s, const struct signalfd_siginfo *si, void *userdata)
{
	struct daemon *d = userdata;
	(void)s;
	if (si->ssi_signo == SIGHUP) {
		char err[512];
		daemon_reload(d, err, sizeof(err));
		return 0;
	}
	log_info("signal %d: stopping", si->ssi_signo);
	sd_notify(0, "STOPPING=1");
	return sd_event_exit(d->loop, 0);
}

/* Enabled (pending) and not a failed lookup. */
static bool pending(sd_event_source *s)
{
	int on = SD_EVENT_OFF;
	return s && sd_event_source_get_enabled(s, &on) >= 0 && on != SD_EVENT_OFF;
}

/*
 * At the default level (info) no line per scan: those name directories and are at debug.
 * Instead, while scans happen, one line every log_summary_s with what they added up to.  Armed
 * by activity (a batch of BPF events) and re-armed only while there is more to tell, so an idle
 * daemon does not wake up for it.  summary_emit: the line of the period since summary_since, if
 * the counters moved (true if they did).
 */
static bool summary_emit(struct daemon *d, uint64_t now_usec)
{
	char line[768];
	d->stats.cpu_s = dd_process_cpu_s(); /* what the period's help cost */
	bool moved = dd_stats_summary(&d->stats, &d->summary_prev, line, sizeof(line)) > 0;
	if (moved)
		log_info("last %llu s: %s; %u scans and %u walks running",
			 (unsigned long long)((now_usec - d->summary_since + 500000) / 1000000), line,
			 scan_mgr_active(d->mgr), scan_mgr_walks(d->mgr));
	d->summary_prev = d->stats;
	d->summary_since = now_usec;
	return moved;
}

static int on_summary(sd_event_source *s, uint64_t usec, void *userdata)
{
	struct daemon *d = userdata;
	bool moved = summary_emit(d, usec);
	/* once more after the last activity: scans that were still running end in that period */
	if (d->cfg.log_summary_s && (moved || scan_mgr_active(d->mgr) || scan_mgr_walks(d->mgr))) {
		sd_event_source_set_time(s, usec + d->cfg.log_summary_s * 1000000ull);
		sd_event_source_set_enabled(s, SD_EVENT_ONESHOT);
	}
	return 0;
}

static void summary_kick(struct daemon *d)
{
	uint64_t now;
	if (!d->cfg.log_summary_s || !d->summary_src || pending(d->summary_src))
		return;
	sd_event_now(d->loop, CLOCK_MONOTONIC, &now);
	/* a period of activity starts: its CPU counts from here, not from the idle time before */
	d->summary_prev.cpu_s = dd_process_cpu_s();
	d->summary_since = now;
	sd_event_source_set_time(d->summary_src, now + d->cfg.log_summary_s * 1000000ull);
	sd_event_source_set_enabled(d->summary_src, SD_EVENT_ONESHOT);
}

/* The memory's save: a verdict may have changed in the last PERSIST_INTERVAL_S (persist_save
 * writes only if one did).  Armed by activity, like the summary. */
static int on_persist(sd_event_source *s, uint64_t usec, void *userdata)
{
	struct daemon *d = userdata;
	(void)s, (void)usec;
	persist_save(d->persist, host_policy(d->host), mono_ns(), false);
	return 0;
}

static void persist_kick(struct daemon *d)
{
	uint64_t now;
	if (!d->persist_src || pending(d->persist_src))
		return;
	sd_event_now(d->loop, CLOCK_MONOTONIC, &now);
	sd_event_source_set_time(d->persist_src, now + PERSIST_INTERVAL_S * 1000000ull);
	sd_event_source_set_enabled(d->persist_src, SD_EVENT_ONESHOT);
}

/* The arming went quiet (disarmed, nothing running): what the summary and the memory's timers
 * would do in the next minute is done now, so the idle daemon has no timer left to wake it. */
static void on_quiet(void *ctx)
{
	struct daemon *d = ctx;
	uint64_t now;
	sd_event_now(d->loop, CLOCK_MONOTONIC, &now);
	if (pending(d->summary_src)) {
		summary_emit(d, now);
		sd_event_source_set_enabled(d->summary_src, SD_EVENT_OFF);
	}
	if (pending(d->persist_src)) {
		persist_save(d->persist, host_policy(d->host), mono_ns(), false);
		sd_event_source_set_enabled(d->persist_src, SD_EVENT_OFF);
	}
}

/* After each wakeup by BPF: the summary's and the memory's timers, and the status line when the
 * scans changed. */
static void on_batch(void *ctx)
{
	struct daemon *d = ctx;
	uint64_t now;
	summary_kick(d);
	persist_kick(d);
	if (d->arm)
		arm_settle(d->arm);
	sd_event_now(d->loop, CLOCK_MONOTONIC, &now);
	if (scan_mgr_active(d->mgr) != d->last_active && now - d->last_notify > 1000000) {
		d->last_active = scan_mgr_active(d->mgr);
		d->last_notify = now;
		notify_status(d);
	}
}

static int start_loop(struct daemon *d, char *err, size_t errlen)
{
	int r = sd_event_default(&d->loop);
	if (r < 0) {
		snprintf(err, errlen, "event loop: %s", strerror(-r));
		return -1;
	}
	sd_event_add_signal(d->loop, NULL, SIGTERM, on_signal, d);
	sd_event_add_signal(d->loop, NULL, SIGINT, on_signal, d);
	sd_event_add_signal(d->loop, NULL, SIGHUP, on_signal, d);
	bool host;
	if (procdir_setup(d->cfg.proc_path, &host, err, errlen) < 0)
		return -1;
	if (!host)
		log_warn("%s is not the procfs of the initial PID namespace: scans of processes "
			    "outside this daemon's namespace cannot be opened (set [daemon] proc= to "
			    "the host's /proc, mounted into the container)", d->cfg.proc_path);
	if (procdir_self_tgid() != (uint32_t)getpid())
		log_info("in a PID namespace of its own: PID %u in %s", procdir_self_tgid(),
			 d->cfg.proc_path);
	return 0;
}

/* The detector, the events pump, the scans and stat timing: the pipeline. */
static int start_pipeline(struct daemon *d, bool verbose, char *err, size_t errlen)
{
	char e[512];
	struct dirahead_bpf_config bc;
	bpf_config(&d->cfg, &bc);
	d->events = events_new(d->loop, on_batch, d);
	if (!d->events) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	/* on-block: the syscall hooks wait for the sentinel (arm.h) */
	detector_set_syscalls_at_open(d->cfg.arm_always);
	d->det = detector_open(&bc, events_on_event, d->events, verbose, e, sizeof(e));
	if (!d->det) {
		snprintf(err, errlen, "cannot attach the BPF detector: %s", e);
		return -1;
	}
	d->host = host_new(d->loop, &d->cfg, &d->stats, err, errlen);
	if (!d->host)
		return -1;
	host_set_pump(d->host, events_pump, d->events);
	d->walks = walk_mgr_new(&d->cfg, d->det, &d->stats, d->host);
	d->mgr = d->walks ? scan_mgr_new(&d->cfg, d->det, &d->stats, d->host, d->walks) : NULL;
	if (!d->mgr) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	d->hooks = hooks_new(d->loop, d->det, err, errlen);
	if (!d->hooks)
		return -1;
	hooks_set_scans(d->hooks, d->mgr);
	scan_mgr_set_timing_hook(d->mgr, hooks_want_timing, d->hooks);
	return 0;
}

/* The memory across restarts: restored before the first event, saved by on_persist. */
static int start_memory(struct daemon *d, char *err, size_t errlen)
{
	const char *dir = persist_dir(d->cfg.state_dir);
	char mountinfo[4096];
	if (!dir)
		return 0; /* (remember_days = 0 leaves it idle; a reload may set it) */
	/* PID 1's mounts: the unit's own mount namespace is a copy of the host's */
	snprintf(mountinfo, sizeof(mountinfo), "%s/1/mountinfo", d->cfg.proc_path);
	d->persist = persist_new(dir, mountinfo, d->cfg.remember_days);
	int r = d->persist ? sd_event_add_time(d->loop, &d->persist_src, CLOCK_MONOTONIC, UINT64_MAX,
					       1000000, on_persist, d) : -ENOMEM;
	if (r < 0) {
		snprintf(err, errlen, "state: %s", strerror(-r));
		return -1;
	}
	sd_event_source_set_enabled(d->persist_src, SD_EVENT_OFF);
	persist_restore(d->persist, host_policy(d->host), mono_ns());
	return 0;
}

/* Arming, the control socket, the metrics endpoint and the summary: around the pipeline. */
static int start_around(struct daemon *d, char *err, size_t errlen)
{
	char e[512];
	d->arm = arm_new(d, err, errlen);
	if (!d->arm)
		return -1;
	arm_on_quiet(d->arm, on_quiet, d);
	d->ctl = control_new(d, err, errlen);
	if (!d->ctl)
		return -1;
	e[0] = '\0';
	d->http = httpd_new(d, d->cfg.metrics_address, e, sizeof(e));
	if (!d->http && e[0]) {
		snprintf(err, errlen, "metrics: %s", e);
		return -1;
	}
	int r = sd_event_add_time(d->loop, &d->summary_src, CLOCK_MONOTONIC, UINT64_MAX, 1000000,
				  on_summary, d);
	if (r < 0) {
		snprintf(err, errlen, "event loop: %s", strerror(-r));
		return -1;
	}
	sd_event_source_set_enabled(d->summary_src, SD_EVENT_OFF);
	return 0;
}

int daemon_start(struct daemon *d, bool verbose, char *err, size_t errlen)
{
	d->start_usec = wall_us();
	/* the memory last: a daemon that fails to start neither reads nor rewrites it */
	if (start_loop(d, err, errlen) < 0 || start_pipeline(d, verbose, err, errlen) < 0 ||
	    start_around(d, err, errlen) < 0 || start_memory(d, err, errlen) < 0)
		return -1;
	int r = events_start(d->events, d->det, d->mgr, d->walks);
	if (r < 0) {
		snprintf(err, errlen, "event loop: %s", strerror(-r));
		return -1;
	}
	sd_event_set_watchdog(d->loop, true);
	log_notice("attached; %s engine%s, control socket %s%s%s", scan_mgr_backend(d->mgr),
		   d->cfg.dry_run ? ", dry run" : "", d->cfg.socket_path,
		   !d->cfg.metrics_address[0] ? "" : dd_unix_address(d->cfg.metrics_address) ?
		   ", metrics on " : ", metrics on http://", d->cfg.metrics_address);
	sd_notify(0, "READY=1");
	notify_status(d);
	return 0;
}

void daemon_stop(struct daemon *d)
{
	httpd_free(d->http);
	sd_event_source_disable_unref(d->summary_src);
	control_free(d->ctl);
	arm_free(d->arm);
	if (d->mgr)
		scan_mgr_stop(d->mgr);
	walk_mgr_free(d->walks);
	/* after the scans' and walks' ends: their last judgments are in */
	if (d->persist && d->host)
		persist_save(d->persist, host_policy(d->host), mono_ns(), true);
	sd_event_source_disable_unref(d->persist_src);
	persist_free(d->persist);
	host_stop_engine(d->host);
	scan_mgr_free(d->mgr);
	host_free(d->host);
	hooks_free(d->hooks);
	detector_close(d->det);
	events_free(d->events);
	sd_event_unref(d->loop);
	dd_config_free(&d->cfg);
}
