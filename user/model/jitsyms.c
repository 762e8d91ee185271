// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "lib/nametab.h"
#include "model/jitsyms.h"

struct symnode {
	struct jt_tnode t;
	struct jt_jitsym s;
};

#define SYMNODE(n) jt_tnode_entry(n, struct symnode, t)

static void free_node(struct jt_tnode *n)
{
	free(SYMNODE(n));
}

static struct jt_tnode *dup(const struct jt_tnode *n)
{
	struct symnode *c = malloc(sizeof(*c));

	if (c)
		c->s = SYMNODE(n)->s;
	return c ? &c->t : NULL;
}

static const struct jt_treap_ops sym_ops = { dup, free_node };

/* Tables whose names are jt_name_get's: each node holds a reference. */
static void free_counted(struct jt_tnode *n)
{
	jt_name_put(SYMNODE(n)->s.name);
	free(SYMNODE(n));
}

static struct jt_tnode *dup_counted(const struct jt_tnode *n)
{
	struct jt_tnode *c = dup(n);

	if (c && SYMNODE(c)->s.name)
		jt_name_ref(SYMNODE(c)->s.name);
	return c;
}

static const struct jt_treap_ops counted_ops = { dup_counted, free_counted };

static void flat_free(struct jt_jitflat *f)
{
	free(f->start);
	free(f->sym);
	free(f->span);
	memset(f, 0, sizeof(*f));
}

/* Tables start zeroed; the ops are set on first change, which ends the
 * flat copy. */
static struct jt_treap *tree(struct jt_jittab *t)
{
	if (t->flat.valid || t->flat.misses)
		flat_free(&t->flat);
	t->t.ops = t->counted ? &counted_ops : &sym_ops;
	return &t->t;
}

/*
 * The flat copy is in Eytzinger order (slot k's children are 2k and
 * 2k + 1, slot 0 unused): a search reads one path from the root, whose
 * first levels stay in cache and whose next ones are fetched ahead. A
 * sorted array's binary search missed the cache at each of its last ten
 * steps: a third of `report`'s time on 200K functions.
 */
static size_t eyt_first(size_t n)
{
	size_t k = 1;

	while (2 * k <= n)
		k *= 2;
	return k;
}

/* The slot after k in address order. */
static size_t eyt_next(size_t k, size_t n)
{
	if (2 * k + 1 <= n) {
		k = 2 * k + 1;
		while (2 * k <= n)
			k *= 2;
		return k;
	}
	while (k & 1)
		k >>= 1;
	return k >> 1;
}

static void flat_add(const struct jt_tnode *node, void *ctx)
{
	struct jt_jitflat *f = ctx;
	const struct jt_jitsym *s = &SYMNODE(node)->s;

	f->start[f->k] = node->key;
	f->sym[f->k] = s;
	f->span[f->k].end = s->end;
	f->span[f->k].name = s->name;
	f->k = eyt_next(f->k, f->n);
}

static int flat_build(struct jt_jitflat *f, const struct jt_treap *t)
{
	size_t n = jt_treap_count(t);

	f->start = malloc((n + 1) * sizeof(*f->start));
	f->sym = malloc((n + 1) * sizeof(*f->sym));
	f->span = malloc((n + 1) * sizeof(*f->span));
	if (!f->start || !f->sym || !f->span) {
		flat_free(f);
		return -ENOMEM;
	}
	f->n = n;
	f->k = eyt_first(n);
	jt_treap_walk(t->root, flat_add, f);
	f->valid = 1;
	return 0;
}

/* The slot of the function holding addr, or 0. */
static size_t flat_find(const struct jt_jitflat *f, uint64_t addr)
{
	size_t k = 1;

	while (k <= f->n) {
		/* Four levels down: sixteen slots, two cache lines. */
		__builtin_prefetch(f->start + 16 * k);
		__builtin_prefetch(f->start + 16 * k + 8);
		k = 2 * k + (f->start[k] <= addr);
	}
	/* The last start <= addr is where the path last went right. */
	k >>= __builtin_ctzll(k) + 1;
	return k && f->span[k].end > addr ? k : 0;
}

/* The function holding addr, or NULL. */
static struct symnode *holding(const struct jt_treap *t, uint64_t addr)
{
	struct jt_tnode *n = jt_treap_le(t, addr);

	return n && SYMNODE(n)->s.end > addr ? SYMNODE(n) : NULL;
}

