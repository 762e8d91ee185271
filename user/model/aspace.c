// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include "model/aspace.h"
#include "jt_abi.h"

struct rnode {
	struct jt_tnode t;
	struct jt_region r;
};

struct knode {
	struct jt_tnode t;
	struct jt_kvma v;
};

struct cnode {
	struct jt_tnode t;
	struct jt_cowpage c;
};

#define RNODE(n) jt_tnode_entry(n, struct rnode, t)
#define KNODE(n) jt_tnode_entry(n, struct knode, t)
#define CNODE(n) jt_tnode_entry(n, struct cnode, t)

/* Every node type starts with its jt_tnode. */
static void free_node(struct jt_tnode *n)
{
	free(n);
}

static struct jt_tnode *dup_region(const struct jt_tnode *n)
{
	struct rnode *c = malloc(sizeof(*c));

	if (c)
		c->r = RNODE(n)->r;
	return c ? &c->t : NULL;
}

static struct jt_tnode *dup_kvma(const struct jt_tnode *n)
{
	struct knode *c = malloc(sizeof(*c));

	if (c)
		c->v = KNODE(n)->v;
	return c ? &c->t : NULL;
}

static struct jt_tnode *dup_cow(const struct jt_tnode *n)
{
	struct cnode *c = malloc(sizeof(*c));

	if (c)
		c->c = CNODE(n)->c;
	return c ? &c->t : NULL;
}

static const struct jt_treap_ops region_ops = { dup_region, free_node };
static const struct jt_treap_ops kvma_ops = { dup_kvma, free_node };
static const struct jt_treap_ops cow_ops = { dup_cow, free_node };

/*
 * The regions, to change: the cached hit goes, since a change may free
 * its node or copy it away from a tree a fork shares.
 */
static struct jt_treap *regions_w(struct jt_aspace *as)
{
	as->hit = NULL;
	return &as->regions;
}

struct jt_aspace *jt_aspace_new(void)
{
	struct jt_aspace *as = calloc(1, sizeof(*as));

	if (!as)
		return NULL;
	as->refs = 1;
	as->regions.ops = &region_ops;
	as->kvmas.ops = &kvma_ops;
	as->cow.ops = &cow_ops;
	return as;
}

/* A fork: O(1), the trees are shared until either side changes them. */
struct jt_aspace *jt_aspace_clone(const struct jt_aspace *src)
{
	struct jt_aspace *as = jt_aspace_new();

	if (!as)
		return NULL;
	jt_treap_share(&as->regions, &src->regions);
	jt_treap_share(&as->kvmas, &src->kvmas);
	jt_treap_share(&as->cow, &src->cow);
	as->fork_ns = src->fork_ns;
	return as;
}

void jt_aspace_put(struct jt_aspace *as)
{
	if (!as || --as->refs > 0)
		return;
	jt_treap_clear(regions_w(as));
	jt_treap_clear(&as->kvmas);
	jt_treap_clear(&as->cow);
	free(as);
}

static const struct jt_region *region_at(const struct jt_aspace *as,
					 uint64_t addr)
{
	/* The hit is a cache of the tree, not part of its value. */
	struct jt_aspace *cache = (struct jt_aspace *)as;
	const struct jt_region *g = as->hit;
	struct jt_tnode *n;

	if (g && g->start <= addr && addr < g->end)
		return g;
	n = jt_treap_le(&as->regions, addr);
	if (!n || addr >= RNODE(n)->r.end)
		return NULL;
	return cache->hit = &RNODE(n)->r;
}

/* The region starting at start, as->regions' own to change. */
static struct jt_region *region_mut(struct jt_aspace *as, uint64_t start)
{
	struct jt_tnode *n = jt_treap_mut(regions_w(as), start);

	return n ? &RNODE(n)->r : NULL;
}

static int insert(struct jt_aspace *as, const struct jt_region *r)
{
	struct rnode *n = malloc(sizeof(*n));

	if (!n)
		return -ENOMEM;
	n->r = *r;
	n->t.key = r->start;
	jt_treap_insert(regions_w(as), &n->t);
	return 0;
}

/* Make addr a region boundary if it falls inside one. */
static int split(struct jt_aspace *as, uint64_t addr)
{
	const struct jt_region *g = region_at(as, addr);
	struct jt_region right;

	if (!g || g->start == addr)
		return 0;
	right = *g;
	right.pgoff += addr - right.start;
	right.start = addr;
	region_mut(as, g->start)->end = addr;
	return insert(as, &right);
}

