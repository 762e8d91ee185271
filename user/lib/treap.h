/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * An intrusive treap keyed by u64: every step is O(log n) expected, and
 * ranges come out and go back in whole (split and merge), which is what
 * cutting address ranges needs. Nodes carry their subtree's size, so
 * "how many keys below k" is O(log n) too. Keys are unique.
 *
 * Nodes are shared between trees after jt_treap_share (a fork) and
 * copied only along the paths a change walks: a fork costs O(1), each
 * later change O(log n) on either side. So nodes are never changed in
 * place except through jt_treap_mut and jt_treap_walk_mut.
 */
#ifndef JT_TREAP_H
#define JT_TREAP_H

#include <stddef.h>
#include <stdint.h>

struct jt_tnode {
	struct jt_tnode *left;
	struct jt_tnode *right;
	uint64_t key;
	uint32_t prio;
	uint32_t size;
	uint32_t refs; /* trees and parents that point here */
};

struct jt_treap_ops {
	/* A new node with n's payload; the treap fills in the rest. */
	struct jt_tnode *(*dup)(const struct jt_tnode *n);
	void (*free)(struct jt_tnode *n);
};

struct jt_treap {
	struct jt_tnode *root;
	const struct jt_treap_ops *ops;
};

#define jt_tnode_entry(ptr, type, member)                                      \
	((type *)((char *)(ptr)-offsetof(type, member)))

static inline size_t jt_treap_count(const struct jt_treap *t)
{
	return t->root ? t->root->size : 0;
}

/* n->key must be set and not yet present. */
void jt_treap_insert(struct jt_treap *t, struct jt_tnode *n);
void jt_treap_remove(struct jt_treap *t, uint64_t key);
/* Detach every node with lo <= key < hi; the result is a treap root. */
struct jt_tnode *jt_treap_take(struct jt_treap *t, uint64_t lo, uint64_t hi);
/* Put back what take detached (its keys must still fall in a gap of t). */
void jt_treap_join(struct jt_treap *t, struct jt_tnode *sub);
/* Let go of what take detached. */
void jt_treap_drop(struct jt_treap *t, struct jt_tnode *sub);
/* Greatest key <= key, least key >= key, least key > key; or NULL. */
struct jt_tnode *jt_treap_le(const struct jt_treap *t, uint64_t key);
struct jt_tnode *jt_treap_ge(const struct jt_treap *t, uint64_t key);
struct jt_tnode *jt_treap_gt(const struct jt_treap *t, uint64_t key);
/* Nodes with a key below key. */
size_t jt_treap_rank(const struct jt_treap *t, uint64_t key);
/* The node with key, t's own to change (not its key); or NULL. */
struct jt_tnode *jt_treap_mut(struct jt_treap *t, uint64_t key);
/* In key order, read only. */
void jt_treap_walk(const struct jt_tnode *sub,
		   void (*fn)(const struct jt_tnode *, void *), void *ctx);
/* In key order over a detached subtree, each node t's own to change. */
void jt_treap_walk_mut(const struct jt_treap *t, struct jt_tnode **sub,
		       void (*fn)(struct jt_tnode *, void *), void *ctx);
/* dst becomes a copy of src in O(1); dst must be empty. */
void jt_treap_share(struct jt_treap *dst, const struct jt_treap *src);
void jt_treap_clear(struct jt_treap *t);

#endif /* JT_TREAP_H */
