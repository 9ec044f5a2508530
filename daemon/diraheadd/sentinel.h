/* SPDX-License-Identifier: LGPL-2.1-or-later OR BSD-2-Clause */
/*
 * The sentinel: loads bpf/sentinel.bpf.c (tp_btf/sched_switch), which reports metadata calls
 * that block, and hands its ring-buffer records to the daemon.  It stays attached while the
 * daemon arms on blocks ([detect] arm = on-block); see arm.h for what the daemon does with them.
 */
#ifndef DIRAHEAD_SENTINEL_DAEMON_H
#define DIRAHEAD_SENTINEL_DAEMON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "dirahead_sentinel.h"

struct sentinel;

typedef int (*sentinel_event_fn)(const struct dirahead_sentinel_event *ev, void *ctx);

/* Loads it (not attached).  NULL with err filled if this kernel cannot run it (no
 * sched_switch in BTF, no bpf_task_pt_regs: before 5.15). */
struct sentinel *sentinel_open(uint32_t self_tgid, sentinel_event_fn fn, void *ctx, char *err,
			       size_t errlen);
/* Attach or detach the sched_switch program; 0 or -errno. */
int sentinel_attach(struct sentinel *s, bool on);
bool sentinel_attached(const struct sentinel *s);
/* Records need not wake the reader (it polls while armed). */
void sentinel_set_lazy(struct sentinel *s, bool lazy);
/* One signal per process per this many ms. */
void sentinel_set_rate_ms(struct sentinel *s, unsigned ms);
/* Epoll fd of the ring buffer; drain without blocking (events consumed or -errno). */
int sentinel_fd(const struct sentinel *s);
int sentinel_consume(struct sentinel *s);
/* The counters, summed over CPUs (enum dirahead_sentinel_counter). */
int sentinel_counters(struct sentinel *s, uint64_t out[DIRAHEAD_SENT_CNT_MAX]);
/* The program's kernel id and run statistics (with kernel.bpf_stats_enabled=1). */
int sentinel_prog_stat(struct sentinel *s, uint32_t *id, uint64_t *run_cnt, uint64_t *run_time_ns);
void sentinel_close(struct sentinel *s);

#endif
