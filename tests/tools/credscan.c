// SPDX-License-Identifier: LGPL-2.1-or-later OR BSD-2-Clause
/*
 * credscan DIR N1 UID N2: a scan whose program drops privileges mid-way (tests/security/
 * cred-change.sh).  Run as root: lists DIR to its end, lstats its first N1 entries by the path
 * DIR/NAME, then drops to UID (gid UID, no groups: setgroups, setresgid, setresuid), lstats the
 * next N2, writes "dropped" to stdout and waits for a line (or EOF) on stdin, then lstats the
 * rest.  Ends by writing "done OK FAILED" (stats that succeeded, failed).  Exit 0, 1 if DIR cannot
 * be listed or the ids not dropped, 2 for bad usage.
 */
#include <dirent.h>
#include <grp.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dirnames.h"

static unsigned long ok, failed;

static void stat_range(const char *dir, char **names, size_t from, size_t to)
{
	char p[PATH_MAX];
	struct stat st;
	for (size_t i = from; i < to; i++) {
		snprintf(p, sizeof(p), "%s/%s", dir, names[i]);
		if (lstat(p, &st) == 0)
			ok++;
		else
			failed++;
	}
}

int main(int argc, char **argv)
{
	if (argc != 5) {
		fprintf(stderr, "usage: credscan DIR N1 UID N2\n");
		return 2;
	}
	size_t n1 = strtoul(argv[2], NULL, 10), n2 = strtoul(argv[4], NULL, 10);
	uid_t uid = (uid_t)strtoul(argv[3], NULL, 10);
	size_t n;
	char **names;
	if (dir_names(argv[1], &names, &n))
		return 1;
	n1 = n1 < n ? n1 : n;
	n2 = n2 < n - n1 ? n2 : n - n1;
	stat_range(argv[1], names, 0, n1);
	if (setgroups(0, NULL) || setresgid(uid, uid, uid) || setresuid(uid, uid, uid)) {
		perror("dropping privileges");
		return 1;
	}
	stat_range(argv[1], names, n1, n1 + n2);
	printf("dropped\n");
	fflush(stdout);
	char line[64];
	if (!fgets(line, sizeof(line), stdin))
		line[0] = '\0';
	stat_range(argv[1], names, n1 + n2, n);
	printf("done %lu %lu\n", ok, failed);
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
	return 0;
}
