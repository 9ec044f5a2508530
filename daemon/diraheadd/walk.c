/* SPDX-License-Identifier: LGPL-2.1-or-later OR BSD-2-Clause */
#include "walk.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include "budget.h"
#include "decisions.h"
#include "detector.h"
#include "fsknow.h"
#include "fsmagic.h"
#include "host.h"
#include "log.h"
#include "monoclock.h"
#include "opener.h"
#include "policy.h"
#include "procdir.h"
#include "start.h"
#include "wtree.h"

/* Directories a walk knows at once (listed, or seen in a listing): memory stays bounded on any
 * tree; beyond it subdirectories are not recorded and the walk narrows to what it has. */
#define WALK_MAX_NODES 65536
/* Listings in a row that the tree cannot place before a walk counts its walker as gone: a
 * walker ahead of the walk lists directories whose parents the walk has not seen yet. */
#define WALK_MAX_STRAYS 16
/* Levels above its root a walk recognises: a pre-order walker that leaves the walk's subtree
 * lists a child of one of them next (find from /usr/include whose first walk began in c++/12). */
#define WALK_ANCESTORS START_ANCESTORS
/* Processes watched at once for a walk that would list only (struct walk_cand), and the
 * unrelated listings after which one is no longer watched. */
#define WALK_MAX_CANDS 64
#define WALK_CAND_STRAYS 4

struct walk;
static const struct host_ops walk_ops;

/* A walk's life.  OPENING: its top is being opened (no tree yet); WALKING: listing ahead of
 * the program; ENDED (terminal): counted as ended, its directories still cancelling (freed
 * once none is open). */
enum walk_life { WALK_OPENING, WALK_WALKING, WALK_ENDED };

struct walk {
	struct walk *next;
	struct walk_mgr *mgr;
	uint64_t id;
	uint32_t tgid, dev_major, dev_minor;
	uint64_t magic, mnt_id;
	dev_t sdev;                 /* the device stat reports for the root (not BPF's s_dev on btrfs) */
	uint64_t top_ino, top_parent_ino;
	uint64_t up[WALK_ANCESTORS];/* the root's ancestors on its mount, nearest first (0: none):
				     * a listing of another child of one re-roots the walk there */
	int up_fd[WALK_ANCESTORS];  /* O_PATH fds of them, held: a re-rooted walk opens its top by
				     * them, not through the program's fds (closed by then) */
	char comm[DIRAHEAD_COMM_LEN];
	char path[DIRAHEAD_PATH_LEN];
	struct wnode *root, *cursor;
	struct wtree tree;          /* the directories it knows (wtree.h) */
	struct wnode *zombies;      /* dropped, their dirs still cancelling */
	uint64_t pending_ino;       /* the program lists this one; not seen by the walk yet */
	unsigned strays;            /* listings in a row the tree could not place */
	unsigned open, dirs_ahead;
	unsigned window;            /* directories ahead allowed now: narrows on skips, AIMD */
	uint64_t entries_ahead, entries, visited;
	/* for the time saved (policy_saved_walk_s): directories the program listed after the walk
	 * had listed them whole, entries fetched in directories it listed */
	uint64_t listed_ahead, entries_used;
	struct pol_waits waits;     /* what its requests waited */
	struct pol_waits lists;     /* what its listings of directories waited */
	unsigned votes_readdir, votes_name;
	/* List only (DIRAHEAD_DIR_LIST_ONLY): where the program's stats are fast or prefetching
	 * them does not pay, but its listings wait on the filesystem (sshfs, readdirplus) */
	bool list_only;
	/* Where the cost is (policy.h, struct pol_depths): per depth below the top, whether a
	 * list-only walk fetches the entries there after all, because its program's stats blocked
	 * there; rejudge: it may (its listing-only is the top's `fast`, not a no_gain) */
	struct pol_depths depths;
	bool rejudge;
	/* Lookups in one directory serialize there (fsknow FSKNOW_NO_LOOKUPS: sshfs): each one the
	 * walk sends into the directory the program stats queues in front of the program's own,
	 * and its listings ahead save nothing (the kernel keeps no FUSE listing).  So it fetches
	 * the entries of directories ahead of the program, and lists only where the program is
	 * first; in one it catches up with, one request at a time. */
	bool serial;
	/* It follows a program's runs of stats by name, not its listings (walk.h): BPF knows no
	 * walker, and a directory whose run the walk did not hear of may still have been used */
	bool by_runs;
	/* what the listing time (dirahead_event.list_ns) of the directory the program listed
	 * last is a sample of (policy_list_kind) */
	enum pol_list_kind last_listed_ahead;
	struct dirahead_cred cred;  /* the walker's: every directory is listed and fetched so */
	uint64_t cgroup_id;
	enum walk_life life;
	uint64_t start_ns, last_ns;
};

/* A process whose scan was skipped (its stats are fast, or prefetching them does not pay on
 * that filesystem) is watched for one more listing: if it goes below or beside the directory it
 * scanned, it walks, and a walk that lists ahead of it may still save it its listings. */
struct walk_cand {
	uint32_t tgid;
	uint64_t ino, parent_ino;   /* what it lists now (first: the scan's directory) */
	unsigned strays;            /* listings since that were not of a child or sibling */
	uint64_t since_ns;
	bool scanned;               /* ev is the scan of ino (else of a directory it left since) */
	struct dirahead_event ev;
};

struct walk_mgr {
	struct dd_config cfg;
	struct detector *det;
	struct dd_stats *st;
	struct host *host;          /* the engine, the openers, the cost model (host.h) */
	struct dirahead_engine *e;
	struct policy *pol;
	struct opener *openers;     /* shared with the scans (opener.h) */
	bool (*room)(void *ctx, uint32_t uid, uint64_t cgroup);
	void *room_ctx;
	struct walk *walks;
	unsigned n;
	uint64_t next_id;
	struct walk_cand cands[WALK_MAX_CANDS];
	unsigned ncands;
	void (*changed)(void *ctx);  /* walk_mgr_set_watch */
	void *changed_ctx;
	bool rejudging;             /* walk_mgr_rejudging() when last told */
};


static bool waits_for_signal(const struct walk *w)
{
	return w->life != WALK_ENDED && w->rejudge && w->list_only &&
	       !policy_walk_fetches(&w->depths);
}

bool walk_mgr_rejudging(const struct walk_mgr *m)
{
	for (const struct walk *w = m->walks; w; w = w->next)
		if (waits_for_signal(w))
			return true;
	return false;
}

void walk_mgr_set_watch(struct walk_mgr *m, void (*changed)(void *ctx), void *ctx)
{
	m->changed = changed;
	m->changed_ctx = ctx;
}

/* After anything that may change walk_mgr_rejudging(): tell the watcher if it did. */
static void tell_watch(struct walk_mgr *m)
{
	bool now = walk_mgr_rejudging(m);
	if (now == m->rejudging)
		return;
	m->rejudging = now;
	if (m->changed)
		m->changed(m->changed_ctx);
}

