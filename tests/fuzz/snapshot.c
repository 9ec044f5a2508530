/* SPDX-License-Identifier: LGPL-2.1-or-later OR BSD-2-Clause */
/* The fuzz targets' stand-ins for the scan manager, the detector and reload (snapshot.h). */
#include "snapshot.h"

#include <stdlib.h>
#include <string.h>

#include "arm.h"
#include "detector.h"
#include "fsmagic.h"
#include "policy.h"
#include "scan.h"

static struct {
	struct policy *pol;
	char comm[16];
	char path[4096];
} snap;

void snapshot_daemon_init(struct daemon *d)
{
	memset(d, 0, sizeof(*d));
	dd_config_defaults(&d->cfg);
	d->config_path = "/etc/dirahead/dirahead.conf";
	d->start_usec = 1;
	d->stats.scans_confirmed = 12;
	d->stats.scans_started = 9;
	d->stats.entries_prefetched = 4096;
	d->stats.hits = 4000;
	d->stats.misses = 17;
	d->stats.judged = 3;
	d->stats.judged_before_s = 0.00036;
	d->stats.judged_after_s = 0.00003;
	dd_stats_latency(&d->stats, 250000);
	snap.pol = policy_new(&d->cfg);
	struct pol_fs *f = policy_fs(snap.pol, 0, 55, 0x65735546 /* fuse */, 1);
	f->verdict = POL_PAYS;
	f->depth = 16;
	f->before_ns = 120000;
	f->after_ns = 9000;
	snapshot_set_scan((const uint8_t *)"ls\0/srv/data", 12);
}

void snapshot_daemon_fini(struct daemon *d)
{
	policy_free(snap.pol);
	snap.pol = NULL;
	dd_config_free(&d->cfg);
}

void snapshot_set_scan(const uint8_t *data, size_t len)
{
	size_t n = strnlen((const char *)data, len);
	size_t c = n < sizeof(snap.comm) - 1 ? n : sizeof(snap.comm) - 1;
	memcpy(snap.comm, data, c);
	snap.comm[c] = '\0';
	if (n < len) { /* "COMM\0PATH" */
		data += n + 1;
		len -= n + 1;
		n = strnlen((const char *)data, len);
	}
	if (n >= sizeof(snap.path))
		n = sizeof(snap.path) - 1;
	memcpy(snap.path, data, n);
	snap.path[n] = '\0';
}

const char *snapshot_scan_comm(void) { return snap.comm; }
const char *snapshot_scan_path(void) { return snap.path; }

/* The scan manager, as a daemon with one scan would answer. */
unsigned scan_mgr_active(const struct scan_mgr *m) { (void)m; return 1; }
unsigned scan_mgr_walks(const struct scan_mgr *m) { (void)m; return 0; }
unsigned scan_mgr_openers_stuck(const struct scan_mgr *m) { (void)m; return 0; }
uint64_t scan_mgr_inflight(const struct scan_mgr *m) { (void)m; return 8; }
const char *scan_mgr_backend(const struct scan_mgr *m) { (void)m; return "io_uring"; }
struct policy *scan_mgr_policy(struct scan_mgr *m) { (void)m; return snap.pol; }

void scan_mgr_foreach(struct scan_mgr *m, void (*fn)(const struct scan_info *, void *), void *ctx)
{
	(void)m;
	struct scan_info i = {
		.pid = 4242, .comm = snap.comm, .path = snap.path, .entries = 96, .app_pos = 40,
		.window = 64, .hits = 38, .misses = 2, .state = "prefetching", .age_s = 0.5,
	};
	fn(&i, ctx);
}

/* The detector's counters, histogram and programs. */
int detector_counters(struct detector *d, struct detector_counters *out)
{
	(void)d;
	for (int i = 0; i < DIRAHEAD_CNT_MAX; i++)
		out->v[i] = (uint64_t)i * 11 + 3;
	return 0;
}

int detector_app_lat(struct detector *d, struct detector_app_lat *out)
{
	(void)d;
	memset(out, 0, sizeof(*out));
	for (int k = 10; k < 20 && k < DIRAHEAD_APP_LAT_SLOTS; k++) {
		out->slot[k] = (uint64_t)k;
		out->count += (uint64_t)k;
		out->sum_ns += (uint64_t)k << k;
	}
	return 0;
}

int detector_prog_stats(struct detector *d, struct detector_prog_stat *out, int max)
{
	(void)d;
	if (max < 1)
		return 0;
	out[0] = (struct detector_prog_stat){ .name = "on_getdents", .id = 7, .attached = true,
					      .run_cnt = 1000, .run_time_ns = 50000 };
	return 1;
}

/* Reload: the file is the daemon's business, not the client's; it fails, as with a bad file. */
int daemon_reload(struct daemon *d, char *err, size_t errlen)
{
	d->stats.reloads_failed++;
	strncpy(err, "/etc/dirahead/dirahead.conf:1: stand-in reload", errlen - 1);
	err[errlen - 1] = '\0';
	return -1;
}

/* Arming (arm.c needs the sentinel's BPF object): disarmed, never armed. */
#define X_NAME(id, name) name,
const char *const arm_signal_names[ARM_SIG_MAX] = { ARM_SIGNALS(X_NAME) };
#undef X_NAME
void arm_get_stats(struct arm *a, struct arm_stats *out)
{
	(void)a;
	memset(out, 0, sizeof(*out));
}
bool arm_sentinel_prog(struct arm *a, uint32_t *id, uint64_t *run_cnt, uint64_t *run_time_ns,
		       bool *attached)
{
	(void)a, (void)id, (void)run_cnt, (void)run_time_ns, (void)attached;
	return false;
}
