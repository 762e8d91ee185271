// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <string.h>
#include "unwind/cfi.h"
#include "unwind/unwind.h"

#define BIT(r) (1ULL << (r))

bool jt_uw_read(const struct jt_uw_stack *st, uint64_t addr, uint64_t *v)
{
	if (addr < st->sp || addr - st->sp > st->len ||
	    st->len - (addr - st->sp) < 8)
		return false;
	memcpy(v, st->data + (addr - st->sp), 8);
	return true;
}

/* Leave a frame that keeps [fp] = caller's fp, [fp + 8] = return address. */
static int fp_step(const struct jt_uw_stack *st, const struct jt_uw_regs *in,
		   struct jt_uw_regs *out)
{
	uint64_t fp = in->r[JT_UW_REG_FP], pc, caller_fp;

	if (!(in->valid & BIT(JT_UW_REG_FP)) ||
	    !jt_uw_read(st, fp, &caller_fp) || !jt_uw_read(st, fp + 8, &pc))
		return -1;
	*out = *in;
	out->r[JT_UW_REG_FP] = caller_fp;
	out->r[JT_UW_REG_SP] = fp + 16;
	out->r[JT_UW_REG_PC] = pc;
	return 1;
}

/* A fixed CFA = sp + off, the return address just below it. */
static int rule_step(const struct jt_uw_stack *st, const struct jt_uw_rule *r,
		     const struct jt_uw_regs *in, struct jt_uw_regs *out)
{
	uint64_t cfa = in->r[JT_UW_REG_SP] + r->cfa_off, pc;

	if (!jt_uw_read(st, cfa - 8, &pc))
		return -1;
	*out = *in;
	out->r[JT_UW_REG_SP] = cfa;
	out->r[JT_UW_REG_PC] = pc;
	return 1;
}

/* How far into its entry stub an object's first call returns, at most. */
#define ENTRY_STUB 64

static int step(const struct jt_uw_src *src, const struct jt_uw_stack *st,
		const struct jt_uw_regs *in, uint64_t pc, bool leaf,
		struct jt_uw_regs *out)
{
	int r;

	switch (src->how) {
	case JT_UW_CFI:
		r = jt_cfi_step(src->cfi, (leaf ? pc : pc - 1) - src->bias, st,
				in, out);
		/*
		 * No FDE at an object's entry stub, ld.so's _start (mov
		 * %rsp,%rdi; call _dl_start): the first code the process ran,
		 * called by no one. An executable's _start says so in its CFI.
		 */
		if (r == -1 && src->entry && pc - src->entry <= ENTRY_STUB)
			return 0;
		/*
		 * Code no FDE covers in an object that has CFI: hand-written
		 * or generated code (V8's embedded builtins) keeps frame
		 * pointers. A wrong guess ends at a garbage return address.
		 */
		return r == -1 ? fp_step(st, in, out) : r;
	case JT_UW_FP:
		return fp_step(st, in, out);
	case JT_UW_RULE:
		return rule_step(st, &src->rule, in, out);
	default:
		return -1;
	}
}

int jt_unwind(const struct jt_uw_regs *regs, const struct jt_uw_stack *st,
	      jt_uw_find_fn find, void *ctx, struct jt_uw_frame *out, int max,
	      enum jt_uw_end *end)
{
	struct jt_uw_regs cur = *regs, next;
	int n = 0, r;

	*end = JT_UW_END_NOREGS;
	if (!(cur.valid & BIT(JT_UW_REG_PC)) ||
	    !(cur.valid & BIT(JT_UW_REG_SP)))
		return 0;
	*end = JT_UW_END_DEPTH;
	while (n < max) {
		struct jt_uw_src src = { JT_UW_NONE };
		uint64_t pc = cur.r[JT_UW_REG_PC];
		bool leaf = n == 0;

		if (!pc) {
			*end = JT_UW_END_COMPLETE;
			break;
		}
		find(ctx, pc, leaf, &src);
		out[n++] = (struct jt_uw_frame){ pc, src.how };
		if (src.how == JT_UW_NONE) {
			*end = JT_UW_END_BADRA;
			break;
		}
		r = step(&src, st, &cur, pc, leaf, &next);
		if (r == 0) {
			*end = JT_UW_END_COMPLETE;
			break;
		}
		if (r < 0) {
			/* FP and fixed rules fail only by reading past the
			 * copy. */
			*end = r == -2 || src.how == JT_UW_FP ||
					       src.how == JT_UW_RULE ?
				       JT_UW_END_TRUNCATED :
				       JT_UW_END_NORULE;
			break;
		}
		/*
		 * Every caller's frame lies above its callee's. An arm64
		 * leaf function need not have a frame: its return address
		 * is in the link register, so its caller's sp is its own.
		 */
		if (next.r[JT_UW_REG_SP] < cur.r[JT_UW_REG_SP] ||
		    (next.r[JT_UW_REG_SP] == cur.r[JT_UW_REG_SP] &&
		     (!leaf || next.r[JT_UW_REG_PC] == pc))) {
			*end = JT_UW_END_LOOP;
			break;
		}
		next.valid |= BIT(JT_UW_REG_PC) | BIT(JT_UW_REG_SP);
		cur = next;
	}
	return n;
}

const char *jt_uw_end_name(enum jt_uw_end e)
{
	static const char *const names[] = {
		[JT_UW_END_COMPLETE] = "complete",
		[JT_UW_END_TRUNCATED] = "truncated",
		[JT_UW_END_NORULE] = "no-rule",
		[JT_UW_END_BADRA] = "bad-return-address",
		[JT_UW_END_LOOP] = "loop",
		[JT_UW_END_DEPTH] = "max-depth",
		[JT_UW_END_NOREGS] = "no-registers",
		[JT_UW_END_ARCH] = "other-architecture",
	};

	return e < sizeof(names) / sizeof(names[0]) ? names[e] : "?";
}
