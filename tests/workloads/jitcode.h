/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The machine code the JIT workloads write: a loop of N steps, then
 * return, in 16 bytes or less on each architecture, so a function fits in
 * jitgen's 16-byte slots. N picks how long a call runs; it must fit in 16
 * bits on arm64 (one movz).
 */
#ifndef JT_JITCODE_H
#define JT_JITCODE_H

#include <elf.h>
#include <stdint.h>
#include <string.h>

#define JIT_CODE_MAX 16

#if defined(__aarch64__)
#define JIT_ELF_MACH EM_AARCH64

static inline size_t jit_emit_loop(unsigned char *p, uint32_t n)
{
	const uint32_t insn[] = {
		0x52800000 | (n & 0xffff) << 5, /* movz w0, #n */
		0x71000400,			/* subs w0, w0, #1 */
		0x54ffffe1,			/* b.ne .-4 */
		0xd65f03c0,			/* ret */
	};

	memcpy(p, insn, sizeof(insn));
	return sizeof(insn);
}
#elif defined(__x86_64__)
#define JIT_ELF_MACH EM_X86_64

static inline size_t jit_emit_loop(unsigned char *p, uint32_t n)
{
	/* mov $n,%eax; dec %eax; jnz -4; ret; int3 up to the slot's end */
	static const unsigned char body[] = { 0xb8, 0,	  0,	0,    0,
					      0xff, 0xc8, 0x75, 0xfc, 0xc3 };

	memcpy(p, body, sizeof(body));
	memcpy(p + 1, &n, 4);
	memset(p + sizeof(body), 0xcc, JIT_CODE_MAX - sizeof(body));
	return JIT_CODE_MAX;
}
#else
#error "the JIT workloads write x86-64 or arm64 code"
#endif

/* arm64's instruction cache does not snoop stores: code written as data
 * is made visible to instruction fetch before it runs. */
static inline void jit_flush(void *p, size_t len)
{
	__builtin___clear_cache((char *)p, (char *)p + len);
}

#endif
