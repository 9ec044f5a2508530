/* SPDX-License-Identifier: LGPL-2.1-or-later OR BSD-2-Clause */
/*
 * diraheadd: watches directory scans with BPF and prefetches the entries' attributes ahead of
 * the application.  One sd-event loop serves the ring buffer, the prefetch engine, the control
 * socket, the metrics endpoint, signals and the systemd watchdog.
 */
#include <errno.h>
#include <getopt.h>
#include <malloc.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <systemd/sd-daemon.h>
#include <time.h>
#include <unistd.h>

#include "arm.h"
#include "config.h"
#include "control.h"
#include "daemon.h"
#include "detector.h"
#include "httpd.h"
#include "procdir.h"
#include "log.h"
#include "scan.h"

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: diraheadd [OPTIONS]\n"
		"Detects directory scans with BPF and prefetches the entries' attributes ahead of them.\n"
		"\n"
		"  -c, --config FILE       configuration file (default " DA_CONFIG_PATH ")\n"
		"      --check-config [FILE]\n"
		"                          validate the configuration file and exit (0 valid, 1 not)\n"
		"  -n, --dry-run           detect and log scans, never prefetch\n"
		"  -s, --socket PATH       control socket (default " DA_SOCKET_PATH ")\n"
		"  -v, --verbose           log at debug level (and libbpf's messages)\n"
		"  -V, --version           print the version and exit\n"
		"  -h, --help              print this help and exit\n"
		"\n"
		"Runs in the foreground; under systemd it logs to the journal and notifies readiness.\n"
		"SIGHUP reloads the configuration; SIGTERM and SIGINT stop it.\n"
		"Exit status: 0 stopped cleanly, 1 failed to start (bad configuration, no BPF), 2 bad usage.\n");
}

