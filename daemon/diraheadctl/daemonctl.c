/* SPDX-License-Identifier: LGPL-2.1-or-later OR BSD-2-Clause */
/* diraheadctl's talking-to-the-daemon subcommands: status, stats, scans, metrics, reload. */
#include <errno.h>
#include <getopt.h>
#include <json-c/json.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctlproto.h"
#include "diraheadctl.h"

struct opts {
	const char *socket;
	bool json;
};

static int parse(int argc, char **argv, struct opts *o, bool json_ok)
{
	static const struct option lo[] = {
		{ "socket", required_argument, NULL, 's' },
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{},
	};
	int c;
	o->socket = ctl_default_socket();
	o->json = false;
	optind = 1;
	while ((c = getopt_long(argc, argv, "s:jh", lo, NULL)) != -1) {
		switch (c) {
		case 's': o->socket = optarg; break;
		case 'j':
			if (!json_ok)
				goto bad;
			o->json = true;
			break;
		case 'h':
			printf("Usage: diraheadctl %s [--socket PATH]%s\n", argv[0], json_ok ? " [--json]" : "");
			exit(0);
		default:
			goto bad;
		}
	}
	if (optind == argc)
		return 0;
	fprintf(stderr, "diraheadctl %s: unexpected argument '%s'\n", argv[0], argv[optind]);
bad:
	fprintf(stderr, "Usage: diraheadctl %s [--socket PATH]%s\n", argv[0], json_ok ? " [--json]" : "");
	return -1;
}

static int ask(const struct opts *o, const char *cmd, char **reply)
{
	return ctl_ask(o->socket, cmd, reply);
}

const char *ctl_printable(char *dst, size_t size, const char *s)
{
	size_t o = 0;
	for (const unsigned char *p = (const unsigned char *)s; *p && o + 1 < size; p++) {
		if (p[0] == 0xc2 && p[1] >= 0x80 && p[1] <= 0x9f) {
			dst[o++] = '?'; /* a C1 control in UTF-8 */
			p++;
		} else {
			dst[o++] = *p < 0x20 || *p == 0x7f ? '?' : (char)*p;
		}
	}
	dst[o] = '\0';
	return dst;
}

const char *ctl_default_socket(void)
{
	const char *s = getenv("DIRAHEAD_SOCKET");
	return s && s[0] ? s : DD_DEFAULT_SOCKET;
}

int ctl_ask(const char *socket, const char *cmd, char **reply)
{
	int r = ctl_request(socket, cmd, reply, 5000);
	if (r == 0)
		return 0;
	if (r == 1) {
		fprintf(stderr, "diraheadctl: %s: %s\n", cmd, *reply);
		free(*reply);
		return CTL_EXIT_FAILURE;
	}
	if (r == -ENOENT || r == -ECONNREFUSED) {
		fprintf(stderr, "diraheadctl: diraheadd is not running (no daemon at %s)\n", socket);
		return CTL_EXIT_NOT_RUNNING;
	}
	if (r == -EACCES || r == -EPERM) {
		fprintf(stderr, "diraheadctl: permission denied on %s (root or the [control] group only)\n",
			socket);
		return CTL_EXIT_DENIED;
	}
	fprintf(stderr, "diraheadctl: %s: %s\n", socket, strerror(-r));
	return CTL_EXIT_FAILURE;
}

static void print_flat(json_object *o, const char *prefix)
{
	json_object_object_foreach(o, key, val) {
		char name[256];
		snprintf(name, sizeof(name), "%s%s%s", prefix, prefix[0] ? "." : "", key);
		if (json_object_is_type(val, json_type_object))
			print_flat(val, name);
		else
			printf("%-36s %s\n", name, json_object_get_string(val));
	}
}

static json_object *parse_json(const char *s)
{
	json_object *o = json_tokener_parse(s);
	if (!o)
		fprintf(stderr, "diraheadctl: the daemon's answer is not JSON\n");
	return o;
}

