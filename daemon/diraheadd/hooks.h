/* SPDX-License-Identifier: LGPL-2.1-or-later OR BSD-2-Clause */
/*
 * Stat timing: the detector's sys_enter program, which times the programs' stats for the cost
 * model's probes (and the stat latency histogram), attached while a scan is probing and
 * detached once none has been for STAT_TIMING_IDLE_USEC, or when disabled.  Decided from the
 * scans' life (scan_mgr_probing: the PROBING state), never from their display strings.  The
 * other hooks, the syscall hooks armed on blocked calls, are arm.h's.
 */
#ifndef DIRAHEAD_HOOKS_H
#define DIRAHEAD_HOOKS_H

#include <stdbool.h>
#include <systemd/sd-event.h>

struct detector;
struct scan_mgr;
struct hooks;

/* Detaches stat timing until a probe wants it.  NULL on event loop errors (err filled). */
struct hooks *hooks_new(sd_event *loop, struct detector *det, char *err, size_t errlen);
/* The scans whose probing keeps timing attached (set once they exist). */
void hooks_set_scans(struct hooks *h, struct scan_mgr *mgr);
/* A probe wants the programs' stats timed (scan_mgr_set_timing_hook's callback; ctx: hooks). */
void hooks_want_timing(void *ctx);
/* After a reload: enabled = false detaches timing at once (the programs return at once). */
void hooks_reconfigure(struct hooks *h, bool enabled);
void hooks_free(struct hooks *h);

#endif
