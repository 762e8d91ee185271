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
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include "lib/cpus.h"
#include "lib/reserve.h"
#include "views/report_groups.h"

/*
 * Counting (finding a sample's slot among 200K groups, a cache miss
 * each) was an eighth of report's reading thread on the naming bench.
 * So samples go to a second thread in chunks, 40 bytes each, written
 * one after another: the reader waits only when it is FEED_SLOTS chunks
 * ahead. Chunks are large because each handover wakes the counting
 * thread (a futex call): at 2,048 samples the wakes took half the gain.
 * The counting thread takes chunks in the order they came, so it fills
 * the table as the reader would have.
 */
#define FEED_SLOTS 3

struct jt_groups_feed {
	pthread_t thread;
	bool running;
	pthread_mutex_t lock;
	pthread_cond_t filled, emptied;
	size_t head, tail; /* chunks counted, chunks handed over */
	bool done;
	int err;
	size_t fill; /* samples in the chunk being written, at tail */
	size_t n[FEED_SLOTS];
	struct jt_group_in in[FEED_SLOTS][JT_GROUPS_CHUNK];
};

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

/*
 * Three quarters full at most. At half, the naming bench's 157K groups
 * took a table of 16 MB, 32 MB written over its growth, and report's peak
 * was 108 MB; at three quarters 8 MB and 96 MB, no slower (11 interleaved
 * runs): the probes are the counting thread's, off the reader's.
 */
static bool full(const struct jt_groups *g)
{
	return (g->n + 1) * 4 > g->cap * 3;
}

static int count(struct jt_groups *g, const struct jt_group_key *k)
{
	struct jt_group *s = slot(g->e, g->cap, k->sym, k->place, k->hash);

	if (!s->sym) {
		if (full(g)) {
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

static int add_row(struct jt_groups *g, const struct row *k)
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

static int count_chunk(struct jt_groups *g, const struct jt_group_in *in,
		       size_t n)
{
	int err = 0;
	size_t i;

	for (i = 0; i < n; i++) {
		struct row k = { .comm = in[i].comm,
				 .pid = in[i].pid,
				 .nspid = in[i].nspid,
				 .dso = in[i].dso,
				 .sym = in[i].sym,
				 .dsym = in[i].dsym,
				 .source = in[i].source,
				 .retro = in[i].retro };

		if (add_row(g, &k))
			err = -ENOMEM;
	}
	return err;
}

static void *counter(void *arg)
{
	struct jt_groups *g = arg;
	struct jt_groups_feed *f = g->feed;
	size_t at;
	int err;

	pthread_mutex_lock(&f->lock);
	for (;;) {
		while (f->head == f->tail && !f->done)
			pthread_cond_wait(&f->filled, &f->lock);
		if (f->head == f->tail)
			break;
		at = f->head % FEED_SLOTS;
		pthread_mutex_unlock(&f->lock);
		err = count_chunk(g, f->in[at], f->n[at]);
		pthread_mutex_lock(&f->lock);
		f->err = f->err ?: err;
		f->head++;
		pthread_cond_signal(&f->emptied);
	}
	pthread_mutex_unlock(&f->lock);
	return NULL;
}

/* 0, or 1 to count on this thread: one CPU, or no memory for chunks. */
static int feed_open(struct jt_groups *g)
{
	struct jt_groups_feed *f;

	if (!jt_cpus_two() || !(f = calloc(1, sizeof(*f)))) {
		g->threaded = false;
		return 1;
	}
	pthread_mutex_init(&f->lock, NULL);
	pthread_cond_init(&f->filled, NULL);
	pthread_cond_init(&f->emptied, NULL);
	g->feed = f;
	return 0;
}

/*
 * The chunk at tail to the counting thread, started at the first; then
 * wait for a free slot. Without a thread, the chunk is counted here.
 */
static int hand_over(struct jt_groups *g)
{
	struct jt_groups_feed *f = g->feed;

	f->n[f->tail % FEED_SLOTS] = f->fill;
	f->fill = 0;
	if (!f->running && pthread_create(&f->thread, NULL, counter, g))
		return count_chunk(g, f->in[f->tail % FEED_SLOTS],
				   f->n[f->tail % FEED_SLOTS]);
	f->running = true;
	pthread_mutex_lock(&f->lock);
	f->tail++;
	pthread_cond_signal(&f->filled);
	while (f->tail - f->head == FEED_SLOTS)
		pthread_cond_wait(&f->emptied, &f->lock);
	pthread_mutex_unlock(&f->lock);
	return 0;
}

static int feed_add(struct jt_groups *g, const struct row *k)
{
	struct jt_groups_feed *f = g->feed;

	f->in[f->tail % FEED_SLOTS][f->fill] =
		(struct jt_group_in){ .comm = k->comm,
				      .dso = k->dso,
				      .sym = k->sym,
				      .dsym = k->dsym,
				      .pid = k->pid,
				      .nspid = k->nspid,
				      .source = k->source,
				      .retro = k->retro };
	if (++f->fill == JT_GROUPS_CHUNK)
		return hand_over(g);
	return 0;
}

int jt_groups_add(struct jt_groups *g, const struct row *k)
{
	if (g->threaded && (g->feed || !feed_open(g)))
		return feed_add(g, k);
	return add_row(g, k);
}

/* The last chunk counted and the thread gone: the table is ours again. */
static int feed_close(struct jt_groups *g)
{
	struct jt_groups_feed *f = g->feed;
	int err = 0;

	if (!f)
		return 0;
	if (f->running) {
		pthread_mutex_lock(&f->lock);
		f->n[f->tail % FEED_SLOTS] = f->fill;
		f->tail += !!f->fill;
		f->done = true;
		pthread_cond_signal(&f->filled);
		pthread_mutex_unlock(&f->lock);
		pthread_join(f->thread, NULL);
		err = f->err;
	} else {
		err = count_chunk(g, f->in[f->tail % FEED_SLOTS], f->fill);
	}
	pthread_cond_destroy(&f->emptied);
	pthread_cond_destroy(&f->filled);
	pthread_mutex_destroy(&f->lock);
	free(f);
	g->feed = NULL;
	return err;
}

/*
 * The live groups, copied out and the table given back before rows are
 * made of them: the table and the rows at once were 8 MB over the naming
 * bench's peak.
 */
int jt_groups_drain(struct jt_groups *g,
		    int (*fn)(void *ctx, const struct row *w), void *ctx)
{
	int err = feed_close(g), ferr = flush(g);
	struct jt_group *live = malloc((g->n ? g->n : 1) * sizeof(*live));
	size_t i, n = 0;

	err = err ?: ferr;
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
	bool threaded = g->threaded;
	size_t i;

	feed_close(g);

	for (i = 0; i < g->nplaces; i++)
		free(g->places[i]);
	free(g->places);
	jt_hash_free(&g->place_index);
	jt_table_free(g->e, g->cap * sizeof(*g->e));
	memset(g, 0, sizeof(*g));
	g->threaded = threaded;
}
