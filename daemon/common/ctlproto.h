/* SPDX-License-Identifier: LGPL-2.1-or-later OR BSD-2-Clause */
/*
 * The control protocol between diraheadctl and diraheadd: over the unix stream socket
 * DD_SOCKET_PATH the client sends one command line ("status", "stats", "scans", "explain" or
 * "explain PID", "metrics", "reload"); the daemon answers with one reply and closes.  Replies
 * start with "ok\n" or "error <message>\n"; the rest is JSON (status, stats, scans, explain),
 * Prometheus text (metrics), or empty.
 */
#ifndef DIRAHEAD_CTLPROTO_H
#define DIRAHEAD_CTLPROTO_H

#include <stddef.h>

#define DD_DEFAULT_SOCKET "/run/dirahead/diraheadd.sock"
#define DD_CTL_MAX_REQUEST 256
#define DD_CTL_MAX_REPLY (4u << 20)

/*
 * Sends `cmd` and reads the whole reply into a malloc'ed, NUL-terminated *reply (the body after
 * the status line).  Returns 0 when the daemon answered ok, 1 when it answered an error (the
 * message is in *reply), -errno when it could not be reached (-ENOENT/-ECONNREFUSED: not running,
 * -EACCES: not allowed).  timeout_ms bounds the whole exchange.
 */
int ctl_request(const char *socket_path, const char *cmd, char **reply, int timeout_ms);

#endif
