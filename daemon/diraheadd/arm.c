/* SPDX-License-Identifier: LGPL-2.1-or-later OR BSD-2-Clause */
/*
 * Arming the detector's syscall hooks on blocked metadata calls (see arm.h): the decisions are
 * arm_decide() and arm_quiet(); set_hooks() is the one place that attaches and detaches.
 */
#include "arm.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "daemon.h"
#include "detector.h"
#include "fsknow.h"
#include "gate.h"
#include "log.h"
#include "monoclock.h"
#include "procdir.h"
#include "scan.h"
#include "sentinel.h"
#include "walk.h"

/* While armed: how often the sentinel's records are read (they do not wake the daemon then) and
 * the quiet rule is checked. */
#define ARM_POLL_USEC 500000ull
/* One signal per process per this: a program blocked over and over (a hung FUSE server, a slow
 * disk) costs the daemon a few records a second at most. */
#define SENTINEL_RATE_MS 200

#define X_NAME(e, s) [ARM_SIG_##e] = s,
const char *const arm_signal_names[ARM_SIG_MAX] = { ARM_SIGNALS(X_NAME) };
#undef X_NAME

struct arm {
	struct daemon *d;
	struct sentinel *sen;        /* NULL: this kernel cannot run it; always armed */
	sd_event_source *io, *timer, *settle;
	bool on_block;               /* the mode in effect */
	bool armed;
	uint64_t armed_since_ns, armed_total_ns, last_ns;
	uint64_t arms, disarms;
	uint64_t sig[ARM_SIG_MAX];
	/* the filesystem of the last signal that armed or kept the hooks (arm_settled) */
	bool keep_known;
	uint32_t keep_major, keep_minor;
	uint64_t keep_magic;
	void (*on_quiet)(void *ctx);
	void *quiet_ctx;
};


static void poll_later(struct arm *a)
{
	uint64_t now;
	sd_event_now(a->d->loop, CLOCK_MONOTONIC, &now);
	sd_event_source_set_time(a->timer, now + ARM_POLL_USEC);
	sd_event_source_set_enabled(a->timer, SD_EVENT_ONESHOT);
}

/* The one place the hooks are attached and detached.  count: an arm or disarm by the rule (not
 * a mode switch).  0 or -errno. */
static int set_hooks(struct arm *a, bool on, bool count)
{
	uint64_t now = mono_ns();
	int r;
	if (on == a->armed)
		return 0;
	r = detector_syscalls(a->d->det, on);
	if (r < 0) {
		log_warn("cannot %s the detector's syscall hooks: %s", on ? "attach" : "detach",
			 strerror(-r));
		return r;
	}
	a->armed = on;
	if (on) {
		a->armed_since_ns = now;
		a->last_ns = now;
		a->arms += count;
	} else {
		a->armed_total_ns += now - a->armed_since_ns;
		a->disarms += count;
	}
	if (a->sen) /* armed: records wait for the poll, unless a walk waits for them */
		sentinel_set_lazy(a->sen, on && !(a->d->walks && walk_mgr_rejudging(a->d->walks)));
	if (on && a->on_block)
		poll_later(a);
	else
		sd_event_source_set_enabled(a->timer, SD_EVENT_OFF);
	return 0;
}

/* The [filter] rules, by what the signal carries: the process (name, cgroup) and the
 * filesystem's type where the sentinel knew it (gate.h; the path filter applies to scans). */
static bool filtered(const struct dd_config *c, const struct dirahead_sentinel_event *ev)
{
	char comm[sizeof(ev->comm) + 1];
	memcpy(comm, ev->comm, sizeof(ev->comm));
	comm[sizeof(ev->comm)] = '\0';
	return !gate_blocked(c, ev->tgid, comm, ev->fs != DIRAHEAD_SENT_FS_UNKNOWN, ev->magic);
}

static const char *call_name(uint32_t call)
{
	switch (call) {
	case DIRAHEAD_SENT_STAT: return "a stat";
	case DIRAHEAD_SENT_GETDENTS: return "getdents64";
	case DIRAHEAD_SENT_OPENDIR: return "an open of a directory";
	default: return "a call";
	}
}

