// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include "lib/reserve.h"
#include "model/ordered.h"
#include "model/stream.h"

static bool before(const struct jt_ordered_ent *a,
		   const struct jt_ordered_ent *b)
{
	return a->key != b->key ? a->key < b->key : a->seq < b->seq;
}

int jt_ordered_push(struct jt_ordered *o, struct jt_item *it)
{
	struct jt_ordered_ent e;
	size_t i;

	if (jt_reserve(&o->heap, &o->cap, o->n + 1, sizeof(*o->heap))) {
		free(it);
		return -ENOMEM;
	}
	/* Too late for its place: it goes out next, and is counted. */
	it->key = it->time;
	if (it->key < o->out_time) {
		o->late++;
		it->key = o->out_time;
		it->late = 1;
	}
	e = (struct jt_ordered_ent){ it->key, it->seq, it };
	/* Sift the hole up, then fill it once. */
	for (i = o->n++; i && before(&e, &o->heap[(i - 1) / 2]);
	     i = (i - 1) / 2)
		o->heap[i] = o->heap[(i - 1) / 2];
	o->heap[i] = e;
	if (o->n > o->peak)
		o->peak = o->n;
	return 0;
}

struct jt_item *jt_ordered_pop(struct jt_ordered *o, uint64_t upto)
{
	struct jt_ordered_ent top, last;
	size_t i = 0, c;

	if (!o->n || o->heap[0].key > upto)
		return NULL;
	top = o->heap[0];
	last = o->heap[--o->n];
	/* Sift the hole at the root down to where the last entry fits. */
	while ((c = 2 * i + 1) < o->n) {
		if (c + 1 < o->n && before(&o->heap[c + 1], &o->heap[c]))
			c++;
		if (!before(&o->heap[c], &last))
			break;
		o->heap[i] = o->heap[c];
		i = c;
	}
	if (o->n)
		o->heap[i] = last;
	o->out_time = top.key;
	return top.it;
}

void jt_ordered_free(struct jt_ordered *o)
{
	while (o->n)
		free(o->heap[--o->n].it);
	free(o->heap);
	*o = (struct jt_ordered){};
}