static struct walk *walk_of(struct walk_mgr *m, uint32_t tgid)
{
	for (struct walk *w = m->walks; w; w = w->next)
		if (w->tgid == tgid && w->life != WALK_ENDED)
			return w;
	return NULL;
}

/* n's fd is needed no longer once no kid is to be opened under it (and it is not open). */
static void release_hold(struct wnode *n)
{
	if (n->hold && !n->kids_new && !n->kids_lo && n->state != WN_OPEN) {
		dirahead_dirfd_put(n->hold);
		n->hold = NULL;
	}
}

/* A node leaves WN_NEW (opened, or dropped): its parent may let go of its fd. */
static void left_new(struct wnode *n)
{
	wtree_new_below_add(n, -1);
	struct wnode *p = n->parent;
	if (p && p->kids_new) {
		p->kids_new--;
		release_hold(p);
	}
}

/* n, listed only ahead of the program, is no longer one whose entries may be fetched later
 * (the program listed it, it is dropped, or it is being fetched now). */
static void lo_done(struct wnode *n)
{
	if (!n->lo_ahead)
		return;
	n->lo_ahead = false;
	struct wnode *p = n->parent;
	if (p) {
		assert(p->kids_lo > 0);
		p->kids_lo--;
		release_hold(p);
	}
}

static void free_walk(struct walk *w);

/* Drops a subtree the program passed over (or the whole tree at the end): what was fetched
 * ahead and never listed is wasted; open directories are cancelled and freed when done. */
static void drop_subtree(struct walk *w, struct wnode *n)
{
	struct walk_mgr *m = w->mgr;
	lo_done(n);
	for (uint32_t i = n->first; i < n->nkids; i++)
		drop_subtree(w, n->kids[i]);
	free(n->kids);
	n->kids = NULL;
	n->nkids = n->first = n->capkids = 0;
	wtree_forget(&w->tree, n);
	if (n->ahead) {
		n->ahead = false;
		w->dirs_ahead--;
		w->entries_ahead -= n->completed;
		m->st->entries_wasted += n->completed;
		m->st->walk_dirs_skipped++;
		/* the program passes over what we fetch ahead: look less far ahead (a run the
		 * detector did not report, below unlisted_stats names, passes over nothing) */
		if (w->life != WALK_ENDED && !w->by_runs)
			w->window = w->window > 2 ? w->window / 2 : 1;
	}
	dirahead_dirfd_put(n->hold);
	n->hold = NULL;
	n->parent = NULL;
	if (n->dir) {
		n->zombie = true;
		n->zombie_next = w->zombies;
		w->zombies = n;
		dirahead_dir_cancel(n->dir);
		return;
	}
	wtree_node_free(n);
}

static struct pol_fs *walk_fs(struct walk *w);

static void end_walk(struct walk *w, enum dd_end_reason why)
{
	struct walk_mgr *m = w->mgr;
	if (w->life == WALK_ENDED)
		return;
	w->life = WALK_ENDED;
	m->st->walks_ended[why]++;
	tell_watch(m);
	/* nothing of the filesystem stays held once the walk is over (an unmount must succeed) */
	for (unsigned i = 0; i < WALK_ANCESTORS; i++)
		if (w->up_fd[i] >= 0) {
			close(w->up_fd[i]);
			w->up_fd[i] = -1;
		}
	detector_walker_clear(m->det, w->tgid);
	/* the time it saved its program, booked once, here */
	bool measured;
	double saved = policy_saved_walk_s(walk_fs(w), w->listed_ahead, w->entries_used, &w->waits,
					   &w->lists, policy_reads_shared(w->magic, w->dev_major),
					   &measured);
	dd_stats_saved(m->st, walk_fs(w), fsmagic_name(w->magic), saved, measured, true);
	log_debug("walk end: pid %u (%s) below %s: %s, %llu directories listed by it, %llu entries "
		  "prefetched, %.3f s, saved %s%.3f s (%llu listed ahead, %llu entries used; its "
		  "requests %.3f s, in flight %.3f s, its listings %.3f s, in flight %.3f s; %.0f units; a "
		  "stat %.0f us on its own, a listing %.0f us, the daemon's first %.0f us)",
		  w->tgid, w->comm,
		  w->path, dd_end_reason_names[why], (unsigned long long)w->visited,
		  (unsigned long long)w->entries, (double)(mono_ns() - w->start_ns) / 1e9,
		  measured ? "~" : "(unjudged) ", saved, (unsigned long long)w->listed_ahead,
		  (unsigned long long)w->entries_used, w->waits.lat_sum_ns / 1e9,
		  w->waits.busy_ns / 1e9, w->lists.lat_sum_ns / 1e9, w->lists.busy_ns / 1e9,
		  policy_waits_units(&w->waits),
		  walk_fs(w)->before_ns / 1e3, walk_fs(w)->list.own_ns / 1e3,
		  walk_fs(w)->list.first_ns / 1e3);
	struct dec_nums dn = { .cost_ns = why == DD_END_NO_GAIN ? walk_fs(w)->list.own_ns : -1,
			       .with_ns = why == DD_END_NO_GAIN ? walk_fs(w)->list.ahead_ns : -1,
			       .stats = w->visited, .prefetched = w->entries,
			       .has_saved = measured, .saved_s = saved };
	decisions_add(DEC_ENDED, DEC_WALK, w->tgid, w->cred.euid, w->comm,
		      w->path, dd_end_reason_names[why], &dn);
	if (w->root)
		drop_subtree(w, w->root);
	w->root = w->cursor = NULL;
	if (!w->open)
		free_walk(w);
}

static void free_walk(struct walk *w)
{
	struct walk_mgr *m = w->mgr;
	for (struct walk **pp = &m->walks; *pp; pp = &(*pp)->next)
		if (*pp == w) {
			*pp = w->next;
			break;
		}
	assert(m->n > 0);
	m->n--;
	wtree_destroy(&w->tree);
	while (w->zombies) {
		struct wnode *z = w->zombies;
		w->zombies = z->zombie_next;
		wtree_node_free(z);
	}
	free(w);
}

static struct pol_fs *walk_fs_ev(struct walk_mgr *m, const struct dirahead_event *ev)
{
	return policy_fs_mount(m->pol, ev->dev_major, ev->dev_minor, ev->magic, ev->mnt_id, mono_ns());
}

static struct pol_fs *walk_fs(struct walk *w)
{
	return policy_fs_mount(w->mgr->pol, w->dev_major, w->dev_minor, w->magic, w->mnt_id,
			       mono_ns());
}

static struct dirahead_dir_opts dir_opts(struct walk *w, struct wnode *n)
{
	struct walk_mgr *m = w->mgr;
	struct pol_fs *fs = walk_fs(w);
	unsigned depth = policy_enabled(m->pol) ? policy_depth(m->pol, fs) : m->cfg.depth_per_scan;
	n->lo = w->serial ? n->visited
			  : policy_walk_fetch(&w->depths, w->list_only, n->depth) == POL_FETCH_LIST;
	return (struct dirahead_dir_opts){ .size = sizeof(struct dirahead_dir_opts),
					   .order = DIRAHEAD_ORDER_READDIR, .limit = UINT64_MAX,
					   .depth = depth, .data = n,
					   .flags = n->lo ? DIRAHEAD_DIR_LIST_ONLY
						  : policy_inode_groups(w->magic, w->dev_major)
						  ? DIRAHEAD_DIR_SHARED_READS : 0,
					   .cred = &w->cred };
}


