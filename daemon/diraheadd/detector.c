/* SPDX-License-Identifier: LGPL-2.1-or-later OR BSD-2-Clause */
/*
 * The detector's user-space half: checks what the kernel offers, loads and attaches
 * bpf/detector.bpf.c through its skeleton, and hands ring-buffer events to the daemon.
 *
 * Nothing is pinned and no tracefs/bpffs is mounted: the programs hang on BPF links owned by
 * this process, so they go away with it, however it dies.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>

#include "detector.h"
#include "detector.skel.h"
#include "monoclock.h"

struct detector {
	struct detector_bpf *skel;
	struct ring_buffer *rb;
	detector_event_fn fn;
	void *ctx;
	uint32_t ctl_seq;	/* bumped on every scan_ctl write so BPF sees each change */
	struct dirahead_bpf_config cfg;	/* as last configured, with timing_epoch set here */
	int stats_fd;		/* BPF_ENABLE_STATS: run-time accounting while held */
};

static bool libbpf_verbose;
static uint32_t table_procs, table_scans;	/* 0: the sizes bpf/detector.bpf.c declares */
static bool syscalls_at_open = true;

void detector_set_syscalls_at_open(bool on)
{
	syscalls_at_open = on;
}

void detector_set_table_sizes(uint32_t procs, uint32_t scans)
{
	table_procs = procs;
	table_scans = scans;
}

/* libbpf's messages are for debugging the loader: only with verbose, and never debug noise. */
static int print_fn(enum libbpf_print_level level, const char *fmt, va_list args)
{
	if (!libbpf_verbose || level == LIBBPF_DEBUG)
		return 0;
	return vfprintf(stderr, fmt, args);
}

