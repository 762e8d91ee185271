/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* report's sample counts by group, without -g: one cache line a sample. */
#ifndef JT_REPORT_GROUPS_H
#define JT_REPORT_GROUPS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "lib/hash.h"
#include "views/report_rows.h"

#define JT_GROUPS_BATCH 32
#define JT_GROUPS_CHUNK 16384

/* A group: a symbol in a place, and its counts. sym NULL: a free slot. */
struct jt_group {
	const char *sym;
	uint32_t place;
	uint32_t pad;
	uint64_t samples;
	uint64_t retro;
};

/* What many groups share: command, pid, object, data symbol, source. */
struct jt_place {
	struct row k; /* those, and the nspid of its first sample */
	uint32_t id;
};

/* A sample waiting in the batch for its slot to come into the cache. */
struct jt_group_key {
	const char *sym;
	uint32_t place;
	uint8_t retro;
	uint64_t hash;
};

/* A sample as the reader hands it to the counting thread. */
struct jt_group_in {
	const char *comm, *dso, *sym, *dsym;
	uint32_t pid, nspid;
	uint8_t source, retro;
};

struct jt_groups_feed;

struct jt_groups {
	/*
	 * Set before the first sample: count on a second thread where the
	 * process may run on two CPUs, from the first JT_GROUPS_CHUNK
	 * samples on. Until jt_groups_drain, the table is that thread's.
	 */
	bool threaded;
	struct jt_groups_feed *feed;
	struct jt_group *e; /* open addressing, linear probing */
	size_t cap;	    /* a power of two, or 0 */
	size_t n;
	struct jt_hash place_index; /* of struct jt_place */
	struct jt_place **places;   /* by id */
	size_t nplaces, places_cap;
	struct jt_group_key batch[JT_GROUPS_BATCH];
	size_t nbatch;
};

/*
 * A sample of k's group: k is a row's key, its keys already masked, and
 * its nspid the one the group keeps (its place's first). -ENOMEM without
 * memory; the sample is not counted (on the counting thread, drain
 * says so).
 */
int jt_groups_add(struct jt_groups *g, const struct row *k);
/*
 * Each group as a row (its key, samples and retro; the rest zero), in no
 * order, then the groups are freed: g is as new. Stops at fn's first
 * nonzero return, and returns it; -ENOMEM for a sample left uncounted.
 */
int jt_groups_drain(struct jt_groups *g,
		    int (*fn)(void *ctx, const struct row *w), void *ctx);
void jt_groups_free(struct jt_groups *g);

#endif
