/* SPDX-License-Identifier: LGPL-2.1-or-later OR BSD-2-Clause */
#include "policy.h"

#include "dirahead.h"
#include "fsgroups.h"

#include <stdlib.h>
#include <string.h>

const char *const pol_verdict_names[POL_VERDICT_MAX] = {
	[POL_UNKNOWN] = "unknown", [POL_PAYS] = "pays", [POL_NO_GAIN] = "no_gain", [POL_FAST] = "fast",
};

/* Timed stats needed before their mean stands for the stretch (else the progress rate does). */
#define MIN_TIMED 4
/* Backoff of the re-probe interval of a no_gain filesystem: 1x, 2x ... this. */
#define MAX_BACKOFF 16
/* fast_backoff's bound: a warm filesystem whose calls sleep now and then is re-judged (and the
 * hooks armed for it) once per FAST_TRUST_NS x 64 (about 11 minutes) at most. */
#define MAX_FAST_BACKOFF 64
/* "Changes clearly": a program cost this many times above (or below) the one no_gain was
 * decided at means the filesystem behaves differently now (caches went cold, the server slowed):
 * re-probe at once. */
#define CHANGE_FACTOR 4.0
/* ... over this many intervals at least: one or two right after a listing are as often the
 * program's own start-up work or a busy machine as the filesystem. */
#define CHANGE_MIN_GAPS 4
/* A FAST verdict is trusted this long; after that a fast-looking scan is probed again. */
#define FAST_TRUST_NS (10ull * 1000000000ull)
/* Tree-ahead listings: the daemon's own listings before the FAST rule applies (the program's
 * listings ahead before the pay-off rule does: POL_LIST_RECENT, policy.h). */
#define LIST_MIN_OWN 4
/* A listing whose wall time is below this multiple of its CPU time waited for (almost) nothing:
 * the directory was cached, there is no I/O to overlap. */
#define LIST_WAIT_FACTOR 2.0
/* How long a filesystem whose requests hung gets nothing new (then one scan tries again), and
 * how long stalled requests must go unanswered for that. */
#define HUNG_NS (10ull * 1000000000ull)
#define HUNG_DETECT_NS (2ull * 1000000000ull)

struct policy {
	struct dd_config cfg; /* shallow copy: only scalars are read */
	struct pol_fs *fs;    /* array of cap, n used */
	unsigned n, cap;
	double cost_ns;       /* EWMA of CPU per prefetched entry, all filesystems; 0: unmeasured */
};

static double ewma(double old, double x, double alpha)
{
	return old > 0 ? old + alpha * (x - old) : x;
}

struct policy *policy_new(const struct dd_config *cfg)
{
	struct policy *p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	p->cfg = *cfg;
	p->cap = cfg->max_filesystems ? cfg->max_filesystems : 1;
	p->fs = calloc(p->cap, sizeof(*p->fs));
	if (!p->fs) {
		free(p);
		return NULL;
	}
	return p;
}

void policy_free(struct policy *p)
{
	if (!p)
		return;
	free(p->fs);
	free(p);
}

void policy_reconfigure(struct policy *p, const struct dd_config *cfg)
{
	unsigned cap = cfg->max_filesystems ? cfg->max_filesystems : 1;
	if (cap != p->cap) {
		struct pol_fs *nfs = calloc(cap, sizeof(*nfs));
		bool *taken = calloc(p->n ? p->n : 1, sizeof(*taken));
		if (nfs && taken) {
			/* keep the most recently used ones */
			unsigned keep = p->n < cap ? p->n : cap;
			for (unsigned k = 0; k < keep; k++) {
				int best = -1;
				for (unsigned i = 0; i < p->n; i++)
					if (!taken[i] && (best < 0 || p->fs[i].last_ns > p->fs[best].last_ns))
						best = (int)i;
				nfs[k] = p->fs[best];
				taken[best] = true;
			}
			free(taken);
			free(p->fs);
			p->fs = nfs;
			p->n = keep;
			p->cap = cap;
		} else { /* out of memory: keep the old table */
			free(nfs);
			free(taken);
		}
	}
	p->cfg = *cfg;
}

bool policy_enabled(const struct policy *p) { return p->cfg.policy_enabled; }
unsigned policy_gain_stats(const struct policy *p) { return p->cfg.gain_stats; }
unsigned policy_probe_stats(const struct policy *p) { return p->cfg.probe_stats; }
unsigned policy_mute_ms(const struct policy *p) { return p->cfg.mute_ms; }

void pol_sample_of(struct pol_sample *s, const struct dirahead_event *ev)
{
	*s = (struct pol_sample){ .stats = ev->stats, .t_first = ev->stat_first_ns,
				  .t_last = ev->stat_last_ns, .lat_sum = ev->lat_sum_ns,
				  .lat_n = ev->lat_count };
}

void pol_cost_between(const struct pol_sample *from, const struct pol_sample *to, struct pol_cost *c)
{
	c->lat_ns = c->gap_ns = -1;
	c->gap_n = 0;
	if (!from) {
		/* from the first stat: its own duration counts, the interval starts at its end */
		if (to->lat_n >= MIN_TIMED || (to->lat_n && to->lat_n == to->stats))
			c->lat_ns = (double)to->lat_sum / (double)to->lat_n;
		if (to->stats >= 2 && to->t_last > to->t_first) {
			c->gap_n = to->stats - 1;
			c->gap_ns = (double)(to->t_last - to->t_first) / (double)c->gap_n;
		}
		return;
	}
	if (to->lat_n >= from->lat_n + MIN_TIMED)
		c->lat_ns = (double)(to->lat_sum - from->lat_sum) / (double)(to->lat_n - from->lat_n);
	if (to->stats > from->stats && to->t_last > from->t_last) {
		c->gap_n = to->stats - from->stats;
		c->gap_ns = (double)(to->t_last - from->t_last) / (double)c->gap_n;
	}
}

