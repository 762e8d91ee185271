// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include "model/aspace.h"
#include "jt_abi.h"
#include "lib/reserve.h"

struct jt_aspace *jt_aspace_new(void)
{
	struct jt_aspace *as = calloc(1, sizeof(*as));

	if (as)
		as->refs = 1;
	return as;
}

struct jt_aspace *jt_aspace_clone(const struct jt_aspace *src)
{
	struct jt_aspace *as = jt_aspace_new();

	if (!as || !src->n)
		return as;
	as->r = malloc(src->n * sizeof(*as->r));
	if (!as->r) {
		free(as);
		return NULL;
	}
	memcpy(as->r, src->r, src->n * sizeof(*as->r));
	as->n = as->cap = src->n;
	if (src->npriv && !jt_reserve(&as->priv, &as->priv_cap, src->npriv,
				      sizeof(*as->priv))) {
		memcpy(as->priv, src->priv, src->npriv * sizeof(*as->priv));
		as->npriv = src->npriv;
	}
	return as;
}

void jt_aspace_put(struct jt_aspace *as)
{
	if (!as || --as->refs > 0)
		return;
	free(as->priv);
	free(as->r);
	free(as);
}

/* Index of the first region ending after addr: where addr is or would be. */
static size_t lower(const struct jt_aspace *as, uint64_t addr)
{
	size_t lo = 0, hi = as->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (as->r[mid].end <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static int insert_at(struct jt_aspace *as, size_t i, const struct jt_region *r)
{
	if (jt_reserve(&as->r, &as->cap, as->n + 1, sizeof(*as->r)))
		return -ENOMEM;
	memmove(&as->r[i + 1], &as->r[i], (as->n - i) * sizeof(*r));
	as->r[i] = *r;
	as->n++;
	return 0;
}

/* Make addr a region boundary if it falls inside one. */
static int split(struct jt_aspace *as, uint64_t addr)
{
	size_t i = lower(as, addr);
	struct jt_region right;

	if (i == as->n || as->r[i].start >= addr)
		return 0;
	right = as->r[i];
	right.pgoff += addr - right.start;
	right.start = addr;
	as->r[i].end = addr;
	return insert_at(as, i + 1, &right);
}

static int split2(struct jt_aspace *as, uint64_t start, uint64_t end)
{
	int err = split(as, start);

	return err ? err : split(as, end);
}

/* Regions left of i and from j on whose kernel VMA reached into [s, e). */
static void clip_neighbours(struct jt_aspace *as, size_t i, size_t j,
			    uint64_t s, uint64_t e)
{
	while (i-- > 0 && as->r[i].kvma.end > s && as->r[i].kvma.start < s)
		as->r[i].kvma.end = s;
	for (; j < as->n && as->r[j].kvma.start < e && as->r[j].kvma.end > e;
	     j++)
		as->r[j].kvma.start = e;
}

static size_t priv_lower(const struct jt_aspace *as, uint64_t page)
{
	size_t lo = 0, hi = as->npriv;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (as->priv[mid].page < page)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* Pages of a range that is unmapped or replaced are gone with it. */
static void priv_cut(struct jt_aspace *as, uint64_t start, uint64_t end)
{
	size_t i = priv_lower(as, start), j = i;

	while (j < as->npriv && as->priv[j].page < end)
		j++;
	if (j > i)
		memmove(&as->priv[i], &as->priv[j],
			(as->npriv - j) * sizeof(*as->priv));
	as->npriv -= j - i;
}

int jt_aspace_cow(struct jt_aspace *as, uint64_t page, uint64_t now)
{
	size_t i = priv_lower(as, page);

	if (i < as->npriv && as->priv[i].page == page) {
		as->priv[i].time = now;
		return 0;
	}
	if (jt_reserve(&as->priv, &as->priv_cap, as->npriv + 1,
		       sizeof(*as->priv)))
		return -ENOMEM;
	memmove(&as->priv[i + 1], &as->priv[i],
		(as->npriv - i) * sizeof(*as->priv));
	as->priv[i] = (struct jt_cowpage){ page, now };
	as->npriv++;
	return 0;
}

const struct jt_cowpage *jt_aspace_cowpage(const struct jt_aspace *as,
					   uint64_t page)
{
	size_t i = priv_lower(as, page);

	return i < as->npriv && as->priv[i].page == page ? &as->priv[i] : NULL;
}

void jt_aspace_forked(struct jt_aspace *as, uint64_t now)
{
	size_t i;

	for (i = 0; i < as->n; i++)
		if (!jt_region_shared(&as->r[i]))
			as->r[i].fork_ns = now;
}

/*
 * Private file pages stay the file's until written; after a fork every
 * page of a private mapping is shared with the other side until one of
 * them writes it. Pages first touched after the fork are not seen (no
 * event is made for them) and count as shared: a bound, not an answer.
 */
enum jt_sharing jt_aspace_sharing(const struct jt_aspace *as, uint64_t addr)
{
	const struct jt_region *r = jt_aspace_find(as, addr);
	const struct jt_cowpage *c;

	if (!r)
		return JT_SHARE_NONE;
	/* shm segments are pseudo files: known by how they were made. */
	if (r->kind == JT_RK_SHARED_ANON || r->origin == JT_EV_SHMAT ||
	    (r->path && !strncmp(r->path, "/SYSV", 5)))
		return JT_SHARE_ANON;
	if (jt_region_shared(r))
		return JT_SHARE_FILE;
	c = jt_aspace_cowpage(as, addr & JT_PAGE_MASK);
	if (c && c->time > r->fork_ns)
		return JT_SHARE_PRIVATE;
	if (c || (r->fork_ns && r->kind != JT_RK_FILE))
		return r->fork_ns ? JT_SHARE_ANON : JT_SHARE_PRIVATE;
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
	size_t i, j;
	int err;

	if (start >= end || !as->n)
		return 0;
	priv_cut(as, start, end);
	err = split2(as, start, end);
	if (err)
		return err;
	i = lower(as, start);
	for (j = i; j < as->n && as->r[j].start < end; j++)
		;
	memmove(&as->r[i], &as->r[j], (as->n - j) * sizeof(*as->r));
	as->n -= j - i;
	clip_neighbours(as, i, i, start, end);
	return 0;
}

int jt_aspace_map(struct jt_aspace *as, const struct jt_region *r)
{
	int err = jt_aspace_cut(as, r->start, r->end);

	return err ? err : insert_at(as, lower(as, r->start), r);
}

int jt_aspace_protect(struct jt_aspace *as, uint64_t start, uint64_t end,
		      uint32_t prot)
{
	size_t i;
	int err = split2(as, start, end);

	if (err)
		return err;
	for (i = lower(as, start); i < as->n && as->r[i].start < end; i++)
		as->r[i].prot = prot;
	return 0;
}

static int grow_in_place(struct jt_aspace *as, uint64_t old, uint64_t old_len,
			 uint64_t new_len)
{
	size_t i;
	int err;

	if (new_len < old_len)
		return jt_aspace_cut(as, old + new_len, old + old_len);
	err = jt_aspace_cut(as, old + old_len, old + new_len);
	if (err)
		return err;
	i = lower(as, old + old_len - 1);
	if (i < as->n && as->r[i].start < old + old_len)
		as->r[i].end = old + new_len;
	return 0;
}

int jt_aspace_remap(struct jt_aspace *as, uint64_t old, uint64_t old_len,
		    uint64_t new, uint64_t new_len, bool keep_old, uint64_t now)
{
	struct jt_region *moved;
	size_t i, first, n = 0;
	int err;

	if (new == old)
		return grow_in_place(as, old, old_len, new_len);
	err = split2(as, old, old + old_len);
	if (err)
		return err;
	first = lower(as, old);
	for (i = first; i < as->n && as->r[i].start < old + old_len; i++)
		n++;
	moved = malloc((n ? n : 1) * sizeof(*moved));
	if (!moved)
		return -ENOMEM;
	if (n)
		memcpy(moved, &as->r[first], n * sizeof(*moved));
	if (!keep_old)
		err = jt_aspace_cut(as, old, old + old_len);
	if (!err)
		err = jt_aspace_cut(as, new, new + new_len);
	for (i = 0; i < n && !err; i++) {
		struct jt_region r = moved[i];

		r.start = r.start - old + new;
		r.end = r.end - old + new;
		if (i == n - 1 && new_len > old_len)
			r.end = new + new_len;
		if (r.start >= new + new_len)
			break;
		if (r.end > new + new_len)
			r.end = new + new_len;
		r.born_ns = now;
		r.origin = JT_EV_MREMAP;
		r.kvma = (struct jt_kvma){};
		err = insert_at(as, lower(as, r.start), &r);
	}
	free(moved);
	return err;
}

static struct jt_region *find_heap(struct jt_aspace *as, uint64_t start)
{
	size_t i = lower(as, start);

	if (i < as->n && as->r[i].start == start && as->r[i].kind == JT_RK_HEAP)
		return &as->r[i];
	return NULL;
}

int jt_aspace_brk(struct jt_aspace *as, uint64_t start_brk, uint64_t brk,
		  uint64_t now)
{
	uint64_t hs = JT_PAGE_ALIGN(start_brk);
	uint64_t he = JT_PAGE_ALIGN(brk);
	struct jt_region *h = find_heap(as, hs), r;
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
	h = find_heap(as, hs);
	if (h)
		h->end = he;
	return 0;
}

void jt_aspace_observe(struct jt_aspace *as, const struct jt_kvma *v)
{
	size_t i, j;

	if (!v->end)
		return;
	i = lower(as, v->start);
	for (j = i; j < as->n && as->r[j].start < v->end; j++)
		if (as->r[j].start >= v->start)
			as->r[j].kvma = *v;
	clip_neighbours(as, i, j, v->start, v->end);
}

const struct jt_region *jt_aspace_find(const struct jt_aspace *as,
				       uint64_t addr)
{
	size_t i = lower(as, addr);

	if (i < as->n && as->r[i].start <= addr)
		return &as->r[i];
	return NULL;
}

size_t jt_aspace_vma_members(const struct jt_aspace *as,
			     const struct jt_region *r)
{
	size_t i, n = 0;

	if (!r->kvma.end)
		return 1;
	for (i = lower(as, r->kvma.start);
	     i < as->n && as->r[i].start < r->kvma.end; i++)
		n++;
	return n ? n : 1;
}
