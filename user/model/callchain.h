/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The user frames of a sample recorded with --call-graph dwarf: the
 * unwinder (unwind/) stepped through the sample's stack copy, each frame
 * by the rule the model says holds at that address at the sample's time:
 * the ELF object's CFI, a jitdump's unwinding info for code loaded by
 * then, the trampoline template for CPython's copies, a frame-pointer
 * step for other JIT code.
 */
#ifndef JT_CALLCHAIN_H
#define JT_CALLCHAIN_H

#include <stdint.h>
#include "lib/hash.h"
#include "lib/perf_rec.h"
#include "lib/strtab.h"
#include "model/model.h"
#include "model/stream.h"
#include "unwind/unwind.h"

#define JT_CHAIN_MAX 256

struct jt_syms;

struct jt_chain_stats {
	uint64_t unwound; /* samples with registers and stack, as named last */
	uint64_t end[JT_UW_END_MAX + 1]; /* why each stopped */
};

struct jt_chains {
	struct jt_hash jitcfi; /* pid -> its JIT code's CFI, by start */
	struct jt_hash python; /* pid -> the trampoline template it maps */
	struct jt_chain_stats st;
};

/*
 * Unwind smp's user stack in m: frames into out, innermost first; the
 * count (0: the sample has no stack). *end: why it stopped.
 */
int jt_chain_unwind(struct jt_syms *y, struct jt_model *m,
		    const struct jt_sample *smp, struct jt_uw_frame *out,
		    int max, enum jt_uw_end *end);
/* A JIT record reached the naming side: keep its CFI and inlining. */
void jt_chain_jit(struct jt_chains *c, const struct jt_jit_item *j,
		  struct jt_strtab *strs);
/*
 * The methods the JIT inlined where ip is in jitdump code of pid, as its
 * agent said (innermost first); call: ip is a return address.
 */
int jt_chain_inlined(struct jt_chains *c, struct jt_model *m, uint32_t pid,
		     uint64_t ip, bool call, const char **out, int max);
void jt_chain_exited(struct jt_chains *c, uint32_t pid);
void jt_chains_free(struct jt_chains *c);

#endif