static void bpf_config(const struct da_config *c, struct dirahead_bpf_config *b)
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
	if (da_parse_address(a, &x) < 0 || da_parse_address(b, &y) < 0)
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
	struct da_config nc;
	bool missing;
	uint64_t mono = 0;
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	mono = (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
	sd_notifyf(0, "RELOADING=1\nMONOTONIC_USEC=%llu", (unsigned long long)mono);

	da_config_defaults(&nc);
	int r = da_config_load(&nc, d->config_path, &missing, err, errlen);
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
		if (!nc.enabled)
			detector_stat_timing(d->det, false); /* the programs return at once now */
		scan_mgr_reconfigure(d->mgr, &nc);
		log_set_level(nc.log_level);
		bool arm_changed = nc.arm_always != d->cfg.arm_always || nc.enabled != d->cfg.enabled;
		if (!nc.log_summary_s)
			sd_event_source_set_enabled(d->summary_src, SD_EVENT_OFF);
		da_config_free(&d->cfg);
		d->cfg = nc;
		if (arm_changed)
			arm_reconfigure(d->arm);
		d->stats.reloads_ok++;
		log_notice("configuration reloaded from %s%s", d->config_path, missing ? " (missing: defaults)" : "");
	} else {
		da_config_free(&nc);
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

/*
 * Stat timing (the cost model's probes, and the application stat latency histogram) needs the
 * detector's sys_enter program, which once attached costs every syscall on the machine (about
 * 20 ns here, ~10% of a warm `ls -l`): it is attached when a probe cannot decide by the
 * progress rate alone (the program takes long between stats: slow stats, or work of its own),
 * and detached when no scan has been probing for this long, or when disabled.  The pay-off rule
 * needs no timing (it judges the progress rate).
 */
#define STAT_TIMING_IDLE_USEC (2ull * 1000000ull)

static void count_probing(const struct scan_info *i, void *ctx)
{
	*(unsigned *)ctx += !strcmp(i->state, "probing");
}

static int on_timing_idle(sd_event_source *s, uint64_t usec, void *userdata)
{
	struct daemon *d = userdata;
	unsigned n = 0;
	scan_mgr_foreach(d->mgr, count_probing, &n);
	if (n && d->cfg.enabled) {
		sd_event_source_set_time(s, usec + STAT_TIMING_IDLE_USEC);
		sd_event_source_set_enabled(s, SD_EVENT_ONESHOT);
		return 0;
	}
	detector_stat_timing(d->det, false);
	log_debug("stat latency timing detached: no scans");
	return 0;
}

static void stat_timing_scan(struct daemon *d)
{
	uint64_t now;
	if (!d->timing_src || !d->cfg.enabled) /* a SCAN queued before a reload that disabled */
		return;
	if (!detector_stat_timing_on(d->det)) {
		int r = detector_stat_timing(d->det, true);
		if (r < 0) {
			log_warn("cannot attach the stat timing program: %s", strerror(-r));
			return;
		}
		log_debug("stat latency timing attached");
	}
	sd_event_now(d->loop, CLOCK_MONOTONIC, &now);
	sd_event_source_set_time(d->timing_src, now + STAT_TIMING_IDLE_USEC);
	sd_event_source_set_enabled(d->timing_src, SD_EVENT_ONESHOT);
}

/* The scan manager's probe wants the programs' stats timed. */
static void want_timing(void *ctx)
{
	stat_timing_scan(ctx);
}

/*
 * At the default level (info) no line per scan: those name directories and are at debug.
 * Instead, while scans happen, one line every log_summary_s with what they added up to.  Armed
 * by activity (a batch of BPF events) and re-armed only while there is more to tell, so an idle
 * daemon does not wake up for it.
 */
static int on_summary(sd_event_source *s, uint64_t usec, void *userdata)
{
	struct daemon *d = userdata;
	char line[768];
	bool moved = da_stats_summary(&d->stats, &d->summary_prev, line, sizeof(line)) > 0;
	if (moved)
		log_info("last %u s: %s; %u scans and %u walks running", d->cfg.log_summary_s, line,
			 scan_mgr_active(d->mgr), scan_mgr_walks(d->mgr));
	d->summary_prev = d->stats;
	/* once more after the last activity: scans that were still running end in that period */
	if (d->cfg.log_summary_s && (moved || scan_mgr_active(d->mgr) || scan_mgr_walks(d->mgr))) {
		sd_event_source_set_time(s, usec + d->cfg.log_summary_s * 1000000ull);
		sd_event_source_set_enabled(s, SD_EVENT_ONESHOT);
	}
	return 0;
}

static void summary_kick(struct daemon *d)
{
	int on = SD_EVENT_OFF;
	uint64_t now;
	if (!d->cfg.log_summary_s || sd_event_source_get_enabled(d->summary_src, &on) < 0 || on != SD_EVENT_OFF)
		return;
	sd_event_now(d->loop, CLOCK_MONOTONIC, &now);
	sd_event_source_set_time(d->summary_src, now + d->cfg.log_summary_s * 1000000ull);
	sd_event_source_set_enabled(d->summary_src, SD_EVENT_ONESHOT);
}

static int on_detector_event(const struct dirahead_event *ev, void *ctx)
{
	struct daemon *d = ctx;
	return d->mgr ? scan_mgr_on_event(ev, d->mgr) : 0;
}

static int on_ringbuf(sd_event_source *s, int fd, uint32_t revents, void *userdata)
{
	struct daemon *d = userdata;
	static unsigned last_active;
	static uint64_t last_notify;
	(void)s;
	(void)fd;
	(void)revents;
	detector_consume(d->det);
	summary_kick(d);
	uint64_t now;
	sd_event_now(d->loop, CLOCK_MONOTONIC, &now);
	if (scan_mgr_active(d->mgr) != last_active && now - last_notify > 1000000) {
		last_active = scan_mgr_active(d->mgr);
		last_notify = now;
		notify_status(d);
	}
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "config", required_argument, NULL, 'c' },
		{ "check-config", no_argument, NULL, 'C' },
		{ "dry-run", no_argument, NULL, 'n' },
		{ "socket", required_argument, NULL, 's' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "version", no_argument, NULL, 'V' },
		{ "help", no_argument, NULL, 'h' },
		{},
	};
	struct daemon d = { .config_path = DA_CONFIG_PATH };
	/* A scan of a big directory holds its sorted listing (MiBs) for a while, then frees it: with
	 * a fixed threshold such blocks are mapped and go back to the system when freed, where
	 * glibc's sliding one would soon serve them from the heap and keep the peak for good. */
	mallopt(M_MMAP_THRESHOLD, 256 * 1024);
	bool check = false, dry = false, verbose = false, missing = false;
	const char *socket_path = NULL;
	char err[512];
	int c, r, rc = 1;

	while ((c = getopt_long(argc, argv, "c:ns:vVh", opts, NULL)) != -1) {
		switch (c) {
		case 'c': d.config_path = optarg; break;
		case 'C': check = true; break;
		case 'n': dry = true; break;
		case 's': socket_path = optarg; break;
		case 'v': verbose = true; break;
		case 'V': printf("diraheadd " DIRAHEAD_VERSION "\n"); return 0;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (optind < argc) {
		/* `--check-config FILE` */
		if (check && optind + 1 == argc) {
			d.config_path = argv[optind];
		} else {
			/* name the first argument that is too many: with --check-config, the second */
			fprintf(stderr, "diraheadd: unexpected argument '%s'\n", argv[optind + check]);
			usage(stderr);
			return 2;
		}
	}

	da_config_defaults(&d.cfg);
	if (da_config_load(&d.cfg, d.config_path, &missing, err, sizeof(err)) < 0) {
		fprintf(stderr, "diraheadd: %s\n", err);
		da_config_free(&d.cfg);
		return 1;
	}
	if (check) {
		printf("%s: %s\n", d.config_path, missing ? "missing, the built-in defaults apply" : "valid");
		da_config_free(&d.cfg);
		return 0;
	}
	d.force_dry_run = dry;
	d.force_debug = verbose;
	if (dry)
		d.cfg.dry_run = true;
	if (verbose)
		d.cfg.log_level = LOG_DEBUG;
	if (socket_path) {
		d.force_socket = true;
		free(d.cfg.socket_path);
		d.cfg.socket_path = strdup(socket_path);
	}
	log_setup(d.cfg.log_level);
	if (missing)
		log_info("%s not found: using the built-in defaults", d.config_path);

	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	d.start_usec = (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;

	sigset_t ss;
	sigemptyset(&ss);
	sigaddset(&ss, SIGTERM);
	sigaddset(&ss, SIGINT);
	sigaddset(&ss, SIGHUP);
	sigprocmask(SIG_BLOCK, &ss, NULL);
	signal(SIGPIPE, SIG_IGN);

	if ((r = sd_event_default(&d.loop)) < 0) {
		log_err("event loop: %s", strerror(-r));
		goto out;
	}
	sd_event_add_signal(d.loop, NULL, SIGTERM, on_signal, &d);
	sd_event_add_signal(d.loop, NULL, SIGINT, on_signal, &d);
	sd_event_add_signal(d.loop, NULL, SIGHUP, on_signal, &d);

	bool host;
	if (procdir_setup(d.cfg.proc_path, &host, err, sizeof(err)) < 0) {
		log_err("%s", err);
		goto out;
	}
	if (!host)
		log_warn("%s is not the procfs of the initial PID namespace: scans of processes "
			    "outside this daemon's namespace cannot be opened (set [daemon] proc= to "
			    "the host's /proc, mounted into the container)", d.cfg.proc_path);
	if (procdir_self_tgid() != (uint32_t)getpid())
		log_info("in a PID namespace of its own: PID %u in %s", procdir_self_tgid(),
			 d.cfg.proc_path);

	struct dirahead_bpf_config bc;
	bpf_config(&d.cfg, &bc);
	/* on-block: the syscall hooks wait for the sentinel (arm.h) */
	detector_set_syscalls_at_open(d.cfg.arm_always);
	d.det = detector_open(&bc, on_detector_event, &d, verbose, err, sizeof(err));
	if (!d.det) {
		log_err("cannot attach the BPF detector: %s", err);
		goto out;
	}
	d.mgr = scan_mgr_new(d.loop, &d.cfg, d.det, &d.stats, err, sizeof(err));
	if (!d.mgr) {
		log_err("%s", err);
		goto out;
	}
	scan_mgr_set_timing_hook(d.mgr, want_timing, &d);
	/* Until a probe needs it, stats are not timed (see STAT_TIMING_IDLE_USEC). */
	detector_stat_timing(d.det, false);
	if ((r = sd_event_add_time(d.loop, &d.timing_src, CLOCK_MONOTONIC, UINT64_MAX, 1000000,
				   on_timing_idle, &d)) < 0) {
		log_err("event loop: %s", strerror(-r));
		goto out;
	}
	sd_event_source_set_enabled(d.timing_src, SD_EVENT_OFF);
	d.arm = arm_new(&d, err, sizeof(err));
	if (!d.arm) {
		log_err("%s", err);
		goto out;
	}
	d.ctl = control_new(&d, err, sizeof(err));
	if (!d.ctl) {
		log_err("%s", err);
		goto out;
	}
	d.http = httpd_new(&d, d.cfg.metrics_address, err, sizeof(err));
	if (!d.http && err[0]) {
		log_err("metrics: %s", err);
		goto out;
	}
	if ((r = sd_event_add_time(d.loop, &d.summary_src, CLOCK_MONOTONIC, UINT64_MAX, 1000000,
				   on_summary, &d)) < 0) {
		log_err("event loop: %s", strerror(-r));
		goto out;
	}
	sd_event_source_set_enabled(d.summary_src, SD_EVENT_OFF);
	if ((r = sd_event_add_io(d.loop, NULL, detector_fd(d.det), EPOLLIN, on_ringbuf, &d)) < 0) {
		log_err("event loop: %s", strerror(-r));
		goto out;
	}
	sd_event_set_watchdog(d.loop, true);
	log_notice("attached; %s engine%s, control socket %s%s%s", scan_mgr_backend(d.mgr),
		   d.cfg.dry_run ? ", dry run" : "", d.cfg.socket_path,
		   !d.cfg.metrics_address[0] ? "" : da_unix_address(d.cfg.metrics_address) ?
		   ", metrics on " : ", metrics on http://", d.cfg.metrics_address);
	sd_notify(0, "READY=1");
	notify_status(&d);

	r = sd_event_loop(d.loop);
	rc = r < 0 ? 1 : 0;
out:
	httpd_free(d.http);
	sd_event_source_disable_unref(d.summary_src);
	control_free(d.ctl);
	arm_free(d.arm);
	scan_mgr_free(d.mgr);
	sd_event_source_disable_unref(d.timing_src);
	detector_close(d.det);
	sd_event_unref(d.loop);
	da_config_free(&d.cfg);
	return rc;
}
