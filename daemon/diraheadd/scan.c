/* SPDX-License-Identifier: LGPL-2.1-or-later OR BSD-2-Clause */
#include "scan.h"

#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/vfs.h>
#include <time.h>
#include <unistd.h>

#include "cgroup.h"
#include "detector.h"
#include "dirahead.h"
#include "fsmagic.h"
#include "log.h"
#include "procdir.h"

enum scan_state { SCAN_OPENING, SCAN_PREFETCHING, SCAN_FOLLOWING };
static const char *const state_names[] = { "opening", "prefetching", "following" };

struct scan {
	struct scan *next;
	struct scan_mgr *mgr;
	enum scan_state state;
	uint64_t id;                /* BPF scan_id */
	uint32_t tgid, dev_major, dev_minor;
	uint64_t ino;
	char comm[DIRAHEAD_COMM_LEN];
	char path[DIRAHEAD_PATH_LEN];
	enum dirahead_order order;
	struct dirahead_dir *dir;   /* while prefetching */
	int ending;                 /* -1, or the enum da_end_reason it is ending with */
	uint64_t stats_seen;        /* the application's stat count at the last event */
	uint64_t app_pos;           /* entries of our order the application has reached */
	uint64_t window, limit;
	uint64_t completed, failed; /* prefetch requests finished */
	uint64_t hits, misses, consecutive_misses;
	uint64_t start_ns, last_ns;
};

struct scan_mgr {
	sd_event *loop;
	struct da_config cfg;       /* shallow copy: lists and strings stay owned by the caller */
	struct detector *det;
	struct da_stats *st;
	struct dirahead_engine *engine;
	sd_event_source *engine_src, *opener_src, *timer_src;
	int opener_pipe[2];
	struct scan *scans;
	unsigned active;            /* scans opening or prefetching (the ones limits count) */
	unsigned nscans;
};

/* A request outstanding this long is taken for stuck on a hung filesystem and stops counting
 * against depth_total.  The engine's default (1 s) let two scans stuck on one hung filesystem
 * hold the whole depth for that long: a scan on a healthy filesystem then got nothing, and its
 * application did ~30% of its own lookups (tests/integration/daemon-isolation.sh).  A stat
 * takes milliseconds even over a network; stuck requests still count against their own
 * directory's depth_per_scan, so a hung filesystem gets no more than that. */
#define SCAN_STALL_MS 250

struct open_job {
	int pipe_fd;
	uint64_t scan_id;
	struct dirahead_event ev;
};

struct open_result {
	uint64_t scan_id;
	int fd;                     /* >= 0, or -errno */
};

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static struct scan *find_scan(struct scan_mgr *m, uint32_t tgid, uint32_t maj, uint32_t min,
			      uint64_t ino)
{
	for (struct scan *s = m->scans; s; s = s->next)
		if (s->tgid == tgid && s->ino == ino && s->dev_major == maj && s->dev_minor == min)
			return s;
	return NULL;
}

static struct scan *find_scan_id(struct scan_mgr *m, uint64_t id)
{
	for (struct scan *s = m->scans; s; s = s->next)
		if (s->id == id)
			return s;
	return NULL;
}

static bool list_match(const struct da_strlist *l, const char *s)
{
	for (int i = 0; i < l->n; i++)
		if (fnmatch(l->v[i], s, 0) == 0)
			return true;
	return false;
}

static bool prefix_match(const struct da_strlist *l, const char *path)
{
	for (int i = 0; i < l->n; i++) {
		size_t n = strlen(l->v[i]);
		while (n > 1 && l->v[i][n - 1] == '/')
			n--;
		if (!strncmp(path, l->v[i], n) && (path[n] == '/' || path[n] == '\0' || n == 1))
			return true;
	}
	return false;
}

/* include list empty = everything; exclude wins. */
static bool allowed(const struct da_strlist *inc, const struct da_strlist *exc, const char *s,
		    bool (*match)(const struct da_strlist *, const char *))
{
	if (match(exc, s))
		return false;
	return inc->n == 0 || match(inc, s);
}

/* The [filter] cgroup lists, checked against the process's cgroup v2 path now.  A cgroup that
 * cannot be read (the process is gone) admits nothing a cgroup filter would have to judge. */
