/* SPDX-License-Identifier: LGPL-2.1-or-later OR BSD-2-Clause */
/* The control socket: diraheadctl's status, stats, scans, explain, metrics and reload (ctlproto.h). */
#ifndef DIRAHEAD_CONTROL_H
#define DIRAHEAD_CONTROL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct daemon;
struct control;

/* Creates the socket (and its directory), root-only unless cfg.socket_group names a group. */
struct control *control_new(struct daemon *d, char *err, size_t errlen);
void control_free(struct control *c);
/* The [control] group (empty or NULL: root only): the socket file's group and mode (0660 or 0600)
 * and who the daemon answers, for a reload.  -1 with err filled if the group does not exist or
 * the file cannot be changed; then nothing changed. */
int control_set_group(struct control *c, const char *group, char *err, size_t errlen);

/* Reply bodies, also used by the metrics endpoint; malloc'ed strings. */
char *control_status_json(struct daemon *d);
char *control_stats_json(struct daemon *d);
char *control_scans_json(struct daemon *d);
/* The decision log (decisions.h), oldest first; pid 0: every process's. */
char *control_explain_json(uint32_t pid);

/* The answer to one request line (cmd, its newline cut off): *ok (false: an error, whose message
 * is the body) and the malloc'ed body; NULL when out of memory. */
char *control_answer(struct daemon *d, const char *cmd, bool *ok);
/* A request as read so far, the first len bytes of buf[size]: 1 when its line is complete (cut at
 * the newline, in place; a line holding a NUL byte becomes "", an unknown command), 0 when more
 * may come, -1 when it is too long to be a command. */
int control_request_line(char *buf, size_t len, size_t size);

#endif
