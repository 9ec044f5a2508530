/* SPDX-License-Identifier: LGPL-2.1-or-later OR BSD-2-Clause */
/* diraheadctl explain: the daemon's last decisions (started, skipped, ended) with their reasons
 * in words, of one process or all, newest last. */
#include <getopt.h>
#include <json-c/json.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "diraheadctl.h"

static void usage(FILE *f)
{
	fprintf(f, "Usage: diraheadctl explain [--socket PATH] [--json] [PID]\n");
}

static const char *field(json_object *o, const char *k)
{
	json_object *v = NULL;
	json_object_object_get_ex(o, k, &v);
	return v ? json_object_get_string(v) : "";
}

/* One decision: "HH:MM:SS pid 1234 (ls) scan of DIR: skipped fast_stats: ...". */
static void print_one(json_object *d)
{
	json_object *t = NULL;
	char when[16] = "?";
	json_object_object_get_ex(d, "time", &t);
	time_t secs = (time_t)json_object_get_double(t);
	struct tm tm;
	if (t && localtime_r(&secs, &tm))
		strftime(when, sizeof(when), "%H:%M:%S", &tm);
	char comm[64], dir[1024], text[512];
	printf("%s pid %s (%s) %s of %s: %s\n", when, field(d, "pid"),
	       ctl_printable(comm, sizeof(comm), field(d, "comm")), field(d, "what"),
	       ctl_printable(dir, sizeof(dir), field(d, "directory")),
	       ctl_printable(text, sizeof(text), field(d, "text")));
}

int cmd_explain(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "socket", required_argument, NULL, 's' },
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{},
	};
	const char *socket = ctl_default_socket();
	bool json = false;
	int c;
	optind = 1;
	while ((c = getopt_long(argc, argv, "s:jh", lo, NULL)) != -1) {
		switch (c) {
		case 's': socket = optarg; break;
		case 'j': json = true; break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return CTL_EXIT_USAGE;
		}
	}
	char cmd[64] = "explain";
	if (optind < argc) {
		char *end;
		unsigned long pid = strtoul(argv[optind], &end, 10);
		if (*end || !pid || pid > 0x7fffffff || argv[optind][0] < '1' || argv[optind][0] > '9' ||
		    optind + 1 < argc) {
			fprintf(stderr, "diraheadctl explain: '%s' is not a process ID\n", argv[optind]);
			usage(stderr);
			return CTL_EXIT_USAGE;
		}
		snprintf(cmd, sizeof(cmd), "explain %lu", pid);
	}
	char *reply;
	int r = ctl_ask(socket, cmd, &reply);
	if (r)
		return r;
	if (json) {
		printf("%s\n", reply);
		free(reply);
		return 0;
	}
	json_object *a = json_tokener_parse(reply);
	free(reply);
	if (!a || !json_object_is_type(a, json_type_array)) {
		fprintf(stderr, "diraheadctl: the daemon's answer is not a JSON array\n");
		json_object_put(a);
		return CTL_EXIT_FAILURE;
	}
	size_t n = json_object_array_length(a);
	if (!n)
		printf("no decisions%s yet\n", optind < argc ? " about that process" : "");
	for (size_t i = 0; i < n; i++)
		print_one(json_object_array_get_idx(a, i));
	json_object_put(a);
	return 0;
}
