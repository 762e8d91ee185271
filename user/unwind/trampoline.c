// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * x86-64 only: the instructions a call trampoline is made of, and what
 * each does to the stack pointer. Anything else refuses the template.
 */
#include <string.h>
#include "unwind/trampoline.h"

/* Length of the instruction at p and its effect on sp; 0: unknown. */
static size_t insn(const unsigned char *p, size_t room, int *sp_delta,
		   int *ends)
{
	*sp_delta = 0;
	*ends = 0;
	if (room >= 4 && p[0] == 0xf3 && p[1] == 0x0f && p[2] == 0x1e &&
	    p[3] == 0xfa)
		return 4; /* endbr64 */
	if (room >= 4 && p[0] == 0x48 && p[1] == 0x83 &&
	    (p[2] == 0xec || p[2] == 0xc4)) {
		*sp_delta = p[2] == 0xec ? p[3] : -(int)p[3];
		return 4; /* sub/add $imm8, %rsp */
	}
	if (room >= 3 && p[0] == 0x48 && p[1] == 0x89 && p[2] == 0xe5)
		return 3; /* mov %rsp, %rbp */
	if (p[0] == 0x55 || p[0] == 0x5d) {
		*sp_delta = p[0] == 0x55 ? 8 : -8;
		return 1; /* push/pop %rbp */
	}
	if (room >= 2 && p[0] == 0xff && p[1] >= 0xd0 && p[1] <= 0xd7)
		return 2; /* call *%reg: sp is back when it returns */
	if (room >= 3 && p[0] == 0x41 && p[1] == 0xff && p[2] >= 0xd0 &&
	    p[2] <= 0xd7)
		return 3; /* call *%r8-r15 */
	if (room >= 5 && p[0] == 0xe8)
		return 5; /* call rel32 */
	if (p[0] == 0x90)
		return 1;
	if (p[0] == 0xc3) {
		*ends = 1;
		return 1;
	}
	return 0;
}

int jt_tramp_decode(const unsigned char *code, size_t len, struct jt_tramp *t)
{
	size_t off = 0;
	int cfa = 8, ended = 0;

	if (!len || len > JT_TRAMP_MAX)
		return -1;
	memset(t, 0, sizeof(*t));
	t->len = len;
	memset(t->cfa_off, 0xff, sizeof(t->cfa_off));
	while (off < len && !ended) {
		int delta;
		size_t n = insn(code + off, len - off, &delta, &ended);

		if (!n)
			return -1;
		t->cfa_off[off] = cfa;
		cfa += delta;
		if (cfa < 8)
			return -1;
		off += n;
	}
	/* A template ends with its ret (padding may follow): no fall-through.
	 */
	return ended && cfa == 8 ? 0 : -1;
}

int jt_tramp_cfa(const struct jt_tramp *t, uint64_t off)
{
	return off < t->len ? t->cfa_off[off] : -1;
}
