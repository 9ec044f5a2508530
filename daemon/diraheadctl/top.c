/* SPDX-License-Identifier: LGPL-2.1-or-later OR BSD-2-Clause */
/*
 * diraheadctl top: a live view of the daemon over its control socket, from the status, stats
 * and scans replies: armed or not, the filesystems' verdicts and depths, the active scans and
 * walks (program, directory, rate, hits, window).  Redrawn each second with ANSI escapes on the
 * alternate screen; `q` quits, `s` cycles the sort key.  One plain snapshot when stdout is no
 * terminal.
 */
#include <errno.h>
#include <getopt.h>
#include <json-c/json.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

#include "ctlproto.h"
#include "diraheadctl.h"
#include "monoclock.h"

enum sort_key { SORT_RATE, SORT_HITS, SORT_WINDOW, SORT_AGE, SORT_PID, SORT_MAX };
static const char *const sort_names[SORT_MAX] = { "rate", "hits", "window", "age", "pid" };

/* One active scan or walk, as the scans reply has it, with its rate from the last refresh. */
struct row {
	long pid;
	char comm[32], state[16], dir[512];
	unsigned long long entries, hits, misses, window;
	double age, rate;
};

/* The last refresh's rows: what a rate is measured against. */
struct top {
	const char *socket;
	enum sort_key sort;
	struct row *prev, *rows;
	size_t nprev, nrows;
	uint64_t prev_ms;
	int width, height;      /* 0: no limit (no terminal) */
	char *screen;           /* the frame being drawn */
	size_t len, cap;
	unsigned lines;
};

static const char *jstr(json_object *o, const char *k)
{
	json_object *v = NULL;
	return o && json_object_object_get_ex(o, k, &v) ? json_object_get_string(v) : "";
}

static double jnum(json_object *o, const char *k)
{
	json_object *v = NULL;
	return o && json_object_object_get_ex(o, k, &v) ? json_object_get_double(v) : 0;
}

