// SPDX-License-Identifier: LGPL-2.1-or-later OR BSD-2-Clause
/*
 * pstat [-j N] [-l] [-q] [-f FILE] [PATH...]: stat PATHs concurrently from N threads and report
 * how long it took.  All threads are released at once by a barrier, so the measured time is the
 * wall time of the parallel burst, not of thread creation.
 *
 *   -j N     threads (default: one per path, at most 256)
 *   -l       lstat: do not follow a final symlink
 *   -f FILE  also read paths from FILE, one per line ("-" = stdin)
 *   -q       no summary line
 *
 * Prints "paths=N ok=N failed=N threads=N elapsed_ms=X.XXX" on stdout and one line per failed
 * path on stderr ("pstat: PATH: error").  Exit 0 if every stat succeeded, 1 if any failed,
 * 2 on bad usage.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static char **paths;
static size_t npaths, cap;
static size_t next_index, nfailed;
static int stat_flags;
static pthread_barrier_t start;

static void add_path(const char *p)
{
	if (npaths == cap) {
		cap = cap ? cap * 2 : 256;
		paths = realloc(paths, cap * sizeof(*paths));
		if (!paths) {
			perror("pstat");
			exit(2);
		}
	}
	paths[npaths] = strdup(p);
	if (!paths[npaths]) {
		perror("pstat");
		exit(2);
	}
	npaths++;
}

static void read_list(const char *file)
{
	FILE *f = strcmp(file, "-") == 0 ? stdin : fopen(file, "r");
	char *line = NULL;
	size_t len = 0;
	ssize_t n;

	if (!f) {
		fprintf(stderr, "pstat: %s: %s\n", file, strerror(errno));
		exit(2);
	}
	while ((n = getline(&line, &len, f)) > 0) {
		if (line[n - 1] == '\n')
			line[--n] = '\0';
		if (n > 0)
			add_path(line);
	}
	free(line);
	if (f != stdin)
		fclose(f);
}

static void *worker(void *arg)
{
	struct stat st;
	size_t i;

	(void)arg;
	pthread_barrier_wait(&start);
	while ((i = __atomic_fetch_add(&next_index, 1, __ATOMIC_RELAXED)) < npaths) {
		if (fstatat(AT_FDCWD, paths[i], &st, stat_flags) != 0) {
			fprintf(stderr, "pstat: %s: %s\n", paths[i], strerror(errno));
			__atomic_fetch_add(&nfailed, 1, __ATOMIC_RELAXED);
		}
	}
	return NULL;
}

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

int main(int argc, char **argv)
{
	long threads = 0;
	bool quiet = false;
	pthread_t *tids;
	double t0, t1;
	char *end;
	int c;
	long i;

	while ((c = getopt(argc, argv, "j:lf:qh")) != -1) {
		switch (c) {
		case 'j':
			threads = strtol(optarg, &end, 10);
			if (*end || threads < 1 || threads > 4096) {
				fprintf(stderr, "pstat: -j: not between 1 and 4096: '%s'\n", optarg);
				return 2;
			}
			break;
		case 'l': stat_flags = AT_SYMLINK_NOFOLLOW; break;
		case 'f': read_list(optarg); break;
		case 'q': quiet = true; break;
		case 'h':
			printf("Usage: pstat [-j N] [-l] [-q] [-f FILE] [PATH...]\n");
			return 0;
		default:
			fprintf(stderr, "Usage: pstat [-j N] [-l] [-q] [-f FILE] [PATH...]\n");
			return 2;
		}
	}
	for (i = optind; i < argc; i++)
		add_path(argv[i]);
	if (npaths == 0) {
		fprintf(stderr, "pstat: no paths\n");
		return 2;
	}
	if (threads == 0)
		threads = npaths < 256 ? (long)npaths : 256;
	tids = calloc((size_t)threads, sizeof(*tids));
	if (!tids || pthread_barrier_init(&start, NULL, (unsigned)threads + 1) != 0) {
		perror("pstat");
		return 2;
	}
	for (i = 0; i < threads; i++) {
		int err = pthread_create(&tids[i], NULL, worker, NULL);

		if (err) {
			fprintf(stderr, "pstat: pthread_create: %s\n", strerror(err));
			return 2;
		}
	}
	t0 = now_ms();
	pthread_barrier_wait(&start);
	for (i = 0; i < threads; i++)
		pthread_join(tids[i], NULL);
	t1 = now_ms();
	if (!quiet)
		printf("paths=%zu ok=%zu failed=%zu threads=%ld elapsed_ms=%.3f\n", npaths,
		       npaths - nfailed, nfailed, threads, t1 - t0);
	for (size_t k = 0; k < npaths; k++)
		free(paths[k]);
	free(paths);
	free(tids);
	pthread_barrier_destroy(&start);
	return nfailed ? 1 : 0;
}
