// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include "lib/nametab.h"
#include "lib/reserve.h"
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
	free(f->span);
	free(f->sym);
	free(f->bucket);
	memset(f, 0, sizeof(*f));
}

/*
 * Tables start zeroed; the ops are set on first change, which ends the
 * flat copy. Its arrays stay for the next: code loaded in batches while
 * samples come made a copy per batch, and fresh pages for each.
 */
static struct jt_treap *tree(struct jt_jittab *t)
{
	t->flat.valid = 0;
	t->flat.misses = 0;
	t->t.ops = t->counted ? &counted_ops : &sym_ops;
	return &t->t;
}

static void flat_add(const struct jt_tnode *node, void *ctx)
{
	struct jt_jitflat *f = ctx;
	const struct jt_jitsym *s = &SYMNODE(node)->s;

	f->span[f->n] = (struct jt_jitspan){ node->key, s->end, s->name };
	f->sym[f->n++] = s;
}

/* The fewest bucket bits that keep the buckets no more than n. */
static unsigned int flat_shift(const struct jt_jitflat *f)
{
	uint64_t range = f->span[f->n - 1].start - f->span[0].start;
	unsigned int shift = 0;

	while ((range >> shift) >= f->n)
		shift++;
	return shift;
}

static void flat_buckets(struct jt_jitflat *f)
{
	uint64_t base = f->span[0].start;
	size_t b = 0, i;

	for (i = 0; i < f->n; i++)
		while (b <= (f->span[i].start - base) >> f->shift)
			f->bucket[b++] = i;
	f->bucket[b] = f->n;
}

/* *p with room for n of size, grown or, once a quarter is used, cut. */
static int room(void *p, size_t *cap, size_t n, size_t size)
{
	void *q, **pp = p;

	if (n <= *cap && n >= *cap / 4)
		return 0;
	q = realloc(*pp, n * size);
	if (!q)
		return -ENOMEM;
	*pp = q;
	*cap = n;
	return 0;
}

#define SLACK(n) ((n) + (n) / 2 + 16)

static int flat_build(struct jt_jitflat *f, const struct jt_jittab *t)
{
	size_t tree_n = jt_treap_count(&t->t), n = tree_n + t->ntail, i;

	if (!n)
		return -ENOENT;
	/* Room to spare for the code still to come (flat_append). */
	if (room(&f->span, &f->cap, SLACK(n), sizeof(*f->span)) ||
	    room(&f->sym, &f->sym_cap, tree_n + 1, sizeof(*f->sym)))
		goto nomem;
	f->n = 0;
	jt_treap_walk(t->t.root, flat_add, f);
	f->ntree = f->n;
	for (i = 0; i < t->ntail; i++)
		f->span[f->n++] =
			(struct jt_jitspan){ t->tail[i].start, t->tail[i].end,
					     t->tail[i].name };
	f->shift = flat_shift(f);
	f->nb = ((f->span[n - 1].start - f->span[0].start) >> f->shift) + 1;
	if (room(&f->bucket, &f->bcap, SLACK(f->nb + 1), sizeof(*f->bucket)))
		goto nomem;
	flat_buckets(f);
	f->valid = 1;
	return 0;
nomem:
	flat_free(f);
	return -ENOMEM;
}

