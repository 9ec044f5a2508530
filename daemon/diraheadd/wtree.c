/* SPDX-License-Identifier: LGPL-2.1-or-later OR BSD-2-Clause */
/* A walk's tree of directories: order, lookup by inode, next to list (wtree.h). */
#include "wtree.h"

#include <assert.h>
#include <search.h>
#include <stdlib.h>
#include <string.h>

static int cmp_ino(const void *a, const void *b)
{
	const struct wnode *x = a, *y = b;
	return x->ino < y->ino ? -1 : x->ino > y->ino;
}

/* The walk's order of siblings: as the program visits them. */
static int cmp_kids(const struct wtree *t, const struct wnode *a, const struct wnode *b)
{
	if (t->by_name)
		return strcmp(a->name, b->name);
	return a->index < b->index ? -1 : a->index > b->index;
}

struct wnode *wtree_node_new(struct wtree *t, struct walk *w, struct wnode *parent,
			     const char *name, uint64_t index, uint64_t ino)
{
	size_t len = strlen(name);
	struct wnode *n = calloc(1, sizeof(*n) + len + 1);
	if (!n)
		return NULL;
	n->w = w;
	n->parent = parent;
	n->depth = parent ? parent->depth + 1 : 0;
	n->index = index;
	n->ino = ino;
	memcpy(n->name, name, len + 1);
	void *r = tsearch(n, &t->by_ino, cmp_ino);
	if (!r || *(struct wnode **)r != n) { /* a hard-linked directory seen twice: not again */
		free(n);
		return NULL;
	}
	t->nodes++;
	return n;
}

struct wnode *wtree_find(struct wtree *t, uint64_t ino)
{
	struct wnode key = { .ino = ino };
	void *r = tfind(&key, &t->by_ino, cmp_ino);
	return r ? *(struct wnode **)r : NULL;
}

void wtree_forget(struct wtree *t, struct wnode *n)
{
	assert(t->nodes > 0);
	tdelete(n, &t->by_ino, cmp_ino);
	t->nodes--;
}

void wtree_node_free(struct wnode *n)
{
	free(n->kids);
	free(n->last_name);
	free(n);
}

static void node_free_mem(void *p)
{
	wtree_node_free(p);
}

void wtree_destroy(struct wtree *t)
{
	tdestroy(t->by_ino, node_free_mem);
	t->by_ino = NULL;
	t->nodes = 0;
}

bool wtree_add_kid(const struct wtree *t, struct wnode *p, struct wnode *k)
{
	if (p->nkids == p->capkids) {
		uint32_t cap = p->capkids ? p->capkids * 2 : 8;
		struct wnode **v = realloc(p->kids, cap * sizeof(*v));
		if (!v)
			return false;
		p->kids = v;
		p->capkids = cap;
	}
	uint32_t j = p->nkids++;
	while (j > p->first && cmp_kids(t, p->kids[j - 1], k) > 0) {
		p->kids[j] = p->kids[j - 1];
		j--;
	}
	p->kids[j] = k;
	return true;
}

int64_t wtree_kid_pos(const struct wtree *t, const struct wnode *p, const struct wnode *k)
{
	uint32_t lo = p->first, hi = p->nkids;
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		int c = cmp_kids(t, p->kids[mid], k);
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (uint32_t i = lo; i < p->nkids && !cmp_kids(t, p->kids[i], k); i++)
		if (p->kids[i] == k)
			return i;
	for (uint32_t i = p->first; i < p->nkids; i++) /* equal names: cannot happen; be safe */
		if (p->kids[i] == k)
			return i;
	return -1;
}

struct wnode *wtree_kid_named(const struct wtree *t, const struct wnode *p, const char *name,
			      size_t len)
{
	uint32_t lo = p->first, hi = p->nkids;
	if (t->by_name) { /* sorted by name: the first kid not below it */
		while (lo < hi) {
			uint32_t mid = lo + (hi - lo) / 2;
			int c = strncmp(p->kids[mid]->name, name, len);
			if (c < 0 || (c == 0 && p->kids[mid]->name[len]))
				c = c < 0 ? -1 : 1;
			if (c < 0)
				lo = mid + 1;
			else
				hi = mid;
		}
		hi = lo < p->nkids ? lo + 1 : lo;
	}
	for (uint32_t i = lo; i < hi; i++)
		if (!strncmp(p->kids[i]->name, name, len) && !p->kids[i]->name[len])
			return p->kids[i];
	return NULL;
}

void wtree_sort(const struct wtree *t, struct wnode *n)
{
	for (uint32_t i = n->first; i < n->nkids; i++)
		wtree_sort(t, n->kids[i]);
	/* insertion sort: small arrays, and mostly sorted already */
	for (uint32_t i = n->first + 1; i < n->nkids; i++) {
		struct wnode *k = n->kids[i];
		uint32_t j = i;
		while (j > n->first && cmp_kids(t, n->kids[j - 1], k) > 0) {
			n->kids[j] = n->kids[j - 1];
			j--;
		}
		n->kids[j] = k;
	}
}

void wtree_new_below_add(struct wnode *n, int d)
{
	for (struct wnode *a = n->parent; a; a = a->parent)
		a->new_below += (uint32_t)d;
}

/* First WN_NEW node in n's subtree, pre-order. */
static struct wnode *first_new_in(struct wnode *n)
{
	for (uint32_t i = n->first; i < n->nkids; i++) {
		struct wnode *k = n->kids[i];
		if (k->state == WN_NEW)
			return k;
		if (k->new_below)
			return first_new_in(k);
	}
	return NULL;
}

struct wnode *wtree_next_new(const struct wtree *t, struct wnode *root, struct wnode *cursor)
{
	struct wnode *c = cursor ? cursor : root;
	if (!c)
		return NULL;
	if (c->new_below) {
		struct wnode *n = first_new_in(c);
		if (n)
			return n;
	}
	for (struct wnode *x = c; x->parent; x = x->parent) {
		struct wnode *p = x->parent;
		if (!p->new_below)
			continue;
		int64_t pos = wtree_kid_pos(t, p, x);
		for (uint32_t i = pos < 0 ? p->first : (uint32_t)pos + 1; i < p->nkids; i++) {
			struct wnode *k = p->kids[i];
			if (k->state == WN_NEW)
				return k;
			if (k->new_below)
				return first_new_in(k);
		}
	}
	return NULL;
}
