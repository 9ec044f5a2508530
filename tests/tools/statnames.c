// SPDX-License-Identifier: LGPL-2.1-or-later OR BSD-2-Clause
/*
 * statnames PREFIX: stats names by path without listing anything, as `stat $(cat list)` or a
 * version-control status does, in steps the test drives.  Each line read from stdin, "FIRST LAST
 * [DELAY_US]", lstats PREFIX/f000FIRST .. PREFIX/f000LAST (names as make_files creates them),
 * DELAY_US apart, then prints "ok N" (N stats that succeeded).  Exits 0 at the end of its input.
 * Linked statically: it runs in a chroot that holds nothing else.
 */
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	char line[128], p[4096];
	unsigned long first, last, delay;

	if (argc != 2) {
		fprintf(stderr, "usage: statnames PREFIX < steps\n");
		return 2;
	}
	while (fgets(line, sizeof(line), stdin)) {
		struct stat st;
		unsigned ok = 0;
		delay = 0;
		if (sscanf(line, "%lu %lu %lu", &first, &last, &delay) < 2) {
			fprintf(stderr, "statnames: bad step: %s", line);
			return 2;
		}
		for (unsigned long i = first; i <= last; i++) {
			snprintf(p, sizeof(p), "%s/f%06lu", argv[1], i);
			ok += lstat(p, &st) == 0;
			if (delay)
				usleep((useconds_t)delay);
		}
		printf("ok %u\n", ok);
		fflush(stdout);
	}
	return 0;
}
