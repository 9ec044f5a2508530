/* SPDX-License-Identifier: LGPL-2.1-or-later OR BSD-2-Clause */
/*
 * diraheadd: watches directory scans with BPF and prefetches the entries' attributes ahead of
 * the application.  main() only: the options and the configuration; daemon.c builds the parts
 * on one sd-event loop, which serves the ring buffer, the prefetch engine, the control socket,
 * the metrics endpoint, signals and the systemd watchdog.
 */
#include <getopt.h>
#include <malloc.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "daemon.h"
#include "log.h"

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: diraheadd [OPTIONS]\n"
		"Detects directory scans with BPF and prefetches the entries' attributes ahead of them.\n"
		"\n"
		"  -c, --config FILE       configuration file (default " DD_CONFIG_PATH ")\n"
		"      --check-config [FILE]\n"
		"                          validate the configuration file and exit (0 valid, 1 not)\n"
		"  -n, --dry-run           detect and log scans, never prefetch\n"
		"  -s, --socket PATH       control socket (default " DD_SOCKET_PATH ")\n"
		"  -v, --verbose           log at debug level (and libbpf's messages)\n"
		"  -V, --version           print the version and exit\n"
		"  -h, --help              print this help and exit\n"
		"\n"
		"Runs in the foreground; under systemd it logs to the journal and notifies readiness.\n"
		"SIGHUP reloads the configuration; SIGTERM and SIGINT stop it.\n"
		"Exit status: 0 stopped cleanly, 1 failed to start (bad configuration, no BPF), 2 bad usage.\n");
}

/* The command line. */
struct args {
	const char *config_path, *socket_path;
	bool check, dry, verbose;
};

/* -1: go on; else main's exit status (help, version, bad usage). */
static int parse_args(int argc, char **argv, struct args *a)
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
	int c;
	while ((c = getopt_long(argc, argv, "c:ns:vVh", opts, NULL)) != -1) {
		switch (c) {
		case 'c': a->config_path = optarg; break;
		case 'C': a->check = true; break;
		case 'n': a->dry = true; break;
		case 's': a->socket_path = optarg; break;
		case 'v': a->verbose = true; break;
		case 'V': printf("diraheadd " DIRAHEAD_VERSION "\n"); return 0;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (optind < argc) {
		/* `--check-config FILE` */
		if (a->check && optind + 1 == argc) {
			a->config_path = argv[optind];
		} else {
			/* name the first argument that is too many: with --check-config, the second */
			fprintf(stderr, "diraheadd: unexpected argument '%s'\n", argv[optind + a->check]);
			usage(stderr);
			return 2;
		}
	}
	return -1;
}

/* The configuration file, and the command line over it.  -1: go on; else the exit status. */
static int load_config(struct daemon *d, const struct args *a)
{
	char err[512];
	bool missing = false;
	dd_config_defaults(&d->cfg);
	if (dd_config_load(&d->cfg, d->config_path, &missing, err, sizeof(err)) < 0) {
		fprintf(stderr, "diraheadd: %s\n", err);
		dd_config_free(&d->cfg);
		return 1;
	}
	if (a->check) {
		printf("%s: %s\n", d->config_path, missing ? "missing, the built-in defaults apply" : "valid");
		dd_config_free(&d->cfg);
		return 0;
	}
	d->force_dry_run = a->dry;
	d->force_debug = a->verbose;
	if (a->dry)
		d->cfg.dry_run = true;
	if (a->verbose)
		d->cfg.log_level = LOG_DEBUG;
	if (a->socket_path) {
		d->force_socket = true;
		free(d->cfg.socket_path);
		d->cfg.socket_path = strdup(a->socket_path);
	}
	log_setup(d->cfg.log_level);
	if (missing)
		log_info("%s not found: using the built-in defaults", d->config_path);
	return -1;
}

int main(int argc, char **argv)
{
	/* A scan of a big directory holds its sorted listing (MiBs) for a while, then frees it: with
	 * a fixed threshold such blocks are mapped and go back to the system when freed, where
	 * glibc's sliding one would soon serve them from the heap and keep the peak for good. */
	mallopt(M_MMAP_THRESHOLD, 256 * 1024);
	struct args a = { .config_path = DD_CONFIG_PATH };
	int rc = parse_args(argc, argv, &a);
	if (rc >= 0)
		return rc;
	struct daemon d = { .config_path = a.config_path };
	if ((rc = load_config(&d, &a)) >= 0)
		return rc;

	sigset_t ss;
	sigemptyset(&ss);
	sigaddset(&ss, SIGTERM);
	sigaddset(&ss, SIGINT);
	sigaddset(&ss, SIGHUP);
	sigprocmask(SIG_BLOCK, &ss, NULL);
	signal(SIGPIPE, SIG_IGN);

	char err[512];
	rc = 1;
	if (daemon_start(&d, a.verbose, err, sizeof(err)) == 0)
		rc = sd_event_loop(d.loop) < 0 ? 1 : 0;
	else
		log_err("%s", err);
	daemon_stop(&d);
	return rc;
}
