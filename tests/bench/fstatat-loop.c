// SPDX-License-Identifier: LGPL-2.1-or-later OR BSD-2-Clause
/*
 * fstatat-loop [-n CALLS] [-m scan|plain] DIR: time CALLS fstatat() calls on the entries of DIR
 * (files that are cached, so the figure is the per-call CPU cost, which is what the detector adds
 * to).  Used by tests/bench/bench.py for the per-call overhead, daemon off vs on.
 *
 *   -m scan   (default) what a scanner does: list DIR with getdents64 and fstatat() each entry of
 *             each buffer, again and again until CALLS; the detector follows these stats, so
 *             this is its matched path and the daemon sees a scan per pass.
 *   -m plain  fstatat() the names DIR's listing returned, in a loop, without ever listing DIR in
 *             this process (the names are read in a child): the detector's unrelated-syscall path.
 *
 * Prints "mode=M calls=N elapsed_ns=X ns_per_call=Y.YY" on stdout.  Exit 0, 1 on an error, 2 on
 * bad usage.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "benchutil.h"

static int skip_name(const char *n)
{
	return n[0] == '.' && (!n[1] || (n[1] == '.' && !n[2]));
}

static long scan_loop(const char *dir, long calls)
{
	static char buf[32768];
	struct stat st;
	long done = 0;
	while (done < calls) {
		int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (fd < 0) {
			fprintf(stderr, "fstatat-loop: %s: %s\n", dir, strerror(errno));
			return -1;
		}
		long n, before = done;
		while (done < calls && (n = syscall(SYS_getdents64, fd, buf, sizeof(buf))) > 0) {
			for (long off = 0; off < n && done < calls;) {
				struct linux_dirent64 *d = (struct linux_dirent64 *)(buf + off);
				off += d->d_reclen;
				if (skip_name(d->d_name))
					continue;
				if (fstatat(fd, d->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
					fprintf(stderr, "fstatat-loop: %s/%s: %s\n", dir, d->d_name,
						strerror(errno));
					close(fd);
					return -1;
				}
				done++;
			}
		}
		close(fd);
		if (done == before) {
			fprintf(stderr, "fstatat-loop: %s: no entries\n", dir);
			return -1;
		}
	}
	return done;
}

/* The names of DIR, listed by a child process so that this one never lists DIR. */
static char **child_names(const char *dir, size_t *count)
{
	int p[2];
	if (pipe(p) < 0)
		return NULL;
	pid_t pid = fork();
	if (pid < 0)
		return NULL;
	if (pid == 0) {
		close(p[0]);
		DIR *d = opendir(dir);
		if (!d)
			_exit(1);
		FILE *f = fdopen(p[1], "w");
		struct dirent *e;
		while (f && (e = readdir(d)))
			if (!skip_name(e->d_name))
				fprintf(f, "%s\n", e->d_name);
		_exit(f && fclose(f) == 0 ? 0 : 1);
	}
	close(p[1]);
	FILE *f = fdopen(p[0], "r");
	char **v = NULL, *line = NULL;
	size_t n = 0, cap = 0, len = 0;
	ssize_t r;
	while (f && (r = getline(&line, &len, f)) > 0) {
		line[r - 1] = '\0';
		if (n == cap) {
			cap = cap ? cap * 2 : 1024;
			char **nv = realloc(v, cap * sizeof(*v));
			if (!nv)
				exit(1);
			v = nv;
		}
		if (!(v[n++] = strdup(line)))
			exit(1);
	}
	free(line);
	if (f)
		fclose(f);
	int status;
	if (waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status) || !n) {
		fprintf(stderr, "fstatat-loop: %s: cannot list it\n", dir);
		return NULL;
	}
	*count = n;
	return v;
}

int main(int argc, char **argv)
{
	long calls = 1000000;
	int plain = 0, opt;
	while ((opt = getopt(argc, argv, "n:m:")) != -1) {
		switch (opt) {
		case 'n':
			calls = strtol(optarg, NULL, 10);
			if (calls <= 0)
				goto usage;
			break;
		case 'm':
			if (!strcmp(optarg, "plain"))
				plain = 1;
			else if (strcmp(optarg, "scan"))
				goto usage;
			break;
		default:
			goto usage;
		}
	}
	if (optind != argc - 1)
		goto usage;

	/* plain lists in a child before the clock starts; scan lists as part of the work. */
	uint64_t t0 = 0, t1;
	long done;
	if (plain) {
		size_t n;
		char **names = child_names(argv[optind], &n);
		if (!names)
			return 1;
		int fd = open(argv[optind], O_PATH | O_DIRECTORY | O_CLOEXEC);
		if (fd < 0) {
			fprintf(stderr, "fstatat-loop: %s: %s\n", argv[optind], strerror(errno));
			return 1;
		}
		struct stat st;
		t0 = mono_ns();
		for (done = 0; done < calls; done++)
			if (fstatat(fd, names[(size_t)done % n], &st, AT_SYMLINK_NOFOLLOW) < 0) {
				fprintf(stderr, "fstatat-loop: %s: %s\n", names[(size_t)done % n],
					strerror(errno));
				return 1;
			}
		close(fd);
		for (size_t i = 0; i < n; i++)
			free(names[i]);
		free(names);
	} else {
		t0 = mono_ns();
		done = scan_loop(argv[optind], calls);
	}
	t1 = mono_ns();
	if (done < 0)
		return 1;
	printf("mode=%s calls=%ld elapsed_ns=%llu ns_per_call=%.2f\n", plain ? "plain" : "scan", done,
	       (unsigned long long)(t1 - t0), (double)(t1 - t0) / (double)done);
	return 0;
usage:
	fprintf(stderr, "Usage: fstatat-loop [-n CALLS] [-m scan|plain] DIR\n");
	return 2;
}
