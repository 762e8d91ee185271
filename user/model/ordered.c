// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include "lib/reserve.h"
#include "model/ordered.h"
#include "model/stream.h"

static bool before(const struct jt_item *a, const struct jt_item *b)
{
	return a->key != b->key ? a->key < b->key : a->seq < b->seq;
}

static void swap(struct jt_item **h, size_t i, size_t j)
{
	struct jt_item *t = h[i];

	h[i] = h[j];
	h[j] = t;
}

int jt_ordered_push(struct jt_ordered *o, struct jt_item *it)
{
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
	i = o->n++;
	o->heap[i] = it;
	while (i && before(o->heap[i], o->heap[(i - 1) / 2])) {
		swap(o->heap, i, (i - 1) / 2);
		i = (i - 1) / 2;
	}
	if (o->n > o->peak)
		o->peak = o->n;
	return 0;
}

struct jt_item *jt_ordered_pop(struct jt_ordered *o, uint64_t upto)
{
	struct jt_item *top;
	size_t i = 0;

	if (!o->n || o->heap[0]->key > upto)
		return NULL;
	top = o->heap[0];
	o->heap[0] = o->heap[--o->n];
	for (;;) {
		size_t l = 2 * i + 1, r = l + 1, m = i;

		if (l < o->n && before(o->heap[l], o->heap[m]))
			m = l;
		if (r < o->n && before(o->heap[r], o->heap[m]))
			m = r;
		if (m == i)
			break;
		swap(o->heap, i, m);
		i = m;
	}
	o->out_time = top->key;
	return top;
}

void jt_ordered_free(struct jt_ordered *o)
{
	while (o->n)
		free(o->heap[--o->n]);
	free(o->heap);
	*o = (struct jt_ordered){};
}
