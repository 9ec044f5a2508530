/* SPDX-License-Identifier: LGPL-2.1-or-later OR BSD-2-Clause */
/* diraheadctl: the command-line client.  main() only dispatches to a subcommand. */
#include <stdio.h>
#include <string.h>

#include "diraheadctl.h"

static const struct command {
	const char *name;
	int (*fn)(int argc, char **argv);
	const char *help;
} commands[] = {
	{ "status", cmd_status, "is the daemon running and attached (exit 0 when it is)" },
	{ "stats", cmd_stats, "the daemon's statistics" },
	{ "scans", cmd_scans, "the scans in progress" },
	{ "explain", cmd_explain, "the last decisions and why, of one process or all [PID]" },
	{ "top", cmd_top, "a live view of the daemon, its filesystems, scans and walks" },
	{ "metrics", cmd_metrics, "the Prometheus metrics text" },
	{ "reload", cmd_reload, "reload the configuration file" },
	{ "prefetch", cmd_prefetch, "warm directories now, without the daemon" },
	{ "ls", cmd_ls, "list directories as ls [-l] [-R] does, through dirahead_xreaddir()" },
};

static void usage(FILE *f)
{
	fprintf(f, "Usage: diraheadctl [--help] [--version] COMMAND [ARG...]\n\nCommands:\n");
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		fprintf(f, "  %-12s %s\n", commands[i].name, commands[i].help);
	fprintf(f, "\nRun 'diraheadctl COMMAND --help' for the options of a command.\n");
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
		usage(stdout);
		return 0;
	}
	if (!strcmp(argv[1], "--version")) {
		printf("diraheadctl %s\n", DIRAHEAD_VERSION);
		return 0;
	}
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (!strcmp(argv[1], commands[i].name))
			return commands[i].fn(argc - 1, argv + 1);
	fprintf(stderr, "diraheadctl: unknown command '%s'\n", argv[1]);
	usage(stderr);
	return 2;
}
