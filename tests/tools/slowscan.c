// SPDX-License-Identifier: LGPL-2.1-or-later OR BSD-2-Clause
/*
 * slowscan DIR [DELAY_US]: what `ls -l DIR` does (list DIR to its end, then lstat every entry by
 * the path DIR/NAME), with DELAY_US (default 0) between two stats: a scan that lasts, with no
 * interpreter whose start-up lists directories of its own.  Exit 0, or 1 if DIR cannot be listed.
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dirnames.h"

int main(int argc, char **argv)
{
	if (argc < 2 || argc > 3) {
		fprintf(stderr, "usage: slowscan DIR [DELAY_US]\n");
		return 2;
	}
	unsigned delay = argc == 3 ? (unsigned)strtoul(argv[2], NULL, 10) : 0;
	size_t n;
	char **names;
	if (dir_names(argv[1], &names, &n))
		return 1;
	for (size_t i = 0; i < n; i++) {
		char p[4096];
		struct stat st;
		snprintf(p, sizeof(p), "%s/%s", argv[1], names[i]);
		lstat(p, &st);
		if (delay)
			usleep(delay);
		free(names[i]);
	}
	free(names);
	return 0;
}