static bool open_node(struct walk *w, struct wnode *n)
{
	struct walk_mgr *m = w->mgr;
	struct dirahead_dir_opts o = dir_opts(w, n);
	if (!n->parent || !n->parent->hold) {
		left_new(n);
		n->state = WN_FAILED;
		return false;
	}
	n->dir = dirahead_dir_submitunder(m->e, n->parent->hold, n->name, &o);
	left_new(n);
	if (!n->dir) {
		n->state = WN_FAILED;
		m->st->walk_not_entered++;
		return false;
	}
	n->state = WN_OPEN;
	w->open++;
	m->st->walk_dirs_opened++;
	if (!n->visited) {
		n->ahead = true;
		w->dirs_ahead++;
	}
	return true;
}

static void pump(struct walk *w)
{
	struct walk_mgr *m = w->mgr;
	if (w->window > m->cfg.walk_ahead_dirs) /* lowered by a reload */
		w->window = m->cfg.walk_ahead_dirs;
	while (w->life != WALK_ENDED && w->open < m->cfg.walk_open_dirs &&
	       w->dirs_ahead < w->window && w->entries_ahead < m->cfg.walk_ahead_entries) {
		struct wnode *n = wtree_next_new(&w->tree, w->root, w->cursor);
		if (!n)
			break;
		open_node(w, n);
	}
}

/* The program went on to `n` (a directory of the walk), its listing of it started at `from_ns`
 * (mono_ns(); 0: not known): hand it over and follow. */
static void visit(struct walk *w, struct wnode *n, uint64_t from_ns)
{
	struct walk_mgr *m = w->mgr;
	if (n->visited) {
		w->cursor = n;
		return;
	}
	n->visited = true;
	w->visited++;
	lo_done(n);
	/* For the cost model's listing samples: read to its end by the walk before the program
	 * began to list it (ahead), or not opened by the walk at all (its own).  One still being
	 * read when the program opened it is neither: the program waited on the walk's own reads
	 * (on a slow volume, both wait for the same block), and the event that says so comes
	 * after the walk's reading ended; a sample of either kind would mislead. */
	w->last_listed_ahead = policy_list_kind(n->ahead, n->eof_ns, from_ns);
	if (w->last_listed_ahead == POL_LIST_AHEAD)
		w->listed_ahead++;
	if (w->serial && n->dir && !n->lo)
		dirahead_dir_set_depth(n->dir, 1); /* caught up: see struct walk.serial */
	if (n->ahead) {
		n->ahead = false;
		w->dirs_ahead--;
		w->entries_ahead -= n->completed;
		m->st->walk_dirs_ahead++;
		m->st->walk_entries_used += n->completed;
		w->entries_used += n->completed;
		if (w->window < m->cfg.walk_ahead_dirs)
			w->window++;
	} else if (n->state == WN_NEW) {
		m->st->walk_dirs_late++;
		open_node(w, n); /* the program is there first: fetch it now, whatever the budget */
	}
	struct wnode *p = n->parent;
	if (p) {
		/* Its order: which comes first of the two siblings it listed last? */
		if (p->last_name && strcmp(p->last_name, n->name)) {
			w->votes_readdir += n->index > p->last_index;
			w->votes_name += strcmp(n->name, p->last_name) > 0;
			bool by_name = w->votes_name > w->votes_readdir;
			if (by_name != w->tree.by_name) {
				w->tree.by_name = by_name;
				wtree_sort(&w->tree, w->root);
				log_debug("walk of pid %u: subdirectories in %s order", w->tgid,
					  by_name ? "name" : "readdir");
			}
		}
		free(p->last_name);
		p->last_name = strdup(n->name);
		p->last_index = n->index;
	}
	/* Everything before `n` in the program's order was passed over (pruned, excluded, or
	 * not of interest): drop it.  Only once its order is known for sure; a guess would drop
	 * what it visits next. */
	unsigned yes = w->tree.by_name ? w->votes_name : w->votes_readdir;
	unsigned no = w->tree.by_name ? w->votes_readdir : w->votes_name;
	if (yes >= 2 && yes >= 4 * no) {
		for (struct wnode *k = n; k->parent; k = k->parent) {
			struct wnode *a = k->parent;
			int64_t pos = wtree_kid_pos(&w->tree, a, k);
			if (pos < 0)
				break;
			for (uint32_t i = a->first; i < (uint32_t)pos; i++) {
				struct wnode *x = a->kids[i];
				if (x->new_below)
					wtree_new_below_add(x, -(int)x->new_below);
				if (x->state == WN_NEW)
					left_new(x);
				drop_subtree(w, x);
			}
			a->first = (uint32_t)pos;
		}
	}
	w->cursor = n;
}

static struct wnode *node_new(struct walk *w, struct wnode *parent, const char *name,
			      uint64_t index, uint64_t ino)
{
	struct wnode *n = wtree_node_new(&w->tree, w, parent, name, index, ino);
	if (n)
		n->hd.ops = &walk_ops;
	return n;
}

static void walk_fs_of(const void *dir_data, struct host_fs *fs)
{
	const struct wnode *n = dir_data;
	const struct walk *w = n->w;
	*fs = (struct host_fs){ w->dev_major, w->dev_minor, w->magic, w->mnt_id, n->lo };
}

