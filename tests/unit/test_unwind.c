// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The unwinder on synthetic stacks: CFI (a hand-built .eh_frame read by
 * libdw), frame-pointer and trampoline frames, mixed in one stack; a
 * truncated stack copy; a garbage return address; CPython's template.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "bytes.h"
#include "unwind/cfi.h"
#include "unwind/trampoline.h"
#include "unwind/unwind.h"

/* Code: A (CFI, after push %rbp), B (JIT, frame pointer), C (a
 * trampoline copy), D (CFI, the outermost frame: undefined RA). */
#define A_START 0x401000
#define D_START 0x402000
#define B_START 0x7000
#define C_START 0x9000
#define E_START 0x403000 /* an object's entry stub: CFI, but no FDE here */
#define SP0 0x10000

/* A CIE as x86-64 compilers write it, with absolute 8-byte addresses. */
static size_t cie(struct bytes *e)
{
	static const unsigned char body[] = {
		1,    0,	/* version, augmentation "" */
		1,    0x78, 16, /* code align 1, data align -8, RA column 16 */
		0x0c, 7,    8,	/* def_cfa rsp+8 */
		0x90, 1,	/* offset r16 (rip) at cfa-8 */
		0,    0,    0,	0, 0, /* nops to a multiple of 4 */
	};
	size_t at = e->n;

	put_u32(e, 4 + sizeof(body));
	put_u32(e, 0); /* CIE id */
	put(e, body, sizeof(body));
	return at;
}

static void fde(struct bytes *e, size_t cie_at, uint64_t start, uint64_t len,
		const unsigned char *ins, size_t nins)
{
	size_t body = 4 + 8 + 8 + nins, pad = (4 - (4 + body) % 4) % 4;
	size_t at = e->n;
	static const unsigned char nops[4];

	put_u32(e, body + pad);
	put_u32(e, at + 4 - cie_at); /* back to the CIE */
	put_u64(e, start);
	put_u64(e, len);
	put(e, ins, nins);
	put(e, nops, pad);
}

static struct jt_cfi *make_cfi(void)
{
	/* A: after push %rbp, CFA = rsp+16, rbp at CFA-16. */
	static const unsigned char a_ins[] = { 0x44, 0x0e, 16, 0x86, 2 };
	/* D: _start's rule, the return address is undefined. */
	static const unsigned char d_ins[] = { 0x07, 16 };
	struct jt_cfi_sect s[JT_CFI_NKINDS] = {};
	struct bytes e = {};
	size_t c = cie(&e);

	fde(&e, c, A_START, 0x100, a_ins, sizeof(a_ins));
	fde(&e, c, D_START, 0x100, d_ins, sizeof(d_ins));
	put_u32(&e, 0);
	s[JT_CFI_EH_FRAME] = (struct jt_cfi_sect){ e.b, e.n, 0x400800 };
	return jt_cfi_new(s);
}

struct world {
	struct jt_cfi *cfi;
	struct jt_tramp tramp;
};

static void find(void *ctx, uint64_t pc, bool leaf, struct jt_uw_src *src)
{
	struct world *w = ctx;
	uint64_t look = leaf ? pc : pc - 1;
	int off;

	src->how = JT_UW_NONE;
	if ((look >= A_START && look < A_START + 0x100) ||
	    (look >= D_START && look < D_START + 0x100)) {
		src->how = JT_UW_CFI;
		src->cfi = w->cfi;
		src->bias = 0;
	} else if (look >= E_START && look < E_START + 0x100) {
		src->how = JT_UW_CFI;
		src->cfi = w->cfi;
		src->bias = 0;
		src->entry = E_START;
	} else if (look >= B_START && look < B_START + 0x100) {
		src->how = JT_UW_FP;
	} else if (look >= C_START && look < C_START + w->tramp.len) {
		off = jt_tramp_cfa(&w->tramp, pc - C_START);
		src->how = off < 0 ? JT_UW_NORULE : JT_UW_RULE;
		src->rule.cfa_off = off;
	}
}

/* CPython 3.12's: sub $8,%rsp; call *%rcx; add $8,%rsp; ret */
static const unsigned char py312[] = { 0x48, 0x83, 0xec, 0x08, 0xff, 0xd1,
				       0x48, 0x83, 0xc4, 0x08, 0xc3 };

