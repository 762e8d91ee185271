// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Sorting 200K rows by comparing the rows themselves, spread over the
 * heap, and then their names, missed the cache at each step: a fifth of
 * report's time. Each row gets a key of 32 bytes in one array instead:
 * its count, the rank of its (comm, pid, dso) among the rows', and its
 * symbol's first 12 bytes, compared as numbers. Only rows that tie on
 * all of that read their strings (with -g, also rows of equal Children,
 * for their own samples), and a merge sort reads the array in order.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include "lib/reserve.h"
#include "views/report_rows.h"

struct key {
	uint64_t count; /* most first: samples, or with -g Children */
	uint64_t pfx;	/* the symbol's first 8 bytes, big-endian */
	uint32_t place; /* the rank of (comm, pid, dso) */
	uint32_t pfx2;	/* its next 4 */
	struct row *w;
};

/* Names are interned: most ties are one pointer, with no string to read. */
static int name_cmp(const char *a, const char *b)
{
	return a == b ? 0 : strcmp(a ? a : "", b ? b : "");
}

static int place_cmp(const struct row *x, const struct row *y)
{
	int c;

	if ((c = name_cmp(x->comm, y->comm)))
		return c;
	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	return name_cmp(x->dso, y->dso);
}

static int row_cmp(const struct row *x, const struct row *y)
{
	int c;

	if ((c = place_cmp(x, y)) || (c = name_cmp(x->sym, y->sym)) ||
	    (c = name_cmp(x->dsym, y->dsym)))
		return c;
	/* Rows differ in source at least: their order is not left to chance. */
	return (x->source > y->source) - (x->source < y->source);
}

static inline __attribute__((always_inline)) int
key_cmp(const struct key *a, const struct key *b, bool graph)
{
	if (a->count != b->count)
		return a->count > b->count ? -1 : 1;
	if (graph && a->w->samples != b->w->samples)
		return a->w->samples > b->w->samples ? -1 : 1;
	if (a->place != b->place)
		return a->place < b->place ? -1 : 1;
	if (a->pfx != b->pfx)
		return a->pfx < b->pfx ? -1 : 1;
	if (a->pfx2 != b->pfx2)
		return a->pfx2 < b->pfx2 ? -1 : 1;
	return row_cmp(a->w, b->w);
}

/* strcmp's order as numbers: bytes high first, zeros past the end. */
static void prefix(const char *s, struct key *k)
{
	size_t i;

	k->pfx = k->pfx2 = 0;
	for (i = 0; s && s[i] && i < 8; i++)
		k->pfx |= (uint64_t)(unsigned char)s[i] << (56 - 8 * i);
	for (; s && s[i] && i < 12; i++)
		k->pfx2 |= (uint32_t)(unsigned char)s[i] << (24 - 8 * (i - 8));
}

/* l and r merged into out, l's key first on a tie. */
static inline __attribute__((always_inline)) void
merge_into(const struct key *l, size_t nl, const struct key *r, size_t nr,
	   struct key *out, bool graph)
{
	size_t i = 0, j = 0, k = 0;

	while (i < nl && j < nr)
		out[k++] = key_cmp(&r[j], &l[i], graph) < 0 ? r[j++] : l[i++];
	memmove(out + k, l + i, (nl - i) * sizeof(*out));
	k += nl - i;
	/* Where r ends where out does, its rest is in place already. */
	if (out + k != r + j)
		memmove(out + k, r + j, (nr - j) * sizeof(*out));
}

/* a's sorted halves [0, h) and [h, n) merged, with tmp holding h keys. */
static inline __attribute__((always_inline)) void
merge_as(struct key *a, struct key *tmp, size_t h, size_t n, bool graph)
{
	if (key_cmp(&a[h - 1], &a[h], graph) <= 0)
		return;
	memcpy(tmp, a, h * sizeof(*a));
	merge_into(tmp, h, a + h, n - h, a, graph);
}

static inline __attribute__((always_inline)) void
merge_sort_as(struct key *a, struct key *tmp, size_t n, bool graph,
	      void (*self)(struct key *, struct key *, size_t))
{
	size_t h = n / 2;

	if (n < 2)
		return;
	self(a, tmp, h);
	self(a + h, tmp, n - h);
	merge_as(a, tmp, h, n, graph);
}

