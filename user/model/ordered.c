// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include "lib/reserve.h"
#include "model/ordered.h"
#include "model/stream.h"

/*
 * An item is next touched when it comes out, long after it went in (the
 * window holds tens of thousands), and naming reads the next two at once:
 * that read was most of the time naming spent looking ahead. So the item
 * this many places on in the same queue is fetched as one comes out.
 */
#define ITEM_AHEAD 6

static void prefetch_item(const struct jt_item *it)
{
	__builtin_prefetch(it);
	__builtin_prefetch((const char *)it + 64);
}

static bool before(const struct jt_ordered_ent *a,
		   const struct jt_ordered_ent *b)
{
	return a->key != b->key ? a->key < b->key : a->seq < b->seq;
}

/* The heap of items a source gave out of its own order. */
static void side_push(struct jt_ordered *o, struct jt_ordered_ent e)
{
	size_t i;

	for (i = o->nside++; i && before(&e, &o->side[(i - 1) / 2]);
	     i = (i - 1) / 2)
		o->side[i] = o->side[(i - 1) / 2];
	o->side[i] = e;
}

static struct jt_ordered_ent side_pop(struct jt_ordered *o)
{
	struct jt_ordered_ent top = o->side[0], last = o->side[--o->nside];
	size_t i = 0, c;

	while ((c = 2 * i + 1) < o->nside) {
		if (c + 1 < o->nside && before(&o->side[c + 1], &o->side[c]))
			c++;
		if (!before(&o->side[c], &last))
			break;
		o->side[i] = o->side[c];
		i = c;
	}
	if (o->nside)
		o->side[i] = last;
	return top;
}

/* The heap of sources, on the item at each one's head. */
static const struct jt_ordered_ent *head_of(const struct jt_ordered *o,
					    size_t s)
{
	return &o->src[s].q[o->src[s].head];
}

static void heads_set(struct jt_ordered *o, size_t i, size_t s)
{
	o->heads[i] = s;
	o->src[s].pos = (long)i;
}

static void heads_up(struct jt_ordered *o, size_t i)
{
	size_t s = o->heads[i];

	for (; i && before(head_of(o, s), head_of(o, o->heads[(i - 1) / 2]));
	     i = (i - 1) / 2)
		heads_set(o, i, o->heads[(i - 1) / 2]);
	heads_set(o, i, s);
}

static void heads_down(struct jt_ordered *o, size_t i)
{
	size_t s = o->heads[i], c;

	while ((c = 2 * i + 1) < o->nheads) {
		if (c + 1 < o->nheads && before(head_of(o, o->heads[c + 1]),
						head_of(o, o->heads[c])))
			c++;
		if (!before(head_of(o, o->heads[c]), head_of(o, s)))
			break;
		heads_set(o, i, o->heads[c]);
		i = c;
	}
	heads_set(o, i, s);
}

static int add_source(struct jt_ordered *o, size_t s)
{
	if (jt_reserve(&o->src, &o->src_cap, s + 1, sizeof(*o->src)))
		return -ENOMEM;
	while (o->nsrc <= s) {
		memset(&o->src[o->nsrc], 0, sizeof(*o->src));
		o->src[o->nsrc++].pos = -1;
	}
	return 0;
}

static int fifo_push(struct jt_ordered *o, size_t s, struct jt_ordered_ent e)
{
	struct jt_ofifo *f = &o->src[s];

	if (f->head == f->n) {
		f->head = f->n = 0;
	} else if (f->head > 1024 && f->head * 2 > f->n) {
		memmove(f->q, f->q + f->head, (f->n - f->head) * sizeof(*f->q));
		f->n -= f->head;
		f->head = 0;
	}
	if (jt_reserve(&f->q, &f->cap, f->n + 1, sizeof(*f->q)) ||
	    (f->pos < 0 && jt_reserve(&o->heads, &o->heads_cap, o->nheads + 1,
				      sizeof(*o->heads))))
		return -ENOMEM;
	f->q[f->n++] = e;
	f->last = e;
	if (f->pos < 0) {
		o->heads[o->nheads] = s;
		heads_up(o, o->nheads++);
	}
	return 0;
}

int jt_ordered_push(struct jt_ordered *o, struct jt_item *it, size_t src)
{
	struct jt_ordered_ent e;
	struct jt_ofifo *f;
	int err;

	it->key = it->time;
	/* Too late for its place: it goes out next, and is counted. */
	if (it->key < o->out_time) {
		o->late++;
		it->key = o->out_time;
		it->late = 1;
	}
	e = (struct jt_ordered_ent){ it->key, it->seq, it };
	err = add_source(o, src);
	f = err ? NULL : &o->src[src];
	if (f && f->head < f->n && before(&e, &f->last))
		err = jt_reserve(&o->side, &o->side_cap, o->nside + 1, sizeof(*o->side)) ?:
			      (side_push(o, e), 0);
	else if (f)
		err = fifo_push(o, src, e);
	if (err) {
		free(it);
		return -ENOMEM;
	}
	if (++o->n > o->peak)
		o->peak = o->n;
	return 0;
}

const struct jt_item *jt_ordered_peek(const struct jt_ordered *o, bool after)
{
	const struct jt_ordered_ent *a =
		o->nheads ? head_of(o, o->heads[0]) : NULL;
	const struct jt_ordered_ent *b = o->nside ? &o->side[0] : NULL;
	const struct jt_ofifo *f;

	if (!a || (b && before(b, a)))
		return b && !after ? b->it : NULL;
	if (!after)
		return a->it;
	f = &o->src[o->heads[0]];
	return f->head + 1 < f->n ? f->q[f->head + 1].it : NULL;
}

struct jt_item *jt_ordered_pop(struct jt_ordered *o, uint64_t upto)
{
	const struct jt_ordered_ent *a =
		o->nheads ? head_of(o, o->heads[0]) : NULL;
	const struct jt_ordered_ent *b = o->nside ? &o->side[0] : NULL;
	struct jt_ordered_ent top;
	struct jt_ofifo *f;

	if (!a && !b)
		return NULL;
	if (!a || (b && before(b, a))) {
		if (b->key > upto)
			return NULL;
		top = side_pop(o);
	} else {
		if (a->key > upto)
			return NULL;
		top = *a;
		f = &o->src[o->heads[0]];
		if (f->head + ITEM_AHEAD < f->n)
			prefetch_item(f->q[f->head + ITEM_AHEAD].it);
		if (++f->head < f->n) {
			heads_down(o, 0);
		} else {
			f->pos = -1;
			if (--o->nheads) {
				heads_set(o, 0, o->heads[o->nheads]);
				heads_down(o, 0);
			}
		}
	}
	o->n--;
	o->out_time = top.key;
	return top.it;
}

void jt_ordered_free(struct jt_ordered *o)
{
	size_t i, j;

	for (i = 0; i < o->nsrc; i++) {
		for (j = o->src[i].head; j < o->src[i].n; j++)
			free(o->src[i].q[j].it);
		free(o->src[i].q);
	}
	for (i = 0; i < o->nside; i++)
		free(o->side[i].it);
	free(o->src);
	free(o->heads);
	free(o->side);
	memset(o, 0, sizeof(*o));
}
