/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The reorder window, after perf's ordered_events: items go in as the
 * file has them and come out in time order once the stream says nothing
 * earlier can still come. One that comes later than that is counted as
 * late and let out at once: never silently out of order.
 *
 * Each source (the BPF ring, each CPU's perf ring, the JIT files) is
 * nearly in time order already, so items queue per source and the window
 * merges the queues' heads: a push is O(1), a pop O(log sources). What a
 * source has out of its own order goes to a heap of its own.
 */
#ifndef JT_ORDERED_H
#define JT_ORDERED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct jt_item;

struct jt_ordered_ent {
	uint64_t key;
	uint64_t seq;
	struct jt_item *it;
};

/* One source's items, in the order it wrote them. */
struct jt_ofifo {
	struct jt_ordered_ent *q;
	size_t head;
	size_t n;
	size_t cap;
	struct jt_ordered_ent last; /* the last one queued */
	long pos;		    /* in the heap of sources; -1: empty */
};

struct jt_ordered {
	struct jt_ofifo *src;
	size_t nsrc;
	size_t src_cap;
	size_t *heads; /* sources with items: a min-heap on their heads */
	size_t nheads;
	size_t heads_cap;
	struct jt_ordered_ent *side; /* out of their source's order: a heap */
	size_t nside;
	size_t side_cap;
	size_t n;
	uint64_t out_time; /* of the last item let out */
	uint64_t late;	   /* items that came after later ones were out */
	size_t peak;	   /* most items held at once */
};

/* Takes ownership of it (one malloc'd block), from source src. */
int jt_ordered_push(struct jt_ordered *o, struct jt_item *it, size_t src);
/* The earliest item if its time is at most upto, else NULL; caller frees. */
struct jt_item *jt_ordered_pop(struct jt_ordered *o, uint64_t upto);
/*
 * The item a pop would give next, were it due (after: the one after it
 * in its source, most likely the one after that); NULL when none is held.
 */
const struct jt_item *jt_ordered_peek(const struct jt_ordered *o, bool after);
void jt_ordered_free(struct jt_ordered *o);

#endif