/* One figure for a cost: the stats' own duration where timed, else the progress rate. */
static double cost_value(const struct pol_cost *c)
{
	return c->lat_ns >= 0 ? c->lat_ns : c->gap_ns;
}

/* Is F the filesystem on device (MAJ, MIN) of this magic?  The device alone is not enough: another
 * kind of filesystem may get the number when the first is unmounted. */
static bool fs_is(const struct pol_fs *f, uint32_t maj, uint32_t min, uint64_t magic)
{
	return f->dev_major == maj && f->dev_minor == min && f->magic == magic;
}

bool policy_new_mount(uint64_t had, uint64_t seen)
{
	if (seen == had || seen == 0 || had == 0 || had == POL_MNT_ADOPT)
		return false;
	if (had >= POL_MNT_UNIQUE && seen >= POL_MNT_UNIQUE)
		return seen > had;
	return true;
}

struct pol_fs *policy_fs_mount(struct policy *p, uint32_t dev_major, uint32_t dev_minor,
			       uint64_t magic, uint64_t mnt_id, uint64_t now)
{
	unsigned lru = 0, i;
	for (i = 0; i < p->n; i++) {
		struct pol_fs *f = &p->fs[i];
		if (f->dev_major == dev_major && f->dev_minor == dev_minor) {
			if (f->magic != magic || policy_new_mount(f->mnt_id, mnt_id))
				break; /* another filesystem, or a new mount, got the device number */
			/* a memory restored for the device: its mount takes it */
			if (f->mnt_id == POL_MNT_ADOPT || f->mnt_id == 0)
				f->mnt_id = mnt_id;
			f->last_ns = now;
			return f;
		}
		if (f->last_ns < p->fs[lru].last_ns)
			lru = i;
	}
	/* the same device is reused in place (one entry per device); else a free slot or the LRU */
	/* what the kernel said of the filesystem on that device stays, if it is the same kind: the
	 * next event says it again anyway */
	uint32_t fsinfo = i < p->n && p->fs[i].magic == magic ? p->fs[i].fsinfo : 0;
	if (i == p->n)
		i = p->n < p->cap ? p->n++ : lru;
	struct pol_fs *f = &p->fs[i];
	*f = (struct pol_fs){ .dev_major = dev_major, .dev_minor = dev_minor, .magic = magic,
			      .mnt_id = mnt_id, .backoff = 1, .last_ns = now,
			      .list = { .backoff = 1 }, .fsinfo = fsinfo };
	return f;
}

struct pol_fs *policy_fs(struct policy *p, uint32_t dev_major, uint32_t dev_minor, uint64_t magic,
			 uint64_t now)
{
	return policy_fs_mount(p, dev_major, dev_minor, magic, 0, now);
}

double policy_entry_cost_ns(const struct policy *p)
{
	return p->cost_ns > 0 ? p->cost_ns : (double)p->cfg.entry_cost_us * 1000.0;
}

double policy_threshold_ns(const struct policy *p, const struct pol_fs *fs)
{
	/* This filesystem's own figure: what an entry costs differs by an order of magnitude
	 * between a warm local disk and a FUSE server (measured here: ~5 vs ~40 us), so another
	 * filesystem's figure would misjudge it.  Until measured, the configured prior. */
	double cost = fs->cost_ns > 0 ? fs->cost_ns : (double)p->cfg.entry_cost_us * 1000.0;
	return p->cfg.start_factor * cost;
}

/* A verdict reached: a fast one that follows a blocked call's re-judgment backs off the next
 * re-judgment (the call did not mean the filesystem is slow); any other ends the backoff. */
static void note_verdict(struct pol_fs *fs, enum pol_verdict v, uint64_t now)
{
	if (v == POL_FAST) {
		if (fs->rejudging) {
			unsigned b = fs->fast_backoff ? fs->fast_backoff * 2 : 2;
			fs->fast_backoff = b > MAX_FAST_BACKOFF ? MAX_FAST_BACKOFF : b;
			fs->rejudge_after_ns = now + FAST_TRUST_NS * fs->fast_backoff;
		}
	} else {
		fs->fast_backoff = 0;
		fs->rejudge_after_ns = 0;
	}
	fs->rejudging = false;
}

enum pol_action policy_on_scan(struct policy *p, struct pol_fs *fs, const struct pol_cost *c,
			       uint64_t now)
{
	double v = cost_value(c), thr = policy_threshold_ns(p, fs);
	fs->scans++;
	if (fs->verdict == POL_NO_GAIN) {
		/* like with like: no_gain_cost_ns is a time per stat (progress rate) */
		double g = c->gap_ns;
		bool changed = g > 0 && c->gap_n >= CHANGE_MIN_GAPS && fs->no_gain_cost_ns > 0 &&
			       (g > CHANGE_FACTOR * fs->no_gain_cost_ns ||
				g * CHANGE_FACTOR < fs->no_gain_cost_ns);
		if (now < fs->reprobe_ns && !changed) {
			fs->skipped_no_gain++;
			return POL_SKIP_NO_GAIN;
		}
		fs->reprobes++;
		return POL_PROBE;
	}
	if (v >= thr && fs->verdict == POL_PAYS) {
		fs->probed_ns = ewma(fs->probed_ns, v, 0.25);
		return POL_START; /* known to pay, and this scan is slow too: no delay */
	}
	if (v >= 0 && v < thr && fs->verdict == POL_FAST && now - fs->verdict_ns < FAST_TRUST_NS) {
		fs->skipped_fast++;
		return POL_SKIP_FAST;
	}
	return POL_PROBE;
}

