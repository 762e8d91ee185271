/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * An intrusive treap keyed by u64: every step is O(log n) expected, and
 * ranges come out and go back in whole (split and merge), which is what
 * cutting address ranges needs. Nodes carry their subtree's size, so
 * "how many keys below k" is O(log n) too. Keys are unique.
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
};

struct jt_treap {
	struct jt_tnode *root;
};

#define jt_tnode_entry(ptr, type, member)                                      \
	((type *)((char *)(ptr)-offsetof(type, member)))

static inline size_t jt_treap_count(const struct jt_treap *t)
{
	return t->root ? t->root->size : 0;
}

/* n->key must be set and not yet present. */
void jt_treap_insert(struct jt_treap *t, struct jt_tnode *n);
void jt_treap_remove(struct jt_treap *t, struct jt_tnode *n);
/* Detach every node with lo <= key < hi; the result is a treap root. */
struct jt_tnode *jt_treap_take(struct jt_treap *t, uint64_t lo, uint64_t hi);
/* Put back what take detached (its keys must still fall in a gap of t). */
void jt_treap_join(struct jt_treap *t, struct jt_tnode *sub);
/* Greatest key <= key, least key >= key, least key > key; or NULL. */
struct jt_tnode *jt_treap_le(const struct jt_treap *t, uint64_t key);
struct jt_tnode *jt_treap_ge(const struct jt_treap *t, uint64_t key);
struct jt_tnode *jt_treap_gt(const struct jt_treap *t, uint64_t key);
/* Nodes with a key below key. */
size_t jt_treap_rank(const struct jt_treap *t, uint64_t key);
/* In key order; fn may not change the tree's shape. */
void jt_treap_walk(struct jt_tnode *sub, void (*fn)(struct jt_tnode *, void *),
		   void *ctx);
/* fn frees each node; children are visited before their parent. */
void jt_treap_destroy(struct jt_tnode *sub, void (*fn)(struct jt_tnode *));
/* A copy of the same shape; NULL and *err set when dup fails. */
struct jt_tnode *
jt_treap_clone(const struct jt_tnode *sub,
	       struct jt_tnode *(*dup)(const struct jt_tnode *), int *err);

#endif /* JT_TREAP_H */