static bool cgroup_allowed(const struct scan_mgr *m, uint32_t pid)
{
	char cg[4096];
	if (!m->cfg.cgroup_include.n && !m->cfg.cgroup_exclude.n)
		return true;
	int r = cgroup_of(pid, cg, sizeof(cg));
	if (r < 0) {
		log_debug("pid %u: cannot read its cgroup: %s", pid, strerror(-r));
		return false;
	}
	return allowed(&m->cfg.cgroup_include, &m->cfg.cgroup_exclude, cg, cgroup_match);
}

static void update_timer(struct scan_mgr *m)
{
	/* Armed only while scans run: an idle daemon has no timers and no wakeups. */
	sd_event_source_set_enabled(m->timer_src, m->nscans ? SD_EVENT_ON : SD_EVENT_OFF);
}

static void free_scan(struct scan *s)
{
	struct scan_mgr *m = s->mgr;
	for (struct scan **pp = &m->scans; *pp; pp = &(*pp)->next)
		if (*pp == s) {
			*pp = s->next;
			break;
		}
	m->nscans--;
	free(s);
	update_timer(m);
}

static void log_end(struct scan *s, enum da_end_reason why)
{
	char f_pid[32], f_comm[48], f_dir[DIRAHEAD_PATH_LEN + 16], f_n[48], f_out[64];
	const char *fields[] = { f_pid, f_comm, f_dir, f_n, f_out, NULL };
	snprintf(f_pid, sizeof(f_pid), "DIRAHEAD_PID=%u", s->tgid);
	snprintf(f_comm, sizeof(f_comm), "DIRAHEAD_COMM=%s", s->comm);
	snprintf(f_dir, sizeof(f_dir), "DIRAHEAD_DIR=%s", s->path);
	snprintf(f_n, sizeof(f_n), "DIRAHEAD_ENTRIES=%llu", (unsigned long long)s->completed);
	snprintf(f_out, sizeof(f_out), "DIRAHEAD_OUTCOME=%s", da_end_reason_names[why]);
	log_fields(LOG_INFO, fields,
		   "scan end: pid %u (%s) %s: %s, %llu prefetched, %llu errors, %llu hits, %llu misses, "
		   "%.3f s",
		   s->tgid, s->comm, s->path, da_end_reason_names[why],
		   (unsigned long long)s->completed, (unsigned long long)s->failed,
		   (unsigned long long)s->hits, (unsigned long long)s->misses,
		   (double)(now_ns() - s->start_ns) / 1e9);
}

/* Ends a scan: counts it, tells the detector to stop reporting it, and frees it once the engine
 * has let go of the directory (cancel calls back with ECANCELED, maybe right away). */
static void end_scan(struct scan *s, enum da_end_reason why)
{
	struct scan_mgr *m = s->mgr;
	if (s->ending >= 0)
		return;
	s->ending = (int)why;
	m->st->scans_ended[why]++;
	log_end(s, why);
	if (why != DA_END_EXITED && why != DA_END_EVICTED)
		detector_scan_forget(m->det, s->tgid, s->dev_major, s->dev_minor, s->ino);
	if (s->state != SCAN_FOLLOWING)
		m->active--;
	if (s->dir) {
		struct dirahead_dir *d = s->dir;
		dirahead_dir_cancel(d); /* on_dir_done frees s */
		return;
	}
	if (s->state == SCAN_OPENING)
		return; /* the opener's result frees it */
	free_scan(s);
}

static void skip(struct scan_mgr *m, const struct dirahead_event *ev, enum da_skip_reason why)
{
	m->st->skips[why]++;
	log_debug("scan skipped: pid %u (%.16s) %.256s: %s", ev->tgid, ev->comm, ev->path,
		  da_skip_reason_names[why]);
	if (why != DA_SKIP_DRY_RUN)
		detector_scan_forget(m->det, ev->tgid, ev->dev_major, ev->dev_minor, ev->ino);
}

static uint32_t progress_step(const struct scan *s)
{
	/* Hear from the application a few times per window: often enough to stay ahead of it,
	 * rarely enough to cost nothing. */
	uint64_t step = s->window / 4;
	return step < 2 ? 2 : step > 256 ? 256 : (uint32_t)step;
}

/* A scan that never got going (its directory could not be opened, was filtered out or refused
 * by the engine): undo what on_scan_event() counted and let the detector forget it. */
static void drop_opening(struct scan *s, enum da_skip_reason why)
{
	struct scan_mgr *m = s->mgr;
	m->st->skips[why]++;
	m->st->scans_started--;
	m->active--;
	detector_scan_forget(m->det, s->tgid, s->dev_major, s->dev_minor, s->ino);
	free_scan(s);
}