static uint64_t stack[32];

/* The stack A <- B <- C <- D, as the sample copied it. */
static void build(uint64_t c_ret)
{
	memset(stack, 0, sizeof(stack));
	stack[0] = SP0 + 0x20;	   /* A pushed B's rbp */
	stack[1] = B_START + 0x50; /* A returns into B */
	stack[4] = SP0 + 0x100;	   /* B's frame: [fp] = caller's fp */
	stack[5] = C_START + 6;	   /* B returns into C, after its call */
	stack[7] = c_ret;	   /* C's CFA - 8, with CFA = sp + 16 */
}

static int unwind(struct world *w, size_t len, struct jt_uw_frame *f,
		  enum jt_uw_end *end)
{
	struct jt_uw_regs r = {};
	struct jt_uw_stack st = { SP0, (const unsigned char *)stack, len };

	r.r[JT_UW_REG_SP] = SP0;
	r.r[JT_UW_REG_PC] = A_START + 0x10;
	r.r[JT_UW_REG_FP] = 0x1234; /* A's own use of rbp: anything */
	r.valid = (1u << JT_UW_REG_SP) | (1u << JT_UW_REG_PC) |
		  (1u << JT_UW_REG_FP);
	return jt_unwind(&r, &st, find, w, f, 16, end);
}

static void setup_world(struct world *w)
{
	w->cfi = make_cfi();
	assert_non_null(w->cfi);
	assert_int_equal(jt_tramp_decode(py312, sizeof(py312), &w->tramp), 0);
}

static void test_mixed_frames_complete(void **state)
{
	struct world w;
	struct jt_uw_frame f[16];
	enum jt_uw_end end;
	int n;

	setup_world(&w);
	build(D_START + 0x50);
	n = unwind(&w, sizeof(stack), f, &end);
	assert_int_equal(end, JT_UW_END_COMPLETE);
	assert_int_equal(n, 4);
	assert_int_equal(f[0].pc, A_START + 0x10);
	assert_int_equal(f[0].how, JT_UW_CFI);
	assert_int_equal(f[1].pc, B_START + 0x50);
	assert_int_equal(f[1].how, JT_UW_FP);
	assert_int_equal(f[2].pc, C_START + 6);
	assert_int_equal(f[2].how, JT_UW_RULE);
	assert_int_equal(f[3].pc, D_START + 0x50);
	assert_int_equal(f[3].how, JT_UW_CFI);
	jt_cfi_free(w.cfi);
}

static void test_truncated_copy(void **state)
{
	struct world w;
	struct jt_uw_frame f[16];
	enum jt_uw_end end;
	int n;

	setup_world(&w);
	build(D_START + 0x50);
	/* The copy ends before the word C's rule reads (sp + 0x38). */
	n = unwind(&w, 0x38, f, &end);
	assert_int_equal(end, JT_UW_END_TRUNCATED);
	assert_int_equal(n, 3);
	assert_int_equal(f[2].pc, C_START + 6);
	/* and before what A's CFI reads: the very first step. */
	n = unwind(&w, 8, f, &end);
	assert_int_equal(end, JT_UW_END_TRUNCATED);
	assert_int_equal(n, 1);
	jt_cfi_free(w.cfi);
}

static void test_garbage_return_address(void **state)
{
	struct world w;
	struct jt_uw_frame f[16];
	enum jt_uw_end end;
	int n;

	setup_world(&w);
	build(0xdeadbeef);
	n = unwind(&w, sizeof(stack), f, &end);
	assert_int_equal(end, JT_UW_END_BADRA);
	assert_int_equal(n, 4);
	assert_int_equal(f[3].pc, 0xdeadbeef);
	assert_int_equal(f[3].how, JT_UW_NONE);
	jt_cfi_free(w.cfi);
}