/* One sort for each order, so the compare is inlined with its branch. */
static void merge_sort_flat(struct key *a, struct key *tmp, size_t n)
{
	merge_sort_as(a, tmp, n, false, merge_sort_flat);
}

static void merge_sort_graph(struct key *a, struct key *tmp, size_t n)
{
	merge_sort_as(a, tmp, n, true, merge_sort_graph);
}

/*
 * Rows enough that a second CPU sorting half of them pays for its
 * thread: the sort was 5% of report's time on 200K rows.
 */
#define SORT_SPLIT_MIN 16384

#define NAME_AHEAD 8

/* Each key's name prefix: the rows come in slab order, names lie anywhere. */
static void prefixes(struct key *k, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		if (i + NAME_AHEAD < n)
			__builtin_prefetch(k[i + NAME_AHEAD].w->sym);
		prefix(k[i].w->sym, &k[i]);
	}
}

static void sort_part(struct key *a, struct key *tmp, size_t n, bool graph)
{
	(graph ? merge_sort_graph : merge_sort_flat)(a, tmp, n);
}

static void merge_flat(const struct key *l, size_t nl, const struct key *r,
		       size_t nr, struct key *out)
{
	merge_into(l, nl, r, nr, out, false);
}

static void merge_graph(const struct key *l, size_t nl, const struct key *r,
			size_t nr, struct key *out)
{
	merge_into(l, nl, r, nr, out, true);
}

/*
 * How many of the first m keys of l and r merged are l's: the keys of
 * l up to there, and of r up to m less that, are the first m.
 */
static size_t co_rank(const struct key *l, size_t nl, const struct key *r,
		      size_t nr, size_t m, bool graph)
{
	size_t lo = m > nr ? m - nr : 0, hi = m < nl ? m : nl, i;

	while (lo < hi) {
		i = lo + (hi - lo) / 2;
		/* l[i] comes before r[m - i - 1]: it is among the first m. */
		if (key_cmp(&r[m - i - 1], &l[i], graph) >= 0)
			lo = i + 1;
		else
			hi = i;
	}
	return lo;
}

/* One thread's part: make its keys' prefixes and sort them, or merge. */
struct part {
	struct key *a, *tmp;
	size_t n;
	bool graph;
	/* a merge: l and r into out */
	const struct key *l, *r;
	size_t nl, nr;
	struct key *out;
};

static void *sort_half(void *arg)
{
	struct part *h = arg;

	prefixes(h->a, h->n);
	sort_part(h->a, h->tmp, h->n, h->graph);
	return NULL;
}

static void *merge_part(void *arg)
{
	struct part *h = arg;

	(h->graph ? merge_graph : merge_flat)(h->l, h->nl, h->r, h->nr, h->out);
	return NULL;
}

/*
 * The two sorted halves of a merged at once: the first half of the
 * output on this thread, the second on another, split where the
 * merge's own first n / 2 keys end (co_rank), so the result is the one
 * merge's. tmp holds n keys: the left half, and the right half's part
 * in the first half of the output, which the second half's writes may
 * reach.
 */
static void merge_halves(struct key *a, struct key *tmp, size_t h, size_t n,
			 bool graph)
{
	size_t m = n / 2, i, j;
	struct part back;
	bool threaded;
	pthread_t t;

	memcpy(tmp, a, h * sizeof(*a));
	i = co_rank(tmp, h, a + h, n - h, m, graph);
	j = m - i;
	memcpy(tmp + h, a + h, j * sizeof(*a));
	back = (struct part){ .graph = graph,
			      .l = tmp + i,
			      .nl = h - i,
			      .r = a + h + j,
			      .nr = n - h - j,
			      .out = a + m };
	threaded = !pthread_create(&t, NULL, merge_part, &back);
	if (!threaded)
		merge_part(&back);
	(graph ? merge_graph : merge_flat)(tmp, i, tmp + h, j, a);
	if (threaded)
		pthread_join(t, NULL);
}

/*
 * The merge sort's own first split, its halves sorted at once on two
 * threads (each making its keys' prefixes first), then merged on two:
 * the same order as one thread's. Each half's merges use their own part
 * of tmp (n / 2 keys in all), and the last merge all of it (n keys).
 */