enum pol_action policy_after_probe(struct policy *p, struct pol_fs *fs, const struct pol_cost *c,
				   uint64_t now)
{
	double v = cost_value(c);
	if (v >= 0 && v < policy_threshold_ns(p, fs)) {
		note_verdict(fs, POL_FAST, now);
		fs->verdict = POL_FAST;
		fs->verdict_ns = now;
		fs->skipped_fast++;
		if (c->gap_ns > 0)
			fs->before_ns = ewma(fs->before_ns, c->gap_ns, 0.25);
		return POL_SKIP_FAST;
	}
	if (v > 0)
		fs->probed_ns = ewma(fs->probed_ns, v, 0.25);
	return POL_START;
}

unsigned policy_depth(const struct policy *p, const struct pol_fs *fs)
{
	unsigned max = p->cfg.depth_per_scan, min = p->cfg.depth_min < max ? p->cfg.depth_min : max;
	unsigned d = fs->depth ? fs->depth : max / 2;
	return d < min ? min : d > max ? max : d;
}

void policy_judged_costs(const struct pol_cost *before, const struct pol_cost *after, double *b,
			 double *a)
{
	if (before->gap_ns > 0 && after->gap_ns >= 0) {
		*b = before->gap_ns;
		*a = after->gap_ns;
		/* A probe is a few stats right after the listing, where programs do their one-off
		 * work (name service lookups, buffers, locale): its rate overstates what a stat
		 * cost them.  Where both sides were timed, the program's own work between stats
		 * is known from the later stretch, and a stat's timed duration before plus that
		 * work is the better "before". */
		if (before->lat_ns >= 0 && after->lat_ns >= 0) {
			double work = after->gap_ns > after->lat_ns ? after->gap_ns - after->lat_ns : 0;
			if (before->lat_ns + work < *b)
				*b = before->lat_ns + work;
		}
	} else {
		*b = before->lat_ns;
		*a = after->lat_ns;
	}
}

bool policy_gains(const struct policy *p, double b, double a)
{
	return b >= p->cfg.min_gain * (a > 1 ? a : 1);
}

bool policy_judge(struct policy *p, struct pol_fs *fs, const struct pol_cost *before,
		  const struct pol_cost *after, double late_frac, bool short_stretch, uint64_t now)
{
	/* The program's time per stat, everything it waits for included: prefetch may make its
	 * stats cheap and still slow it down (its CPU taken by our workers on a small machine, its
	 * lookups queued behind ours).  Durations only where no rate was measured. */
	double b, a;
	policy_judged_costs(before, after, &b, &a);
	if (b <= 0 || a < 0)
		return true; /* nothing to judge by: the hit-ratio rules still stand */
	unsigned max = p->cfg.depth_per_scan, min = p->cfg.depth_min < max ? p->cfg.depth_min : max;
	unsigned depth = policy_depth(p, fs);
	fs->before_ns = ewma(fs->before_ns, b, 0.25);
	fs->after_ns = ewma(fs->after_ns, a, 0.25);
	if (policy_gains(p, b, a)) {
		fs->doubts = 0;
		note_verdict(fs, POL_PAYS, now);
		fs->verdict = POL_PAYS;
		fs->verdict_ns = now;
		fs->backoff = 1;
		fs->gained++;
		/* The program still waits for requests in flight: more at once would help, unless the
		 * last raise made the filesystem answer clearly slower (it is saturating): then back. */
		bool saturating = fs->raised_at_lat_ns > 0 && fs->pf_lat_ns > 2 * fs->raised_at_lat_ns;
		if (saturating) {
			depth = depth * 3 / 4;
			fs->raised_at_lat_ns = 0;
		} else if ((late_frac > 0.2 || a * depth < 1.5 * fs->pf_lat_ns) && depth < max) {
			/* (or the program goes as fast as `depth` requests of pf_lat_ns each allow:
			 * we are what it waits for) */
			fs->raised_at_lat_ns = fs->pf_lat_ns;
			depth *= 2;
		}
		fs->depth = depth < min ? min : depth > max ? max : depth;
		return true;
	}
	/* A scan's last few stats (a small directory's, fewer than gain_stats) end that scan only:
	 * so short a stretch is noise on a busy machine, and a filesystem's no_gain stops every
	 * scan and walk on it for reprobe_s. */
	if (short_stretch) {
		fs->no_gain++;
		return false;
	}
	/* One stretch against a filesystem where prefetch paid ends that scan only: a program whose
	 * time goes elsewhere (walking below, computing) shows no gain anywhere.  A second in a
	 * row is the filesystem's verdict. */
	if (fs->verdict == POL_PAYS && ++fs->doubts < 2) {
		fs->no_gain++;
		return false;
	}
	fs->doubts = 0;
	note_verdict(fs, POL_NO_GAIN, now);
	fs->verdict = POL_NO_GAIN;
	fs->verdict_ns = now;
	fs->no_gain++;
	fs->no_gain_cost_ns = b;
	fs->raised_at_lat_ns = 0;
	fs->reprobe_ns = now + (uint64_t)p->cfg.reprobe_s * fs->backoff * 1000000000ull;
	if (fs->backoff < MAX_BACKOFF)
		fs->backoff *= 2;
	depth /= 2;
	fs->depth = depth < min ? min : depth;
	return false;
}

/*
 * The daemon's CPU per entry counts each stretch by its entries: a stretch of n moves the
 * figure n / (n + CPU_WEIGHT_ENTRIES) of the way to its own, from the prior (entry_cost_us)
 * until measured.  A stretch taken whole (the first one as the figure, each later one a quarter)
 * let one-off work decide: the CPU of reading and inode-sorting a whole directory for an
 * fts-order scan (~6 ms for 12,000 entries on slowfs, with the engine's first requests ~9 ms)
 * lands in whichever stretch the timer closes first, which may hold only 32 entries - 300 us to
 * 1 ms an entry against 20-25 us over the whole scan, and the start rule then took a 290 us
 * stat for fast (tests/integration/prefetch-order.sh, about 1 run in 10).  Weighted by entries,
 * that one-off CPU counts over all the entries of the stretches that follow: a 32-entry
 * stretch moves the figure 4%, a 256-entry one 25% (what every stretch did before).
 */
