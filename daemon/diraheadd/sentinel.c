/* SPDX-License-Identifier: LGPL-2.1-or-later OR BSD-2-Clause */
/*
 * The sentinel's user-space half: checks that the kernel can run it, loads bpf/sentinel.bpf.c
 * through its skeleton, attaches and detaches it, and hands its records to the daemon.  Like the
 * detector it pins nothing: its link dies with the process.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>

#include "sentinel.h"
#include "sentinel.skel.h"

struct sentinel {
	struct sentinel_bpf *skel;
	struct ring_buffer *rb;
	sentinel_event_fn fn;
	void *ctx;
};

static int on_record(void *ctx, void *data, size_t size)
{
	struct sentinel *s = ctx;

	if (size < sizeof(struct dirahead_sentinel_event))
		return 0;
	return s->fn ? s->fn(data, s->ctx) : 0;
}

static bool kernel_has(const char *typedef_name)
{
	struct btf *btf = btf__load_vmlinux_btf();
	bool ok;

	if (!btf)
		return false;
	ok = btf__find_by_name_kind(btf, typedef_name, BTF_KIND_TYPEDEF) >= 0;
	btf__free(btf);
	return ok;
}

struct sentinel *sentinel_open(uint32_t self_tgid, sentinel_event_fn fn, void *ctx, char *err,
			       size_t errlen)
{
	struct sentinel *s;
	int rc;

	if (!kernel_has("btf_trace_sched_switch")) {
		snprintf(err, errlen, "tracepoint sched:sched_switch missing from the kernel's BTF");
		return NULL;
	}
	if (libbpf_probe_bpf_helper(BPF_PROG_TYPE_TRACING, BPF_FUNC_task_pt_regs, NULL) == 0) {
		snprintf(err, errlen, "BPF helper bpf_task_pt_regs missing (needs Linux 5.15 or later)");
		return NULL;
	}
	s = calloc(1, sizeof(*s));
	if (!s) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	s->fn = fn;
	s->ctx = ctx;
	s->skel = sentinel_bpf__open();
	if (!s->skel) {
		snprintf(err, errlen, "cannot open the sentinel's BPF object: %s", strerror(errno));
		goto fail;
	}
	s->skel->bss->self_tgid = self_tgid;
	rc = sentinel_bpf__load(s->skel);
	if (rc) {
		snprintf(err, errlen, "loading the sentinel: %s", strerror(-rc));
		goto fail;
	}
	s->rb = ring_buffer__new(bpf_map__fd(s->skel->maps.sentinel_events), on_record, s, NULL);
	if (!s->rb) {
		snprintf(err, errlen, "the sentinel's ring buffer: %s", strerror(errno));
		goto fail;
	}
	return s;
fail:
	sentinel_close(s);
	return NULL;
}

int sentinel_attach(struct sentinel *s, bool on)
{
	struct bpf_link **link = &s->skel->links.dirahead_sentinel;

	if (on == (*link != NULL))
		return 0;
	if (!on) {
		bpf_link__destroy(*link);
		*link = NULL;
		return 0;
	}
	*link = bpf_program__attach(s->skel->progs.dirahead_sentinel);
	return *link ? 0 : -errno;
}

bool sentinel_attached(const struct sentinel *s)
{
	return s && s->skel->links.dirahead_sentinel != NULL;
}

void sentinel_set_lazy(struct sentinel *s, bool lazy)
{
	__atomic_store_n(&s->skel->bss->lazy, lazy ? 1 : 0, __ATOMIC_RELAXED);
}

void sentinel_set_rate_ms(struct sentinel *s, unsigned ms)
{
	__atomic_store_n(&s->skel->data->rate_ns, (uint64_t)ms * 1000000ull, __ATOMIC_RELAXED);
}

int sentinel_fd(const struct sentinel *s)
{
	return ring_buffer__epoll_fd(s->rb);
}

int sentinel_consume(struct sentinel *s)
{
	return ring_buffer__consume(s->rb);
}

int sentinel_counters(struct sentinel *s, uint64_t out[DIRAHEAD_SENT_CNT_MAX])
{
	int ncpu = libbpf_num_possible_cpus();
	uint64_t *vals;

	memset(out, 0, sizeof(uint64_t) * DIRAHEAD_SENT_CNT_MAX);
	if (ncpu <= 0)
		return ncpu ? ncpu : -EINVAL;
	vals = calloc((size_t)ncpu, sizeof(*vals));
	if (!vals)
		return -ENOMEM;
	for (uint32_t i = 0; i < DIRAHEAD_SENT_CNT_MAX; i++) {
		if (bpf_map__lookup_elem(s->skel->maps.sentinel_counters, &i, sizeof(i), vals,
					 sizeof(*vals) * (size_t)ncpu, 0)) {
			int e = -errno;
			free(vals);
			return e;
		}
		for (int c = 0; c < ncpu; c++)
			out[i] += vals[c];
	}
	free(vals);
	return 0;
}

int sentinel_prog_stat(struct sentinel *s, uint32_t *id, uint64_t *run_cnt, uint64_t *run_time_ns)
{
	struct bpf_prog_info info;
	uint32_t len = sizeof(info);

	memset(&info, 0, sizeof(info));
	if (bpf_obj_get_info_by_fd(bpf_program__fd(s->skel->progs.dirahead_sentinel), &info, &len))
		return -errno;
	*id = info.id;
	*run_cnt = info.run_cnt;
	*run_time_ns = info.run_time_ns;
	return 0;
}

void sentinel_close(struct sentinel *s)
{
	if (!s)
		return;
	ring_buffer__free(s->rb);
	sentinel_bpf__destroy(s->skel);
	free(s);
}