void jt_jittab_cut(struct jt_jittab *t, uint64_t start, uint64_t end)
{
	struct symnode *first = start ? holding(&t->t, start - 1) : NULL;

	if (start >= end || !t->t.root)
		return;
	if (first && first->s.end > start)
		jt_treap_remove(tree(t), first->t.key);
	jt_treap_drop(tree(t), jt_treap_take(tree(t), start, end));
}

int jt_jittab_load(struct jt_jittab *t, const struct jt_jitsym *s)
{
	struct symnode *n = malloc(sizeof(*n));

	if (!n)
		return -ENOMEM;
	jt_jittab_cut(t, s->start, s->end > s->start ? s->end : s->start + 1);
	n->s = *s;
	n->t.key = s->start;
	if (t->counted && s->name)
		jt_name_ref(s->name);
	jt_treap_insert(tree(t), &n->t);
	return 0;
}

int jt_jittab_move(struct jt_jittab *t, uint64_t old, uint64_t new,
		   uint64_t size, uint64_t now)
{
	struct jt_tnode *n = jt_treap_le(&t->t, old);
	struct jt_jitsym s;

	if (!n || n->key != old)
		return -ENOENT;
	s = SYMNODE(n)->s;
	jt_treap_remove(tree(t), old);
	s.start = new;
	s.end = new + size;
	s.loaded_ns = now;
	return jt_jittab_load(t, &s);
}

/* The flat copy, when lookups have come often enough to build it. */
static struct jt_jitflat *flat_of(const struct jt_jittab *t)
{
	/* The flat copy is a cache of the table, not part of its value. */
	struct jt_jitflat *f = (struct jt_jitflat *)&t->flat;

	if (f->valid)
		return f;
	if (++f->misses >= jt_treap_count(&t->t) / 8 + 16 &&
	    !flat_build(f, &t->t))
		return f;
	return NULL;
}

const struct jt_jitsym *jt_jittab_find(const struct jt_jittab *t, uint64_t addr)
{
	struct jt_jitflat *f = flat_of(t);
	struct symnode *n;
	size_t k;

	if (f) {
		k = flat_find(f, addr);
		return k ? f->sym[k] : NULL;
	}
	n = holding(&t->t, addr);
	return n ? &n->s : NULL;
}

bool jt_jittab_name(const struct jt_jittab *t, uint64_t addr,
		    struct jt_jitname *out)
{
	struct jt_jitflat *f = flat_of(t);
	struct symnode *n;
	size_t k;

	if (f) {
		k = flat_find(f, addr);
		if (k)
			*out = (struct jt_jitname){ f->start[k], f->span[k].end,
						    f->span[k].name };
		return k;
	}
	n = holding(&t->t, addr);
	if (n)
		*out = (struct jt_jitname){ n->s.start, n->s.end, n->s.name };
	return n;
}

const struct jt_jitsym *jt_jittab_first_in(const struct jt_jittab *t,
					   uint64_t start, uint64_t end)
{
	struct symnode *h = holding(&t->t, start);
	struct jt_tnode *n;

	if (h)
		return &h->s;
	n = jt_treap_ge(&t->t, start);
	return n && n->key < end ? &SYMNODE(n)->s : NULL;
}

const struct jt_jitsym *jt_jittab_next(const struct jt_jittab *t,
				       const struct jt_jitsym *s)
{
	struct jt_tnode *n = jt_treap_gt(&t->t, s->start);

	return n ? &SYMNODE(n)->s : NULL;
}

size_t jt_jittab_count_in(const struct jt_jittab *t, uint64_t start,
			  uint64_t end)
{
	const struct jt_jitsym *first = jt_jittab_first_in(t, start, end);

	if (!first || start >= end)
		return 0;
	return jt_treap_rank(&t->t, end) - jt_treap_rank(&t->t, first->start);
}

int jt_jittab_copy(struct jt_jittab *dst, const struct jt_jittab *src)
{
	flat_free(&dst->flat);
	jt_treap_share(&dst->t, &src->t);
	dst->counted = src->counted;
	dst->t.ops = src->counted ? &counted_ops : &sym_ops;
	return 0;
}

void jt_jittab_free(struct jt_jittab *t)
{
	flat_free(&t->flat);
	jt_treap_clear(tree(t));
	memset(t, 0, sizeof(*t));
}