/* The index of the function holding addr, or -1. */
static ssize_t flat_find(const struct jt_jitflat *f, uint64_t addr)
{
	uint64_t b;
	size_t lo, hi, mid;

	if (addr < f->span[0].start)
		return -1;
	b = (addr - f->span[0].start) >> f->shift;
	if (b >= f->nb)
		b = f->nb - 1;
	/* The last start <= addr is in this bucket or ends the one before. */
	lo = f->bucket[b];
	hi = f->bucket[b + 1];
	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		if (f->span[mid].start <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo && f->span[lo - 1].end > addr ? (ssize_t)lo - 1 : -1;
}

void jt_jittab_prefetch(const struct jt_jittab *t, uint64_t addr,
			bool functions)
{
	const struct jt_jitflat *f = &t->flat;
	uint64_t b;
	uint32_t lo;

	if (!f->valid || addr < f->span[0].start)
		return;
	b = (addr - f->span[0].start) >> f->shift;
	if (b >= f->nb)
		b = f->nb - 1;
	if (!functions) {
		__builtin_prefetch(&f->bucket[b]);
		return;
	}
	lo = f->bucket[b];
	/* Dense code: the function is the bucket's first or the one before. */
	__builtin_prefetch(&f->span[lo]);
	if (lo)
		__builtin_prefetch(&f->span[lo - 1]);
}

/* The function holding addr, or NULL. */
static struct symnode *holding(const struct jt_treap *t, uint64_t addr)
{
	struct jt_tnode *n = jt_treap_le(t, addr);

	return n && SYMNODE(n)->s.end > addr ? SYMNODE(n) : NULL;
}

/*
 * A load past every function, as runtimes mostly load code: the flat
 * copy takes it at its end and stays, where a copy rebuilt each n/8
 * lookups while code came walked the table each time. Only while the
 * buckets stay no more than twice the functions; else the copy goes.
 * Its arrays grow with it: a copy made at 4K functions and dropped when
 * full left the naming bench's next 160K lookups (of 200K functions) to
 * the tree, 5% of report's time.
 */
static bool flat_append(struct jt_jitflat *f, const struct jt_jitsym *s)
{
	uint64_t b = (s->start - f->span[0].start) >> f->shift;

	if (b + 1 > 2 * (f->n + 1) + 16)
		return false;
	if ((f->n == f->cap &&
	     room(&f->span, &f->cap, SLACK(f->n + 1), sizeof(*f->span))) ||
	    (b + 2 > f->bcap &&
	     room(&f->bucket, &f->bcap, SLACK(b + 2), sizeof(*f->bucket))))
		return false;
	for (; f->nb <= b; f->nb++)
		f->bucket[f->nb] = f->n;
	f->span[f->n++] = (struct jt_jitspan){ s->start, s->end, s->name };
	f->bucket[f->nb] = f->n;
	return true;
}

/* An empty function still holds its start: no other may have it. */
static uint64_t end_of(const struct jt_jitsym *s)
{
	return s->end > s->start ? s->end : s->start + 1;
}

/*
 * The tail's functions into the treap, in order: each goes in once, so
 * O(log n) a function however the table changes. -ENOMEM leaves those
 * not moved in the tail, still past every function in the treap.
 */
static int sink(struct jt_jittab *t)
{
	size_t i;

	if (!t->ntail)
		return 0;
	for (i = 0; i < t->ntail; i++) {
		struct symnode *n = malloc(sizeof(*n));

		if (!n)
			break;
		/* The node takes over the tail's reference to the name. */
		n->s = t->tail[i];
		n->t.key = n->s.start;
		jt_treap_insert(tree(t), &n->t);
	}
	t->ntail -= i;
	memmove(t->tail, t->tail + i, t->ntail * sizeof(*t->tail));
	if (!t->ntail) {
		free(t->tail);
		t->tail = NULL;
		t->tail_cap = 0;
	}
	return t->ntail ? -ENOMEM : 0;
}

/* A const table's tail into its treap: how it holds them is not its value. */
static void sink_const(const struct jt_jittab *t)
{
	sink((struct jt_jittab *)t);
}

static void put_names(const struct jt_jittab *t, size_t from)
{
	size_t i;

	for (i = from; t->counted && i < t->ntail; i++)
		jt_name_put(t->tail[i].name);
}

/* The first tail function that starts at or past addr; ntail when none. */
static size_t tail_past(const struct jt_jittab *t, uint64_t addr)
{
	size_t lo = 0, hi = t->ntail, mid;

	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		if (t->tail[mid].start < addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/*
 * The first tail function that ends past addr (addr < UINT64_MAX); ntail
 * when none. They do not overlap: the one before the first to start past
 * addr, or that one.
 */
static size_t tail_from(const struct jt_jittab *t, uint64_t addr)
{
	size_t k = tail_past(t, addr + 1);

	return k && end_of(&t->tail[k - 1]) > addr ? k - 1 : k;
}

/* The flat copy without the functions from its n-th on. */
static void flat_truncate(struct jt_jitflat *f, size_t n)
{
	if (!f->valid || !n) {
		f->valid = 0;
		return;
	}
	f->n = n;
	f->nb = ((f->span[n - 1].start - f->span[0].start) >> f->shift) + 1;
	f->bucket[f->nb] = n;
}

/* The tail from its from-th on; max_end then is what ends last. */
static void tail_cut(struct jt_jittab *t, size_t from)
{
	struct jt_tnode *last;

	put_names(t, from);
	t->ntail = from;
	flat_truncate(&t->flat, t->flat.ntree + from);
	if (t->ntail) {
		t->max_end = end_of(&t->tail[t->ntail - 1]);
	} else {
		last = jt_treap_le(&t->t, UINT64_MAX);
		t->max_end = last ? end_of(&SYMNODE(last)->s) : 0;
	}
}

/* Without memory to sink the tail, cut it in place: O(n), and rare. */
static void tail_cut_middle(struct jt_jittab *t, size_t from, size_t to)
{
	size_t n = t->ntail;

	t->ntail = to;
	put_names(t, from);
	memmove(t->tail + from, t->tail + to, (n - to) * sizeof(*t->tail));
	t->ntail = from + n - to;
	t->flat.valid = 0;
}

static void tree_cut(struct jt_jittab *t, uint64_t start, uint64_t end)
{
	struct symnode *first = start ? holding(&t->t, start - 1) : NULL;

	if (first && first->s.end > start)
		jt_treap_remove(tree(t), first->t.key);
	jt_treap_drop(tree(t), jt_treap_take(tree(t), start, end));
}

void jt_jittab_cut(struct jt_jittab *t, uint64_t start, uint64_t end)
{
	size_t from;

	if (start >= end)
		return;
	from = tail_from(t, start);
	if (from < t->ntail && t->tail[from].start < end) {
		/* Runtimes free their newest code last: a cut to the end. */
		if (t->tail[t->ntail - 1].start < end)
			tail_cut(t, from);
		else if (sink(t))
			tail_cut_middle(t, tail_from(t, start),
					tail_past(t, end));
	}
	if (t->t.root)
		tree_cut(t, start, end);
}

int jt_jittab_load(struct jt_jittab *t, const struct jt_jitsym *s)
{
	uint64_t end = end_of(s);
	struct symnode *n;

	if (s->start >= t->max_end) {
		if (jt_reserve(&t->tail, &t->tail_cap, t->ntail + 1,
			       sizeof(*t->tail)))
			return -ENOMEM;
		t->tail[t->ntail++] = *s;
		if (t->counted && s->name)
			jt_name_ref(s->name);
		t->max_end = end;
		if (t->flat.valid && !flat_append(&t->flat, s))
			t->flat.valid = 0;
		return 0;
	}
	/* Among the tail's functions: they go into the treap first. */
	if (t->ntail && end > t->tail[0].start && sink(t))
		return -ENOMEM;
	n = malloc(sizeof(*n));
	if (!n)
		return -ENOMEM;
	jt_jittab_cut(t, s->start, end);
	if (end > t->max_end)
		t->max_end = end;
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
	struct jt_tnode *n;
	struct jt_jitsym s;

	if (t->ntail && old >= t->tail[0].start && sink(t))
		return -ENOMEM;
	n = jt_treap_le(&t->t, old);
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
	/*
	 * Only the treap's changes end the copy: a table that is all tail
	 * (code loaded as runtimes load it) is copied at its first lookup,
	 * where searching it in halves until then took 2% of report's time.
	 */
	if ((!t->t.root || ++f->misses >= jt_jittab_count(t) / 8 + 16) &&
	    !flat_build(f, t))
		return f;
	return NULL;
}

/* Without the flat copy: the tail's binary search, or the treap's. */
static const struct jt_jitsym *lookup(const struct jt_jittab *t, uint64_t addr)
{
	const struct jt_jitsym *s;
	struct symnode *n;

	if (t->ntail && addr >= t->tail[0].start) {
		/* addr < max_end: addr + 1 does not wrap. */
		s = &t->tail[tail_past(t, addr + 1) - 1];
		return s->end > addr ? s : NULL;
	}
	n = holding(&t->t, addr);
	return n ? &n->s : NULL;
}

const struct jt_jitsym *jt_jittab_find(const struct jt_jittab *t, uint64_t addr)
{
	struct jt_jitflat *f;
	ssize_t k;

	/* Logging code at rising addresses asks past the end each time. */
	if (addr >= t->max_end)
		return NULL;
	f = flat_of(t);
	if (!f)
		return lookup(t, addr);
	k = flat_find(f, addr);
	if (k < 0)
		return NULL;
	return (size_t)k < f->ntree ? f->sym[k] : &t->tail[k - f->ntree];
}

bool jt_jittab_name(const struct jt_jittab *t, uint64_t addr,
		    struct jt_jitname *out)
{
	struct jt_jitflat *f;
	const struct jt_jitsym *s;
	ssize_t k;

	if (addr >= t->max_end)
		return false;
	f = flat_of(t);
	if (f) {
		k = flat_find(f, addr);
		if (k >= 0)
			*out = (struct jt_jitname){ f->span[k].start,
						    f->span[k].end,
						    f->span[k].name };
		return k >= 0;
	}
	s = lookup(t, addr);
	if (s)
		*out = (struct jt_jitname){ s->start, s->end, s->name };
	return s;
}

/*
 * Walks are for audits and pictures, not for naming each sample: they
 * read the treap, with the tail sunk into it first. Without memory to
 * sink it, they miss the tail, as they would miss what failed to load.
 */
const struct jt_jitsym *jt_jittab_first_in(const struct jt_jittab *t,
					   uint64_t start, uint64_t end)
{
	struct symnode *h;
	struct jt_tnode *n;

	sink_const(t);
	h = holding(&t->t, start);
	if (h)
		return &h->s;
	n = jt_treap_ge(&t->t, start);
	return n && n->key < end ? &SYMNODE(n)->s : NULL;
}

const struct jt_jitsym *jt_jittab_next(const struct jt_jittab *t,
				       const struct jt_jitsym *s)
{
	struct jt_tnode *n;

	sink_const(t);
	n = jt_treap_gt(&t->t, s->start);
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

size_t jt_jittab_count(const struct jt_jittab *t)
{
	return jt_treap_count(&t->t) + t->ntail;
}

/* A fork shares the treap: the tail, the parent's own, goes in first. */
int jt_jittab_copy(struct jt_jittab *dst, const struct jt_jittab *src)
{
	sink_const(src);
	if (src->ntail)
		return -ENOMEM;
	flat_free(&dst->flat);
	jt_treap_share(&dst->t, &src->t);
	dst->max_end = src->max_end;
	dst->counted = src->counted;
	dst->t.ops = src->counted ? &counted_ops : &sym_ops;
	return 0;
}

void jt_jittab_free(struct jt_jittab *t)
{
	flat_free(&t->flat);
	put_names(t, 0);
	free(t->tail);
	jt_treap_clear(tree(t));
	memset(t, 0, sizeof(*t));
}