static void test_stack_must_grow(void **state)
{
	struct world w;
	struct jt_uw_frame f[16];
	enum jt_uw_end end;
	int n;

	setup_world(&w);
	build(D_START + 0x50);
	stack[4] = SP0 + 0x20;	   /* B's saved fp: its own frame again */
	stack[5] = B_START + 0x60; /* ...returning into B */
	n = unwind(&w, sizeof(stack), f, &end);
	/* The second step out of B would not move the stack pointer. */
	assert_int_equal(end, JT_UW_END_LOOP);
	assert_int_equal(n, 3);
	assert_int_equal(f[2].pc, B_START + 0x60);
	jt_cfi_free(w.cfi);
}

static void test_no_rule(void **state)
{
	struct world w;
	struct jt_uw_frame f[16];
	enum jt_uw_end end;
	int n;

	setup_world(&w);
	build(D_START + 0x50);
	stack[5] = C_START + 5; /* mid-instruction in the trampoline */
	n = unwind(&w, sizeof(stack), f, &end);
	assert_int_equal(end, JT_UW_END_NORULE);
	assert_int_equal(n, 3);
	jt_cfi_free(w.cfi);
}

/*
 * ld.so's _start has no FDE: a stack that returns into it, just past its
 * call, ends there, complete. Past the stub, no FDE is no rule, as it
 * was for every such stack before.
 */
static void test_entry_stub_is_the_outermost_frame(void **state)
{
	struct world w;
	struct jt_uw_frame f[16];
	enum jt_uw_end end;
	int n;

	setup_world(&w);
	build(E_START + 8); /* mov %rsp,%rdi; call: returns to _start + 8 */
	n = unwind(&w, sizeof(stack), f, &end);
	assert_int_equal(end, JT_UW_END_COMPLETE);
	assert_int_equal(n, 4);
	assert_int_equal(f[3].pc, E_START + 8);
	build(E_START + 0x80);
	n = unwind(&w, sizeof(stack), f, &end);
	assert_int_equal(end, JT_UW_END_NORULE);
	assert_int_equal(n, 4);
	jt_cfi_free(w.cfi);
}

static void test_trampoline_template(void **state)
{
	static const unsigned char unknown[] = { 0x48, 0x89, 0xc8, 0xc3 };
	static const unsigned char no_ret[] = { 0x48, 0x83, 0xec, 0x08 };
	struct jt_tramp t;

	assert_int_equal(jt_tramp_decode(py312, sizeof(py312), &t), 0);
	assert_int_equal(jt_tramp_cfa(&t, 0), 8);
	assert_int_equal(jt_tramp_cfa(&t, 4), 16);
	assert_int_equal(jt_tramp_cfa(&t, 6), 16);
	assert_int_equal(jt_tramp_cfa(&t, 10), 8);
	assert_int_equal(jt_tramp_cfa(&t, 5), -1);
	assert_int_equal(jt_tramp_cfa(&t, 11), -1);
	assert_int_equal(jt_tramp_decode(unknown, sizeof(unknown), &t), -1);
	assert_int_equal(jt_tramp_decode(no_ret, sizeof(no_ret), &t), -1);
}

static void test_cfi_rejects_garbage(void **state)
{
	struct jt_cfi_sect s[JT_CFI_NKINDS] = {};
	unsigned char junk[64];
	struct jt_uw_regs in = {}, out;
	struct jt_uw_stack st = { SP0, (const unsigned char *)stack, 64 };
	struct jt_cfi *c;

	memset(junk, 0xff, sizeof(junk));
	s[JT_CFI_EH_FRAME] = (struct jt_cfi_sect){ junk, sizeof(junk), 0 };
	c = jt_cfi_new(s);
	/* libdw may take the bytes, but no address has a rule in them. */
	if (c) {
		in.valid = (1u << JT_UW_REG_SP) | (1u << JT_UW_REG_PC);
		assert_true(jt_cfi_step(c, 0x10, &st, &in, &out) < 0);
		jt_cfi_free(c);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_mixed_frames_complete),
		cmocka_unit_test(test_truncated_copy),
		cmocka_unit_test(test_garbage_return_address),
		cmocka_unit_test(test_stack_must_grow),
		cmocka_unit_test(test_no_rule),
		cmocka_unit_test(test_entry_stub_is_the_outermost_frame),
		cmocka_unit_test(test_trampoline_template),
		cmocka_unit_test(test_cfi_rejects_garbage),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
