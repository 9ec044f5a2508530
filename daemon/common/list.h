/* SPDX-License-Identifier: LGPL-2.1-or-later OR BSD-2-Clause */
/* A minimal intrusive circular doubly-linked list (libdirahead and the daemon). */
#ifndef DIRAHEAD_LIST_H
#define DIRAHEAD_LIST_H

#include <stdbool.h>
#include <stddef.h>

struct list_head {
	struct list_head *next, *prev;
};

#define LIST_INIT(name) { &(name), &(name) }
#define list_entry(ptr, type, member) ((type *)(void *)((char *)(ptr) - offsetof(type, member)))
#define list_first(head, type, member) list_entry((head)->next, type, member)
#define list_for_each_safe(pos, n, head) \
	for (pos = (head)->next, n = pos->next; pos != (head); pos = n, n = pos->next)

static inline void list_init(struct list_head *h) { h->next = h->prev = h; }
static inline bool list_empty(const struct list_head *h) { return h->next == h; }
/* True if the node is on some list (nodes are list_init'ed when taken off one). */
static inline bool list_linked(const struct list_head *n) { return n->next != n; }

static inline void list_add_between(struct list_head *n, struct list_head *prev,
				    struct list_head *next)
{
	n->prev = prev;
	n->next = next;
	prev->next = n;
	next->prev = n;
}
static inline void list_add_tail(struct list_head *n, struct list_head *h)
{
	list_add_between(n, h->prev, h);
}
static inline void list_add_head(struct list_head *n, struct list_head *h)
{
	list_add_between(n, h, h->next);
}
static inline void list_del(struct list_head *n)
{
	n->prev->next = n->next;
	n->next->prev = n->prev;
	list_init(n);
}
/* Moves every node of `from` to the tail of `to`; `from` ends empty. */
static inline void list_splice_tail(struct list_head *from, struct list_head *to)
{
	if (list_empty(from))
		return;
	from->next->prev = to->prev;
	to->prev->next = from->next;
	from->prev->next = to;
	to->prev = from->prev;
	list_init(from);
}

#endif /* DIRAHEAD_LIST_H */