static void *opener_main(void *arg)
{
	struct open_job *job = arg;
	struct open_result r = { .scan_id = job->scan_id };
	r.fd = procdir_open(&job->ev);
	/* A pipe write of less than PIPE_BUF is atomic; if the daemon is gone, so is the reader. */
	if (write(job->pipe_fd, &r, sizeof(r)) != sizeof(r) && r.fd >= 0)
		close(r.fd);
	free(job);
	return NULL;
}

static enum dirahead_order choose_order(const struct scan_mgr *m, const struct dirahead_event *ev)
{
	if (m->cfg.order != DIRAHEAD_ORDER_DEFAULT)
		return m->cfg.order;
	/* Measured here: coreutils 9.1 `ls -l` stats in readdir order too, interleaved with
	 * getdents, like fts, rsync, tar and os.walk; so readdir order follows them all. */
	(void)ev;
	return DIRAHEAD_ORDER_READDIR;
}

static void on_scan_event(struct scan_mgr *m, const struct dirahead_event *ev)
{
	m->st->scans_confirmed++;
	if (!m->cfg.enabled)
		return;
	char comm[DIRAHEAD_COMM_LEN + 1];
	memcpy(comm, ev->comm, DIRAHEAD_COMM_LEN);
	comm[DIRAHEAD_COMM_LEN] = '\0';

	if (fsmagic_is_pseudo(ev->magic))
		return skip(m, ev, DA_SKIP_PSEUDO_FS);
	if (!allowed(&m->cfg.comm_include, &m->cfg.comm_exclude, comm, list_match))
		return skip(m, ev, DA_SKIP_FILTERED);
	if (!cgroup_allowed(m, ev->tgid))
		return skip(m, ev, DA_SKIP_FILTERED);
	const char *fsname = fsmagic_name(ev->magic);
	if (!allowed(&m->cfg.fs_include, &m->cfg.fs_exclude, fsname ? fsname : "unknown", list_match))
		return skip(m, ev, DA_SKIP_FILTERED);
	if (ev->dir_size < m->cfg.min_dir_size)
		return skip(m, ev, DA_SKIP_SMALL);
	if (find_scan(m, ev->tgid, ev->dev_major, ev->dev_minor, ev->ino))
		return skip(m, ev, DA_SKIP_DUPLICATE);
	if (m->cfg.dry_run) {
		log_info("scan (dry run): pid %u (%s) %.256s", ev->tgid, comm, ev->path);
		return skip(m, ev, DA_SKIP_DRY_RUN);
	}
	unsigned per_proc = 0;
	for (struct scan *s = m->scans; s; s = s->next)
		per_proc += s->tgid == ev->tgid && s->state != SCAN_FOLLOWING;
	if (m->active >= m->cfg.max_scans || per_proc >= m->cfg.max_scans_per_process)
		return skip(m, ev, DA_SKIP_BUSY);

	struct scan *s = calloc(1, sizeof(*s));
	struct open_job *job = calloc(1, sizeof(*job));
	if (!s || !job) {
		free(s);
		free(job);
		return skip(m, ev, DA_SKIP_ENGINE);
	}
	*s = (struct scan){
		.mgr = m, .state = SCAN_OPENING, .id = ev->scan_id, .tgid = ev->tgid,
		.dev_major = ev->dev_major, .dev_minor = ev->dev_minor, .ino = ev->ino,
		.order = choose_order(m, ev), .ending = -1, .stats_seen = ev->stats,
		.app_pos = ev->stats, .window = m->cfg.window_start,
		.start_ns = now_ns(),
	};
	s->last_ns = s->start_ns;
	memcpy(s->comm, comm, sizeof(s->comm));
	s->comm[sizeof(s->comm) - 1] = '\0';
	if (ev->ref & DIRAHEAD_REF_PATH)
		snprintf(s->path, sizeof(s->path), "%.*s", DIRAHEAD_PATH_LEN - 1, ev->path);
	else
		snprintf(s->path, sizeof(s->path), "(dev %u:%u ino %llu)", ev->dev_major, ev->dev_minor,
			 (unsigned long long)ev->ino);

	/* Opening goes through the filesystem, which may hang: do it in a thread of its own so the
	 * event loop never waits for one filesystem. */
	*job = (struct open_job){ .pipe_fd = m->opener_pipe[1], .scan_id = ev->scan_id, .ev = *ev };
	pthread_t th;
	pthread_attr_t attr;
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	pthread_attr_setstacksize(&attr, 64 * 1024);
	int r = pthread_create(&th, &attr, opener_main, job);
	pthread_attr_destroy(&attr);
	if (r) {
		free(s);
		free(job);
		return skip(m, ev, DA_SKIP_ENGINE);
	}
	s->next = m->scans;
	m->scans = s;
	m->nscans++;
	m->active++;
	m->st->scans_started++;
	update_timer(m);
	log_info("scan: pid %u (%s) %s, %s order", s->tgid, s->comm, s->path,
		 s->order == DIRAHEAD_ORDER_NAME ? "name" : s->order == DIRAHEAD_ORDER_INODE ? "inode" : "readdir");
}