static void set_err(char *err, size_t errlen, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void set_err(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (!err || !errlen)
		return;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}

void detector_default_config(struct dirahead_bpf_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->enabled = 1;
	cfg->self_tgid = (uint32_t)getpid();
	cfg->confirm_stats = DETECTOR_DEFAULT_CONFIRM_STATS;
	cfg->progress_step = DETECTOR_DEFAULT_PROGRESS_STEP;
	cfg->unlisted_stats = 0;
}

/* Kernel features checked before loading, so failures name what is missing. */
static int check_kernel(char *err, size_t errlen)
{
	static const struct {
		const char *type;	/* typedef in vmlinux BTF for each tp_btf target */
		const char *what;
	} tps[] = {
		{ "btf_trace_sys_enter", "tracepoint raw_syscalls:sys_enter (CONFIG_HAVE_SYSCALL_TRACEPOINTS)" },
		{ "btf_trace_sys_exit", "tracepoint raw_syscalls:sys_exit (CONFIG_HAVE_SYSCALL_TRACEPOINTS)" },
		{ "btf_trace_sched_process_exit", "tracepoint sched:sched_process_exit" },
		{ "btf_trace_sched_process_exec", "tracepoint sched:sched_process_exec" },
	};
	struct btf *btf;
	size_t i;

	if (access("/sys/kernel/btf/vmlinux", R_OK) != 0) {
		set_err(err, errlen, "kernel BTF missing: /sys/kernel/btf/vmlinux: %s "
			"(the kernel needs CONFIG_DEBUG_INFO_BTF=y)", strerror(errno));
		return -ENOENT;
	}
	btf = btf__load_vmlinux_btf();
	if (!btf) {
		int e = errno;

		set_err(err, errlen, "cannot read kernel BTF /sys/kernel/btf/vmlinux: %s",
			strerror(e));
		return -e;
	}
	for (i = 0; i < sizeof(tps) / sizeof(tps[0]); i++) {
		if (btf__find_by_name_kind(btf, tps[i].type, BTF_KIND_TYPEDEF) < 0) {
			set_err(err, errlen, "%s missing from the kernel (no %s in its BTF)",
				tps[i].what, tps[i].type);
			btf__free(btf);
			return -ENOENT;
		}
	}
	btf__free(btf);
	return 0;
}

/* After a failed load: say why, in the order of likelihood. */
static void explain_load_error(int rc, char *err, size_t errlen)
{
	if (rc == -EPERM || rc == -EACCES) {
		set_err(err, errlen, "loading the BPF programs: %s (needs root, or CAP_BPF and "
			"CAP_PERFMON; a locked-down kernel may refuse tracing programs)",
			strerror(-rc));
	} else if (libbpf_probe_bpf_map_type(BPF_MAP_TYPE_RINGBUF, NULL) == 0) {
		set_err(err, errlen, "BPF ring buffer missing (needs Linux 5.8 or later)");
	} else if (libbpf_probe_bpf_map_type(BPF_MAP_TYPE_TASK_STORAGE, NULL) == 0) {
		set_err(err, errlen, "BPF task-local storage missing (tracing programs need it for "
			"the stat latency histogram: Linux 5.13 or later)");
	} else {
		set_err(err, errlen, "loading the BPF programs: %s (run verbose for libbpf's log)",
			strerror(-rc));
	}
}

static int on_event(void *ctx, void *data, size_t size)
{
	struct detector *d = ctx;

	if (size < sizeof(struct dirahead_event))
		return 0;	/* an older BPF object: never happens with the skeleton */
	return d->fn ? d->fn(data, d->ctx) : 0;
}

struct detector *detector_open(const struct dirahead_bpf_config *cfg, detector_event_fn fn,
			       void *ctx, bool verbose, char *err, size_t errlen)
{
	struct dirahead_bpf_config defaults;
	struct detector *d;
	int rc;

	libbpf_verbose = verbose;
	libbpf_set_print(print_fn);
	if (!cfg) {
		detector_default_config(&defaults);
		cfg = &defaults;
	}
	if (check_kernel(err, errlen) < 0)
		return NULL;

	d = calloc(1, sizeof(*d));
	if (!d) {
		set_err(err, errlen, "out of memory");
		return NULL;
	}
	d->fn = fn;
	d->ctx = ctx;
	d->stats_fd = -1;
	d->cfg.timing_epoch = 1;	/* stat_start entries start zeroed: epoch 0 never counts */
	d->skel = detector_bpf__open();
	if (!d->skel) {
		set_err(err, errlen, "cannot open the BPF object: %s", strerror(errno));
		goto fail;
	}
	if (table_procs)
		bpf_map__set_max_entries(d->skel->maps.procs, table_procs);
	if (table_scans)
		bpf_map__set_max_entries(d->skel->maps.scans, table_scans);
	/* both syscall hooks come and go (detector_syscalls(), detector_stat_timing()) */
	bpf_program__set_autoattach(d->skel->progs.dirahead_sys_exit, syscalls_at_open);
	if (!syscalls_at_open)
		bpf_program__set_autoattach(d->skel->progs.dirahead_sys_enter, false);
	rc = detector_bpf__load(d->skel);
	if (rc) {
		explain_load_error(rc, err, errlen);
		goto fail;
	}
	rc = detector_configure(d, cfg);
	if (rc) {
		set_err(err, errlen, "writing the config map: %s", strerror(-rc));
		goto fail;
	}
	rc = detector_bpf__attach(d->skel);
	if (rc) {
		set_err(err, errlen, "attaching the BPF programs: %s", strerror(-rc));
		goto fail;
	}
	d->rb = ring_buffer__new(bpf_map__fd(d->skel->maps.events), on_event, d, NULL);
	if (!d->rb) {
		set_err(err, errlen, "setting up the ring buffer: %s", strerror(errno));
		goto fail;
	}
	return d;
fail:
	detector_close(d);
	return NULL;
}

int detector_fd(const struct detector *d)
{
	return ring_buffer__epoll_fd(d->rb);
}

int detector_consume(struct detector *d)
{
	return ring_buffer__consume(d->rb);
}

static int write_config(struct detector *d)
{
	uint32_t zero = 0;

	if (bpf_map__update_elem(d->skel->maps.cfg, &zero, sizeof(zero), &d->cfg, sizeof(d->cfg), 0))
		return -errno;
	return 0;
}

/* A uid's share of a table of `size` entries: pct percent of it, at least one (0: no share). */
static uint32_t share_of(uint32_t size, uint32_t pct)
{
	uint64_t n = (uint64_t)size * (pct > 100 ? 100 : pct) / 100;
	return !pct ? 0 : n ? (uint32_t)n : 1;
}

int detector_configure(struct detector *d, const struct dirahead_bpf_config *cfg)
{
	uint32_t epoch = d->cfg.timing_epoch;

	d->cfg = *cfg;
	d->cfg.timing_epoch = epoch;
	d->cfg.user_procs = share_of(bpf_map__max_entries(d->skel->maps.procs), cfg->user_share_pct);
	d->cfg.user_scans = share_of(bpf_map__max_entries(d->skel->maps.scans), cfg->user_share_pct);
	return write_config(d);
}

static int write_ctl(struct detector *d, uint64_t scan_id, uint32_t step, uint32_t flags)
{
	struct dirahead_scan_ctl ctl = { .step = step, .flags = flags };

	if (++d->ctl_seq == 0)
		d->ctl_seq = 1;
	ctl.seq = d->ctl_seq;
	if (bpf_map__update_elem(d->skel->maps.scan_ctl, &scan_id, sizeof(scan_id), &ctl,
				 sizeof(ctl), 0))
		return -errno;
	/* after the write: BPF looks scan_ctl up again only when this moved */
	__atomic_store_n(&d->skel->bss->ctl_gen, d->skel->bss->ctl_gen + 1, __ATOMIC_RELEASE);
	return 0;
}

int detector_scan_step(struct detector *d, uint64_t scan_id, uint32_t progress_step)
{
	return write_ctl(d, scan_id, progress_step, 0);
}

int detector_scan_forget(struct detector *d, uint64_t scan_id)
{
	return write_ctl(d, scan_id, 0, DIRAHEAD_CTL_FORGET);
}

int detector_scan_mute(struct detector *d, uint64_t scan_id, uint32_t tgid, bool paths,
		       uint32_t dev_major, uint32_t dev_minor, uint32_t mute_ms)
{
	struct dirahead_mute m = { 0 };
	uint32_t dev = DIRAHEAD_KDEV(dev_major, dev_minor);
	/* bpf_ktime_get_ns() is CLOCK_MONOTONIC */
	uint64_t until = mono_ns() + (uint64_t)mute_ms * 1000000ull;
	/* one entry per process: a mute of runs by path keeps the one of a filesystem, and back */
	if (bpf_map__lookup_elem(d->skel->maps.mutes, &tgid, sizeof(tgid), &m, sizeof(m), 0))
		memset(&m, 0, sizeof(m));
	if (paths) {
		m.paths_dev = dev;
		m.paths_until_ns = until;
	} else {
		m.dev = dev;
		m.until_ns = until;
	}
	if (mute_ms && bpf_map__update_elem(d->skel->maps.mutes, &tgid, sizeof(tgid), &m,
					    sizeof(m), 0))
		return -errno;
	return write_ctl(d, scan_id, 0, DIRAHEAD_CTL_FORGET | DIRAHEAD_CTL_MUTE);
}

int detector_unmute(struct detector *d, uint32_t tgid, uint32_t dev_major, uint32_t dev_minor)
{
	struct dirahead_mute m;
	if (bpf_map__lookup_elem(d->skel->maps.mutes, &tgid, sizeof(tgid), &m, sizeof(m), 0) ||
	    m.dev != DIRAHEAD_KDEV(dev_major, dev_minor) || !m.until_ns)
		return 0;
	m.until_ns = 0;
	if (bpf_map__update_elem(d->skel->maps.mutes, &tgid, sizeof(tgid), &m, sizeof(m), 0))
		return -errno;
	return 0;
}

int detector_scan_alive(struct detector *d, uint32_t tgid, uint32_t dev_major, uint32_t dev_minor,
			uint64_t ino, uint64_t scan_id)
{
	struct dirahead_scan_key k = { .tgid = tgid, .dev = DIRAHEAD_KDEV(dev_major, dev_minor),
				       .ino = ino };
	uint32_t vsize = bpf_map__value_size(d->skel->maps.scans);
	uint64_t id;
	void *v = malloc(vsize);
	int r;

	if (!v)
		return -ENOMEM;
	if (bpf_map__lookup_elem(d->skel->maps.scans, &k, sizeof(k), v, vsize, 0) == 0) {
		memcpy(&id, v, sizeof(id));	/* the BPF scan begins with its scan_id */
		r = id == scan_id;
	} else {
		r = errno == ENOENT ? 0 : -errno;
	}
	free(v);
	return r;
}

int detector_walker_set(struct detector *d, uint32_t tgid, uint32_t dev_major, uint32_t dev_minor)
{
	struct dirahead_walker w = { .dev = DIRAHEAD_KDEV(dev_major, dev_minor) };

	if (bpf_map__update_elem(d->skel->maps.walkers, &tgid, sizeof(tgid), &w, sizeof(w), 0))
		return -errno;
	return 0;
}

int detector_walker_clear(struct detector *d, uint32_t tgid)
{
	if (bpf_map__delete_elem(d->skel->maps.walkers, &tgid, sizeof(tgid), 0) && errno != ENOENT)
		return -errno;
	return 0;
}

/* One per-CPU map value: one copy per possible CPU, each of vsize bytes (a multiple of 8, as
 * the kernel rounds them).  Returns the copies (free() them) and their number in *ncpu. */
static void *percpu_lookup(struct bpf_map *map, uint32_t key, size_t vsize, int *ncpu, int *rc)
{
	void *vals;

	*ncpu = libbpf_num_possible_cpus();
	if (*ncpu <= 0) {
		*rc = *ncpu ? *ncpu : -EINVAL;
		return NULL;
	}
	vals = calloc((size_t)*ncpu, vsize);
	if (!vals) {
		*rc = -ENOMEM;
		return NULL;
	}
	if (bpf_map__lookup_elem(map, &key, sizeof(key), vals, vsize * (size_t)*ncpu, 0)) {
		*rc = -errno;
		free(vals);
		return NULL;
	}
	*rc = 0;
	return vals;
}

int detector_counters(struct detector *d, struct detector_counters *out)
{
	int ncpu, rc = 0;

	memset(out, 0, sizeof(*out));
	for (uint32_t i = 0; i < DIRAHEAD_CNT_MAX; i++) {
		uint64_t *vals = percpu_lookup(d->skel->maps.counters, i, sizeof(*vals), &ncpu, &rc);
		if (!vals)
			break;
		for (int c = 0; c < ncpu; c++)
			out->v[i] += vals[c];
		free(vals);
	}
	return rc;
}

int detector_app_lat(struct detector *d, struct detector_app_lat *out)
{
	int ncpu, rc;
	struct dirahead_app_lat *vals;

	memset(out, 0, sizeof(*out));
	vals = percpu_lookup(d->skel->maps.app_lat, 0, sizeof(*vals), &ncpu, &rc);
	if (!vals)
		return rc;
	for (int c = 0; c < ncpu; c++) {
		for (int k = 0; k < DIRAHEAD_APP_LAT_SLOTS; k++)
			out->slot[k] += vals[c].slot[k];
		out->sum_ns += vals[c].sum_ns;
	}
	for (int k = 0; k < DIRAHEAD_APP_LAT_SLOTS; k++)
		out->count += out->slot[k];
	free(vals);
	return 0;
}

int detector_syscalls(struct detector *d, bool on)
{
	struct bpf_link **link = &d->skel->links.dirahead_sys_exit;

	if (on == (*link != NULL))
		return 0;
	if (!on) {
		int r = detector_stat_timing(d, false);

		bpf_link__destroy(*link);
		*link = NULL;
		return r;
	}
	*link = bpf_program__attach(d->skel->progs.dirahead_sys_exit);
	return *link ? 0 : -errno;
}

bool detector_syscalls_on(const struct detector *d)
{
	return d->skel->links.dirahead_sys_exit != NULL;
}

int detector_stat_timing(struct detector *d, bool on)
{
	struct bpf_link **link = &d->skel->links.dirahead_sys_enter;

	if (on && !detector_syscalls_on(d))
		return 0;	/* nothing to time without the exit hook: not before it is armed */
	if (on == (*link != NULL))
		return 0;
	if (!on) {
		bpf_link__destroy(*link);
		*link = NULL;
		/* A start time left over from a call whose exit did not take it (a failed stat, one
		 * not matched) must not time a stat made while detached: a new epoch makes it stale. */
		d->cfg.timing_epoch++;
		return write_config(d);
	}
	*link = bpf_program__attach(d->skel->progs.dirahead_sys_enter);
	return *link ? 0 : -errno;
}

bool detector_stat_timing_on(const struct detector *d)
{
	return d->skel->links.dirahead_sys_enter != NULL;
}

int detector_prog_stats(struct detector *d, struct detector_prog_stat *out, int max)
{
	struct bpf_program *prog;
	int n = 0;

	bpf_object__for_each_program(prog, d->skel->obj) {
		struct bpf_prog_info info;
		uint32_t len = sizeof(info);

		if (n < max) {
			memset(&info, 0, sizeof(info));
			memset(&out[n], 0, sizeof(out[n]));
			out[n].name = bpf_program__name(prog);
			/* the skeleton attached the others; the syscall hooks come and go */
			out[n].attached = prog == d->skel->progs.dirahead_sys_enter ?
					  detector_stat_timing_on(d) :
					  prog == d->skel->progs.dirahead_sys_exit ?
					  detector_syscalls_on(d) : true;
			if (bpf_obj_get_info_by_fd(bpf_program__fd(prog), &info, &len) == 0) {
				out[n].id = info.id;
				out[n].run_cnt = info.run_cnt;
				out[n].run_time_ns = info.run_time_ns;
			}
		}
		n++;
	}
	return n;
}

int detector_enable_stats(struct detector *d)
{
	int fd;

	if (d->stats_fd >= 0)
		return 0;
	fd = bpf_enable_stats(BPF_STATS_RUN_TIME);
	if (fd < 0)
		return -errno;
	d->stats_fd = fd;
	return 0;
}

void detector_close(struct detector *d)
{
	if (!d)
		return;
	if (d->stats_fd >= 0)
		close(d->stats_fd);
	ring_buffer__free(d->rb);
	detector_bpf__destroy(d->skel);
	free(d);
}
