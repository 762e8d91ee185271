/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The JIT functions of one process from one source, as they stand at the
 * moment the replay has reached: a load over an address ends what was
 * there, a move moves it, an unmap ends everything in the range. A treap:
 * every step is O(log n) wherever the runtime puts its code. Code loaded
 * past every function, as runtimes mostly load it, waits in an array
 * (the tail) and goes into the treap only when a change or a fork needs
 * it there: the naming bench's 200K loads were 5% of report's time and
 * 16 MB of nodes, for a treap nothing but lookups ever read.
 */
#ifndef JT_JITSYMS_H
#define JT_JITSYMS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "lib/treap.h"

struct jt_jitsym {
	uint64_t start;
	uint64_t end;
	const char *name; /* interned */
	uint64_t code_index;
	uint64_t loaded_ns;
};

/*
 * The functions in address order, copied out of the treap for lookups.
 * Built once as many lookups as an eighth of the functions came without
 * a change, so a table that changes between lookups pays O(1) a lookup
 * for it; any change drops it.
 *
 * The span from the first start to the last is cut in at most n buckets
 * of 2^shift bytes, each holding the index of its first function. JIT
 * code is dense, so a lookup reads one bucket and one or two functions:
 * two cache misses where a binary search over 200K functions took five.
 * A bucket that holds many (code in a few far-apart clusters) is searched
 * in halves, so no lookup is worse than O(log n).
 */
struct jt_jitflat {
	/* What naming reads: start, end and name in one cache line. */
	struct jt_jitspan {
		uint64_t start;
		uint64_t end;
		const char *name;
	} * span;
	/* The treap's; those from ntree on are the tail's, in order. */
	const struct jt_jitsym **sym;
	uint32_t *bucket; /* nb + 1 entries; the last is n */
	size_t n;
	size_t ntree;
	size_t nb;
	unsigned int shift;
	size_t misses; /* lookups since the last change */
	/* The arrays' room, kept from copy to copy. */
	size_t cap;
	size_t sym_cap;
	size_t bcap;
	int valid;
};

/* A forked child shares its parent's nodes until either side changes. */
struct jt_jittab {
	struct jt_treap t; /* by start, never overlapping */
	/* Past every function in the treap, in order, never overlapping. */
	struct jt_jitsym *tail;
	size_t ntail;
	size_t tail_cap;
	struct jt_jitflat flat;
	/*
	 * No function ends past this (it may end before: cuts leave it).
	 * Runtimes load code at rising addresses, mostly: a load at or past
	 * it has nothing to cut, and skips the search.
	 */
	uint64_t max_end;
	/* Names are jt_name_get's: set before the first load. */
	bool counted;
};

int jt_jittab_load(struct jt_jittab *t, const struct jt_jitsym *s);
/* Move the function that starts at old; -ENOENT when there is none. */
int jt_jittab_move(struct jt_jittab *t, uint64_t old, uint64_t new,
		   uint64_t size, uint64_t now);
void jt_jittab_cut(struct jt_jittab *t, uint64_t start, uint64_t end);
const struct jt_jitsym *jt_jittab_find(const struct jt_jittab *t,
				       uint64_t addr);
struct jt_jitname {
	uint64_t start, end;
	const char *name;
};

/*
 * Warm the cache for a lookup of addr soon, in two steps a sample apart:
 * the flat copy's bucket (!functions), then the functions it points at.
 */
void jt_jittab_prefetch(const struct jt_jittab *t, uint64_t addr,
			bool functions);
/* jt_jittab_find's name and span alone, for naming each sample. */
bool jt_jittab_name(const struct jt_jittab *t, uint64_t addr,
		    struct jt_jitname *out);
/* Functions that overlap [start, end); the first of them. */
size_t jt_jittab_count_in(const struct jt_jittab *t, uint64_t start,
			  uint64_t end);
const struct jt_jitsym *jt_jittab_first_in(const struct jt_jittab *t,
					   uint64_t start, uint64_t end);
const struct jt_jitsym *jt_jittab_next(const struct jt_jittab *t,
				       const struct jt_jitsym *s);
/* Functions in the table; whether there are none. */
size_t jt_jittab_count(const struct jt_jittab *t);
static inline bool jt_jittab_empty(const struct jt_jittab *t)
{
	return !t->t.root && !t->ntail;
}
/*
 * dst (empty) gets src's functions: a fork. O(1) but for src's tail,
 * which goes into its treap first; -ENOMEM when it could not.
 */
int jt_jittab_copy(struct jt_jittab *dst, const struct jt_jittab *src);
void jt_jittab_free(struct jt_jittab *t);

#endif
