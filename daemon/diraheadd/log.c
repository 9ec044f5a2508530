/* SPDX-License-Identifier: LGPL-2.1-or-later OR BSD-2-Clause */
#include "log.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <systemd/sd-journal.h>
#include <time.h>

static int max_level = LOG_INFO;
static bool journal;

/* Rate limit for messages below LOG_WARNING: a burst per interval, then a count of what was
 * dropped, so a storm of scans cannot flood the journal. */
#define RL_INTERVAL_NS (5ull * 1000000000ull)
#define RL_BURST 200
static unsigned long long rl_start;
static unsigned rl_count, rl_dropped;

static unsigned long long now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (unsigned long long)ts.tv_sec * 1000000000ull + (unsigned long long)ts.tv_nsec;
}

void log_setup(int level)
{
	max_level = level;
	/* systemd sets JOURNAL_STREAM to stderr's dev:ino when stderr is connected to the journal. */
	const char *js = getenv("JOURNAL_STREAM");
	struct stat st;
	unsigned long long dev, ino;
	journal = js && sscanf(js, "%llu:%llu", &dev, &ino) == 2 && fstat(2, &st) == 0 &&
		  (unsigned long long)st.st_dev == dev && (unsigned long long)st.st_ino == ino;
}

void log_set_level(int level) { max_level = level; }
int log_get_level(void) { return max_level; }
bool log_to_journal(void) { return journal; }

static bool rate_ok(int prio)
{
	if (prio <= LOG_WARNING)
		return true;
	unsigned long long t = now_ns();
	if (t - rl_start > RL_INTERVAL_NS) {
		unsigned dropped = rl_dropped;
		rl_start = t;
		rl_count = 0;
		rl_dropped = 0;
		if (dropped)
			log_fields(LOG_WARNING, NULL, "%u log messages suppressed (rate limit)", dropped);
	}
	if (rl_count++ < RL_BURST)
		return true;
	rl_dropped++;
	return false;
}

void log_fields(int prio, const char *const *fields, const char *fmt, ...)
{
	if (prio > max_level || !rate_ok(prio))
		return;
	char msg[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);

	if (journal) {
		struct iovec iov[24];
		char m[1100], p[32];
		int n = 0;
		snprintf(m, sizeof(m), "MESSAGE=%s", msg);
		snprintf(p, sizeof(p), "PRIORITY=%d", prio);
		iov[n++] = (struct iovec){ m, strlen(m) };
		iov[n++] = (struct iovec){ p, strlen(p) };
		iov[n++] = (struct iovec){ (char *)"SYSLOG_IDENTIFIER=diraheadd", 27 };
		for (int i = 0; fields && fields[i] && n < 24; i++)
			iov[n++] = (struct iovec){ (char *)fields[i], strlen(fields[i]) };
		if (sd_journal_sendv(iov, n) >= 0)
			return;
	}
	static const char *names[] = { "emerg", "alert", "crit", "error", "warning", "notice", "info", "debug" };
	fprintf(stderr, "diraheadd: %s%s%s\n", prio <= LOG_WARNING ? names[prio & 7] : "",
		prio <= LOG_WARNING ? ": " : "", msg);
}