static void walk_on_complete(const struct dirahead_completion *c)
{
	struct wnode *n = c->dir_data;
	struct walk *w = n->w;
	struct walk_mgr *m = w->mgr;
	uint64_t got = 1 + c->covered; /* with the entries it read for its inode group */
	n->completed += got;
	uint64_t now = mono_ns();
	policy_waits_add(&w->waits, now, c->latency_ns);
	uint64_t unit = policy_read_unit(w->magic);
	if (unit && c->stx && policy_reads_shared(w->magic, w->dev_major))
		policy_waits_read(&w->waits, c->stx->stx_ino, unit);
	if (!n->eof_ns && n->dir) { /* by now at the latest (visit's listing samples) */
		struct dirahead_dir_info info;
		dirahead_dir_get_info(n->dir, &info);
		if (info.eof)
			n->eof_ns = now;
	}
	if (!c->error) {
		w->entries += got;
		if (n->ahead)
			w->entries_ahead += got;
		else if (n->visited) {
			m->st->walk_entries_used += got;
			w->entries_used += got;
		}
	}
	if (n->zombie || w->life == WALK_ENDED || !c->stx || !S_ISDIR(c->stx->stx_mode))
		return;
	/* As the program's own walk would see it without crossing filesystems: a mount point or
	 * automount point is not entered (a symlink is no directory with AT_SYMLINK_NOFOLLOW).
	 * Where statx reports mount roots, that decides (a btrfs subvolume has a device of its own
	 * but is no mount, and the program enters it); elsewhere a change of device does. */
	bool mount_known = c->stx->stx_attributes_mask & STATX_ATTR_MOUNT_ROOT;
	if ((c->stx->stx_attributes & (STATX_ATTR_MOUNT_ROOT | STATX_ATTR_AUTOMOUNT)) ||
	    (!mount_known && makedev(c->stx->stx_dev_major, c->stx->stx_dev_minor) != w->sdev)) {
		m->st->walk_not_entered++;
		return;
	}
	if (w->tree.nodes >= WALK_MAX_NODES)
		return;
	if (!n->hold && !(n->hold = dirahead_dir_hold(c->dir)))
		return;
	struct wnode *k = node_new(w, n, c->name, c->index, c->stx->stx_ino);
	if (!k)
		return;
	if (!wtree_add_kid(&w->tree, n, k)) {
		wtree_forget(&w->tree, k);
		wtree_node_free(k);
		return;
	}
	n->kids_new++;
	wtree_new_below_add(k, 1);
	if (w->pending_ino == k->ino) {
		w->pending_ino = 0;
		visit(w, k, 0); /* listed by the program before the walk knew it: its own */
	}
	pump(w);
}

/* n was listed only, ahead of the program, and the depth it is at is judged to pay now: it is
 * opened again in its turn (its listing is cached by now) and its entries fetched. */
static void refetch(struct walk *w, struct wnode *n)
{
	struct walk_mgr *m = w->mgr;
	struct wnode *p = n->parent;
	assert(n->lo_ahead && n->state == WN_DONE && p && p->hold && n->ahead && !n->visited);
	n->lo_ahead = false;
	p->kids_lo--;
	n->ahead = false;
	w->dirs_ahead--;
	w->entries_ahead -= n->completed;
	n->completed = 0;
	n->state = WN_NEW;
	p->kids_new++;
	wtree_new_below_add(n, 1);
	m->st->walk_dirs_refetched++;
}

/* Every directory below n listed only ahead of the program whose depth pays now: refetched. */
static void refetch_below(struct walk *w, struct wnode *n)
{
	if (n->lo_ahead && n->state == WN_DONE &&
	    policy_walk_fetch(&w->depths, w->list_only, n->depth) == POL_FETCH_ENTRIES)
		refetch(w, n);
	for (uint32_t i = n->first; i < n->nkids; i++)
		refetch_below(w, n->kids[i]);
}


/* Listings that wait for nothing end a listing-only walk, but not in its first
 * WALK_JUDGE_GRACE_NS while its depths may still be judged (w->rejudge): the top of a tree is
 * not the tree.  ext4 reads sibling directories' blocks ahead of each listing, so the upper
 * levels list fast, while the leaves' inodes are what blocks (a slow volume: 0.5 ms a read);
 * a walk ended after its second listing was gone before the program's first stat there blocked
 * (walk_mgr_blocked). */
#define WALK_JUDGE_GRACE_NS (2000ull * 1000000ull)
static bool judging_depths(const struct walk *w, uint64_t now)
{
	return w->rejudge && now - w->start_ns < WALK_JUDGE_GRACE_NS;
}
static void walk_on_dir_done(struct dirahead_dir *dir, void *dir_data, int error)
{
	struct wnode *n = dir_data;
	struct dirahead_dir_info info;
	dirahead_dir_get_info(dir, &info);
	struct walk *w = n->w;
	struct walk_mgr *m = w->mgr;
	n->dir = NULL;
	assert(w->open > 0);
	w->open--;
	w->last_ns = mono_ns();
	if (n->zombie) {
		for (struct wnode **pp = &w->zombies; *pp; pp = &(*pp)->zombie_next)
			if (*pp == n) {
				*pp = n->zombie_next;
				break;
			}
		wtree_node_free(n);
		if (w->life == WALK_ENDED && !w->open)
			free_walk(w);
		return;
	}
	n->state = error ? WN_FAILED : WN_DONE;
	if (!error && !n->eof_ns)
		n->eof_ns = w->last_ns;
	if (error && error != ECANCELED) {
		m->st->walk_not_entered++;
		log_debug("walk of pid %u: %s: %s", w->tgid, n->name, strerror(error));
	}
	release_hold(n);
	if (!error && n != w->root && info.list_ns) /* what the program's listing would wait */
		policy_waits_add(&w->lists, mono_ns(), info.list_ns);
	/* listed only, ahead: its entries may be fetched still, if its depth is judged to pay */
	if (!error && n->lo && n->ahead && w->rejudge && n->parent && n->parent->hold &&
	    w->life == WALK_WALKING) {
		n->lo_ahead = true;
		n->parent->kids_lo++;
		if (policy_walk_fetch(&w->depths, w->list_only, n->depth) == POL_FETCH_ENTRIES)
			refetch(w, n); /* judged so while it was being listed */
	}
	/* (not the top: the program has just listed it itself, it is cached whatever the
	 * filesystem) */
	if (!error && n != w->root && policy_enabled(m->pol) &&
	    policy_list_account(m->pol, walk_fs(w), info.list_ns, info.list_cpu_ns,
				info.first_read_ns, mono_ns()) ==
		    POL_FAST && w->list_only && !policy_walk_fetches(&w->depths) &&
	    !judging_depths(w, mono_ns())) {
		/* listing here waits for nothing: ahead of the program it only takes its CPU */
		end_walk(w, DD_END_FAST);
		return;
	}
	pump(w);
}

static const struct host_ops walk_ops = {
	.complete = walk_on_complete, .fs_of = walk_fs_of, .dir_done = walk_on_dir_done,
};

static struct walk *walk_by_id(struct walk_mgr *m, uint64_t id)
{
	for (struct walk *w = m->walks; w; w = w->next)
		if (w->id == id)
			return w;
	return NULL;
}

/* The walk's top is open (fd, taken over): list from there.  up, up_fd: its ancestors (taken
 * over too).  false: the walk ended. */
static bool walk_root(struct walk *w, int fd, const uint64_t *up, const int *up_fd)
{
	struct walk_mgr *m = w->mgr;
	memcpy(w->up, up, sizeof(w->up));
	memcpy(w->up_fd, up_fd, sizeof(w->up_fd));
	unsigned held = 0;
	for (int i = 0; i < WALK_ANCESTORS; i++)
		held += up_fd[i] >= 0;
	/* (none held: a walk that the program leaves ends there, re-rooted nowhere) */
	log_debug("walk of pid %u: %u of its top's ancestors held", w->tgid, held);
	struct wnode *root = node_new(w, NULL, ".", 0, w->top_parent_ino);
	if (!root) {
		close(fd);
		end_walk(w, DD_END_OPEN_FAILED);
		return false;
	}
	struct stat st;
	w->sdev = fstat(fd, &st) == 0 ? st.st_dev : makedev(w->dev_major, w->dev_minor);
	root->visited = true;
	assert(w->life == WALK_OPENING);
	w->life = WALK_WALKING;
	w->root = w->cursor = root;
	struct dirahead_dir_opts o = dir_opts(w, root);
	root->dir = dirahead_dir_submit(m->e, fd, &o);
	close(fd);
	if (!root->dir) {
		end_walk(w, DD_END_OPEN_FAILED);
		return false;
	}
	root->state = WN_OPEN;
	w->open++;
	w->visited++;
	return true;
}

