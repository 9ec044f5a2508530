// SPDX-License-Identifier: LGPL-2.1-or-later OR BSD-2-Clause
/*
 * pingpong [-n ROUNDS]: two processes pass one byte back and forth through two pipes ROUNDS
 * times (default 1,000,000): two context switches per round trip, each a task going to sleep
 * in read(), which is what the sentinel's sched_switch program (bpf/sentinel.bpf.c) sees most
 * on a busy machine and must return from at once.  For the cost of the daemon under a
 * context-switch storm, daemon off vs on.
 *
 * Prints "rounds=N elapsed_ns=X ns_per_round=Y.YY" on stdout.  Exit 0, 1 on an error, 2 on bad
 * usage.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "benchutil.h"

/* One byte each way; false on any error or end of file. */
static int xfer(int in, int out, char *c)
{
	return read(in, c, 1) == 1 && write(out, c, 1) == 1;
}

int main(int argc, char **argv)
{
	long rounds = 1000000;
	int opt, ab[2], ba[2], status;
	char c = 'x';

	while ((opt = getopt(argc, argv, "n:")) != -1) {
		if (opt != 'n' || (rounds = strtol(optarg, NULL, 10)) <= 0) {
			fprintf(stderr, "usage: pingpong [-n ROUNDS]\n");
			return 2;
		}
	}
	if (pipe(ab) || pipe(ba)) {
		perror("pipe");
		return 1;
	}
	pid_t pid = fork();
	if (pid < 0) {
		perror("fork");
		return 1;
	}
	if (pid == 0) {
		for (long i = 0; i < rounds; i++)
			if (!xfer(ab[0], ba[1], &c))
				_exit(1);
		_exit(0);
	}
	uint64_t t0 = mono_ns();
	for (long i = 0; i < rounds; i++) {
		if (write(ab[1], &c, 1) != 1 || read(ba[0], &c, 1) != 1) {
			fprintf(stderr, "pingpong: %s\n", strerror(errno));
			return 1;
		}
	}
	uint64_t dt = mono_ns() - t0;
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status)) {
		fprintf(stderr, "pingpong: the other process failed\n");
		return 1;
	}
	printf("rounds=%ld elapsed_ns=%llu ns_per_round=%.2f\n", rounds, (unsigned long long)dt,
	       (double)dt / (double)rounds);
	return 0;
}
