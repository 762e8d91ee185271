/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The reorder window, after perf's ordered_events: items go in as the
 * file has them and come out in time order once the stream says nothing
 * earlier can still come. One that comes later than that is counted as
 * late and let out at once: never silently out of order.
 */
#ifndef JT_ORDERED_H
#define JT_ORDERED_H

#include <stddef.h>
#include <stdint.h>

struct jt_item;

/* Keys kept in the heap itself: comparing never touches the items. */
struct jt_ordered_ent {
	uint64_t key;
	uint64_t seq;
	struct jt_item *it;
};

struct jt_ordered {
	struct jt_ordered_ent *heap; /* min-heap on (key, seq) */
	size_t n;
	size_t cap;
	uint64_t out_time; /* of the last item let out */
	uint64_t late;	   /* items that came after later ones were out */
	size_t peak;	   /* most items held at once */
};

/* Takes ownership of it (one malloc'd block). */
int jt_ordered_push(struct jt_ordered *o, struct jt_item *it);
/* The earliest item if its time is at most upto, else NULL; caller frees. */
struct jt_item *jt_ordered_pop(struct jt_ordered *o, uint64_t upto);
void jt_ordered_free(struct jt_ordered *o);

#endif