#define CPU_WEIGHT_ENTRIES 768.0

static double cpu_figure(double old, double prior, double x, uint64_t entries)
{
	double from = old > 0 ? old : prior;
	return from + (x - from) * (double)entries / ((double)entries + CPU_WEIGHT_ENTRIES);
}

void policy_account_cpu(struct policy *p, struct pol_fs *fs, uint64_t cpu_ns, uint64_t entries)
{
	if (entries < 32)
		return; /* too few to stand for a per-entry figure */
	double x = (double)cpu_ns / (double)entries, prior = (double)p->cfg.entry_cost_us * 1000.0;
	/* bounds: a stat costs at least a syscall, and the event loop's idle overhead spread over
	 * few entries must not make a filesystem look expensive forever */
	if (x < 500)
		x = 500;
	if (x > 1e6)
		x = 1e6;
	p->cost_ns = cpu_figure(p->cost_ns, prior, x, entries);
	if (fs)
		fs->cost_ns = cpu_figure(fs->cost_ns, prior, x, entries);
}

void policy_account_latency(struct pol_fs *fs, uint64_t latency_ns)
{
	fs->pf_lat_ns = ewma(fs->pf_lat_ns, (double)latency_ns, 0.1);
}

static void list_verdict(struct policy *p, struct pol_fs *fs, enum pol_verdict v, uint64_t now)
{
	struct pol_list *l = &fs->list;
	l->verdict = v;
	l->verdict_ns = now;
	l->judged++;
	if (v == POL_PAYS) {
		l->backoff = 1;
		return;
	}
	l->reprobe_ns = now + (uint64_t)p->cfg.reprobe_s * l->backoff * 1000000000ull;
	if (l->backoff < MAX_BACKOFF)
		l->backoff *= 2;
}

bool policy_list_allowed(struct policy *p, struct pol_fs *fs, uint64_t now)
{
	struct pol_list *l = &fs->list;
	if (!p->cfg.policy_enabled || (l->verdict != POL_NO_GAIN && l->verdict != POL_FAST))
		return true;
	if (now < l->reprobe_ns)
		return false;
	/* time to look again, from scratch: caches may have gone cold, the server may be slower */
	l->verdict = POL_UNKNOWN;
	l->n_wall = l->n_ahead = l->n_own = 0;
	l->reprobes++;
	return true;
}

enum pol_verdict policy_list_account(struct policy *p, struct pol_fs *fs, uint64_t wall_ns,
				     uint64_t cpu_ns, uint64_t first_ns, uint64_t now)
{
	struct pol_list *l = &fs->list;
	if (!wall_ns)
		return l->verdict;
	l->wall_ns = ewma(l->wall_ns, (double)wall_ns, 0.25);
	l->cpu_ns = ewma(l->cpu_ns, (double)cpu_ns, 0.25);
	if (first_ns)
		l->first_ns = ewma(l->first_ns, (double)first_ns, 0.25);
	if (++l->n_wall >= LIST_MIN_OWN && l->verdict == POL_UNKNOWN && p->cfg.policy_enabled &&
	    l->wall_ns < LIST_WAIT_FACTOR * l->cpu_ns)
		list_verdict(p, fs, POL_FAST, now);
	return l->verdict;
}

enum pol_list_kind policy_list_kind(bool walk_opened, uint64_t eof_ns, uint64_t from_ns)
{
	if (!walk_opened)
		return POL_LIST_OWN;
	return eof_ns && (!from_ns || eof_ns <= from_ns) ? POL_LIST_AHEAD : POL_LIST_JOINED;
}

/* The lower median of POL_LIST_RECENT samples: half of them may be outliers above. */
static double median_of(const float v[POL_LIST_RECENT])
{
	float s[POL_LIST_RECENT];
	memcpy(s, v, sizeof(s));
	for (unsigned i = 1; i < POL_LIST_RECENT; i++) /* insertion sort: 8 values */
		for (unsigned j = i; j > 0 && s[j - 1] > s[j]; j--) {
			float t = s[j];
			s[j] = s[j - 1];
			s[j - 1] = t;
		}
	return s[(POL_LIST_RECENT - 1) / 2];
}

enum pol_verdict policy_list_judge(struct policy *p, struct pol_fs *fs, bool ahead,
				   uint64_t prog_ns, uint64_t now)
{
	struct pol_list *l = &fs->list;
	if (ahead) {
		l->ahead_ns = ewma(l->ahead_ns, (double)prog_ns, 0.25);
		l->recent_ahead_ns[l->n_ahead % POL_LIST_RECENT] = (float)prog_ns;
		l->n_ahead++;
	} else {
		l->own_ns = ewma(l->own_ns, (double)prog_ns, 0.25);
		l->n_own++;
	}
	if (!p->cfg.policy_enabled || l->n_ahead < POL_LIST_RECENT || l->verdict == POL_FAST ||
	    l->verdict == POL_NO_GAIN)
		return l->verdict;
	/* judged every POL_LIST_RECENT listings ahead, on those: a program's listing, timed by
	 * BPF, is wall time, and on a busy machine one preempted reads milliseconds for a cached
	 * directory (beside three busy loops, a walk on a filesystem where listing ahead pays
	 * ended no_gain in 3 of 33 runs of walk-listing, judged on their average); their median
	 * is what a listing ahead costs */
	if (l->n_ahead % POL_LIST_RECENT)
		return l->verdict;
	double med = median_of(l->recent_ahead_ns);
	double ref = l->n_own >= 2 ? l->own_ns : l->first_ns;
	bool pays = ref > 0 && ref >= p->cfg.min_gain * (med > 1 ? med : 1);
	list_verdict(p, fs, pays ? POL_PAYS : POL_NO_GAIN, now);
	return l->verdict;
}