static int split2(struct jt_aspace *as, uint64_t start, uint64_t end)
{
	int err = split(as, start);

	return err ? err : split(as, end);
}

static int add_kvma(struct jt_aspace *as, const struct jt_kvma *v)
{
	struct knode *n = malloc(sizeof(*n));

	if (!n)
		return -ENOMEM;
	n->v = *v;
	n->t.key = v->start;
	jt_treap_insert(&as->kvmas, &n->t);
	return 0;
}

/*
 * Forget the kernel VMAs over [s, e): one that reaches in from either
 * side keeps only what lies outside, as the kernel's own split would.
 */
static int kvma_clear(struct jt_aspace *as, uint64_t s, uint64_t e)
{
	struct jt_tnode *n = s ? jt_treap_le(&as->kvmas, s - 1) : NULL;
	struct jt_kvma rest;
	int err = 0;

	if (n && KNODE(n)->v.end > s) {
		rest = KNODE(n)->v;
		KNODE(jt_treap_mut(&as->kvmas, n->key))->v.end = s;
		if (rest.end > e) {
			rest.start = e;
			err = add_kvma(as, &rest);
		}
	}
	n = jt_treap_le(&as->kvmas, e - 1);
	if (n && n->key >= s && KNODE(n)->v.end > e) {
		rest = KNODE(n)->v;
		rest.start = e;
		jt_treap_remove(&as->kvmas, n->key);
		err = err ?: add_kvma(as, &rest);
	}
	jt_treap_drop(&as->kvmas, jt_treap_take(&as->kvmas, s, e));
	return err;
}

/* Pages of a range that is unmapped or replaced are gone with it. */
static void cow_cut(struct jt_aspace *as, uint64_t start, uint64_t end)
{
	jt_treap_drop(&as->cow, jt_treap_take(&as->cow, start, end));
}