/* The opener is done (on the event loop): list from the top, or end the walk. */
static void opened(struct start_job *r)
{
	assert(r->what == START_TOP);
	struct walk *w = walk_by_id(r->owner, r->id);
	if (!w || w->life != WALK_OPENING) {
		start_job_free(r);
		return;
	}
	if (r->fd < 0) {
		log_debug("walk of pid %u: cannot open %s: %s (its scan: ino %llu, parent %llu, "
			  "ref %#x)", w->tgid, w->path, strerror(-r->fd),
			  r->has_top ? (unsigned long long)r->near.ino : 0ull,
			  r->has_top ? (unsigned long long)r->near.parent_ino : 0ull,
			  r->has_top ? r->near.ref : 0u);
		start_job_free(r);
		end_walk(w, DD_END_OPEN_FAILED);
		return;
	}
	walk_root(w, r->fd, r->up, r->up_fd);
	/* all of them the walk's now */
	r->fd = -1;
	for (unsigned i = 0; i < WALK_ANCESTORS; i++)
		r->up_fd[i] = -1;
	start_job_free(r);
}

bool walk_mgr_walking(const struct walk_mgr *m, uint32_t tgid, uint32_t dev_major,
		      uint32_t dev_minor)
{
	bool any = dev_major == UINT32_MAX && dev_minor == UINT32_MAX;
	for (const struct walk *w = m->walks; w; w = w->next)
		if (w->tgid == tgid && w->life != WALK_ENDED &&
		    (any || (w->dev_major == dev_major && w->dev_minor == dev_minor)))
			return true;
	return false;
}

static struct walk_cand *cand_of(struct walk_mgr *m, uint32_t tgid)
{
	for (unsigned i = 0; i < m->ncands; i++)
		if (m->cands[i].tgid == tgid)
			return &m->cands[i];
	return NULL;
}

/* No longer watched; the detector's entry goes too unless a walk takes it over. */
static void cand_drop(struct walk_mgr *m, struct walk_cand *c, bool clear)
{
	if (clear)
		detector_walker_clear(m->det, c->tgid);
	*c = m->cands[--m->ncands];
}

/* Do lookups in one directory serialize on ev's filesystem (struct walk.serial)? */
static bool serial_lookups(struct walk_mgr *m, const struct dirahead_event *ev)
{
	uint32_t fsi = ev->fsinfo | policy_fsinfo(m->pol, ev->dev_major, ev->dev_minor, ev->magic);
	return fsknow_entries(fsi) == FSKNOW_NO_LOOKUPS;
}

/* What kind of walk w is (list only, ahead only, by runs), from ev and its filesystem. */
static void set_kind(struct walk *w, const struct dirahead_event *ev)
{
	struct walk_mgr *m = w->mgr;
	w->by_runs = (ev->flags & DIRAHEAD_EVF_UNLISTED) != 0;
	if (w->by_runs && (ev->flags & DIRAHEAD_EVF_SORTED)) {
		w->tree.by_name = true; /* its names ascend: so do its directories, until it says not */
		w->votes_name = 1;
	}
	w->serial = serial_lookups(m, ev);
	if (w->serial)
		w->list_only = false;
	if (w->list_only && policy_enabled(m->pol))
		w->rejudge = policy_walk_rejudgeable(walk_fs_ev(m, ev), w->serial);
}

/* A new walk of ev's process from the parent of ev's directory, registered, its listings
 * reported by the detector; NULL if none may start. */
static struct walk *walk_new(struct walk_mgr *m, const struct dirahead_event *ev,
			     const char *top_path, bool list_only)
{
	if (!m->cfg.walk_enabled || !ev->parent_ino || ev->parent_ino == ev->ino)
		return NULL;
	/* One walk per process (the detector follows it on one filesystem): a walker now walking
	 * on another filesystem has left the tree of its walk there. */
	for (struct walk *o = m->walks; o; o = o->next)
		if (o->tgid == ev->tgid && o->life != WALK_ENDED &&
		    (o->dev_major != ev->dev_major || o->dev_minor != ev->dev_minor)) {
			end_walk(o, DD_END_LEFT);
			break; /* o may be freed */
		}
	if (m->n >= m->cfg.walk_max || walk_mgr_walking(m, ev->tgid, UINT32_MAX, UINT32_MAX))
		return NULL;
	/* not where requests hang, and not beyond its user's and cgroup's share */
	if (policy_hung(walk_fs_ev(m, ev), mono_ns())) {
		m->st->skips[DD_SKIP_FS_HUNG]++;
		return NULL;
	}
	if (m->room && !m->room(m->room_ctx, ev->cred_euid, ev->cgroup_id)) {
		m->st->skips[DD_SKIP_USER_BUSY]++;
		return NULL;
	}
	/* a [budget] rule holds the filesystem: its requests go through the scans' windows only */
	struct budget_fs bf = { .dev_major = ev->dev_major, .dev_minor = ev->dev_minor,
				.magic_name = fsmagic_name(ev->magic),
				.path = top_path[0] == '/' ? top_path : NULL };
	if (budget_holds(host_budget(m->host), &bf))
		return NULL;
	struct dirahead_cred cred;
	if (procdir_cred(ev, &cred) < 0) { /* all of them, or no walk */
		m->st->skips[DD_SKIP_CRED]++;
		return NULL;
	}
	struct walk_cand *c = cand_of(m, ev->tgid);
	if (c) /* a walk of its own now: the detector's entry is set anew below */
		cand_drop(m, c, false);
	struct walk *w = calloc(1, sizeof(*w));
	if (!w)
		return NULL;
	*w = (struct walk){ .mgr = m, .id = ++m->next_id, .tgid = ev->tgid,
			    .dev_major = ev->dev_major, .dev_minor = ev->dev_minor,
			    .magic = ev->magic, .mnt_id = ev->mnt_id, .top_ino = ev->ino,
			    .top_parent_ino = ev->parent_ino, .pending_ino = ev->ino,
			    .list_only = list_only, .last_listed_ahead = POL_LIST_JOINED };
	for (unsigned i = 0; i < WALK_ANCESTORS; i++)
		w->up_fd[i] = -1;
	w->cred = cred;
	w->cgroup_id = ev->cgroup_id;
	set_kind(w, ev);
	list_only = w->list_only;
	w->start_ns = w->last_ns = mono_ns();
	w->window = m->cfg.walk_ahead_dirs;
	memcpy(w->comm, ev->comm, sizeof(w->comm));
	w->comm[sizeof(w->comm) - 1] = '\0';
	snprintf(w->path, sizeof(w->path), "%s", top_path);
	if (!w->by_runs && detector_walker_set(m->det, ev->tgid, ev->dev_major, ev->dev_minor) < 0) {
		free(w);
		return NULL;
	}
	w->next = m->walks;
	m->walks = w;
	m->n++;
	m->st->walks_started++;
	m->st->walks_list_only += list_only;
	m->st->walks_ahead_only += w->serial;
	m->st->walks_by_runs += w->by_runs;
	tell_watch(m);
	log_debug("walk: pid %u (%s) descends from %s: listing the tree ahead of it%s",
		 w->tgid, w->comm, w->path,
		 list_only ? " (listings only)" : w->serial ? " (fetching ahead of it only)" : "");
	decisions_add(DEC_STARTED, DEC_WALK, w->tgid, w->cred.euid, w->comm,
		      w->path, list_only ? "list" : "prefetch",
		      NULL);
	return w;
}

