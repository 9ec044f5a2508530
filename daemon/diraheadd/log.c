/* SPDX-License-Identifier: LGPL-2.1-or-later OR BSD-2-Clause */
#include "log.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <systemd/sd-journal.h>
#include <time.h>

#include "monoclock.h"

static int max_level = LOG_INFO;
static bool journal;

/* Rate limit for messages below LOG_WARNING: a burst per interval, then a count of what was
 * dropped, so a storm of scans cannot flood the journal. */
#define RL_INTERVAL_NS (5ull * 1000000000ull)
#define RL_BURST 200
static unsigned long long rl_start;
static unsigned rl_count, rl_dropped;

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
	unsigned long long t = mono_ns();
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

/* Length of the UTF-8 sequence at s, 0 if it is not a valid one (overlong forms, surrogates
 * and code points above U+10FFFF are not). */
static size_t utf8_len(const unsigned char *s)
{
	unsigned char c = s[0];
	unsigned char lo = 0x80, hi = 0xbf;
	size_t n;
	if (c >= 0xc2 && c <= 0xdf)
		n = 2;
	else if (c >= 0xe0 && c <= 0xef)
		n = 3, lo = c == 0xe0 ? 0xa0 : 0x80, hi = c == 0xed ? 0x9f : 0xbf;
	else if (c >= 0xf0 && c <= 0xf4)
		n = 4, lo = c == 0xf0 ? 0x90 : 0x80, hi = c == 0xf4 ? 0x8f : 0xbf;
	else
		return 0;
	if (s[1] < lo || s[1] > hi)
		return 0;
	for (size_t i = 2; i < n; i++)
		if (s[i] < 0x80 || s[i] > 0xbf)
			return 0;
	return n;
}

size_t log_escape(char *dst, size_t size, const char *src)
{
	static const char hex[] = "0123456789abcdef";
	const unsigned char *s = (const unsigned char *)src;
	size_t o = 0;
	if (!size)
		return 0;
	while (*s) {
		size_t n = *s < 0x80 ? 1 : utf8_len(s);
		/* C0 controls and DEL; C1 controls (U+0080..U+009F: 0xc2 0x80..0x9f), which some
		 * terminals act on as escape sequences; bytes of invalid UTF-8, one at a time */
		bool bad = n == 0 || *s < 0x20 || *s == 0x7f || (n == 2 && s[0] == 0xc2 && s[1] < 0xa0);
		if (n == 0)
			n = 1;
		size_t need = bad ? 4 * n : *s == '\\' ? 2 : n; /* a character whole or not at all */
		if (o + need >= size)
			break;
		if (bad) {
			for (size_t i = 0; i < n; i++, s++) {
				dst[o++] = '\\';
				dst[o++] = 'x';
				dst[o++] = hex[*s >> 4];
				dst[o++] = hex[*s & 15];
			}
		} else if (*s == '\\') {
			dst[o++] = '\\';
			dst[o++] = '\\';
			s++;
		} else {
			memcpy(dst + o, s, n);
			o += n;
			s += n;
		}
	}
	dst[o] = '\0';
	return o;
}

/*
 * Messages carry names that users choose (directories, process names): escaped here, once for
 * every caller, so that no control character reaches a terminal showing the log (stderr, or
 * `journalctl --all`, which prints what was stored) and a name cannot forge a line of its own.
 */
void log_fields(int prio, const char *const *fields, const char *fmt, ...)
{
	if (prio > max_level || !rate_ok(prio))
		return;
	char msg[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	/* "MESSAGE=" and the message, each byte at most 4 once escaped */
	char m[8 + 4 * sizeof(msg)];
	memcpy(m, "MESSAGE=", 8);
	size_t mlen = 8 + log_escape(m + 8, sizeof(m) - 8, msg);

	if (journal) {
		struct iovec iov[24];
		char p[32];
		char *esc[24] = { NULL };
		int n = 0;
		snprintf(p, sizeof(p), "PRIORITY=%d", prio);
		iov[n++] = (struct iovec){ m, mlen };
		iov[n++] = (struct iovec){ p, strlen(p) };
		iov[n++] = (struct iovec){ (char *)"SYSLOG_IDENTIFIER=diraheadd", 27 };
		/* The fields' values (after NAME=) are escaped like the message. */
		for (int i = 0; fields && fields[i] && n < 24; i++) {
			const char *eq = strchr(fields[i], '=');
			size_t k = eq ? (size_t)(eq - fields[i]) + 1 : 0, sz = k + 4 * strlen(fields[i] + k) + 1;
			if (!eq || !(esc[n] = malloc(sz)))
				continue;
			memcpy(esc[n], fields[i], k);
			iov[n] = (struct iovec){ esc[n], k + log_escape(esc[n] + k, sz - k, fields[i] + k) };
			n++;
		}
		int r = sd_journal_sendv(iov, n);
		for (int i = 0; i < n; i++)
			free(esc[i]);
		if (r >= 0)
			return;
	}
	static const char *names[] = { "emerg", "alert", "crit", "error", "warning", "notice", "info", "debug" };
	fprintf(stderr, "diraheadd: %s%s%s\n", prio <= LOG_WARNING ? names[prio & 7] : "",
		prio <= LOG_WARNING ? ": " : "", m + 8);
}
