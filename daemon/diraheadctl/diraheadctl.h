/* SPDX-License-Identifier: LGPL-2.1-or-later OR BSD-2-Clause */
/* diraheadctl subcommands: each is `int cmd_NAME(int argc, char **argv)` with argv[0] = NAME,
 * returning the exit status (0 ok, 1 failure, 2 bad usage). */
#ifndef DIRAHEADCTL_H
#define DIRAHEADCTL_H

#include <stddef.h>

int cmd_prefetch(int argc, char **argv);
int cmd_ls(int argc, char **argv);
int cmd_status(int argc, char **argv);
int cmd_stats(int argc, char **argv);
int cmd_scans(int argc, char **argv);
int cmd_metrics(int argc, char **argv);
int cmd_reload(int argc, char **argv);
int cmd_explain(int argc, char **argv);
int cmd_top(int argc, char **argv);

/* The control socket: DIRAHEAD_SOCKET if set, else the default. */
const char *ctl_default_socket(void);
/* One exchange with the daemon: 0 with *reply set (malloc'ed), or the exit code for a failed one
 * (the message printed). */
int ctl_ask(const char *socket, const char *cmd, char **reply);
/* Names come from users: a copy of s (cut to size) with what a terminal would act on (C0 and C1
 * controls, DEL) shown as '?'. */
const char *ctl_printable(char *dst, size_t size, const char *s);

/* Exit codes of the daemon subcommands (status: 0 exactly when running and attached). */
#define CTL_EXIT_FAILURE 1
#define CTL_EXIT_USAGE 2
#define CTL_EXIT_NOT_RUNNING 3
#define CTL_EXIT_DENIED 4

#endif
