/* SPDX-License-Identifier: LGPL-2.1-or-later OR BSD-2-Clause */
/*
 * holdlist N DIR...: starts N processes that each list every DIR (opendir + readdir to the end,
 * in the order given: nested directories stay tracked together) and then sleep, holding the
 * detector's table entries of a listing process.  Prints "ready N" once all have listed, then
 * waits until it is killed (its processes die with it: PR_SET_PDEATHSIG) or its stdin closes.
 * For the tests of the detector's per-user table share (tests/security/).
 */
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

static int list_all(char **dirs, int n)
{
	for (int i = 0; i < n; i++) {
		DIR *d = opendir(dirs[i]);
		if (!d)
			return -1;
		while (readdir(d))
			;
		closedir(d);
	}
	return 0;
}

int main(int argc, char **argv)
{
	char *end;
	long n = argc >= 3 ? strtol(argv[1], &end, 10) : -1;
	if (argc < 3 || *end || n < 1 || n > 100000) {
		fprintf(stderr, "usage: holdlist N DIR...\n");
		return 2;
	}
	int ready[2];
	if (pipe(ready) < 0) {
		perror("holdlist: pipe");
		return 1;
	}
	pid_t parent = getpid();
	for (long i = 0; i < n; i++) {
		pid_t p = fork();
		if (p < 0) {
			perror("holdlist: fork");
			return 1; /* the ones started die with us */
		}
		if (p == 0) {
			close(ready[0]);
			if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || getppid() != parent)
				_exit(1);
			char ok = list_all(argv + 2, argc - 2) == 0 ? 'y' : 'n';
			if (write(ready[1], &ok, 1) != 1)
				_exit(1);
			close(ready[1]);
			for (;;)
				pause();
		}
	}
	close(ready[1]);
	long got = 0, bad = 0;
	char c;
	while (got < n) {
		ssize_t r = read(ready[0], &c, 1);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		got++;
		bad += c != 'y';
	}
	if (got < n || bad) {
		fprintf(stderr, "holdlist: %ld of %ld processes listed (%ld failed)\n", got - bad, n, bad);
		return 1;
	}
	printf("ready %ld\n", n);
	fflush(stdout);
	while (read(STDIN_FILENO, &c, 1) > 0)
		;
	/* stdin closed: our processes die with us (PR_SET_PDEATHSIG) */
	return 0;
}
