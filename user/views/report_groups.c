// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Without -g, report counted a sample in a hash table of pointers to
 * rows: a slot, then a row of 88 bytes across two lines, two or three
 * cache misses a sample that fetching ahead did not hide. On the naming
 * bench (200K groups) that was the largest cost left in report, a sixth
 * of its user time. So a group lives in the table itself, in 32 bytes:
 * its symbol, the number of its place and its counts. A place is what
 * many symbols share (command, pid, object, data symbol and source), few
 * and always in the cache. A sample's slot is known from its hash alone,
 * so it is fetched as the sample joins the batch, and counted when the
 * batch is full: one line a sample.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "lib/reserve.h"
#include "views/report_groups.h"

static uint64_t place_hash(const struct row *k)
{
	uint64_t h = (uintptr_t)k->comm * 0x9e3779b97f4a7c15ULL;

	h ^= ((uintptr_t)k->dso + k->pid) * 0xc2b2ae3d27d4eb4fULL;
	h ^= ((uintptr_t)k->dsym + k->source) * 0x27d4eb2f165667c5ULL;
	return jt_hash_u64(h);
}

/* Every string is interned: a place is equal when its pointers are. */
static bool place_eq(const void *val, const void *key)
{
	const struct row *a = &((const struct jt_place *)val)->k, *b = key;

	return a->comm == b->comm && a->pid == b->pid && a->dso == b->dso &&
	       a->dsym == b->dsym && a->source == b->source;
}

/* k's place number, made at its first sample; -ENOMEM. */
static long place_of(struct jt_groups *g, const struct row *k)
{
	uint64_t h = place_hash(k);
	struct jt_place *p = jt_hash_find(&g->place_index, h, place_eq, k);

	if (p)
		return p->id;
	if (g->nplaces >= UINT32_MAX ||
	    jt_reserve(&g->places, &g->places_cap, g->nplaces + 1,
		       sizeof(*g->places)) ||
	    !(p = malloc(sizeof(*p))))
		return -ENOMEM;
	*p = (struct jt_place){ .k = { .comm = k->comm,
				       .pid = k->pid,
				       .nspid = k->nspid,
				       .dso = k->dso,
				       .dsym = k->dsym,
				       .source = k->source },
				.id = g->nplaces };
	if (jt_hash_add(&g->place_index, h, p)) {
		free(p);
		return -ENOMEM;
	}
	g->places[g->nplaces] = p;
	return g->nplaces++;
}

static uint64_t group_hash(const char *sym, uint32_t place)
{
	return jt_hash_u64((uintptr_t)sym * 0x9e3779b97f4a7c15ULL ^ place);
}

static struct jt_group *slot(struct jt_group *e, size_t cap, const char *sym,
			     uint32_t place, uint64_t hash)
{
	size_t i = hash & (cap - 1);

	while (e[i].sym && (e[i].sym != sym || e[i].place != place))
		i = (i + 1) & (cap - 1);
	return &e[i];
}

static int grow(struct jt_groups *g)
{
	size_t cap = g->cap ? g->cap * 2 : 1024, i;
	struct jt_group *e = jt_table_alloc(cap * sizeof(*e));

	if (!e)
		return -ENOMEM;
	for (i = 0; i < g->cap; i++)
		if (g->e[i].sym)
			*slot(e, cap, g->e[i].sym, g->e[i].place,
			      group_hash(g->e[i].sym, g->e[i].place)) = g->e[i];
	jt_table_free(g->e, g->cap * sizeof(*g->e));
	g->e = e;
	g->cap = cap;
	return 0;
}

static int count(struct jt_groups *g, const struct jt_group_key *k)
{
	struct jt_group *s = slot(g->e, g->cap, k->sym, k->place, k->hash);

	if (!s->sym) {
		if ((g->n + 1) * 2 > g->cap) {
			if (grow(g))
				return -ENOMEM;
			s = slot(g->e, g->cap, k->sym, k->place, k->hash);
		}
		*s = (struct jt_group){ .sym = k->sym, .place = k->place };
		g->n++;
	}
	s->samples++;
	s->retro += k->retro;
	return 0;
}

static int flush(struct jt_groups *g)
{
	size_t i;
	int err = 0;

	for (i = 0; i < g->nbatch; i++)
		if (count(g, &g->batch[i]))
			err = -ENOMEM;
	g->nbatch = 0;
	return err;
}

int jt_groups_add(struct jt_groups *g, const struct row *k)
{
	struct jt_group_key *b = &g->batch[g->nbatch];
	long place = place_of(g, k);

	if (place < 0 || (!g->cap && grow(g)))
		return -ENOMEM;
	*b = (struct jt_group_key){ .sym = k->sym,
				    .place = place,
				    .retro = k->retro,
				    .hash = group_hash(k->sym, place) };
	__builtin_prefetch(&g->e[b->hash & (g->cap - 1)], 1);
	if (++g->nbatch == JT_GROUPS_BATCH)
		return flush(g);
	return 0;
}

/*
 * The live groups, copied out and the table given back before rows are
 * made of them: the table and the rows at once were 8 MB over the naming
 * bench's peak.
 */
int jt_groups_drain(struct jt_groups *g,
		    int (*fn)(void *ctx, const struct row *w), void *ctx)
{
	int err = flush(g);
	struct jt_group *live = malloc((g->n ? g->n : 1) * sizeof(*live));
	size_t i, n = 0;

	if (!live)
		err = -ENOMEM;
	for (i = 0; live && i < g->cap; i++)
		if (g->e[i].sym)
			live[n++] = g->e[i];
	jt_table_free(g->e, g->cap * sizeof(*g->e));
	g->e = NULL;
	for (i = 0; i < n && !err; i++) {
		struct row w = g->places[live[i].place]->k;

		w.sym = live[i].sym;
		w.samples = live[i].samples;
		w.retro = live[i].retro;
		err = fn(ctx, &w);
	}
	free(live);
	jt_groups_free(g);
	return err;
}

void jt_groups_free(struct jt_groups *g)
{
	size_t i;

	for (i = 0; i < g->nplaces; i++)
		free(g->places[i]);
	free(g->places);
	jt_hash_free(&g->place_index);
	jt_table_free(g->e, g->cap * sizeof(*g->e));
	memset(g, 0, sizeof(*g));
}
