/* SPDX-License-Identifier: LGPL-2.1-or-later OR BSD-2-Clause */
/*
 * libFuzzer target: the config file parser (daemon/diraheadd/config.c over inih).  The input is
 * the text of a dirahead.conf, read by dd_config_load() through a memfd, as the daemon reads the
 * file at start and at each reload.  Besides the sanitizers' reports, a load must either fail
 * with one line naming the file, or leave a config that keeps every rule the parser promises.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "config.h"
#include "hostcheck.h"

#define CHECK(cond)                                                                            \
	do {                                                                                   \
		if (!(cond)) {                                                                 \
			fprintf(stderr, "fuzz_config: %s:%d: broken: %s\n", __FILE__, __LINE__, #cond); \
			abort();                                                               \
		}                                                                              \
	} while (0)

static int memfd = -1;
static char path[64];

static void check_list(const struct dd_strlist *l, bool cgroup)
{
	CHECK(l->n >= 0 && l->n <= DD_LIST_MAX);
	for (int i = 0; i < l->n; i++) {
		CHECK(l->v[i] && l->v[i][0]);
		CHECK(!strpbrk(l->v[i], " \t,"));
		CHECK(!cgroup || l->v[i][0] == '/');
	}
}

static void check_config(const struct dd_config *c)
{
	struct sockaddr_storage ss;
	struct dd_host h;
	CHECK(c->window_start >= 1 && c->window_start <= c->window_max);
	CHECK(c->depth_per_scan >= 1 && c->depth_per_scan <= c->depth_total);
	CHECK(c->unlisted_stats != 1 && c->unlisted_stats <= 32);
	CHECK(c->stop_hit_ratio >= 0 && c->stop_hit_ratio <= 1);
	CHECK(c->min_gain >= 1 && c->min_gain <= 100);
	CHECK(c->start_factor >= 0 && c->start_factor <= 1000);
	CHECK(c->log_level >= 0 && c->log_level <= 7);
	CHECK(c->proc_path && c->proc_path[0] == '/');
	CHECK(c->socket_path && c->socket_path[0] == '/');
	CHECK(c->socket_group);
	CHECK(c->metrics_address);
	const char *up = dd_unix_address(c->metrics_address);
	if (up)
		CHECK(up[0] == '/' && up[strlen(up) - 1] != '/');
	else
		CHECK(!c->metrics_address[0] || dd_parse_address(c->metrics_address, &ss) == 0);
	check_list(&c->fs_include, false);
	check_list(&c->fs_exclude, false);
	check_list(&c->path_include, false);
	check_list(&c->path_exclude, false);
	check_list(&c->comm_include, false);
	check_list(&c->comm_exclude, false);
	check_list(&c->cgroup_include, true);
	check_list(&c->cgroup_exclude, true);
	check_list(&c->metrics_hosts, false);
	for (int i = 0; i < c->metrics_hosts.n; i++)
		CHECK(dd_host_parse(c->metrics_hosts.v[i], &h) == 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct dd_config c;
	char err[1024];
	bool missing;

	if (memfd < 0) {
		memfd = memfd_create("dirahead.conf", MFD_CLOEXEC);
		CHECK(memfd >= 0);
		snprintf(path, sizeof(path), "/proc/self/fd/%d", memfd);
	}
	CHECK(ftruncate(memfd, 0) == 0);
	CHECK(pwrite(memfd, data, size, 0) == (ssize_t)size);

	dd_config_defaults(&c);
	err[0] = '\0';
	int r = dd_config_load(&c, path, &missing, err, sizeof(err));
	CHECK(!missing);
	if (r == 0) {
		check_config(&c);
		/* text, read line by line as it reads in an editor: no NUL byte, no line longer than
		 * inih's buffer (one would come back in pieces, the rest parsed as lines of their own) */
		CHECK(!memchr(data, '\0', size));
		for (size_t i = 0, start = 0; i <= size; i++)
			if (i == size || data[i] == '\n') {
				CHECK(i - start <= 199);
				start = i + 1;
			}
	} else {
		/* one line (the control reply to reload sends it as its first line), naming the file */
		CHECK(r == -1);
		CHECK(!strncmp(err, path, strlen(path)) && err[strlen(path)] == ':');
		CHECK(!strchr(err, '\n'));
	}
	dd_config_free(&c);
	return 0;
}