/* Does this signal wait for its process to list a second directory (arm_one_dir)? */
static bool one_dir(const struct dirahead_sentinel_event *ev)
{
	if (ev->fs == DIRAHEAD_SENT_FS_UNKNOWN ||
	    fsknow_entries(ev->fsinfo) != FSKNOW_NO_LOOKUPS)
		return false;
	return arm_one_dir(true, ev->call == DIRAHEAD_SENT_GETDENTS,
			   ev->flags & DIRAHEAD_SENT_F_LISTED_OTHER);
}

static int on_sentinel_event(const struct dirahead_sentinel_event *ev, void *ctx)
{
	struct arm *a = ctx;
	struct daemon *d = a->d;
	if (!a->on_block || !d->cfg.enabled)
		return 0;
	uint64_t now = mono_ns();
	enum pol_arm v = POL_ARM_YES;
	struct policy *pol = scan_mgr_policy(d->mgr);
	bool brief = false; /* the signal does not overturn a `fast` verdict */
	if (ev->fs != DIRAHEAD_SENT_FS_UNKNOWN) {
		/* first contact: what the kernel says of it, before any scan there */
		policy_note_fsinfo(pol, ev->dev_major, ev->dev_minor, ev->magic, 0, ev->fsinfo, now);
		v = policy_arm_verdict(pol, ev->dev_major, ev->dev_minor, ev->magic, now);
		/* judged fast (trusted still, or old): a brief spell of blocking is not evidence */
		if (policy_judged_fast(pol, ev->dev_major, ev->dev_minor, ev->magic) &&
		    !arm_overturns_fast(ev->spell_ns, SENTINEL_RATE_MS * 1000000ull)) {
			brief = true;
			v = POL_ARM_FAST;
		}
		if (arm_for_listings(v, ev->call != DIRAHEAD_SENT_STAT,
				     policy_lists_pay(pol, ev->dev_major, ev->dev_minor, ev->magic))) {
			brief = true; /* not a re-judgment of its stats */
			v = POL_ARM_YES;
		}
	}
	/* calls that go on blocking outweigh an earlier `fast` there: judge it again, the process
	 * too; policy_blocked() backs off where re-judging found it fast again */
	if (!brief && (v == POL_ARM_FAST || v == POL_ARM_YES) &&
	    ev->fs != DIRAHEAD_SENT_FS_UNKNOWN &&
	    policy_blocked(pol, ev->dev_major, ev->dev_minor, ev->magic, now)) {
		if (d->det)
			detector_unmute(d->det, ev->tgid, ev->dev_major, ev->dev_minor);
		log_debug("re-judged: pid %u (%.16s) blocked in %s on %u:%u, judged fast before",
			  ev->tgid, ev->comm, call_name(ev->call), ev->dev_major, ev->dev_minor);
		v = policy_arm_verdict(pol, ev->dev_major, ev->dev_minor, ev->magic, now);
	}
	/* a walker's stat blocked: its walk judges that depth of the tree again (walk.h) */
	if (ev->call == DIRAHEAD_SENT_STAT && ev->fs != DIRAHEAD_SENT_FS_UNKNOWN && d->walks)
		walk_mgr_blocked(d->walks, ev->tgid, ev->dev_major, ev->dev_minor,
				 ev->fs == DIRAHEAD_SENT_FS_CWD ? 0 : ev->ino);
	enum arm_signal s = arm_decide(a->armed, v, filtered(&d->cfg, ev), one_dir(ev));
	if (s == ARM_SIG_ARMED || s == ARM_SIG_KEPT) {
		a->keep_known = ev->fs != DIRAHEAD_SENT_FS_UNKNOWN;
		a->keep_major = ev->dev_major;
		a->keep_minor = ev->dev_minor;
		a->keep_magic = ev->magic;
	}
	if (s == ARM_SIG_ARMED) {
		if (set_hooks(a, true, true) < 0)
			s = ARM_SIG_FAILED;
		else
			log_debug("armed: pid %u (%.16s) blocked in %s on %u:%u", ev->tgid, ev->comm,
				  call_name(ev->call), ev->dev_major, ev->dev_minor);
	} else if (s == ARM_SIG_KEPT) {
		if (ev->ts_ns > a->last_ns)
			a->last_ns = ev->ts_ns;
	} else if (s == ARM_SIG_IGNORED_VERDICT && a->sig[s] % 64 == 0) {
		log_debug("not armed: pid %u (%.16s) blocked on %u:%u, where prefetch does not pay",
			  ev->tgid, ev->comm, ev->dev_major, ev->dev_minor);
	}
	a->sig[s]++;
	return 0;
}