void policy_waits_add(struct pol_waits *w, uint64_t done_ns, uint64_t latency_ns)
{
	uint64_t from = done_ns > latency_ns ? done_ns - latency_ns : 0;
	w->n++;
	w->lat_sum_ns += (double)latency_ns;
	if (from < w->busy_end_ns)
		from = w->busy_end_ns; /* the part before was counted with an earlier request */
	if (done_ns > from)
		w->busy_ns += (double)(done_ns - from);
	if (done_ns > w->busy_end_ns)
		w->busy_end_ns = done_ns;
}

uint64_t policy_read_unit(uint64_t magic)
{
	switch (magic) {
	case 0x58465342: return 32;      /* xfs: 16 KiB inode clusters of 512-byte inodes */
	/* ext4: 16 inodes to a block; the block a stat needs is read at once, its inode-table
	 * readahead (32 blocks) in the background, so a program on its own waits for some of
	 * those too: about once per 120 inodes, measured (a slow volume's 20,000-file ls -l,
	 * 0.117 s saved at 0.7 ms a wait) */
	case 0xEF53: return 128;
	default: return 0;
	}
}

void policy_waits_read(struct pol_waits *w, uint64_t ino, uint64_t unit)
{
	/* a full mix (murmur3's finalizer): linear counting assumes random bits, and a
	 * multiplicative hash spreads neighbouring units too evenly (8% over at 625 units) */
	uint64_t h = ino / unit;
	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdull;
	h ^= h >> 33;
	h *= 0xc4ceb9fe1a85ec53ull;
	h ^= h >> 33;
	h &= POL_UNIT_BITS - 1;
	w->units[h / 8] |= (uint8_t)(1u << (h % 8));
}

/* ln(x) for 0 < x <= 1, to some 1e-9: the only logarithm here, not worth libm (a NEEDED library
 * the packages would have to name). */
static double ln01(double x)
{
	int halvings = 0;
	while (x < 0.5) {
		x *= 2;
		halvings++;
	}
	double y = (x - 1) / (x + 1), y2 = y * y, term = y, sum = 0; /* |y| <= 1/3 */
	for (int k = 1; k < 40; k += 2) {
		sum += term / k;
		term *= y2;
	}
	return 2 * sum - halvings * 0.69314718055994530942;
}

double policy_waits_units(const struct pol_waits *w)
{
	unsigned zero = 0;
	if (!w)
		return 0;
	for (unsigned i = 0; i < sizeof(w->units); i++)
		zero += 8 - (unsigned)__builtin_popcount(w->units[i]);
	if (!zero || zero == POL_UNIT_BITS)
		return 0; /* full: too many to count; empty: none noted */
	return -(double)POL_UNIT_BITS * ln01((double)zero / POL_UNIT_BITS);
}

bool policy_reads_shared(uint64_t magic, uint32_t dev_major)
{
	/* btrfs's subvolumes have anonymous device numbers, its metadata is a block device's */
	return dev_major != 0 || magic == FSGROUPS_BTRFS_MAGIC;
}

bool policy_inode_groups(uint64_t magic, uint32_t dev_major)
{
	return fs_inode_groups(magic, dev_major);
}

uint64_t policy_window_reach(uint64_t window, bool grouped, uint64_t entries, uint64_t requests)
{
	if (!grouped)
		return window;
	uint64_t per = requests ? entries / requests : DIRAHEAD_INODE_GROUP;
	return window * (per < 1 ? 1 : per > DIRAHEAD_INODE_GROUP ? DIRAHEAD_INODE_GROUP : per);
}

unsigned policy_window_max(const struct policy *p, const struct pol_fs *fs, bool scan_paid)
{
	unsigned max = p->cfg.window_max, cap = 2 * p->cfg.gain_stats;
	if (!p->cfg.policy_enabled || scan_paid || (fs && fs->verdict == POL_PAYS))
		return max;
	return cap < max ? cap : max;
}

/* The share of w's requests `used` stands for (w->n > 0). */
static double share_of(const struct pol_waits *w, uint64_t used)
{
	return used < w->n ? (double)used / (double)w->n : 1.0;
}

double policy_waits_bound_s(const struct pol_waits *w, uint64_t used, bool shared)
{
	if (!w || !w->n || !used)
		return 0;
	return (shared ? w->busy_ns : w->lat_sum_ns) * share_of(w, used) / 1e9;
}

/* The program's cost per stat (or listing) without prefetch and with it. */
struct pol_figs {
	double before_ns, after_ns;
};

/* Are both figures there (before > 0, after >= 0)? */
static bool figs_ok(struct pol_figs f)
{
	return f.before_ns > 0 && f.after_ns >= 0;
}

/* The filesystem's figures: both sides judged there (after_ns is set by a judgment alone; a
 * fast probe sets before_ns only), else the cost of the stats that started prefetch there
 * against a prefetched stat that waits for nothing. */
static struct pol_figs remembered(const struct pol_fs *fs)
{
	if (fs->after_ns > 0)
		return (struct pol_figs){ fs->before_ns, fs->after_ns };
	return (struct pol_figs){ fs->probed_ns, 0 };
}

/* One part of a program's time (its stats, or a walk's listings), in seconds: on its own, with
 * prefetch, and the time the requests it used were in flight. */
struct pol_part {
	double without, with, busy;
};

static double max2(double a, double b)
{
	return a > b ? a : b;
}

