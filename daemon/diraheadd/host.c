/* SPDX-License-Identifier: LGPL-2.1-or-later OR BSD-2-Clause */
/* The engine's host: engine, openers, cost model, breaker, CPU accounting, tick (host.h). */
#include "host.h"

#include <assert.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "budget.h"
#include "log.h"
#include "monoclock.h"
#include "opener.h"
#include "policy.h"

/* A request outstanding this long is taken for stuck on a hung filesystem and stops counting
 * against depth_total.  The engine's default (1 s) let two scans stuck on one hung filesystem
 * hold the whole depth for that long: a scan on a healthy filesystem then got nothing, and its
 * application did ~30% of its own lookups (tests/integration/daemon-isolation.sh).  A stat
 * takes milliseconds even over a network; stuck requests still count against their own
 * directory's depth_per_scan, so a hung filesystem gets no more than that. */
#define HOST_STALL_MS 250
#define HOST_READERS 16
/* END and walker events are queued without waking the daemon (DIRAHEAD_CFG_LAZY_WAKEUP): taken
 * this often while scans or walks run, and whenever the engine wakes it. */
#define HOST_POLL_USEC 5000
#define HOST_TICK_USEC 250000

/* Openers at once (scans and walks together), and how long one may take before it counts as
 * stuck on its filesystem.  One user's jobs, stuck ones included until they return: half of
 * them, so that a user whose filesystem never answers the daemon leaves the rest to the others
 * (stuck jobs are replaced, see opener.h). */
#define OPENERS 8
#define OPENERS_PER_USER (OPENERS / 2)
#define OPENER_STUCK_MS 1000

struct host {
	sd_event *loop;
	struct dd_stats *st;
	struct dirahead_engine *engine;
	sd_event_source *engine_src, *timer_src;
	sd_event_source *poll_src;  /* drains events BPF queued without waking us (lazy wakeup) */
	struct opener *openers;     /* for scans and walks (opener.h) */
	struct policy *pol;
	struct budget *budget;      /* [budget]: requests per second per filesystem (budget.h) */
	char mountinfo[4096];       /* the host's, for the budget's rules by type and source */
	struct host_client clients[HOST_CLIENTS];
	unsigned nclients;
	void (*pump)(void *);
	void *pump_ctx;
	/* the daemon's CPU per prefetched entry: process CPU time against completions */
	uint64_t cpu_from_ns, completed_total, completed_from;
	struct host_fs tick;        /* the filesystem of the completions since cpu_from */
	int tick_fs;                /* 0: no completion since cpu_from, 1: all on tick, 2: several */
	bool tick_listing;          /* a listing-only walk completed something since cpu_from */
	bool busy;                  /* scans or walks run: the timer ticks */
};


static struct pol_fs *fs_mount(struct host *h, const struct host_fs *f)
{
	return policy_fs_mount(h->pol, f->dev_major, f->dev_minor, f->magic, f->mnt_id,
			       mono_ns());
}

/* Which filesystems the CPU since cpu_from went to. */
static void tick_note(struct host *h, const struct host_fs *f)
{
	/* a listing walk's CPU is spent listing: it says nothing of an entry's cost */
	h->tick_listing |= f->list_only;
	if (h->tick_fs == 0) {
		h->tick_fs = 1;
		h->tick = *f;
	} else if (h->tick.dev_major != f->dev_major || h->tick.dev_minor != f->dev_minor) {
		h->tick_fs = 2;
	}
}

static void on_complete(const struct dirahead_completion *c, void *data)
{
	struct host *h = data;
	const struct host_dir *hd = c->dir_data;
	struct host_fs f;
	assert(hd && hd->ops);
	if (c->error)
		h->st->errors[dd_err_class_of(c->error)]++;
	else
		h->st->entries_prefetched++;
	/* entries read with it, in its inode group: prefetched at no cost of their own */
	h->st->entries_prefetched += c->covered;
	h->st->entries_grouped += c->covered;
	dd_stats_latency(h->st, c->latency_ns);
	h->completed_total += 1 + c->covered;
	hd->ops->fs_of(c->dir_data, &f);
	hd->ops->complete(c);
	struct pol_fs *fs = fs_mount(h, &f);
	policy_answered(fs); /* it answers: not hung */
	if (policy_enabled(h->pol)) {
		policy_account_latency(fs, c->latency_ns);
		tick_note(h, &f);
	}
}

/* A request has been outstanding for HOST_STALL_MS: its filesystem may hang (the breaker). */
static void on_stall(struct dirahead_dir *dir, void *dir_data, void *data)
{
	struct host *h = data;
	const struct host_dir *hd = dir_data;
	struct host_fs f;
	(void)dir;
	hd->ops->fs_of(dir_data, &f);
	policy_stalled(fs_mount(h, &f), mono_ns());
}

