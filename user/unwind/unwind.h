/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The one unwinder: from a sample's user registers and its copy of the
 * user stack to the return addresses of every frame. Where each frame's
 * rule comes from (an ELF object's CFI, a jitdump's unwinding info, a
 * frame-pointer step for JIT code, a copied trampoline) is the caller's
 * to say, per frame, through find(); this file only steps.
 */
#ifndef JT_UNWIND_H
#define JT_UNWIND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "unwind/regs.h"

struct jt_cfi;

struct jt_uw_regs {
	uint64_t r[JT_UW_NREGS]; /* DWARF numbering */
	uint64_t valid;		 /* bit per register */
};

/* The sample's copy of [sp, sp + len) of the user stack. */
struct jt_uw_stack {
	uint64_t sp;
	const unsigned char *data;
	size_t len;
};

enum jt_uw_how {
	JT_UW_NONE,   /* nothing maps pc: a garbage return address */
	JT_UW_CFI,    /* cfi at pc - bias */
	JT_UW_FP,     /* frame-pointer code with no CFI (JIT) */
	JT_UW_RULE,   /* a fixed rule (a trampoline's, at its offset) */
	JT_UW_NORULE, /* mapped, but nothing says how to leave the frame */
};

/* CFA = sp + cfa_off; the return address at CFA - 8; fp unchanged. */
struct jt_uw_rule {
	int32_t cfa_off;
};

struct jt_uw_src {
	enum jt_uw_how how;
	struct jt_cfi *cfi;
	uint64_t bias;
	struct jt_uw_rule rule;
	uint64_t entry; /* JT_UW_CFI: where the object's ELF entry is, or 0 */
};

/*
 * How to leave the frame at pc. leaf: pc is where the sample was taken;
 * else a return address, whose call is at pc - 1 (use that to look up).
 */
typedef void (*jt_uw_find_fn)(void *ctx, uint64_t pc, bool leaf,
			      struct jt_uw_src *src);

enum jt_uw_end {
	JT_UW_END_COMPLETE, /* the outermost frame says so (CFI undefined RA) */
	JT_UW_END_TRUNCATED, /* the stack copy ended first */
	JT_UW_END_NORULE,    /* a frame no rule covers */
	JT_UW_END_BADRA,     /* a return address into nothing */
	JT_UW_END_LOOP,	     /* the stack pointer stopped growing */
	JT_UW_END_DEPTH,     /* max frames */
	JT_UW_END_NOREGS,    /* the sample carries no user registers */
	JT_UW_END_ARCH,	     /* recorded on another architecture */
	JT_UW_END_MAX = JT_UW_END_ARCH,
};

struct jt_uw_frame {
	uint64_t pc;
	uint8_t how; /* enum jt_uw_how that left this frame */
};

/*
 * Frames, innermost first, into out[0..max): the count. *end says why it
 * stopped. The last frame is the one a BADRA points at, unnamed.
 */
int jt_unwind(const struct jt_uw_regs *regs, const struct jt_uw_stack *st,
	      jt_uw_find_fn find, void *ctx, struct jt_uw_frame *out, int max,
	      enum jt_uw_end *end);
/* 8 bytes at addr from the copy; false outside it. */
bool jt_uw_read(const struct jt_uw_stack *st, uint64_t addr, uint64_t *v);
const char *jt_uw_end_name(enum jt_uw_end e);

#endif
