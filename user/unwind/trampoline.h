/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Frames in code copied from a template that has no CFI of its own:
 * CPython's -X perf trampolines, copies of libpython's
 * _Py_trampoline_func_start.._end. The rule at each offset comes from
 * the template's own bytes, decoded here; a template of any other shape
 * than the few instructions such trampolines use is refused.
 */
#ifndef JT_TRAMPOLINE_H
#define JT_TRAMPOLINE_H

#include <stddef.h>
#include <stdint.h>

#define JT_TRAMP_MAX 64

struct jt_tramp {
	uint32_t len;
	/* CFA - sp before the instruction at each offset; -1: mid-instruction
	 */
	int16_t cfa_off[JT_TRAMP_MAX + 1];
};

/* 0, or -1 when the bytes are not a shape we know how to leave. */
int jt_tramp_decode(const unsigned char *code, size_t len, struct jt_tramp *t);
/* The CFA offset at off; -1 when off is not an instruction boundary. */
int jt_tramp_cfa(const struct jt_tramp *t, uint64_t off);

#endif
