/* SPDX-License-Identifier: LGPL-2.1-or-later OR BSD-2-Clause */
#include "cgroup.h"

#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "procdir.h"

int cgroup_of(uint32_t pid, char *buf, size_t len)
{
	char *line = NULL;
	size_t cap = 0;
	ssize_t n;
	int r = -ENOENT;

	int fd = procdir_open_pid(pid, "cgroup", O_RDONLY | O_CLOEXEC);
	FILE *f = fd < 0 ? NULL : fdopen(fd, "re");
	if (!f) {
		r = errno == ENOENT ? -ESRCH : -errno;
		if (fd >= 0)
			close(fd);
		return r;
	}
	/* v1 hierarchies come first ("N:controllers:/path"); the v2 one is "0::/path". */
	while ((n = getline(&line, &cap, f)) > 0) {
		if (strncmp(line, "0::", 3) != 0)
			continue;
		line[strcspn(line, "\n")] = '\0';
		if (strlen(line + 3) >= len) {
			r = -ENAMETOOLONG;
		} else {
			strcpy(buf, line + 3);
			r = 0;
		}
		break;
	}
	if (r == -ENOENT && ferror(f))
		r = -EIO;
	free(line);
	fclose(f);
	return r;
}

/* fnmatch of `pat` against the first n bytes of path ("/" when n is 0). */
static bool match_prefix(const char *pat, const char *path, size_t n, char *tmp)
{
	if (n == 0) {
		tmp[0] = '/';
		n = 1;
	} else {
		memcpy(tmp, path, n);
	}
	tmp[n] = '\0';
	return fnmatch(pat, tmp, FNM_PATHNAME) == 0;
}

bool cgroup_match(const struct dd_strlist *l, const char *path)
{
	size_t plen = strlen(path);
	char pat[PATH_MAX], *tmp;
	bool hit = false;

	if (!l->n || plen >= PATH_MAX)
		return false;
	tmp = malloc(plen + 2);
	if (!tmp)
		return false;
	for (int i = 0; i < l->n && !hit; i++) {
		size_t k = strlen(l->v[i]);
		if (k >= sizeof(pat))
			continue;
		memcpy(pat, l->v[i], k + 1);
		while (k > 1 && pat[k - 1] == '/')
			pat[--k] = '\0';
		/* the path itself, then each ancestor up to the root */
		size_t n = plen;
		while (n > 1 && path[n - 1] == '/')
			n--;
		for (;;) {
			if (match_prefix(pat, path, n, tmp)) {
				hit = true;
				break;
			}
			if (n <= 1)
				break;
			while (n > 0 && path[n - 1] != '/')
				n--;
			while (n > 0 && path[n - 1] == '/')
				n--;
		}
	}
	free(tmp);
	return hit;
}
