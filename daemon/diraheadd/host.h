/* SPDX-License-Identifier: LGPL-2.1-or-later OR BSD-2-Clause */
/*
 * The engine's host: the prefetch engine (libdirahead) and its loop sources, the openers
 * (opener.h), the cost model (policy.h) with its breaker, the daemon's CPU per prefetched entry,
 * and the tick that runs while scans or walks do.  Its clients (the scans, the walks) hand the
 * engine directories whose dir_data starts with a struct host_dir: completions and a directory's
 * end go back to its owner through host_dir.ops, never by guessing what dir_data is.  The tick,
 * the breaker and the timers' on/off go to the clients (struct host_client).  An idle daemon has
 * no timer armed.
 */
#ifndef DIRAHEAD_HOST_H
#define DIRAHEAD_HOST_H

#include <stdbool.h>
#include <stdint.h>
#include <systemd/sd-event.h>
#include "config.h"
#include "dirahead.h"
#include "stats.h"

struct budget;
struct host;
struct opener;
struct policy;

/* The filesystem a directory of the engine is on, for the cost model. */
struct host_fs {
	uint32_t dev_major, dev_minor;
	uint64_t magic, mnt_id;
	bool list_only;            /* a walk that lists only: its CPU goes to listings, not entries */
};

/* What an owner of engine directories does with their completions and ends. */
struct host_ops {
	/* One request of dir_data's directory completed (counted in the stats already). */
	void (*complete)(const struct dirahead_completion *c);
	/* Which filesystem dir_data's directory is on. */
	void (*fs_of)(const void *dir_data, struct host_fs *fs);
	/* The engine let go of the directory (error 0: all fetched). */
	void (*dir_done)(struct dirahead_dir *dir, void *dir_data, int error);
};

/* The first member of every dir_data handed to the engine. */
struct host_dir {
	const struct host_ops *ops;
};

/* A client of the tick (the scans, the walks), called in the order added. */
struct host_client {
	void (*tick)(void *ctx, uint64_t now_ns); /* idle and lost ones end */
	void (*hung)(void *ctx, uint32_t dev_major, uint32_t dev_minor); /* the breaker opened */
	bool (*busy)(const void *ctx);            /* it needs the tick */
	void *ctx;
};

struct host *host_new(sd_event *loop, const struct dd_config *cfg, struct dd_stats *st,
		      char *err, size_t errlen);
/* At most HOST_CLIENTS; before the loop runs. */
#define HOST_CLIENTS 2
void host_add_client(struct host *h, const struct host_client *c);
/* fn(ctx) drains the ring buffer (events_pump) whenever the engine or the tick woke the daemon. */
void host_set_pump(struct host *h, void (*fn)(void *), void *ctx);
/* Something started or ended: the tick runs while a client is busy, and only then. */
void host_update(struct host *h);
void host_reconfigure(struct host *h, const struct dd_config *cfg);
struct dirahead_engine *host_engine(struct host *h);
struct opener *host_openers(struct host *h);
struct policy *host_policy(struct host *h);
/* The [budget] rules now (budget.h); replaced by a reload: ask for it each time. */
struct budget *host_budget(struct host *h);
uint64_t host_inflight(const struct host *h);
const char *host_backend(const struct host *h);
/* Frees the engine (abandoning requests stuck on a hung filesystem: no callbacks after). */
void host_stop_engine(struct host *h);
/* Frees the rest (openers stuck on a hung filesystem finish on their own). */
void host_free(struct host *h);

#endif