static double min2(double a, double b)
{
	return a < b ? a : b;
}

/*
 * n uses with figures f of requests that waited w.  The model: n x before on its own, n x after
 * with prefetch.  A gain is bounded twice: with prefetch the program could not be done before
 * the requests it used were (their busy time: a program that outruns the walk waits for it, and
 * its stats' cost "with" says nothing of that; part_saved), and on its own it could not have
 * waited more than for what they read.  Where the units read are known (policy_waits_units), it
 * paid its cost per stat without prefetch once per unit (the probe's stats each read one) on
 * top of its time with prefetch (its CPU): the time in flight undercounted a device that serves
 * reads in parallel (xfs on a slow volume: 30-52% of the measured saving).  Else
 * policy_waits_bound_s() bounds the gain.  A loss stays as estimated.
 */
static struct pol_part part_of(struct pol_figs f, uint64_t n, const struct pol_waits *w,
			       bool shared)
{
	struct pol_part p = { f.before_ns * (double)n / 1e9, f.after_ns * (double)n / 1e9,
			      policy_waits_bound_s(w, n, true) };
	if (p.without <= p.with)
		return p;
	double alone = shared && w && w->n ?
			       policy_waits_units(w) * share_of(w, n) * f.before_ns / 1e9 : 0;
	double cap = alone > 0 ? p.with + alone
			       : max2(p.with, p.busy) + policy_waits_bound_s(w, n, shared);
	if (p.without > cap)
		p.without = cap;
	return p;
}

static double part_saved(struct pol_part p)
{
	if (p.without <= p.with)
		return p.without - p.with;
	double took = max2(p.with, p.busy);
	return p.without > took ? p.without - took : 0;
}

static double saved_s(struct pol_figs f, uint64_t n, const struct pol_waits *w, bool shared)
{
	return part_saved(part_of(f, n, w, shared));
}

double policy_saved_scan_s(const struct pol_fs *fs, double judged_before_ns,
			   double judged_after_ns, uint64_t used, const struct pol_waits *waits,
			   bool shared, bool *measured)
{
	struct pol_figs f = { judged_before_ns, judged_after_ns };
	if (!figs_ok(f) && fs)
		f = remembered(fs);
	bool m = figs_ok(f);
	if (measured)
		*measured = m;
	return m ? saved_s(f, used, waits, shared) : 0; /* nothing measured: nothing claimed */
}

double policy_saved_walk_s(const struct pol_fs *fs, uint64_t listed_ahead, uint64_t entries_used,
			   const struct pol_waits *waits, const struct pol_waits *lists, bool shared,
			   bool *measured)
{
	double s = 0;
	bool m = false;
	if (fs) {
		const struct pol_list *l = &fs->list;
		/* the reference the pay-off rule of listings uses: the program's own listings, else
		 * the daemon's first getdents of a directory (the program times its open to that) */
		struct pol_figs lf = { l->own_ns > 0 ? l->own_ns : l->first_ns, l->ahead_ns };
		struct pol_figs ef = remembered(fs);
		/* a directory's listing goes through one queue (one connection, one server
		 * process, one device) which the walk's listings at once share: the time any of
		 * them was in flight bounds what they saved, on every filesystem; the daemon's
		 * first getdents, timed at once with others, overstates a listing (sshfs: 3 to
		 * 14 ms against 1.5 ms saved a directory) */
		struct pol_part lp = { 0 }, ep = { 0 };
		bool lok = lf.after_ns > 0 && figs_ok(lf), eok = entries_used && figs_ok(ef);
		if (lok && shared && l->own_ns > 0) {
			/* A block device reads directories in parallel: a directory listed ahead
			 * (read to its end before the program came) saved the program its own
			 * listing, whatever else of the walk was in flight meanwhile (it stats
			 * then).  Bounded by the listings' time in flight, the estimate was 41-63%
			 * of the measured saving of list-only walks on a slow volume.  Each
			 * directory is a read of its own: the program could not have waited more
			 * than the walk's listings did (own_ns, of the few it listed first, the top
			 * among them, overstated a leaf's listing by a third) */
			lp = (struct pol_part){ lf.before_ns * (double)listed_ahead / 1e9,
						lf.after_ns * (double)listed_ahead / 1e9, 0 };
			if (lp.without > lp.with) /* (a loss stays as measured) */
				lp.without = max2(lp.with, min2(lp.without, policy_waits_bound_s(
							lists, listed_ahead, false)));
		} else if (lok) {
			lp = part_of(lf, listed_ahead, lists, true);
		}
		if (eok)
			ep = part_of(ef, entries_used, waits, shared);
		m = lok || eok;
		if (lok && eok && lp.without > lp.with && ep.without > ep.with) {
			/* its listings and its entries' requests were in flight at once: with
			 * prefetch it took the longer of those times at least, not their sum */
			double took = max2(lp.with + ep.with, max2(lp.busy, ep.busy));
			s = max2(lp.without + ep.without - took, 0);
		} else {
			s = (lok ? part_saved(lp) : 0) + (eok ? part_saved(ep) : 0);
		}
	}
	if (measured)
		*measured = m;
	return s;
}

void policy_fs_hung(struct pol_fs *fs, uint64_t now)
{
	if (fs->hung_until <= now)
		fs->hung++;
	fs->hung_until = now + HUNG_NS;
	fs->stall_since = 0;
}

bool policy_hung(const struct pol_fs *fs, uint64_t now)
{
	return now < fs->hung_until;
}

void policy_stalled(struct pol_fs *fs, uint64_t now)
{
	if (!fs->stall_since)
		fs->stall_since = now;
}

void policy_answered(struct pol_fs *fs)
{
	fs->stall_since = 0;
	fs->hung_until = 0;
}

