// SPDX-License-Identifier: LGPL-2.1-or-later OR BSD-2-Clause
/*
 * dir_names(): a directory's names, listed to its end, for the test programs that list a
 * directory before they stat its entries the way `ls -l` does (credscan, slowscan).
 */
#ifndef DIRAHEAD_TESTS_DIRNAMES_H
#define DIRAHEAD_TESTS_DIRNAMES_H

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* DIR's names but "." and "..", in readdir order: *NAMES (malloc'd, each strdup'd) and their
 * number *N.  -1 if DIR cannot be opened (perror says why) or memory runs out. */
static int dir_names(const char *dir, char ***names, size_t *n)
{
	DIR *d = opendir(dir);
	if (!d) {
		perror(dir);
		return -1;
	}
	size_t cap = 0;
	struct dirent *de;
	*names = NULL;
	*n = 0;
	while ((de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (*n == cap) {
			cap = cap ? cap * 2 : 256;
			*names = realloc(*names, cap * sizeof(**names));
			if (!*names) {
				closedir(d);
				return -1;
			}
		}
		(*names)[(*n)++] = strdup(de->d_name);
	}
	closedir(d);
	return 0;
}

#endif
