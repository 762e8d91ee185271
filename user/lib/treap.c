// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <errno.h>
#include <stdbool.h>
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

/* Keys below key go to *lt, the rest to *ge. */
static void split(struct jt_tnode *t, uint64_t key, struct jt_tnode **lt,
		  struct jt_tnode **ge)
{
	if (!t) {
		*lt = *ge = NULL;
	} else if (t->key < key) {
		split(t->right, key, &t->right, ge);
		*lt = fix(t);
	} else {
		split(t->left, key, lt, &t->left);
		*ge = fix(t);
	}
}

/* Every key of a lies below every key of b. */
static struct jt_tnode *merge(struct jt_tnode *a, struct jt_tnode *b)
{
	if (!a || !b)
		return a ? a : b;
	if (a->prio > b->prio) {
		a->right = merge(a->right, b);
		return fix(a);
	}
	b->left = merge(a, b->left);
	return fix(b);
}

void jt_treap_insert(struct jt_treap *t, struct jt_tnode *n)
{
	struct jt_tnode *lt, *ge;

	n->left = n->right = NULL;
	n->prio = next_prio();
	n->size = 1;
	split(t->root, n->key, &lt, &ge);
	t->root = merge(merge(lt, n), ge);
}

struct jt_tnode *jt_treap_take(struct jt_treap *t, uint64_t lo, uint64_t hi)
{
	struct jt_tnode *lt, *mid, *ge;

	if (lo >= hi)
		return NULL;
	split(t->root, lo, &lt, &mid);
	split(mid, hi, &mid, &ge);
	t->root = merge(lt, ge);
	return mid;
}

void jt_treap_remove(struct jt_treap *t, struct jt_tnode *n)
{
	jt_treap_take(t, n->key, n->key + 1);
}

void jt_treap_join(struct jt_treap *t, struct jt_tnode *sub)
{
	const struct jt_tnode *first = sub;
	struct jt_tnode *lt, *ge;

	if (!sub)
		return;
	while (first->left)
		first = first->left;
	split(t->root, first->key, &lt, &ge);
	t->root = merge(merge(lt, sub), ge);
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

void jt_treap_walk(struct jt_tnode *sub, void (*fn)(struct jt_tnode *, void *),
		   void *ctx)
{
	while (sub) {
		jt_treap_walk(sub->left, fn, ctx);
		fn(sub, ctx);
		sub = sub->right;
	}
}

void jt_treap_destroy(struct jt_tnode *sub, void (*fn)(struct jt_tnode *))
{
	while (sub) {
		struct jt_tnode *right = sub->right;

		jt_treap_destroy(sub->left, fn);
		fn(sub);
		sub = right;
	}
}

struct jt_tnode *
jt_treap_clone(const struct jt_tnode *sub,
	       struct jt_tnode *(*dup)(const struct jt_tnode *), int *err)
{
	struct jt_tnode *n;

	if (!sub || *err)
		return NULL;
	n = dup(sub);
	if (!n) {
		*err = -ENOMEM;
		return NULL;
	}
	n->key = sub->key;
	n->prio = sub->prio;
	n->size = sub->size;
	n->left = jt_treap_clone(sub->left, dup, err);
	n->right = jt_treap_clone(sub->right, dup, err);
	return n;
}