static int on_io(sd_event_source *s, int fd, uint32_t revents, void *userdata)
{
	struct arm *a = userdata;
	(void)s;
	(void)fd;
	(void)revents;
	sentinel_consume(a->sen);
	return 0;
}

static int on_poll(sd_event_source *s, uint64_t usec, void *userdata)
{
	struct arm *a = userdata;
	struct daemon *d = a->d;
	(void)s;
	(void)usec;
	if (a->sen)
		sentinel_consume(a->sen);
	if (!a->armed || !a->on_block)
		return 0;
	unsigned live = scan_mgr_active(d->mgr) + scan_mgr_walks(d->mgr);
	uint64_t now = mono_ns();
	if (live)
		a->last_ns = now; /* a scan or walk running is activity: quiet_s counts from its end */
	if (arm_quiet(now, a->last_ns, (uint64_t)d->cfg.quiet_s * 1000000000ull, live)) {
		if (set_hooks(a, false, true) == 0) {
			log_debug("disarmed: no blocked metadata call for %u s", d->cfg.quiet_s);
			if (a->on_quiet)
				a->on_quiet(a->quiet_ctx);
			sentinel_consume(a->sen); /* as in on_settle() */
			return 0;
		}
	}
	poll_later(a);
	return 0;
}

static bool settled(struct arm *a, enum pol_arm *v)
{
	struct daemon *d = a->d;
	unsigned live = scan_mgr_tracked(d->mgr) + scan_mgr_walks(d->mgr);
	*v = policy_arm_verdict(scan_mgr_policy(d->mgr), a->keep_major, a->keep_minor, a->keep_magic,
				mono_ns());
	return a->armed && a->on_block &&
	       arm_settled(a->keep_known, *v,
			   policy_lists_pay(scan_mgr_policy(d->mgr), a->keep_major, a->keep_minor,
					    a->keep_magic),
			   live);
}

static int on_settle(sd_event_source *s, uint64_t usec, void *userdata)
{
	struct arm *a = userdata;
	enum pol_arm v;
	(void)s;
	(void)usec;
	if (!settled(a, &v) || set_hooks(a, false, true) < 0)
		return 0;
	log_debug("disarmed: %u:%u, which armed them, is judged %s and nothing runs", a->keep_major,
		  a->keep_minor, v == POL_ARM_FAST ? "fast" : v == POL_ARM_HUNG ? "hung" : "no_gain");
	a->keep_known = false;
	if (a->on_quiet)
		a->on_quiet(a->quiet_ctx);
	/* records written lazily while armed are still unread, and the ring wakes its reader only
	 * once it has caught up: read them, or no signal would wake the daemon again */
	sentinel_consume(a->sen);
	return 0;
}

void arm_settle(struct arm *a)
{
	uint64_t now;
	if (!a->armed || !a->on_block || !a->keep_known)
		return;
	sd_event_now(a->d->loop, CLOCK_MONOTONIC, &now);
	sd_event_source_set_time(a->settle, now + ARM_SETTLE_USEC);
	sd_event_source_set_enabled(a->settle, SD_EVENT_ONESHOT);
}

void arm_on_quiet(struct arm *a, void (*fn)(void *ctx), void *ctx)
{
	a->on_quiet = fn;
	a->quiet_ctx = ctx;
}

/* Brings the hooks and the sentinel in line with the mode and d->cfg.enabled. */
static void apply(struct arm *a)
{
	struct daemon *d = a->d;
	bool was = a->on_block;
	a->on_block = !d->cfg.arm_always && a->sen;
	if (!a->on_block) {
		if (a->sen)
			sentinel_attach(a->sen, false);
		set_hooks(a, true, false);
		sd_event_source_set_enabled(a->timer, SD_EVENT_OFF);
		return;
	}
	int r = sentinel_attach(a->sen, d->cfg.enabled);
	if (r < 0) {
		log_warn("cannot attach the sentinel: %s; the syscall hooks stay attached", strerror(-r));
		a->on_block = false;
		set_hooks(a, true, false);
		return;
	}
	if (!d->cfg.enabled) {
		set_hooks(a, false, false);
	} else if (a->armed) {
		if (!was)
			a->last_ns = mono_ns(); /* from always: quiet_s from now */
		poll_later(a);
	}
}