bool walk_mgr_start(struct walk_mgr *m, const struct dirahead_event *ev,
		    const struct dirahead_event *top_ev, const char *top_path, bool list_only)
{
	struct walk *w = walk_new(m, ev, top_path, list_only);
	if (!w)
		return false;
	struct start_job *job = start_job_new(START_TOP, m, w->id, ev, opened);
	if (job) {
		job->has_top = top_ev != NULL;
		if (top_ev)
			job->near = *top_ev;
		int why = start_run(m->openers, ev->dev_major, ev->dev_minor, ev->cred_euid, job);
		if (!why)
			return true;
		start_job_free(job);
		m->st->skips[why]++;
	}
	end_walk(w, DD_END_OPEN_FAILED);
	return false;
}

void walk_mgr_candidate(struct walk_mgr *m, const struct dirahead_event *ev)
{
	if (!m->cfg.walk_enabled || !m->cfg.walk_list_only || !ev->parent_ino ||
	    ev->parent_ino == ev->ino ||
	    walk_mgr_walking(m, ev->tgid, ev->dev_major, ev->dev_minor))
		return;
	/* (a walk of it on another filesystem does not stop it: the program is here now, and a
	 * walk from here ends that one; where lookups serialize, its walk fetches ahead of it:
	 * listing ahead is not judged) */
	if (policy_enabled(m->pol) && !serial_lookups(m, ev) &&
	    !policy_list_allowed(m->pol, policy_fs_mount(m->pol, ev->dev_major, ev->dev_minor,
							 ev->magic, ev->mnt_id, mono_ns()),
				 mono_ns()))
		return;
	struct walk_cand *c = cand_of(m, ev->tgid);
	if (!c) {
		if (m->ncands == WALK_MAX_CANDS) /* the oldest makes room */
			for (unsigned i = 0; i < m->ncands; i++)
				if (!c || m->cands[i].since_ns < c->since_ns)
					c = &m->cands[i];
		if (c)
			detector_walker_clear(m->det, c->tgid);
		else
			c = &m->cands[m->ncands++];
	}
	*c = (struct walk_cand){ .tgid = ev->tgid, .ino = ev->ino, .parent_ino = ev->parent_ino,
				 .since_ns = mono_ns(), .scanned = true, .ev = *ev };
	/* its listings there are reported, one event each, whatever the mute */
	if (detector_walker_set(m->det, ev->tgid, ev->dev_major, ev->dev_minor) < 0)
		cand_drop(m, c, false);
	else
		m->st->walk_candidates++;
}

/* A listing of a watched process: a child or sibling of the directory it scanned makes it a
 * walker; anything else is what it scans now, watched in its place a few times. */
static void cand_listing(struct walk_mgr *m, const struct dirahead_event *ev)
{
	struct walk_cand *c = cand_of(m, ev->tgid);
	if (!c)
		return;
	bool child = ev->parent_ino == c->ino;
	bool sibling = c->parent_ino && ev->parent_ino == c->parent_ino && ev->ino != c->ino;
	if (!child && !sibling) {
		if (++c->strays > WALK_CAND_STRAYS) {
			cand_drop(m, c, true);
			return;
		}
		c->ino = ev->ino;
		c->parent_ino = ev->parent_ino;
		c->scanned = false;
		return;
	}
	char top[DIRAHEAD_PATH_LEN];
	struct dirahead_event near = c->ev;
	bool scanned = c->scanned;
	if (child && scanned && (near.ref & DIRAHEAD_REF_PATH))
		snprintf(top, sizeof(top), "%s", near.path);
	else
		snprintf(top, sizeof(top), "(dev %u:%u ino %llu)", ev->dev_major, ev->dev_minor,
			 (unsigned long long)ev->parent_ino);
	cand_drop(m, c, false);
	/* (its scan names the top, or a directory below it: start.c climbs from there) */
	if (!walk_mgr_start(m, ev, &near, top, true))
		detector_walker_clear(m->det, ev->tgid);
}

bool walk_mgr_blocked(struct walk_mgr *m, uint32_t tgid, uint32_t dev_major, uint32_t dev_minor,
		      uint64_t ino)
{
	struct walk *w = walk_of(m, tgid);
	if (!w || !w->rejudge || !w->list_only || w->dev_major != dev_major ||
	    w->dev_minor != dev_minor)
		return false;
	/* where it blocked: the directory it stats in, else where it lists now; before the top is
	 * open, the directory it listed first (a child of the top) is all there is */
	unsigned depth;
	struct wnode *n = ino && w->life == WALK_WALKING ? wtree_find(&w->tree, ino) : NULL;
	if (!n && w->life == WALK_WALKING)
		n = w->cursor;
	if (n)
		depth = n->depth;
	else if (w->life == WALK_OPENING && (!ino || ino == w->top_ino))
		depth = 1;
	else
		return false;
	if (!policy_walk_blocked(&w->depths, depth))
		return false;
	m->st->walk_depths_rejudged++;
	tell_watch(m);
	log_debug("walk of pid %u below %s: its stats block at depth %u: fetching the entries "
		  "there", w->tgid, w->path, depth);
	decisions_add(DEC_STARTED, DEC_WALK, w->tgid, w->cred.euid, w->comm,
		      w->path, "fetch-depth", NULL);
	if (w->life == WALK_WALKING) {
		refetch_below(w, w->root);
		pump(w);
	}
	return true;
}

/* What the program's listing of the directory it lists now cost it (BPF times it), as a sample
 * for the cost model.  true: the walk ended (its listings do not pay). */