/* One line of the frame, cut at the terminal's width and dropped below its height. */
static void line(struct top *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void line(struct top *t, const char *fmt, ...)
{
	char buf[1024];
	va_list ap;
	if (t->height && t->lines >= (unsigned)t->height - 1)
		return;
	va_start(ap, fmt);
	int n = vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	size_t len = strlen(buf);
	if (t->width && len > (size_t)t->width)
		len = (size_t)t->width;
	if (t->len + len + 8 > t->cap) {
		size_t cap = (t->cap + len + 8) * 2;
		char *s = realloc(t->screen, cap);
		if (!s)
			return;
		t->screen = s;
		t->cap = cap;
	}
	memcpy(t->screen + t->len, buf, len);
	t->len += len;
	/* on a terminal: erase what the last frame left to the right */
	const char *eol = t->width ? "\033[K\n" : "\n";
	memcpy(t->screen + t->len, eol, strlen(eol));
	t->len += strlen(eol);
	t->lines++;
}

static void header(struct top *t, json_object *st)
{
	json_object *armed = NULL;
	bool has_arm = json_object_object_get_ex(st, "armed", &armed);
	line(t, "diraheadd %s, pid %s, up %.0f s, %s engine%s%s; hooks %s%s%s%s",
	     jstr(st, "version"), jstr(st, "pid"), jnum(st, "uptime_seconds"), jstr(st, "engine"),
	     jnum(st, "enabled") ? "" : ", DISABLED", jnum(st, "dry_run") ? ", dry run" : "",
	     !has_arm ? "attached" : json_object_get_int64(armed) ? "ARMED" : "disarmed",
	     has_arm ? " (arm = " : "", has_arm ? jstr(st, "arm_mode") : "", has_arm ? ")" : "");
}

static void filesystems(struct top *t, json_object *stats)
{
	json_object *fss = NULL;
	line(t, "%s", "");
	line(t, "%-10s %-12s %-8s %5s %7s %11s %11s %9s  %s", "FILESYSTEM", "TYPE", "VERDICT", "DEPTH",
	     "SCANS", "STAT_US", "PREFETCH_US", "ENTRY_US", "LISTINGS");
	if (!json_object_object_get_ex(stats, "filesystems", &fss))
		return;
	json_object_object_foreach(fss, dev, f) {
		line(t, "%-10s %-12s %-8s %5s %7s %11.1f %11.1f %9.1f  %s", dev, jstr(f, "fstype"),
		     jstr(f, "verdict"), jstr(f, "depth"), jstr(f, "scans"),
		     jnum(f, "app_stat_us_before"), jnum(f, "app_stat_us_prefetch"),
		     jnum(f, "entry_cost_us"), jstr(f, "list_verdict"));
	}
}

/* The rate of r: entries prefetched per second since the last refresh (since it began, if new). */
static double rate_of(const struct top *t, const struct row *r, uint64_t now_ms)
{
	for (size_t i = 0; i < t->nprev; i++) {
		const struct row *p = &t->prev[i];
		if (p->pid == r->pid && !strcmp(p->dir, r->dir) && now_ms > t->prev_ms &&
		    r->entries >= p->entries)
			return (double)(r->entries - p->entries) * 1000.0 / (double)(now_ms - t->prev_ms);
	}
	return r->age > 0 ? (double)r->entries / r->age : 0;
}

static enum sort_key sorting;

static int cmp_rows(const void *a, const void *b)
{
	const struct row *x = a, *y = b;
	double dx, dy;
	switch (sorting) {
	case SORT_RATE: dx = x->rate, dy = y->rate; break;
	case SORT_HITS: dx = (double)x->hits, dy = (double)y->hits; break;
	case SORT_WINDOW: dx = (double)x->window, dy = (double)y->window; break;
	case SORT_AGE: dx = x->age, dy = y->age; break;
	default: return x->pid < y->pid ? -1 : x->pid > y->pid; /* ascending */
	}
	return dx > dy ? -1 : dx < dy; /* descending */
}

/* The scans reply as rows, with rates, sorted. */
static void take_rows(struct top *t, json_object *scans, uint64_t now_ms)
{
	size_t n = scans && json_object_is_type(scans, json_type_array) ? json_object_array_length(scans) : 0;
	free(t->prev);
	t->prev = t->rows;
	t->nprev = t->nrows;
	t->rows = calloc(n ? n : 1, sizeof(*t->rows));
	t->nrows = t->rows ? n : 0;
	for (size_t i = 0; i < t->nrows; i++) {
		json_object *s = json_object_array_get_idx(scans, i);
		struct row *r = &t->rows[i];
		r->pid = (long)jnum(s, "pid");
		ctl_printable(r->comm, sizeof(r->comm), jstr(s, "comm"));
		ctl_printable(r->state, sizeof(r->state), jstr(s, "state"));
		ctl_printable(r->dir, sizeof(r->dir), jstr(s, "directory"));
		r->entries = (unsigned long long)jnum(s, "entries");
		r->hits = (unsigned long long)jnum(s, "hits");
		r->misses = (unsigned long long)jnum(s, "misses");
		r->window = (unsigned long long)jnum(s, "window");
		r->age = jnum(s, "age_seconds");
		r->rate = rate_of(t, r, now_ms);
	}
	sorting = t->sort;
	if (t->nrows)
		qsort(t->rows, t->nrows, sizeof(*t->rows), cmp_rows);
	t->prev_ms = now_ms;
}

static void activity(struct top *t, json_object *stats)
{
	line(t, "%s", "");
	line(t, "ACTIVE: %zu scans and walks; prefetched %s entries, %s hits, %s misses in all   "
	     "[sort: %s]  s: sort  q: quit", t->nrows, jstr(stats, "entries_prefetched"),
	     jstr(stats, "hits"), jstr(stats, "misses"), sort_names[t->sort]);
	line(t, "%8s %-16s %-12s %9s %9s %8s %8s %7s  %s", "PID", "PROGRAM", "STATE", "RATE/S",
	     "FETCHED", "HITS", "MISSES", "WINDOW", "DIRECTORY");
	for (size_t i = 0; i < t->nrows; i++) {
		const struct row *r = &t->rows[i];
		line(t, "%8ld %-16s %-12s %9.0f %9llu %8llu %8llu %7llu  %s", r->pid, r->comm, r->state,
		     r->rate, r->entries, r->hits, r->misses, r->window, r->dir);
	}
}

/* Asks the daemon once; the body, or NULL with why in err. */
static json_object *fetch(const struct top *t, const char *cmd, char *err, size_t errlen)
{
	char *reply = NULL;
	int r = ctl_request(t->socket, cmd, &reply, 2000);
	json_object *o = NULL;
	if (r == 0)
		o = json_tokener_parse(reply);
	if (!o)
		snprintf(err, errlen, "%s: %s", cmd,
			 r == 1 ? reply : r == -ENOENT || r == -ECONNREFUSED ? "diraheadd is not running"
			 : r == -EACCES || r == -EPERM ? "permission denied (root or the [control] group only)"
			 : r < 0 ? strerror(-r) : "the answer is not JSON");
	free(reply);
	return o;
}

/* One frame into t->screen: 0, or -1 with the reason drawn instead. */
static int frame(struct top *t)
{
	char err[256] = "";
	t->len = 0;
	t->lines = 0;
	json_object *st = fetch(t, "status", err, sizeof(err));
	json_object *stats = st ? fetch(t, "stats", err, sizeof(err)) : NULL;
	json_object *scans = stats ? fetch(t, "scans", err, sizeof(err)) : NULL;
	if (!scans) {
		line(t, "diraheadctl top: %s", err);
		json_object_put(st);
		json_object_put(stats);
		return -1;
	}
	take_rows(t, scans, mono_ms());
	header(t, st);
	filesystems(t, stats);
	activity(t, stats);
	json_object_put(st);
	json_object_put(stats);
	json_object_put(scans);
	return 0;
}

static volatile sig_atomic_t stop;
static void on_signal(int sig) { (void)sig; stop = 1; }

static struct termios saved_tio;
static void restore_terminal(void)
{
	tcsetattr(STDIN_FILENO, TCSANOW, &saved_tio);
	/* the cursor back, the normal screen back */
	fputs("\033[?25h\033[?1049l", stdout);
	fflush(stdout);
}

static void term_size(struct top *t)
{
	struct winsize ws;
	t->width = 80;
	t->height = 24;
	if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col && ws.ws_row) {
		t->width = ws.ws_col;
		t->height = ws.ws_row;
	}
}