static int on_opened(sd_event_source *src, int fd, uint32_t revents, void *userdata)
{
	struct scan_mgr *m = userdata;
	struct open_result r;
	(void)src;
	(void)revents;
	while (read(fd, &r, sizeof(r)) == sizeof(r)) {
		struct scan *s = find_scan_id(m, r.scan_id);
		if (!s || s->state != SCAN_OPENING) {
			if (r.fd >= 0)
				close(r.fd);
			continue;
		}
		if (s->ending >= 0) { /* ended while opening; counted already */
			if (r.fd >= 0)
				close(r.fd);
			free_scan(s);
			continue;
		}
		if (r.fd < 0) {
			log_debug("scan of %s by pid %u: cannot open: %s", s->path, s->tgid, strerror(-r.fd));
			drop_opening(s, r.fd == -ESTALE ? DA_SKIP_MISMATCH : DA_SKIP_OPEN_FAILED);
			continue;
		}
		char real[4096] = "";
		char link[64];
		snprintf(link, sizeof(link), "/proc/self/fd/%d", r.fd);
		ssize_t n = readlink(link, real, sizeof(real) - 1);
		real[n > 0 ? n : 0] = '\0';
		if ((m->cfg.path_include.n || m->cfg.path_exclude.n) &&
		    !allowed(&m->cfg.path_include, &m->cfg.path_exclude, real, prefix_match)) {
			close(r.fd);
			drop_opening(s, DA_SKIP_FILTERED);
			continue;
		}
		s->limit = s->app_pos + s->window;
		struct dirahead_dir_opts o = {
			.size = sizeof(o), .order = s->order, .limit = s->limit,
			.depth = m->cfg.depth_per_scan, .data = s,
		};
		s->dir = dirahead_dir_submit(m->engine, r.fd, &o);
		close(r.fd);
		if (!s->dir) {
			drop_opening(s, DA_SKIP_ENGINE);
			continue;
		}
		s->state = SCAN_PREFETCHING;
		detector_scan_step(m->det, s->tgid, s->dev_major, s->dev_minor, s->ino, progress_step(s));
	}
	return 0;
}

static void on_progress(struct scan_mgr *m, const struct dirahead_event *ev, bool final)
{
	struct scan *s = find_scan(m, ev->tgid, ev->dev_major, ev->dev_minor, ev->ino);
	if (!s || s->ending >= 0)
		return;
	m->st->progress_events += !final;
	uint64_t delta = ev->stats > s->stats_seen ? ev->stats - s->stats_seen : 0;
	s->stats_seen = ev->stats;
	s->last_ns = now_ns();
	if (!delta)
		return;

	/* Was the application's latest stat served by us?  One sample per event stands for the
	 * stats since the last one: cheap, and right on average whatever order the app uses.
	 * "late" (inside the window, still in flight) means the prefetch is on track but not done:
	 * it is neither a hit nor evidence for the stop rules. */
	enum { HIT, LATE, MISS } kind;
	uint64_t pos = s->app_pos + delta;
	if (s->state == SCAN_FOLLOWING) {
		kind = HIT; /* every entry was fetched before the app got there */
	} else if (s->state == SCAN_OPENING) {
		kind = LATE;
	} else {
		char name[DIRAHEAD_NAME_LEN + 1];
		memcpy(name, ev->name, DIRAHEAD_NAME_LEN);
		name[DIRAHEAD_NAME_LEN] = '\0';
		int64_t idx = ev->name_len < DIRAHEAD_NAME_LEN ? dirahead_dir_find(s->dir, name) : -1;
		if (idx >= 0)
			pos = (uint64_t)idx + 1;
		kind = pos <= s->completed ? HIT : pos <= s->limit ? LATE : MISS;
	}
	if (pos > s->app_pos)
		s->app_pos = pos;
	if (kind == HIT) {
		s->hits += delta;
		m->st->hits += delta;
		s->consecutive_misses = 0;
	} else if (kind == LATE) {
		m->st->late += delta;
	} else {
		s->misses += delta;
		m->st->misses += delta;
		s->consecutive_misses += delta;
	}
	if (final || s->state != SCAN_PREFETCHING)
		return;

	/* Lustre's stop rules. */
	uint64_t judged = s->hits + s->misses;
	if (s->hits > m->cfg.stop_min_hits && (double)s->hits < m->cfg.stop_hit_ratio * (double)judged)
		return end_scan(s, DA_END_LOW_HITS);
	if (s->consecutive_misses > m->cfg.stop_consecutive_misses)
		return end_scan(s, DA_END_MISSES);

	/* Lustre's window: grow while prefetched entries are used. */
	uint32_t old_step = progress_step(s);
	if (kind != MISS && s->window < m->cfg.window_max)
		s->window = s->window * 2 > m->cfg.window_max ? m->cfg.window_max : s->window * 2;
	uint64_t limit = s->app_pos + s->window;
	if (limit > s->limit) {
		s->limit = limit;
		dirahead_dir_set_limit(s->dir, limit);
	}
	if (progress_step(s) != old_step)
		detector_scan_step(m->det, s->tgid, s->dev_major, s->dev_minor, s->ino, progress_step(s));
}