static bool judge_listing(struct walk *w, const struct dirahead_event *ev)
{
	struct walk_mgr *m = w->mgr;
	enum pol_list_kind kind = w->last_listed_ahead;
	w->last_listed_ahead = POL_LIST_JOINED;
	if (!ev->list_ns || kind == POL_LIST_JOINED || !policy_enabled(m->pol))
		return false;
	struct pol_fs *fs = walk_fs(w);
	uint64_t judged = fs->list.judged;
	enum pol_verdict v = policy_list_judge(m->pol, fs, kind == POL_LIST_AHEAD, ev->list_ns,
					     mono_ns());
	if (fs->list.judged != judged)
		log_debug("walk of pid %u: its listings took %.0f us listed ahead, %.0f us its own "
			  "(%u), the daemon's %.0f us: %s", w->tgid, fs->list.ahead_ns / 1e3,
			  fs->list.own_ns / 1e3, fs->list.n_own, fs->list.first_ns / 1e3,
			  pol_verdict_names[v]);
	if (v == POL_NO_GAIN && w->list_only && !policy_walk_fetches(&w->depths)) {
		end_walk(w, DD_END_NO_GAIN);
		return true;
	}
	return false;
}

static void follow(struct walk *w, const struct dirahead_event *ev);

/* A run reported after one further on in the same directory (the openers resolve runs by path
 * in parallel, and out of order): the program is past it, the walk stays where it is (a step
 * back would count as votes for another order, and what it passed as passed over). */
static bool stale_run(struct walk *w, const struct wnode *n)
{
	const struct wnode *c = w->cursor;
	if (!c || c == n || !n->parent || c->parent != n->parent)
		return false;
	int64_t pn = wtree_kid_pos(&w->tree, n->parent, n);
	int64_t pc = wtree_kid_pos(&w->tree, c->parent, c);
	return pn >= 0 && pc >= 0 && pn < pc;
}

/* ev's credentials are the walk's; else (dropped privileges) the walk ends: never served
 * with the old ones. */
static bool cred_holds(struct walk *w, const struct dirahead_event *ev)
{
	if (procdir_cred_same(&w->cred, ev))
		return true;
	end_walk(w, DD_END_CRED);
	return false;
}

/* The program of walk w is in n now (ev: its listing, or its run of stats there). */
static void moved_to(struct walk *w, struct wnode *n, const struct dirahead_event *ev)
{
	if (w->by_runs && stale_run(w, n))
		return;
	w->pending_ino = 0;
	w->strays = 0;
	visit(w, n, ev->list_ns ? ev->ts_ns - ev->list_ns : ev->ts_ns);
	if (judge_listing(w, ev))
		return;
	pump(w);
}

void walk_mgr_on_listing(struct walk_mgr *m, const struct dirahead_event *ev)
{
	struct walk *w = walk_of(m, ev->tgid);
	m->st->walk_listings++;
	/* a candidate on another filesystem than its walk's: BPF reports its listings there now
	 * (walk_mgr_candidate), and a walk from there ends the old one */
	if (w && (w->dev_major != ev->dev_major || w->dev_minor != ev->dev_minor) &&
	    cand_of(m, ev->tgid))
		w = NULL;
	if (!w) {
		cand_listing(m, ev);
		return;
	}
	follow(w, ev);
}

void walk_mgr_on_run(struct walk_mgr *m, const struct dirahead_event *ev)
{
	struct walk *w = walk_of(m, ev->tgid);
	if (w && w->by_runs && w->dev_major == ev->dev_major && w->dev_minor == ev->dev_minor &&
	    ev->parent_ino)
		follow(w, ev);
}

/* The node of the walk's tree a run by path is in, by its names below the walk's top as the
 * program names it (w->path): NULL if the path says nothing (another name for the top, a
 * directory the walk has not listed yet). */
static struct wnode *run_node(struct walk *w, const char *path)
{
	size_t n = strlen(w->path);
	if (!w->by_runs || w->life != WALK_WALKING || !w->root || w->path[0] == '(' ||
	    strncmp(path, w->path, n) || path[n] != '/')
		return NULL;
	struct wnode *node = w->root;
	for (const char *p = path + n; node && *p;) {
		while (*p == '/')
			p++;
		size_t len = strcspn(p, "/");
		if (!len)
			break;
		node = wtree_kid_named(&w->tree, node, p, len);
		p += len;
	}
	return node;
}

bool walk_mgr_run_at(struct walk_mgr *m, const struct dirahead_event *ev)
{
	struct walk *w = walk_of(m, ev->tgid);
	if (!w || !(ev->ref & DIRAHEAD_REF_PATH) || ev->name_dev_major != w->dev_major ||
	    ev->name_dev_minor != w->dev_minor)
		return false;
	char path[DIRAHEAD_PATH_LEN];
	snprintf(path, sizeof(path), "%.*s", DIRAHEAD_PATH_LEN - 1, ev->path);
	struct wnode *n = run_node(w, path);
	if (!n)
		return false;
	w->last_ns = mono_ns();
	if (!cred_holds(w, ev))
		return false;
	moved_to(w, n, ev);
	return true;
}

/* The program of walk w is in ev's directory now (it lists it, or its run of stats is there). */
static void follow(struct walk *w, const struct dirahead_event *ev)
{
	struct walk_mgr *m = w->mgr;
	w->last_ns = mono_ns();
	if (!cred_holds(w, ev))
		return;
	if (w->life == WALK_OPENING) { /* the top is still being opened */
		w->pending_ino = ev->ino;
		return;
	}
	struct wnode *n = wtree_find(&w->tree, ev->ino);
	if (n) {
		moved_to(w, n, ev);
		return;
	}
	struct wnode *p = wtree_find(&w->tree, ev->parent_ino);
	if (p) {
		/* below the tree, not seen yet (its parent's listing is under way) */
		w->pending_ino = ev->ino;
		w->strays = 0;
		w->cursor = p;
		return;
	}
	/* A sibling of the top: the program walks the directory above (it listed it to find this
	 * one), so walk from there.  Anything else may be deeper in the tree than the walk has
	 * seen (the program ahead of it): only a run of them says the program is elsewhere, and
	 * none counts before the top is listed (events queued while the top was opened are all
	 * deeper than anything the walk knows then). */
	int anc = -1;
	for (int i = 0; i < WALK_ANCESTORS && w->up[i] && anc < 0; i++)
		if (ev->parent_ino == w->up[i])
			anc = i;
	if (anc < 0 && (w->root->state == WN_OPEN || ++w->strays < WALK_MAX_STRAYS))
		return;
	log_debug("walk of pid %u: lists ino %llu, outside the tree", w->tgid,
		  (unsigned long long)ev->ino);
	/* Walk from that ancestor, opened by the fd held for it; its own ancestors carry over. */
	bool list_only = w->list_only;
	int fd = anc >= 0 && w->up_fd[anc] >= 0 ? w->up_fd[anc] : -1;
	uint64_t up[WALK_ANCESTORS] = { 0 };
	int up_fd[WALK_ANCESTORS];
	for (int i = 0; i < WALK_ANCESTORS; i++) {
		up_fd[i] = -1;
		if (anc >= 0 && anc + 1 + i < WALK_ANCESTORS) {
			up[i] = w->up[anc + 1 + i];
			up_fd[i] = w->up_fd[anc + 1 + i];
			w->up_fd[anc + 1 + i] = -1;
		}
	}
	if (fd >= 0)
		w->up_fd[anc] = -1;
	struct pol_depths depths = w->depths; /* the same directories, deeper below the new top */
	end_walk(w, DD_END_LEFT); /* w may be freed */
	char top[DIRAHEAD_PATH_LEN];
	snprintf(top, sizeof(top), "(dev %u:%u ino %llu)", ev->dev_major, ev->dev_minor,
		 (unsigned long long)ev->parent_ino);
	struct walk *nw = fd >= 0 ? walk_new(m, ev, top, list_only) : NULL;
	if (nw) {
		nw->depths = depths;
		policy_depths_shift(&nw->depths, (unsigned)anc + 1);
		walk_root(nw, fd, up, up_fd);
		return;
	}
	if (fd >= 0)
		close(fd);
	for (int i = 0; i < WALK_ANCESTORS; i++)
		if (up_fd[i] >= 0)
			close(up_fd[i]);
}