int cmd_status(int argc, char **argv)
{
	struct opts o;
	char *reply;
	int r;
	if (parse(argc, argv, &o, true) < 0)
		return CTL_EXIT_USAGE;
	if ((r = ask(&o, "status", &reply)))
		return r;
	json_object *j = parse_json(reply);
	if (!j) {
		free(reply);
		return CTL_EXIT_FAILURE;
	}
	json_object *v;
	bool attached = json_object_object_get_ex(j, "attached", &v) && json_object_get_boolean(v);
	if (o.json) {
		fputs(reply, stdout);
		putchar('\n');
	} else {
		json_object *pid = NULL, *eng = NULL, *up = NULL, *act = NULL, *en = NULL;
		json_object_object_get_ex(j, "pid", &pid);
		json_object_object_get_ex(j, "engine", &eng);
		json_object_object_get_ex(j, "uptime_seconds", &up);
		json_object_object_get_ex(j, "active_scans", &act);
		json_object_object_get_ex(j, "enabled", &en);
		printf("diraheadd is running (pid %s), %s, %s; %s engine, %s active scans, up %.0f s\n",
		       json_object_get_string(pid), attached ? "attached" : "NOT attached",
		       en && json_object_get_boolean(en) ? "enabled" : "disabled",
		       json_object_get_string(eng), json_object_get_string(act),
		       json_object_get_double(up));
		json_object *mode = NULL, *armed = NULL, *arms = NULL, *secs = NULL;
		if (json_object_object_get_ex(j, "arm_mode", &mode) &&
		    json_object_object_get_ex(j, "armed", &armed) &&
		    json_object_object_get_ex(j, "arms", &arms) &&
		    json_object_object_get_ex(j, "armed_seconds", &secs))
			printf("syscall hooks %s (arm = %s): %s arms, %.1f s armed\n",
			       json_object_get_int64(armed) ? "attached" : "detached",
			       json_object_get_string(mode), json_object_get_string(arms),
			       json_object_get_double(secs));
	}
	json_object_put(j);
	free(reply);
	return attached ? 0 : CTL_EXIT_FAILURE;
}

int cmd_stats(int argc, char **argv)
{
	struct opts o;
	char *reply;
	int r;
	if (parse(argc, argv, &o, true) < 0)
		return CTL_EXIT_USAGE;
	if ((r = ask(&o, "stats", &reply)))
		return r;
	if (o.json) {
		fputs(reply, stdout);
		putchar('\n');
	} else {
		json_object *j = parse_json(reply);
		if (!j) {
			free(reply);
			return CTL_EXIT_FAILURE;
		}
		print_flat(j, "");
		json_object_put(j);
	}
	free(reply);
	return 0;
}

int cmd_scans(int argc, char **argv)
{
	struct opts o;
	char *reply;
	int r;
	if (parse(argc, argv, &o, true) < 0)
		return CTL_EXIT_USAGE;
	if ((r = ask(&o, "scans", &reply)))
		return r;
	if (o.json) {
		fputs(reply, stdout);
		putchar('\n');
		free(reply);
		return 0;
	}
	json_object *a = parse_json(reply);
	free(reply);
	if (!a)
		return CTL_EXIT_FAILURE;
	printf("%8s %-16s %-12s %10s %10s %8s %8s %8s  %s\n", "PID", "COMM", "STATE", "PREFETCHED",
	       "PROGRESS", "WINDOW", "HITS", "MISSES", "DIRECTORY");
	for (size_t i = 0; i < json_object_array_length(a); i++) {
		json_object *s = json_object_array_get_idx(a, i);
#define F(k) ({ json_object *_v = NULL; json_object_object_get_ex(s, k, &_v); json_object_get_string(_v); })
		char comm[64], dir[1024];
		printf("%8s %-16s %-12s %10s %10s %8s %8s %8s  %s\n", F("pid"),
		       ctl_printable(comm, sizeof(comm), F("comm")), F("state"), F("entries"),
		       F("progress"), F("window"), F("hits"), F("misses"),
		       ctl_printable(dir, sizeof(dir), F("directory")));
#undef F
	}
	json_object_put(a);
	return 0;
}

int cmd_metrics(int argc, char **argv)
{
	struct opts o;
	char *reply;
	int r;
	if (parse(argc, argv, &o, false) < 0)
		return CTL_EXIT_USAGE;
	if ((r = ask(&o, "metrics", &reply)))
		return r;
	fputs(reply, stdout);
	free(reply);
	return 0;
}

int cmd_reload(int argc, char **argv)
{
	struct opts o;
	char *reply;
	int r;
	if (parse(argc, argv, &o, false) < 0)
		return CTL_EXIT_USAGE;
	if ((r = ask(&o, "reload", &reply)))
		return r;
	free(reply);
	printf("configuration reloaded\n");
	return 0;
}