static void on_end_event(struct scan_mgr *m, const struct dirahead_event *ev)
{
	struct scan *s = find_scan(m, ev->tgid, ev->dev_major, ev->dev_minor, ev->ino);
	if (!s || s->ending >= 0)
		return;
	on_progress(m, ev, true);
	enum da_end_reason why;
	if (s->state == SCAN_FOLLOWING || ev->end_reason == DIRAHEAD_END_NEXT)
		why = DA_END_COMPLETED; /* the application is done with the directory */
	else if (ev->end_reason == DIRAHEAD_END_EVICTED)
		why = DA_END_EVICTED;
	else
		why = DA_END_EXITED;
	end_scan(s, why);
}

int scan_mgr_on_event(const struct dirahead_event *ev, void *mgr)
{
	struct scan_mgr *m = mgr;
	switch (ev->type) {
	case DIRAHEAD_EV_SCAN:
		on_scan_event(m, ev);
		break;
	case DIRAHEAD_EV_PROGRESS:
		on_progress(m, ev, false);
		break;
	case DIRAHEAD_EV_END:
		on_end_event(m, ev);
		break;
	}
	return 0;
}

static void on_complete(const struct dirahead_completion *c, void *data)
{
	struct scan_mgr *m = data;
	struct scan *s = c->dir_data;
	if (c->error) {
		s->failed++;
		m->st->errors[da_err_class_of(c->error)]++;
	} else {
		m->st->entries_prefetched++;
	}
	s->completed++;
	da_stats_latency(m->st, c->latency_ns);
}

static void on_dir_done(struct dirahead_dir *dir, void *dir_data, int error, void *data)
{
	struct scan_mgr *m = data;
	struct scan *s = dir_data;
	(void)dir;
	s->dir = NULL;
	if (s->ending >= 0) {
		free_scan(s);
		return;
	}
	if (error == 0) {
		/* Everything is fetched: keep counting hits until the application is done, holding
		 * nothing open and no longer counting against the concurrency limits. */
		s->state = SCAN_FOLLOWING;
		m->active--;
		return;
	}
	log_debug("scan of %s by pid %u: %s", s->path, s->tgid, strerror(error));
	end_scan(s, DA_END_VANISHED);
}

static int on_engine(sd_event_source *src, int fd, uint32_t revents, void *userdata)
{
	struct scan_mgr *m = userdata;
	(void)src;
	(void)fd;
	(void)revents;
	int r = dirahead_engine_process(m->engine);
	if (r < 0)
		log_warn("prefetch engine: %s", strerror(-r));
	return 0;
}

static int on_timer(sd_event_source *src, uint64_t usec, void *userdata)
{
	struct scan_mgr *m = userdata;
	uint64_t t = now_ns(), idle = (uint64_t)m->cfg.idle_timeout_ms * 1000000ull;
	struct scan *s = m->scans, *next;
	for (; s; s = next) {
		next = s->next;
		if (s->ending < 0 && t - s->last_ns > idle)
			end_scan(s, s->state == SCAN_FOLLOWING ? DA_END_COMPLETED : DA_END_IDLE);
	}
	sd_event_source_set_time(src, usec + 250000);
	return 0;
}