static void on_dir_done(struct dirahead_dir *dir, void *dir_data, int error, void *data)
{
	struct host *h = data;
	const struct host_dir *hd = dir_data;
	assert(hd && hd->ops);
	hd->ops->dir_done(dir, dir_data, error);
	host_update(h);
}

/* The breaker of fs opened: what runs there ends (its requests are abandoned, nothing waits for
 * them), and nothing new goes there for a while. */
static void breaker_opened(struct pol_fs *fs, void *ctx)
{
	struct host *h = ctx;
	log_warn("filesystem %u:%u: requests hang: nothing is sent to it for a while",
		 fs->dev_major, fs->dev_minor);
	for (unsigned i = 0; i < h->nclients; i++)
		h->clients[i].hung(h->clients[i].ctx, fs->dev_major, fs->dev_minor);
}

static uint64_t cpu_ns(void)
{
	struct timespec ts;
	/* the whole process: io-wq workers and engine threads are threads of it */
	if (clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts))
		return 0;
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* The CPU per entry is counted from now (cpu: the process's CPU time now). */
static void count_from(struct host *h, uint64_t cpu)
{
	h->cpu_from_ns = cpu;
	h->completed_from = h->completed_total;
	h->tick_fs = 0;
	h->tick_listing = false;
}

/* What a prefetched entry costs the daemon: its CPU time over the entries completed meanwhile. */
static void account_cpu(struct host *h)
{
	uint64_t cpu = cpu_ns(), n = h->completed_total - h->completed_from;
	if (n < 32 && h->tick_fs)
		return;
	/* enough to stand for a figure, or CPU spent on no prefetch at all (probes, events) */
	if (n >= 32 && !h->tick_listing) {
		struct pol_fs *fs = h->tick_fs == 1 ? fs_mount(h, &h->tick) : NULL;
		policy_account_cpu(h->pol, fs, cpu - h->cpu_from_ns, n);
	}
	count_from(h, cpu);
}

static void pump(struct host *h)
{
	if (h->pump)
		h->pump(h->pump_ctx);
}

static int on_engine(sd_event_source *src, int fd, uint32_t revents, void *userdata)
{
	struct host *h = userdata;
	(void)src;
	(void)fd;
	(void)revents;
	int r = dirahead_engine_process(h->engine);
	if (r < 0)
		log_warn("prefetch engine: %s", strerror(-r));
	pump(h); /* awake anyway: take what BPF queued without a wakeup */
	return 0;
}

static int on_poll(sd_event_source *src, uint64_t usec, void *userdata)
{
	struct host *h = userdata;
	pump(h);
	sd_event_source_set_time(src, usec + HOST_POLL_USEC);
	return 0;
}

static int on_timer(sd_event_source *src, uint64_t usec, void *userdata)
{
	struct host *h = userdata;
	pump(h);
	uint64_t t = mono_ns();
	for (unsigned i = 0; i < h->nclients; i++)
		h->clients[i].tick(h->clients[i].ctx, t);
	policy_check_hung(h->pol, t, breaker_opened, h);
	account_cpu(h);
	sd_event_source_set_time(src, usec + HOST_TICK_USEC);
	host_update(h);
	return 0;
}

void host_update(struct host *h)
{
	/* Armed only while scans or walks run: an idle daemon has no timers and no wakeups. */
	bool busy = false;
	for (unsigned i = 0; i < h->nclients && !busy; i++)
		busy = h->clients[i].busy(h->clients[i].ctx);
	int on = busy ? SD_EVENT_ON : SD_EVENT_OFF;
	if (!busy && h->busy)
		account_cpu(h); /* the last stretch's, a short scan's only figure */
	if (busy && !h->busy) {
		/* The CPU spent while idle (starting up: ~0.1 s of loading BPF; arming; control
		 * requests) is no prefetched entry's: counted into the first tick's, it made a slow
		 * volume's entries cost 40 us each (the whole run's CPU was 10 us an entry), and its
		 * 30 us stats were judged too cheap to prefetch. */
		count_from(h, cpu_ns());
	}
	h->busy = busy;
	sd_event_source_set_enabled(h->timer_src, on);
	sd_event_source_set_enabled(h->poll_src, on);
}

static int add_sources(struct host *h)
{
	int r = sd_event_add_io(h->loop, &h->engine_src, dirahead_engine_fd(h->engine), EPOLLIN,
				on_engine, h);
	if (r >= 0)
		r = sd_event_add_time_relative(h->loop, &h->timer_src, CLOCK_MONOTONIC,
					       HOST_TICK_USEC, 50000, on_timer, h);
	if (r >= 0)
		r = sd_event_add_time_relative(h->loop, &h->poll_src, CLOCK_MONOTONIC,
					       HOST_POLL_USEC, HOST_POLL_USEC / 4, on_poll, h);
	if (r < 0)
		return r;
	sd_event_source_set_enabled(h->timer_src, SD_EVENT_OFF);
	sd_event_source_set_enabled(h->poll_src, SD_EVENT_OFF);
	return 0;
}

struct host *host_new(sd_event *loop, const struct dd_config *cfg, struct dd_stats *st,
		      char *err, size_t errlen)
{
	struct host *h = calloc(1, sizeof(*h));
	if (!h || !(h->pol = policy_new(cfg))) {
		snprintf(err, errlen, "out of memory");
		free(h);
		return NULL;
	}
	h->loop = loop;
	h->st = st;
	snprintf(h->mountinfo, sizeof(h->mountinfo), "%s/1/mountinfo", cfg->proc_path);
	h->budget = budget_new(&cfg->budget_rules, budget_mount_facts, h->mountinfo);
	if (!h->budget) {
		snprintf(err, errlen, "out of memory");
		policy_free(h->pol);
		free(h);
		return NULL;
	}
	h->cpu_from_ns = cpu_ns();
	struct dirahead_engine_opts eo = {
		.size = sizeof(eo), .backend = cfg->engine, .depth = cfg->depth_total,
		.dir_depth = cfg->depth_per_scan, .on_complete = on_complete,
		.on_dir_done = on_dir_done, .data = h, .stall_ms = HOST_STALL_MS,
		/* a walk lists open_dirs directories at once, on a network filesystem latency
		 * bound: two walks' worth of readers (fixed at start) */
		.readers = HOST_READERS,
		.cred_depth = cfg->depth_per_user, .on_stall = on_stall,
	};
	h->engine = dirahead_engine_new(&eo);
	if (!h->engine) {
		snprintf(err, errlen, "cannot start the prefetch engine: %s", strerror(errno));
		goto fail;
	}
	h->openers = opener_new(loop, OPENERS, OPENERS_PER_USER, OPENER_STUCK_MS);
	if (!h->openers) {
		snprintf(err, errlen, "cannot start the openers: %s", strerror(errno));
		goto fail;
	}
	int r = add_sources(h);
	if (r < 0) {
		snprintf(err, errlen, "event loop: %s", strerror(-r));
		goto fail;
	}
	return h;
fail:
	host_stop_engine(h);
	host_free(h);
	return NULL;
}

void host_add_client(struct host *h, const struct host_client *c)
{
	assert(h->nclients < HOST_CLIENTS && c->tick && c->hung && c->busy);
	h->clients[h->nclients++] = *c;
}

void host_set_pump(struct host *h, void (*fn)(void *), void *ctx)
{
	h->pump = fn;
	h->pump_ctx = ctx;
}

void host_reconfigure(struct host *h, const struct dd_config *cfg)
{
	policy_reconfigure(h->pol, cfg);
	/* new rules, new buckets (full: a reload grants a burst) */
	struct budget *b = budget_new(&cfg->budget_rules, budget_mount_facts, h->mountinfo);
	if (b) {
		budget_free(h->budget);
		h->budget = b;
	} else {
		log_warn("reload: out of memory for the [budget] rules: the old ones stay");
	}
}

struct dirahead_engine *host_engine(struct host *h) { return h->engine; }
struct opener *host_openers(struct host *h) { return h->openers; }
struct policy *host_policy(struct host *h) { return h->pol; }
struct budget *host_budget(struct host *h) { return h->budget; }

uint64_t host_inflight(const struct host *h)
{
	struct dirahead_engine_stats es;
	dirahead_engine_get_stats(h->engine, &es);
	return es.inflight;
}

const char *host_backend(const struct host *h)
{
	return dirahead_engine_backend(h->engine) == DIRAHEAD_BACKEND_URING ? "io_uring" : "threads";
}

void host_stop_engine(struct host *h)
{
	if (!h)
		return;
	/* Engine teardown abandons requests stuck on a hung filesystem instead of waiting. */
	dirahead_engine_free(h->engine);
	h->engine = NULL;
	h->nclients = 0; /* nothing is theirs any more */
}

void host_free(struct host *h)
{
	if (!h)
		return;
	assert(!h->engine); /* host_stop_engine first */
	sd_event_source_disable_unref(h->engine_src);
	sd_event_source_disable_unref(h->timer_src);
	sd_event_source_disable_unref(h->poll_src);
	/* Openers stuck on a hung filesystem are left to finish on their own. */
	opener_free(h->openers);
	policy_free(h->pol);
	budget_free(h->budget);
	free(h);
}