static void sort_keys(struct key *k, struct key *tmp, size_t n, bool graph)
{
	struct part left = { .a = k, .tmp = tmp, .n = n / 2, .graph = graph };
	pthread_t t;

	if (n < SORT_SPLIT_MIN || pthread_create(&t, NULL, sort_half, &left)) {
		prefixes(k, n);
		sort_part(k, tmp, n, graph);
		return;
	}
	prefixes(k + left.n, n - left.n);
	sort_part(k + left.n, tmp + left.n / 2, n - left.n, graph);
	pthread_join(t, NULL);
	if (key_cmp(&k[left.n - 1], &k[left.n], graph) > 0)
		merge_halves(k, tmp, left.n, n, graph);
}

/* A distinct (comm, pid, dso): rows of one process and object share it. */
struct place {
	struct row *w; /* the first row seen there */
	size_t rank;
};

static uint64_t place_hash(const struct row *w)
{
	return jt_hash_u64((uintptr_t)w->comm ^ (uint64_t)w->pid << 48 ^
			   (uintptr_t)w->dso * 0x9e3779b97f4a7c15ULL);
}

/* Names are interned, so one place is one triple of pointers. */
static bool place_eq(const void *val, const void *key)
{
	const struct row *a = ((const struct place *)val)->w, *b = key;

	return a->comm == b->comm && a->pid == b->pid && a->dso == b->dso;
}

static int place_qcmp(const void *a, const void *b)
{
	return place_cmp((*(struct place *const *)a)->w,
			 (*(struct place *const *)b)->w);
}

struct places {
	struct jt_hash h;
	struct place **v;
	size_t n, cap;
};

static struct place *place_of(struct places *p, struct row *w)
{
	uint64_t h = place_hash(w);
	struct place *pl = jt_hash_find(&p->h, h, place_eq, w);

	if (pl)
		return pl;
	if (jt_reserve(&p->v, &p->cap, p->n + 1, sizeof(*p->v)) ||
	    !(pl = malloc(sizeof(*pl))))
		return NULL;
	if (jt_hash_add(&p->h, h, pl)) {
		free(pl);
		return NULL;
	}
	*pl = (struct place){ .w = w };
	return p->v[p->n++] = pl;
}

static void places_free(struct places *p)
{
	size_t i;

	for (i = 0; i < p->n; i++)
		free(p->v[i]);
	free(p->v);
	jt_hash_free(&p->h);
}

/*
 * Each key's place: the rank of its row's (comm, pid, dso) among all
 * rows'. There are few distinct ones (processes times objects): they are
 * sorted by their strings once, not at each of n log n compares.
 */
static int rank_places(struct key *k, size_t n)
{
	struct places p = {};
	struct place **of = malloc(n * sizeof(*of));
	size_t i;
	int err = of ? 0 : -ENOMEM;

	for (i = 0; i < n && !err; i++)
		if (!(of[i] = place_of(&p, k[i].w)))
			err = -ENOMEM;
	if (!err) {
		qsort(p.v, p.n, sizeof(*p.v), place_qcmp);
		for (i = 0; i < p.n; i++)
			p.v[i]->rank = i;
		for (i = 0; i < n; i++)
			k[i].place = of[i]->rank;
	}
	free(of);
	places_free(&p);
	return err;
}

int jt_rows_order(struct row **rows, size_t n, bool graph)
{
	struct key *k, *tmp;
	size_t i;
	int err = -ENOMEM;

	if (n < 2)
		return 0;
	k = malloc(n * sizeof(*k));
	tmp = malloc((n < SORT_SPLIT_MIN ? n / 2 : n) * sizeof(*tmp));
	if (!k || !tmp)
		goto out;
	for (i = 0; i < n; i++) {
		struct row *w = rows[i];

		k[i] = (struct key){ .count = graph ? w->children : w->samples,
				     .w = w };
	}
	err = rank_places(k, n);
	if (err)
		goto out;
	sort_keys(k, tmp, n, graph);
	for (i = 0; i < n; i++)
		rows[i] = k[i].w;
out:
	free(k);
	free(tmp);
	return err;
}