struct scan_mgr *scan_mgr_new(sd_event *loop, const struct da_config *cfg, struct detector *det,
			      struct da_stats *st, char *err, size_t errlen)
{
	struct scan_mgr *m = calloc(1, sizeof(*m));
	if (!m) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	m->loop = loop;
	m->cfg = *cfg;
	m->det = det;
	m->st = st;
	m->opener_pipe[0] = m->opener_pipe[1] = -1;
	struct dirahead_engine_opts eo = {
		.size = sizeof(eo), .backend = cfg->engine, .depth = cfg->depth_total,
		.dir_depth = cfg->depth_per_scan, .on_complete = on_complete,
		.on_dir_done = on_dir_done, .data = m, .stall_ms = SCAN_STALL_MS,
	};
	m->engine = dirahead_engine_new(&eo);
	if (!m->engine) {
		snprintf(err, errlen, "cannot start the prefetch engine: %s", strerror(errno));
		goto fail;
	}
	if (pipe2(m->opener_pipe, O_CLOEXEC | O_NONBLOCK) < 0) {
		snprintf(err, errlen, "pipe: %s", strerror(errno));
		goto fail;
	}
	int r = sd_event_add_io(loop, &m->engine_src, dirahead_engine_fd(m->engine), EPOLLIN,
				on_engine, m);
	if (r >= 0)
		r = sd_event_add_io(loop, &m->opener_src, m->opener_pipe[0], EPOLLIN, on_opened, m);
	if (r >= 0)
		r = sd_event_add_time_relative(loop, &m->timer_src, CLOCK_MONOTONIC, 250000, 50000,
					       on_timer, m);
	if (r < 0) {
		snprintf(err, errlen, "event loop: %s", strerror(-r));
		goto fail;
	}
	sd_event_source_set_enabled(m->timer_src, SD_EVENT_OFF);
	return m;
fail:
	scan_mgr_free(m);
	return NULL;
}

void scan_mgr_reconfigure(struct scan_mgr *m, const struct da_config *cfg)
{
	m->cfg = *cfg;
	if (!cfg->enabled) {
		struct scan *s, *next;
		for (s = m->scans; s; s = next) {
			next = s->next;
			end_scan(s, DA_END_SHUTDOWN);
		}
	}
}

unsigned scan_mgr_active(const struct scan_mgr *m) { return m->active; }

uint64_t scan_mgr_inflight(const struct scan_mgr *m)
{
	struct dirahead_engine_stats es;
	dirahead_engine_get_stats(m->engine, &es);
	return es.inflight;
}

const char *scan_mgr_backend(const struct scan_mgr *m)
{
	return dirahead_engine_backend(m->engine) == DIRAHEAD_BACKEND_URING ? "io_uring" : "threads";
}

void scan_mgr_foreach(struct scan_mgr *m, void (*fn)(const struct scan_info *, void *), void *ctx)
{
	uint64_t t = now_ns();
	for (struct scan *s = m->scans; s; s = s->next) {
		if (s->ending >= 0)
			continue;
		struct scan_info i = {
			.pid = s->tgid, .comm = s->comm, .path = s->path, .entries = s->completed,
			.app_pos = s->app_pos, .window = s->window, .hits = s->hits,
			.misses = s->misses, .state = state_names[s->state],
			.age_s = (double)(t - s->start_ns) / 1e9,
		};
		fn(&i, ctx);
	}
}

void scan_mgr_free(struct scan_mgr *m)
{
	if (!m)
		return;
	struct scan *s, *next;
	for (s = m->scans; s; s = next) {
		next = s->next;
		if (s->ending < 0)
			end_scan(s, DA_END_SHUTDOWN);
	}
	/* Engine teardown abandons requests stuck on a hung filesystem instead of waiting. */
	dirahead_engine_free(m->engine);
	while ((s = m->scans)) {
		m->scans = s->next;
		free(s);
	}
	sd_event_source_disable_unref(m->engine_src);
	sd_event_source_disable_unref(m->opener_src);
	sd_event_source_disable_unref(m->timer_src);
	if (m->opener_pipe[0] >= 0)
		close(m->opener_pipe[0]);
	/* The write end stays open: a detached opener stuck on a hung filesystem may still write. */
	free(m);
}
