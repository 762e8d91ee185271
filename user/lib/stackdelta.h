/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Stack copies stored as what changed since the thread's last one. Two
 * samples of a thread share their outer frames, at the same addresses:
 * a sample keeps the bytes at the top of its copy (head) and at its
 * bottom (tail) that differ, and names the run between them that equals
 * the thread's previous copy at the same addresses (keep). Writer and
 * reader keep the same previous copy per thread, in file order.
 */
#ifndef JT_STACKDELTA_H
#define JT_STACKDELTA_H

#include <stddef.h>
#include <stdint.h>
#include "lib/hash.h"

/* After struct jt_perf_rec in a JT_REC_PERF_DELTA record. */
struct jt_delta_hdr {
	uint32_t head; /* bytes from sp stored first */
	uint32_t keep; /* then this many from the thread's last copy */
	/* the perf sample follows; its stack data is head + tail bytes and
	 * its dyn_size the whole copy's length */
};

#define JT_DELTA_THREADS 65536 /* more live threads: forget them all */

struct jt_stackdelta {
	struct jt_hash by_tid; /* tid -> struct prev */
	uint64_t sample_type;
	uint64_t regs_mask;
	unsigned int sp_reg; /* perf's number of the stack pointer */
	uint64_t missing;    /* deltas with no copy to apply them to */
};

void jt_stackdelta_init(struct jt_stackdelta *d, uint64_t sample_type,
			uint64_t regs_mask, unsigned int sp_reg);
/*
 * A sample with a stack copy (rec, len), as the writer would store it:
 * out gets the delta form and h its header when that is smaller (true);
 * false: store rec as it is. Either way rec becomes the thread's copy.
 */
bool jt_stackdelta_encode(struct jt_stackdelta *d, const void *rec, size_t len,
			  void *out, size_t *olen, struct jt_delta_hdr *h);
/* The reader's side: the whole sample into out (*olen); -1: cannot. */
int jt_stackdelta_decode(struct jt_stackdelta *d, const struct jt_delta_hdr *h,
			 const void *rec, size_t len, void *out, size_t cap,
			 size_t *olen);
/* A sample stored whole: it becomes its thread's copy. */
void jt_stackdelta_note(struct jt_stackdelta *d, const void *rec, size_t len);
/* The thread exited (PERF_RECORD_EXIT), or the file lost records. */
void jt_stackdelta_forget(struct jt_stackdelta *d, uint32_t tid);
void jt_stackdelta_reset(struct jt_stackdelta *d);
void jt_stackdelta_free(struct jt_stackdelta *d);

#endif