/* Waits up to ms for a key: q quits (false), s cycles the sort (redraws at once). */
static bool keys(struct top *t, int ms)
{
	struct pollfd p = { .fd = STDIN_FILENO, .events = POLLIN };
	uint64_t end = mono_ms() + (uint64_t)ms;
	for (uint64_t now; !stop && (now = mono_ms()) < end;) {
		if (poll(&p, 1, (int)(end - now)) <= 0)
			continue;
		char c;
		if (read(STDIN_FILENO, &c, 1) != 1)
			return false; /* the terminal is gone */
		if (c == 'q' || c == 'Q' || c == 3 /* ^C in raw mode */)
			return false;
		if (c == 's' || c == 'S') {
			t->sort = (t->sort + 1) % SORT_MAX;
			return true;
		}
	}
	return !stop;
}

static int live(struct top *t)
{
	struct termios tio;
	if (tcgetattr(STDIN_FILENO, &saved_tio) < 0) {
		fprintf(stderr, "diraheadctl top: standard input is not a terminal\n");
		return CTL_EXIT_FAILURE;
	}
	tio = saved_tio;
	tio.c_lflag &= ~(tcflag_t)(ICANON | ECHO);
	tio.c_cc[VMIN] = 1;
	tio.c_cc[VTIME] = 0;
	tcsetattr(STDIN_FILENO, TCSANOW, &tio);
	struct sigaction sa = { .sa_handler = on_signal };
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	fputs("\033[?1049h\033[?25l", stdout); /* the alternate screen, no cursor */
	do {
		term_size(t);
		frame(t);
		fputs("\033[H", stdout);
		fwrite(t->screen, 1, t->len, stdout);
		fputs("\033[J", stdout);
		fflush(stdout);
	} while (keys(t, 1000));
	restore_terminal();
	return 0;
}

int cmd_top(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "socket", required_argument, NULL, 's' },
		{ "help", no_argument, NULL, 'h' },
		{},
	};
	struct top t = { .socket = ctl_default_socket() };
	int c;
	optind = 1;
	while ((c = getopt_long(argc, argv, "s:h", lo, NULL)) != -1) {
		switch (c) {
		case 's': t.socket = optarg; break;
		case 'h': printf("Usage: diraheadctl top [--socket PATH]\n"); return 0;
		default: goto bad;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "diraheadctl top: unexpected argument '%s'\n", argv[optind]);
bad:
		fprintf(stderr, "Usage: diraheadctl top [--socket PATH]\n");
		return CTL_EXIT_USAGE;
	}
	int r;
	if (isatty(STDOUT_FILENO) && isatty(STDIN_FILENO)) {
		r = live(&t);
	} else {
		/* one snapshot; an unreachable daemon is told like the other commands tell it */
		char *reply;
		r = ctl_ask(t.socket, "status", &reply);
		if (!r) {
			free(reply);
			r = frame(&t) < 0 ? CTL_EXIT_FAILURE : 0;
			fwrite(t.screen, 1, t.len, stdout);
		}
	}
	free(t.screen);
	free(t.prev);
	free(t.rows);
	return r;
}