void walk_mgr_on_exit(struct walk_mgr *m, const struct dirahead_event *ev)
{
	struct walk *w = walk_of(m, ev->tgid);
	struct walk_cand *c = cand_of(m, ev->tgid);
	if (w)
		end_walk(w, DD_END_EXITED);
	if (c) /* BPF deleted its entry */
		cand_drop(m, c, false);
}

bool walk_mgr_tick(struct walk_mgr *m)
{
	uint64_t t = mono_ns(), idle = (uint64_t)m->cfg.idle_timeout_ms * 1000000ull;
	struct walk *w, *next;
	for (w = m->walks; w; w = next) {
		next = w->next;
		if (w->life == WALK_ENDED)
			continue;
		if (!w->open && t - w->last_ns > idle) {
			end_walk(w, DD_END_IDLE);
			continue;
		}
		/* BPF reports the exit of its walkers only: the program of runs is checked here */
		if (w->by_runs && !procdir_alive(w->tgid)) {
			end_walk(w, DD_END_EXITED);
			continue;
		}
		if (!policy_enabled(m->pol))
			continue;
		struct pol_fs *fs = walk_fs(w);
		if (w->list_only) {
			/* (one that fetches entries where they block lives for those) */
			if (!policy_list_allowed(m->pol, fs, t) && !policy_walk_fetches(&w->depths) &&
			    !(fs->list.verdict == POL_FAST && judging_depths(w, t)))
				end_walk(w, fs->list.verdict == POL_FAST ? DD_END_FAST
									 : DD_END_NO_GAIN);
			else if (fs->verdict == POL_NO_GAIN && w->rejudge) {
				/* prefetch was tried there since, and did not pay: listings only */
				w->rejudge = false;
				w->depths = (struct pol_depths){ { 0 } };
				tell_watch(m);
			}
		} else if (fs->verdict == POL_NO_GAIN && !w->serial) {
			/* fetching entries does not pay here: listing ahead may still (a verdict on
			 * the directories programs stat, where a walk that fetches ahead only sends
			 * nothing) */
			if (m->cfg.walk_list_only && policy_list_allowed(m->pol, fs, t)) {
				w->list_only = true;
				m->st->walks_list_only++;
				log_debug("walk of pid %u: listings only from now on", w->tgid);
			} else {
				end_walk(w, DD_END_NO_GAIN);
			}
		}
	}
	/* watched processes that did not walk within the idle time are let go */
	for (unsigned i = 0; i < m->ncands;) {
		if (t - m->cands[i].since_ns > idle)
			cand_drop(m, &m->cands[i], true);
		else
			i++;
	}
	return m->walks || m->ncands;
}

unsigned walk_mgr_count(const struct walk_mgr *m) { return m->n; }
bool walk_mgr_busy(const struct walk_mgr *m) { return m->n || m->ncands; }

void walk_mgr_foreach(struct walk_mgr *m, void (*fn)(const struct walk_info *, void *), void *ctx)
{
	uint64_t t = mono_ns();
	for (struct walk *w = m->walks; w; w = w->next) {
		if (w->life == WALK_ENDED)
			continue;
		struct walk_info i = { .pid = w->tgid, .comm = w->comm, .path = w->path,
				       .entries = w->entries, .dirs_visited = w->visited,
				       .dirs_ahead = w->dirs_ahead,
				       .age_s = (double)(t - w->start_ns) / 1e9 };
		fn(&i, ctx);
	}
}

void walk_mgr_count_of(const struct walk_mgr *m, uint32_t uid, uint64_t cgroup, unsigned *user,
		       unsigned *cgroup_n)
{
	for (const struct walk *w = m->walks; w; w = w->next)
		if (w->life != WALK_ENDED) {
			*user += w->cred.euid == uid;
			*cgroup_n += w->cgroup_id == cgroup;
		}
}

void walk_mgr_end_on(struct walk_mgr *m, uint32_t dev_major, uint32_t dev_minor, enum dd_end_reason why)
{
	for (struct walk *w = m->walks, *next; w; w = next) {
		next = w->next;
		if (w->life != WALK_ENDED && w->dev_major == dev_major && w->dev_minor == dev_minor)
			end_walk(w, why);
	}
}

static void walk_hung(void *ctx, uint32_t dev_major, uint32_t dev_minor)
{
	walk_mgr_end_on(ctx, dev_major, dev_minor, DD_END_HUNG);
}

static void walk_tick(void *ctx, uint64_t now)
{
	(void)now;
	walk_mgr_tick(ctx);
}

static bool walk_busy(const void *ctx)
{
	return walk_mgr_busy(ctx);
}

struct walk_mgr *walk_mgr_new(const struct dd_config *cfg, struct detector *det,
			      struct dd_stats *st, struct host *host)
{
	struct walk_mgr *m = calloc(1, sizeof(*m));
	if (!m)
		return NULL;
	m->cfg = *cfg;
	m->det = det;
	m->st = st;
	m->host = host;
	m->e = host_engine(host);
	m->pol = host_policy(host);
	m->openers = host_openers(host);
	host_add_client(host, &(struct host_client){ .tick = walk_tick, .hung = walk_hung,
						      .busy = walk_busy, .ctx = m });
	return m;
}

void walk_mgr_set_room(struct walk_mgr *m, bool (*room)(void *ctx, uint32_t uid, uint64_t cgroup),
		       void *ctx)
{
	m->room = room;
	m->room_ctx = ctx;
}

void walk_mgr_reconfigure(struct walk_mgr *m, const struct dd_config *cfg)
{
	m->cfg = *cfg;
	if (!cfg->enabled || !cfg->walk_enabled) {
		for (struct walk *w = m->walks, *next; w; w = next) {
			next = w->next;
			end_walk(w, DD_END_SHUTDOWN);
		}
		while (m->ncands)
			cand_drop(m, &m->cands[0], true);
	}
}

void walk_mgr_free(struct walk_mgr *m)
{
	if (!m)
		return;
	while (m->walks) {
		struct walk *w = m->walks;
		end_walk(w, DD_END_SHUTDOWN);
		if (m->walks == w) /* dirs still cancelling: the engine is freed next, no callbacks */
			free_walk(w);
	}
	free(m);
}