void policy_check_hung(struct policy *p, uint64_t now, void (*opened)(struct pol_fs *, void *),
		       void *ctx)
{
	for (unsigned i = 0; i < p->n; i++) {
		struct pol_fs *fs = &p->fs[i];
		if (fs->stall_since && now - fs->stall_since >= HUNG_DETECT_NS) {
			policy_fs_hung(fs, now);
			opened(fs, ctx);
		}
	}
}

void policy_foreach(struct policy *p, void (*fn)(const struct pol_fs *, void *), void *ctx)
{
	/* small (max_filesystems): a selection by last use each time is fine */
	bool *done = calloc(p->n ? p->n : 1, sizeof(*done));
	if (!done)
		return;
	for (unsigned k = 0; k < p->n; k++) {
		int best = -1;
		for (unsigned i = 0; i < p->n; i++)
			if (!done[i] && (best < 0 || p->fs[i].last_ns > p->fs[best].last_ns))
				best = (int)i;
		done[best] = true;
		fn(&p->fs[best], ctx);
	}
	free(done);
}

enum pol_arm policy_arm_verdict(const struct policy *p, uint32_t dev_major, uint32_t dev_minor,
				uint64_t magic, uint64_t now)
{
	if (!p->cfg.policy_enabled)
		return POL_ARM_YES;
	for (unsigned i = 0; i < p->n; i++) {
		const struct pol_fs *f = &p->fs[i];
		if (!fs_is(f, dev_major, dev_minor, magic))
			continue;
		/* the same rules as policy_on_scan(), as far as they go without the scan's cost */
		if (policy_hung(f, now))
			return POL_ARM_HUNG;
		if (f->verdict == POL_NO_GAIN && now < f->reprobe_ns)
			return POL_ARM_NO_GAIN;
		if (f->verdict == POL_FAST &&
		    (now - f->verdict_ns < FAST_TRUST_NS || now < f->rejudge_after_ns))
			return POL_ARM_FAST;
		return POL_ARM_YES;
	}
	return POL_ARM_YES; /* never seen: find out */
}

bool policy_lists_pay(const struct policy *p, uint32_t dev_major, uint32_t dev_minor,
		      uint64_t magic)
{
	for (unsigned i = 0; i < p->n; i++)
		if (fs_is(&p->fs[i], dev_major, dev_minor, magic))
			return p->fs[i].list.verdict == POL_PAYS;
	return false;
}

bool policy_judged_fast(const struct policy *p, uint32_t dev_major, uint32_t dev_minor,
			uint64_t magic)
{
	if (!p->cfg.policy_enabled)
		return false;
	for (unsigned i = 0; i < p->n; i++)
		if (fs_is(&p->fs[i], dev_major, dev_minor, magic))
			return p->fs[i].verdict == POL_FAST;
	return false;
}

bool policy_blocked(struct policy *p, uint32_t dev_major, uint32_t dev_minor, uint64_t magic,
		    uint64_t now)
{
	bool cleared = false;
	if (!p->cfg.policy_enabled)
		return false;
	for (unsigned i = 0; i < p->n; i++) {
		struct pol_fs *f = &p->fs[i];
		if (!fs_is(f, dev_major, dev_minor, magic))
			continue;
		/* fast, trusted or not (arming would say yes to an old one anyway): judged again,
		 * unless a re-judgment found it fast lately */
		if (f->verdict == POL_FAST && now >= f->rejudge_after_ns) {
			f->verdict = POL_UNKNOWN;
			f->verdict_ns = now;
			f->rejudging = true;
			cleared = true;
		}
		if (f->list.verdict == POL_FAST && now < f->list.reprobe_ns &&
		    now >= f->rejudge_after_ns) {
			/* judged from scratch, as at a re-probe (policy_list_allowed) */
			f->list.verdict = POL_UNKNOWN;
			f->list.verdict_ns = now;
			f->list.reprobe_ns = now;
			f->list.n_wall = f->list.n_ahead = f->list.n_own = 0;
			cleared = true;
		}
		f->rejudged += cleared;
	}
	return cleared;
}

bool policy_walk_rejudgeable(const struct pol_fs *fs, bool lookups_serialize)
{
	return fs->verdict != POL_NO_GAIN && !lookups_serialize;
}

static unsigned depth_slot(unsigned depth)
{
	return depth < POL_WALK_DEPTHS ? depth : POL_WALK_DEPTHS - 1;
}

enum pol_fetch policy_walk_fetch(const struct pol_depths *d, bool list_only, unsigned depth)
{
	if (!list_only)
		return POL_FETCH_ENTRIES;
	return d->v[depth_slot(depth)] == POL_PAYS ? POL_FETCH_ENTRIES : POL_FETCH_LIST;
}

bool policy_walk_blocked(struct pol_depths *d, unsigned depth)
{
	uint8_t *v = &d->v[depth_slot(depth)];
	if (*v == POL_PAYS)
		return false;
	*v = POL_PAYS;
	return true;
}

bool policy_walk_fetches(const struct pol_depths *d)
{
	for (unsigned i = 0; i < POL_WALK_DEPTHS; i++)
		if (d->v[i] == POL_PAYS)
			return true;
	return false;
}

void policy_depths_shift(struct pol_depths *d, unsigned up)
{
	if (!up)
		return;
	struct pol_depths o = *d;
	for (unsigned i = 0; i < POL_WALK_DEPTHS; i++)
		d->v[i] = i < up ? POL_UNKNOWN : o.v[i - up];
}

