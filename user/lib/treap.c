// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include "lib/treap.h"

/* Priorities need only be independent of keys, not secret: xorshift. */
static uint32_t next_prio(void)
{
	static uint32_t x = 2463534242u;

	x ^= x << 13;
	x ^= x >> 17;
	x ^= x << 5;
	return x;
}

static uint32_t size_of(const struct jt_tnode *n)
{
	return n ? n->size : 0;
}

static struct jt_tnode *fix(struct jt_tnode *n)
{
	n->size = 1 + size_of(n->left) + size_of(n->right);
	return n;
}

static struct jt_tnode *ref(struct jt_tnode *n)
{
	if (n)
		n->refs++;
	return n;
}

static void release(const struct jt_treap *t, struct jt_tnode *n)
{
	while (n && !--n->refs) {
		struct jt_tnode *right = n->right;

		release(t, n->left);
		t->ops->free(n);
		n = right;
	}
}

/*
 * n, or a copy of it if anything else points at it too. Changing a
 * shared node would corrupt the other tree: without memory for the copy
 * there is no safe way on.
 */
static inline struct jt_tnode *own(const struct jt_treap *t, struct jt_tnode *n)
{
	struct jt_tnode *c;

	if (n->refs == 1)
		return n;
	c = t->ops->dup(n);
	if (!c) {
		fputs("jittrace: out of memory\n", stderr);
		exit(1);
	}
	c->key = n->key;
	c->prio = n->prio;
	c->size = n->size;
	c->left = ref(n->left);
	c->right = ref(n->right);
	c->refs = 1;
	n->refs--;
	return c;
}

/* Keys below key go to *lt, the rest to *ge. */
static void split(const struct jt_treap *t, struct jt_tnode *n, uint64_t key,
		  struct jt_tnode **lt, struct jt_tnode **ge)
{
	if (!n) {
		*lt = *ge = NULL;
		return;
	}
	n = own(t, n);
	if (n->key < key) {
		split(t, n->right, key, &n->right, ge);
		*lt = fix(n);
	} else {
		split(t, n->left, key, lt, &n->left);
		*ge = fix(n);
	}
}

/* Every key of a lies below every key of b. */
static struct jt_tnode *merge(const struct jt_treap *t, struct jt_tnode *a,
			      struct jt_tnode *b)
{
	if (!a || !b)
		return a ? a : b;
	if (a->prio > b->prio) {
		a = own(t, a);
		a->right = merge(t, a->right, b);
		return fix(a);
	}
	b = own(t, b);
	b->left = merge(t, a, b->left);
	return fix(b);
}

/* Down to where x's priority puts it, then split what lies below. */
static struct jt_tnode *insert(const struct jt_treap *t, struct jt_tnode *at,
			       struct jt_tnode *x)
{
	if (!at)
		return x;
	if (x->prio > at->prio) {
		split(t, at, x->key, &x->left, &x->right);
		return fix(x);
	}
	at = own(t, at);
	if (x->key < at->key)
		at->left = insert(t, at->left, x);
	else
		at->right = insert(t, at->right, x);
	return fix(at);
}

void jt_treap_insert(struct jt_treap *t, struct jt_tnode *n)
{
	n->left = n->right = NULL;
	n->prio = next_prio();
	n->size = 1;
	n->refs = 1;
	t->root = insert(t, t->root, n);
}

struct jt_tnode *jt_treap_take(struct jt_treap *t, uint64_t lo, uint64_t hi)
{
	struct jt_tnode *lt, *mid, *ge, *first;

	/* Most cuts find nothing: look before rebuilding paths. */
	first = lo < hi ? jt_treap_ge(t, lo) : NULL;
	if (!first || first->key >= hi)
		return NULL;
	split(t, t->root, lo, &lt, &mid);
	split(t, mid, hi, &mid, &ge);
	t->root = merge(t, lt, ge);
	return mid;
}

void jt_treap_drop(struct jt_treap *t, struct jt_tnode *sub)
{
	release(t, sub);
}

void jt_treap_remove(struct jt_treap *t, uint64_t key)
{
	if (key != UINT64_MAX)
		release(t, jt_treap_take(t, key, key + 1));
}

void jt_treap_join(struct jt_treap *t, struct jt_tnode *sub)
{
	const struct jt_tnode *first = sub;
	struct jt_tnode *lt, *ge;

	if (!sub)
		return;
	while (first->left)
		first = first->left;
	split(t, t->root, first->key, &lt, &ge);
	t->root = merge(t, merge(t, lt, sub), ge);
}

struct jt_tnode *jt_treap_le(const struct jt_treap *t, uint64_t key)
{
	struct jt_tnode *n = t->root, *best = NULL;

	while (n) {
		if (n->key <= key) {
			best = n;
			n = n->right;
		} else {
			n = n->left;
		}
	}
	return best;
}

static struct jt_tnode *least_from(const struct jt_treap *t, uint64_t key,
				   bool strict)
{
	struct jt_tnode *n = t->root, *best = NULL;

	while (n) {
		if (n->key > key || (!strict && n->key == key)) {
			best = n;
			n = n->left;
		} else {
			n = n->right;
		}
	}
	return best;
}

struct jt_tnode *jt_treap_ge(const struct jt_treap *t, uint64_t key)
{
	return least_from(t, key, false);
}

struct jt_tnode *jt_treap_gt(const struct jt_treap *t, uint64_t key)
{
	return least_from(t, key, true);
}

size_t jt_treap_rank(const struct jt_treap *t, uint64_t key)
{
	const struct jt_tnode *n = t->root;
	size_t below = 0;

	while (n) {
		if (n->key < key) {
			below += 1 + size_of(n->left);
			n = n->right;
		} else {
			n = n->left;
		}
	}
	return below;
}

struct jt_tnode *jt_treap_mut(struct jt_treap *t, uint64_t key)
{
	struct jt_tnode **link = &t->root;

	while (*link) {
		struct jt_tnode *n = own(t, *link);

		*link = n;
		if (n->key == key)
			return n;
		link = key < n->key ? &n->left : &n->right;
	}
	return NULL;
}

void jt_treap_walk(const struct jt_tnode *sub,
		   void (*fn)(const struct jt_tnode *, void *), void *ctx)
{
	while (sub) {
		jt_treap_walk(sub->left, fn, ctx);
		fn(sub, ctx);
		sub = sub->right;
	}
}

void jt_treap_walk_mut(const struct jt_treap *t, struct jt_tnode **sub,
		       void (*fn)(struct jt_tnode *, void *), void *ctx)
{
	while (*sub) {
		struct jt_tnode *n = own(t, *sub);

		*sub = n;
		jt_treap_walk_mut(t, &n->left, fn, ctx);
		fn(n, ctx);
		sub = &n->right;
	}
}

void jt_treap_share(struct jt_treap *dst, const struct jt_treap *src)
{
	dst->root = ref(src->root);
	dst->ops = src->ops;
}

void jt_treap_clear(struct jt_treap *t)
{
	release(t, t->root);
	t->root = NULL;
}