/* A walk began or stopped waiting for a blocked stat (walk.h): have the records wake the daemon
 * meanwhile, so that it judges that depth again at once. */
static void walks_changed(void *ctx)
{
	struct arm *a = ctx;
	if (a->sen)
		sentinel_set_lazy(a->sen, a->armed && !walk_mgr_rejudging(a->d->walks));
}

/* A monotonic timer of a's, off until set. */
static int add_timer(struct arm *a, sd_event_source **src, uint64_t accuracy_usec,
		     sd_event_time_handler_t fn)
{
	int r = sd_event_add_time(a->d->loop, src, CLOCK_MONOTONIC, UINT64_MAX, accuracy_usec, fn, a);
	if (r >= 0)
		sd_event_source_set_enabled(*src, SD_EVENT_OFF);
	return r;
}

struct arm *arm_new(struct daemon *d, char *err, size_t errlen)
{
	struct arm *a = calloc(1, sizeof(*a));
	char e[256];
	int r;
	if (!a) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	a->d = d;
	a->armed = detector_syscalls_on(d->det);
	if (a->armed)
		a->armed_since_ns = a->last_ns = mono_ns();
	if ((r = add_timer(a, &a->timer, 100000, on_poll)) < 0 ||
	    (r = add_timer(a, &a->settle, 10000, on_settle)) < 0) {
		snprintf(err, errlen, "event loop: %s", strerror(-r));
		arm_free(a);
		return NULL;
	}
	a->sen = sentinel_open(procdir_self_tgid(), on_sentinel_event, a, e, sizeof(e));
	if (!a->sen) {
		log_warn("no sentinel (%s): the detector's syscall hooks stay attached ([detect] arm = "
			 "always)", e);
	} else {
		sentinel_set_rate_ms(a->sen, SENTINEL_RATE_MS);
		if ((r = sd_event_add_io(d->loop, &a->io, sentinel_fd(a->sen), EPOLLIN, on_io, a)) < 0) {
			snprintf(err, errlen, "event loop: %s", strerror(-r));
			arm_free(a);
			return NULL;
		}
	}
	apply(a);
	if (d->walks)
		walk_mgr_set_watch(d->walks, walks_changed, a);
	return a;
}

void arm_reconfigure(struct arm *a)
{
	apply(a);
}

void arm_get_stats(struct arm *a, struct arm_stats *out)
{
	uint64_t c[DIRAHEAD_SENT_CNT_MAX] = { 0 };
	memset(out, 0, sizeof(*out));
	out->on_block = a->on_block;
	out->armed = a->armed;
	out->arms = a->arms;
	out->disarms = a->disarms;
	out->armed_s = (double)(a->armed_total_ns + (a->armed ? mono_ns() - a->armed_since_ns : 0)) / 1e9;
	memcpy(out->signals, a->sig, sizeof(out->signals));
	if (a->sen && sentinel_counters(a->sen, c) == 0) {
		out->blocked = c[DIRAHEAD_SENT_CNT_BLOCKED];
		out->sent = c[DIRAHEAD_SENT_CNT_SIGNALS];
		out->rate_limited = c[DIRAHEAD_SENT_CNT_RATE_LIMITED];
		out->lost = c[DIRAHEAD_SENT_CNT_LOST];
	}
}

bool arm_sentinel_prog(struct arm *a, uint32_t *id, uint64_t *run_cnt, uint64_t *run_time_ns,
		       bool *attached)
{
	if (!a || !a->sen || sentinel_prog_stat(a->sen, id, run_cnt, run_time_ns) < 0)
		return false;
	*attached = sentinel_attached(a->sen);
	return true;
}

void arm_free(struct arm *a)
{
	if (!a)
		return;
	if (a->d->walks)
		walk_mgr_set_watch(a->d->walks, NULL, NULL);
	sd_event_source_disable_unref(a->timer);
	sd_event_source_disable_unref(a->settle);
	sd_event_source_disable_unref(a->io);
	sentinel_close(a->sen);
	free(a);
}