int jt_aspace_cow(struct jt_aspace *as, const struct jt_cowpage *cp)
{
	struct jt_tnode *n = jt_treap_mut(&as->cow, cp->page);
	struct cnode *c;

	if (n) {
		CNODE(n)->c = *cp;
		return 0;
	}
	c = malloc(sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->c = *cp;
	c->t.key = cp->page;
	jt_treap_insert(&as->cow, &c->t);
	return 0;
}

const struct jt_cowpage *jt_aspace_cow_from(const struct jt_aspace *as,
					    uint64_t addr)
{
	struct jt_tnode *n = jt_treap_ge(&as->cow, addr);

	return n ? &CNODE(n)->c : NULL;
}

const struct jt_cowpage *jt_aspace_cowpage(const struct jt_aspace *as,
					   uint64_t page)
{
	const struct jt_cowpage *c = jt_aspace_cow_from(as, page);

	return c && c->page == page ? c : NULL;
}

/*
 * Every private page that existed then is shared with the other side
 * until written: kept as one time per mm, not written into each region,
 * so a fork costs O(1).
 */
void jt_aspace_forked(struct jt_aspace *as, uint64_t now)
{
	as->fork_ns = now;
}

uint64_t jt_aspace_fork_ns(const struct jt_aspace *as,
			   const struct jt_region *r)
{
	if (jt_region_shared(r) || !as->fork_ns || r->pages_ns > as->fork_ns)
		return 0;
	return as->fork_ns;
}

/*
 * Private file pages stay the file's until written; after a fork every
 * page of a private mapping is shared with the other side until one of
 * them writes it. Pages first touched after the fork are not seen (no
 * event is made for them) and count as shared: a bound, not an answer.
 */
enum jt_sharing jt_aspace_sharing(const struct jt_aspace *as, uint64_t addr)
{
	const struct jt_region *r = region_at(as, addr);
	const struct jt_cowpage *c;
	uint64_t fork_ns;

	if (!r)
		return JT_SHARE_NONE;
	/* shm segments are pseudo files: known by how they were made. */
	if (r->kind == JT_RK_SHARED_ANON || r->origin == JT_EV_SHMAT ||
	    (r->path && !strncmp(r->path, "/SYSV", 5)))
		return JT_SHARE_ANON;
	if (jt_region_shared(r))
		return JT_SHARE_FILE;
	fork_ns = jt_aspace_fork_ns(as, r);
	c = jt_aspace_cowpage(as, addr & JT_PAGE_MASK);
	if (c && c->time > fork_ns)
		return JT_SHARE_PRIVATE;
	if (c || (fork_ns && r->kind != JT_RK_FILE))
		return fork_ns ? JT_SHARE_ANON : JT_SHARE_PRIVATE;
	return r->kind == JT_RK_FILE ? JT_SHARE_FILE : JT_SHARE_PRIVATE;
}

const char *jt_sharing_name(enum jt_sharing s)
{
	static const char *const names[] = { "unmapped", "private",
					     "shared-file", "shared-anon" };

	return names[s];
}

int jt_aspace_cut(struct jt_aspace *as, uint64_t start, uint64_t end)
{
	int err;

	if (start >= end)
		return 0;
	cow_cut(as, start, end);
	err = split2(as, start, end);
	if (err)
		return err;
	jt_treap_drop(regions_w(as), jt_treap_take(regions_w(as), start, end));
	return kvma_clear(as, start, end);
}

int jt_aspace_map(struct jt_aspace *as, const struct jt_region *r)
{
	struct jt_region n = *r;
	int err = jt_aspace_cut(as, r->start, r->end);

	/* A new mapping: new pages, whatever a caller left in the field. */
	n.pages_ns = n.born_ns;
	if (!err)
		err = insert(as, &n);
	return err;
}

static void set_prot(struct jt_tnode *n, void *ctx)
{
	RNODE(n)->r.prot = *(uint32_t *)ctx;
}

int jt_aspace_protect(struct jt_aspace *as, uint64_t start, uint64_t end,
		      uint32_t prot)
{
	struct jt_tnode *sub;
	int err = split2(as, start, end);

	if (err)
		return err;
	sub = jt_treap_take(regions_w(as), start, end);
	jt_treap_walk_mut(regions_w(as), &sub, set_prot, &prot);
	jt_treap_join(regions_w(as), sub);
	return 0;
}

static int grow_in_place(struct jt_aspace *as, uint64_t old, uint64_t old_len,
			 uint64_t new_len)
{
	const struct jt_region *g;
	int err;

	if (new_len == old_len)
		return 0;
	if (new_len < old_len)
		return jt_aspace_cut(as, old + new_len, old + old_len);
	err = jt_aspace_cut(as, old + old_len, old + new_len);
	if (err)
		return err;
	g = region_at(as, old + old_len - 1);
	if (g)
		region_mut(as, g->start)->end = old + new_len;
	return 0;
}

struct collect {
	struct jt_region *r;
	size_t n;
};

static void collect(const struct jt_tnode *n, void *ctx)
{
	struct collect *c = ctx;

	c->r[c->n++] = RNODE(n)->r;
}

/* The regions of [old, old + len), copied out in order. */
static int copy_range(struct jt_aspace *as, uint64_t old, uint64_t len,
		      struct collect *c)
{
	struct jt_tnode *sub;
	int err = split2(as, old, old + len);

	if (err)
		return err;
	sub = jt_treap_take(regions_w(as), old, old + len);
	c->n = 0;
	c->r = malloc((sub ? sub->size : 1) * sizeof(*c->r));
	if (c->r)
		jt_treap_walk(sub, collect, c);
	jt_treap_join(regions_w(as), sub);
	return c->r ? 0 : -ENOMEM;
}

int jt_aspace_remap(struct jt_aspace *as, uint64_t old, uint64_t old_len,
		    uint64_t new, uint64_t new_len, bool keep_old, uint64_t now)
{
	struct collect moved;
	size_t i;
	int err;

	if (new == old)
		return grow_in_place(as, old, old_len, new_len);
	err = copy_range(as, old, old_len, &moved);
	if (err)
		return err;
	if (!keep_old)
		err = jt_aspace_cut(as, old, old + old_len);
	if (!err)
		err = jt_aspace_cut(as, new, new + new_len);
	for (i = 0; i < moved.n && !err; i++) {
		struct jt_region r = moved.r[i];

		r.start = r.start - old + new;
		r.end = r.end - old + new;
		if (i == moved.n - 1 && new_len > old_len)
			r.end = new + new_len;
		if (r.start >= new + new_len)
			break;
		if (r.end > new + new_len)
			r.end = new + new_len;
		/* A new region, holding the pages it moved: pages_ns stays. */
		r.born_ns = now;
		r.origin = JT_EV_MREMAP;
		err = insert(as, &r);
	}
	free(moved.r);
	return err;
}

static const struct jt_region *find_heap(const struct jt_aspace *as,
					 uint64_t start)
{
	const struct jt_region *g = region_at(as, start);

	return g && g->start == start && g->kind == JT_RK_HEAP ? g : NULL;
}

int jt_aspace_brk(struct jt_aspace *as, uint64_t start_brk, uint64_t brk,
		  uint64_t now)
{
	uint64_t hs = JT_PAGE_ALIGN(start_brk);
	uint64_t he = JT_PAGE_ALIGN(brk);
	const struct jt_region *h = find_heap(as, hs);
	struct jt_region r;
	int err;

	if (h && he <= hs)
		return jt_aspace_cut(as, hs, h->end);
	if (he <= hs)
		return 0;
	if (!h) {
		r = (struct jt_region){ .start = hs,
					.end = he,
					.prot = PROT_READ | PROT_WRITE,
					.mflags = MAP_PRIVATE | MAP_ANONYMOUS,
					.kind = JT_RK_HEAP,
					.born_ns = now,
					.origin = JT_EV_BRK };
		return jt_aspace_map(as, &r);
	}
	if (he < h->end)
		return jt_aspace_cut(as, he, h->end);
	err = jt_aspace_cut(as, h->end, he);
	if (err)
		return err;
	if (find_heap(as, hs))
		region_mut(as, hs)->end = he;
	return 0;
}

void jt_aspace_observe(struct jt_aspace *as, const struct jt_kvma *v)
{
	if (!v->end || v->start >= v->end)
		return;
	if (kvma_clear(as, v->start, v->end) || add_kvma(as, v))
		return; /* out of memory: the VMA is not known, as before */
}

struct jt_kvma jt_aspace_kvma(const struct jt_aspace *as,
			      const struct jt_region *r)
{
	struct jt_tnode *n = jt_treap_le(&as->kvmas, r->start);

	return n && KNODE(n)->v.end > r->start ? KNODE(n)->v :
						 (struct jt_kvma){};
}

const struct jt_region *jt_aspace_find(const struct jt_aspace *as,
				       uint64_t addr)
{
	return region_at(as, addr);
}

const struct jt_region *jt_aspace_first(const struct jt_aspace *as)
{
	struct jt_tnode *n = jt_treap_ge(&as->regions, 0);

	return n ? &RNODE(n)->r : NULL;
}

const struct jt_region *jt_aspace_next(const struct jt_aspace *as,
				       const struct jt_region *r)
{
	struct jt_tnode *n = jt_treap_gt(&as->regions, r->start);

	return n ? &RNODE(n)->r : NULL;
}

const struct jt_region *jt_aspace_from(const struct jt_aspace *as,
				       uint64_t addr)
{
	const struct jt_region *g = region_at(as, addr);
	struct jt_tnode *n;

	if (g)
		return g;
	n = jt_treap_gt(&as->regions, addr);
	return n ? &RNODE(n)->r : NULL;
}

const struct jt_region *jt_aspace_nth(const struct jt_aspace *as, size_t i)
{
	struct jt_tnode *n = as->regions.root;

	while (n) {
		size_t left = n->left ? n->left->size : 0;

		if (i == left)
			return &RNODE(n)->r;
		if (i < left) {
			n = n->left;
		} else {
			i -= left + 1;
			n = n->right;
		}
	}
	return NULL;
}

size_t jt_aspace_count(const struct jt_aspace *as)
{
	return jt_treap_count(&as->regions);
}

/* Regions from the one holding or following start, to before end. */
static size_t count_range(const struct jt_aspace *as, uint64_t start,
			  uint64_t end)
{
	const struct jt_region *g = region_at(as, start);
	uint64_t from = g ? g->start : start;
	size_t hi = jt_treap_rank(&as->regions, end);
	size_t lo = jt_treap_rank(&as->regions, from);

	return hi > lo ? hi - lo : 0;
}

size_t jt_aspace_vma_members(const struct jt_aspace *as,
			     const struct jt_region *r)
{
	struct jt_kvma v = jt_aspace_kvma(as, r);
	size_t n;

	if (!v.end)
		return 1;
	n = count_range(as, v.start, v.end);
	return n ? n : 1;
}

const char *jt_region_name(const struct jt_region *r)
{
	switch (r->kind) {
	case JT_RK_FILE:
		return r->path ? r->path : "[file]";
	case JT_RK_HEAP:
		return "[heap]";
	case JT_RK_STACK:
		return "[stack]";
	case JT_RK_VDSO:
		return "[vdso]";
	case JT_RK_VVAR:
		return "[vvar]";
	case JT_RK_SHARED_ANON:
		return "[anon:shared]";
	}
	return "[anon]";
}
