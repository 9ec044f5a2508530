/* SPDX-License-Identifier: LGPL-2.1-or-later OR BSD-2-Clause */
/* Logging: structured journal entries under systemd, plain lines on stderr otherwise. */
#ifndef DIRAHEAD_LOG_H
#define DIRAHEAD_LOG_H

#include <stdbool.h>
#include <stddef.h>
#include <syslog.h>

void log_setup(int level);           /* picks journal vs stderr (JOURNAL_STREAM) */
void log_set_level(int level);
int log_get_level(void);
bool log_to_journal(void);

/* Copies src into dst (size bytes, NUL-terminated) with what a terminal could act on escaped as
 * \xNN (control characters, DEL, C1 controls, bytes of invalid UTF-8) and a backslash as \\,
 * so that the text reads back unambiguously.  Stops before an escape or character that would not
 * fit.  Returns the length written.  log_fields() applies it to messages and fields. */
size_t log_escape(char *dst, size_t size, const char *src);

/* `fields`: NULL or a NULL-terminated list of "KEY=value" journal fields (ignored on stderr). */
void log_fields(int prio, const char *const *fields, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
#define log_msg(prio, ...) log_fields(prio, NULL, __VA_ARGS__)
#define log_err(...) log_msg(LOG_ERR, __VA_ARGS__)
#define log_warn(...) log_msg(LOG_WARNING, __VA_ARGS__)
#define log_notice(...) log_msg(LOG_NOTICE, __VA_ARGS__)
#define log_info(...) log_msg(LOG_INFO, __VA_ARGS__)
#define log_debug(...) log_msg(LOG_DEBUG, __VA_ARGS__)

#endif
