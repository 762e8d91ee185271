/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * A process's JIT records not yet put in its tables, in order. Most
 * processes never run code their perf-map names (a short-lived one
 * writes its lines and exits): a table costs a treap insertion per
 * record and a clearing at exit, a log an append. The model replays the
 * log when a sample first needs the tables (jt_model_jit_warm).
 */
#ifndef JT_MODEL_JITLOG_H
#define JT_MODEL_JITLOG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "model/stream.h"

/* Past this, the tables are built after all: a log keeps what they drop. */
#define JT_JITLOG_MAX 4096
/* And past this many bytes of names and TEXT lines. */
#define JT_JITLOG_BYTES (256 * 1024)

/* A log entry for code gone from [addr, addr + size): unmapped, replaced. */
#define JT_JITLOG_CUT 0xffff

struct jt_jitlog_names;

/*
 * Its names are copies in chunks of its own, freed with it: a process
 * that exits unsampled leaves nothing in the run's string table.
 */
struct jt_jitlog {
	struct jt_jit_item *e;
	size_t n;
	size_t cap;
	struct jt_jitlog_names *names;
	size_t bytes;	/* of names and lines kept */
	size_t records; /* a TEXT entry's lines each, one for the rest */
	/* What its entries change: a lookup elsewhere needs no replay. */
	uint64_t lo;
	uint64_t hi;
};

/* j, which changes what the tables say in [lo, hi) and nowhere else. */
int jt_jitlog_add(struct jt_jitlog *l, const struct jt_jit_item *j, uint64_t lo,
		  uint64_t hi);
int jt_jitlog_copy(struct jt_jitlog *dst, const struct jt_jitlog *src);
void jt_jitlog_free(struct jt_jitlog *l);

static inline bool jt_jitlog_covers(const struct jt_jitlog *l, uint64_t addr)
{
	return l->n && addr >= l->lo && addr < l->hi;
}

#endif
