/* SPDX-License-Identifier: LGPL-2.1-or-later OR BSD-2-Clause */
/*
 * A walk's tree (walk.h): the directories a walk knows below its top, each with its
 * subdirectories in the order the program visits them (readdir or name order), found by inode,
 * and the pre-order search for the next one to list ahead.  Memory only: what a node holds of
 * the engine (its directory, the hold on its fd) and the walk's accounting are walk.c's.
 */
#ifndef DIRAHEAD_WTREE_H
#define DIRAHEAD_WTREE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "host.h"

struct walk;

/* NEW: known, not opened yet; OPEN: being listed and fetched; DONE, FAILED: no longer open. */
enum wn_state { WN_NEW, WN_OPEN, WN_DONE, WN_FAILED };

struct wnode {
	struct host_dir hd;         /* first: the engine's dir_data (host.h) */
	struct walk *w;
	struct wnode *parent;       /* NULL: the top, or a node dropped while its dir finishes */
	struct wnode **kids;        /* subdirectories, sorted by the walk's order; [first, nkids) */
	uint32_t nkids, capkids, first;
	uint32_t kids_new;          /* kids still WN_NEW: the hold is needed to open them */
	uint32_t kids_lo;           /* kids listed only, ahead (lo_ahead): the hold is kept to
				     * fetch their entries if their depth is judged to pay */
	uint32_t depth;             /* below the walk's top (0) */
	uint32_t new_below;         /* WN_NEW nodes below (not counting itself) */
	enum wn_state state;
	bool visited;               /* the program listed it */
	bool ahead;                 /* opened by the walk, not yet listed by the program */
	bool zombie;                /* dropped from the tree; freed when its dir is done */
	bool lo;                    /* opened to list only (DIRAHEAD_DIR_LIST_ONLY) */
	bool lo_ahead;              /* ... and listed so, ahead of the program (counted in its
				     * parent's kids_lo) */
	struct wnode *zombie_next;  /* w->zombies */
	char *last_name;            /* the kid the program listed last (for its order) */
	uint64_t last_index;
	uint64_t index, ino;
	uint64_t completed;         /* entries fetched */
	uint64_t eof_ns;            /* mono_ns() by which the walk had read it whole (0: not yet) */
	struct dirahead_dir *dir;
	struct dirahead_dirfd *hold;
	char name[];
};

struct wtree {
	void *by_ino;               /* tsearch tree of struct wnode *, by ino */
	uint32_t nodes;             /* in by_ino */
	bool by_name;               /* the program visits subdirectories in name order */
};

/* A node (zeroed but for these, and its depth: its parent's + 1), known by its inode from now;
 * NULL if out of memory or the inode is known already (a hard-linked directory seen twice). */
struct wnode *wtree_node_new(struct wtree *t, struct walk *w, struct wnode *parent,
			     const char *name, uint64_t index, uint64_t ino);
struct wnode *wtree_find(struct wtree *t, uint64_t ino);
/* No longer found by its inode (not freed). */
void wtree_forget(struct wtree *t, struct wnode *n);
void wtree_node_free(struct wnode *n);
/* Frees every node still found by inode. */
void wtree_destroy(struct wtree *t);
/* k among p's kids, in order; false if out of memory. */
bool wtree_add_kid(const struct wtree *t, struct wnode *p, struct wnode *k);
/* k's index in p->kids, -1 if not there. */
int64_t wtree_kid_pos(const struct wtree *t, const struct wnode *p, const struct wnode *k);
/* p's kid whose name is the len bytes at name, NULL if none (still in the tree: from `first`). */
struct wnode *wtree_kid_named(const struct wtree *t, const struct wnode *p, const char *name,
			      size_t len);
/* Every kids array below n in the tree's order (after it changed). */
void wtree_sort(const struct wtree *t, struct wnode *n);
/* d more WN_NEW nodes below each of n's ancestors. */
void wtree_new_below_add(struct wnode *n, int d);
/* The next directory to open: the first WN_NEW one after cursor (or root), pre-order. */
struct wnode *wtree_next_new(const struct wtree *t, struct wnode *root, struct wnode *cursor);

#endif