void policy_note_fsinfo(struct policy *p, uint32_t dev_major, uint32_t dev_minor, uint64_t magic,
			uint64_t mnt_id, uint32_t fsinfo, uint64_t now)
{
	bool found = false;
	if (!(fsinfo & DIRAHEAD_FSI_FUSE))
		return; /* nothing read from the kernel */
	for (unsigned i = 0; i < p->n; i++) {
		struct pol_fs *f = &p->fs[i];
		if (fs_is(f, dev_major, dev_minor, magic)) {
			f->fsinfo = fsinfo;
			found = true;
		}
	}
	if (!found)
		policy_fs_mount(p, dev_major, dev_minor, magic, mnt_id, now)->fsinfo = fsinfo;
}

uint32_t policy_fsinfo(const struct policy *p, uint32_t dev_major, uint32_t dev_minor,
		       uint64_t magic)
{
	for (unsigned i = 0; i < p->n; i++) {
		const struct pol_fs *f = &p->fs[i];
		if (fs_is(f, dev_major, dev_minor, magic) && f->fsinfo)
			return f->fsinfo;
	}
	return 0;
}

bool policy_export(const struct pol_fs *fs, uint64_t now, struct pol_memory *m)
{
	if (fs->verdict == POL_UNKNOWN && fs->list.verdict == POL_UNKNOWN && !fs->depth)
		return false;
	const struct pol_list *l = &fs->list;
	*m = (struct pol_memory){
		.magic = fs->magic, .verdict = fs->verdict, .depth = fs->depth,
		.backoff = fs->backoff ? fs->backoff : 1,
		.reprobe_in_ns = fs->reprobe_ns > now ? fs->reprobe_ns - now : 0,
		.no_gain_cost_ns = fs->no_gain_cost_ns, .before_ns = fs->before_ns,
		.after_ns = fs->after_ns, .cost_ns = fs->cost_ns, .pf_lat_ns = fs->pf_lat_ns,
		.list_verdict = l->verdict, .list_backoff = l->backoff ? l->backoff : 1,
		.list_reprobe_in_ns = l->reprobe_ns > now ? l->reprobe_ns - now : 0,
		.list_wall_ns = l->wall_ns, .list_cpu_ns = l->cpu_ns, .list_first_ns = l->first_ns,
		.list_ahead_ns = l->ahead_ns, .list_own_ns = l->own_ns,
		.fast_backoff = fs->verdict == POL_FAST ? fs->fast_backoff : 0,
		.rejudge_in_ns = fs->verdict == POL_FAST && fs->rejudge_after_ns > now ?
					 fs->rejudge_after_ns - now : 0,
	};
	return true;
}

/* A cost in ns: 0 (unmeasured) up to an hour. */
static bool cost_ok(double x)
{
	return x >= 0 && x <= 3600e9;
}

bool policy_memory_valid(const struct pol_memory *m)
{
	const double costs[] = { m->no_gain_cost_ns, m->before_ns, m->after_ns, m->cost_ns,
				 m->pf_lat_ns, m->list_wall_ns, m->list_cpu_ns, m->list_first_ns,
				 m->list_ahead_ns, m->list_own_ns };
	for (unsigned i = 0; i < sizeof(costs) / sizeof(costs[0]); i++)
		if (!cost_ok(costs[i]))
			return false;
	bool pow2 = m->backoff && m->backoff <= MAX_BACKOFF && !(m->backoff & (m->backoff - 1));
	bool lpow2 = m->list_backoff && m->list_backoff <= MAX_BACKOFF &&
		     !(m->list_backoff & (m->list_backoff - 1));
	bool fpow2 = !m->fast_backoff || (m->fast_backoff >= 2 && m->fast_backoff <= MAX_FAST_BACKOFF &&
					  !(m->fast_backoff & (m->fast_backoff - 1)));
	return (unsigned)m->verdict < POL_VERDICT_MAX && (unsigned)m->list_verdict < POL_VERDICT_MAX &&
	       m->magic && pow2 && lpow2 && fpow2 && m->depth <= 65536;
}

static uint64_t delay_left(uint64_t left, unsigned reprobe_s, unsigned backoff)
{
	/* the backoff already doubled past the delay that was set: the delay was at most this */
	uint64_t max = (uint64_t)reprobe_s * backoff * 1000000000ull;
	return left < max ? left : max;
}

struct pol_fs *policy_import(struct policy *p, uint32_t dev_major, uint32_t dev_minor,
			     const struct pol_memory *m, uint64_t now)
{
	if (!policy_memory_valid(m))
		return NULL;
	struct pol_fs *fs = policy_fs_mount(p, dev_major, dev_minor, m->magic, POL_MNT_ADOPT, now);
	struct pol_list *l = &fs->list;
	fs->verdict = m->verdict;
	fs->verdict_ns = now;
	fs->backoff = m->backoff;
	fs->reprobe_ns = now + delay_left(m->reprobe_in_ns, p->cfg.reprobe_s, m->backoff);
	fs->no_gain_cost_ns = m->no_gain_cost_ns;
	fs->depth = m->depth;
	fs->before_ns = m->before_ns;
	fs->after_ns = m->after_ns;
	fs->cost_ns = m->cost_ns;
	fs->pf_lat_ns = m->pf_lat_ns;
	l->verdict = m->list_verdict;
	l->verdict_ns = now;
	l->backoff = m->list_backoff;
	l->reprobe_ns = now + delay_left(m->list_reprobe_in_ns, p->cfg.reprobe_s, m->list_backoff);
	l->wall_ns = m->list_wall_ns;
	l->cpu_ns = m->list_cpu_ns;
	l->first_ns = m->list_first_ns;
	l->ahead_ns = m->list_ahead_ns;
	l->own_ns = m->list_own_ns;
	if (m->verdict == POL_FAST && m->fast_backoff) {
		uint64_t max = FAST_TRUST_NS * m->fast_backoff;
		fs->fast_backoff = m->fast_backoff;
		fs->rejudge_after_ns = now + (m->rejudge_in_ns < max ? m->rejudge_in_ns : max);
	}
	return fs;
}
