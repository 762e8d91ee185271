/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * What the unwinder needs to know of an architecture: which user
 * registers a sample carries (perf's PERF_SAMPLE_REGS_USER numbering)
 * and where each lands in DWARF's numbering, the one CFI uses.
 */
#ifndef JT_UNWIND_REGS_H
#define JT_UNWIND_REGS_H

#include <stdint.h>
#include <string.h>

#if defined(__x86_64__)
#include <asm/perf_regs.h>
#include <elf.h>

#define JT_UW_MACHINE EM_X86_64
#define JT_UW_UNAME "x86_64" /* uname -m, the recording's machine= */
#define JT_UW_NREGS 17	     /* DWARF 0-15 (rax..r15), 16: the return address */
#define JT_UW_REG_SP 7
#define JT_UW_REG_FP 6
#define JT_UW_REG_PC 16

/* Callee-saved registers, the frame pointer, sp and ip: what CFI restores. */
#define JT_UW_PERF_MASK                                                        \
	((1ULL << PERF_REG_X86_BX) | (1ULL << PERF_REG_X86_BP) |               \
	 (1ULL << PERF_REG_X86_SP) | (1ULL << PERF_REG_X86_IP) |               \
	 (1ULL << PERF_REG_X86_R12) | (1ULL << PERF_REG_X86_R13) |             \
	 (1ULL << PERF_REG_X86_R14) | (1ULL << PERF_REG_X86_R15))

#define JT_UW_PERF_SP PERF_REG_X86_SP

/* DWARF number of perf register p, or -1. */
static inline int jt_uw_dwarf_reg(int p)
{
	static const int8_t map[] = {
		[PERF_REG_X86_AX] = 0,	 [PERF_REG_X86_BX] = 3,
		[PERF_REG_X86_CX] = 2,	 [PERF_REG_X86_DX] = 1,
		[PERF_REG_X86_SI] = 4,	 [PERF_REG_X86_DI] = 5,
		[PERF_REG_X86_BP] = 6,	 [PERF_REG_X86_SP] = 7,
		[PERF_REG_X86_IP] = 16,	 [PERF_REG_X86_FLAGS] = -1,
		[PERF_REG_X86_CS] = -1,	 [PERF_REG_X86_SS] = -1,
		[PERF_REG_X86_DS] = -1,	 [PERF_REG_X86_ES] = -1,
		[PERF_REG_X86_FS] = -1,	 [PERF_REG_X86_GS] = -1,
		[PERF_REG_X86_R8] = 8,	 [PERF_REG_X86_R9] = 9,
		[PERF_REG_X86_R10] = 10, [PERF_REG_X86_R11] = 11,
		[PERF_REG_X86_R12] = 12, [PERF_REG_X86_R13] = 13,
		[PERF_REG_X86_R14] = 14, [PERF_REG_X86_R15] = 15,
	};

	return p >= 0 && p < (int)sizeof(map) ? map[p] : -1;
}
#elif defined(__aarch64__)
#include <asm/perf_regs.h>
#include <elf.h>

/*
 * DWARF 0-30 are x0-x30 (x30 the link register, CFI's return address
 * column), 31 is sp; 32 is not DWARF's: the pc, where a step puts the
 * return address it restored, as slot 16 is on x86-64. The frame record
 * is laid out as x86-64's: [fp] = caller's fp, [fp + 8] = return address.
 */
#define JT_UW_MACHINE EM_AARCH64
#define JT_UW_UNAME "aarch64"
#define JT_UW_NREGS 33
#define JT_UW_REG_SP 31
#define JT_UW_REG_FP 29
#define JT_UW_REG_PC 32

/* Callee-saved x19-x28, fp, lr, sp and pc: what CFI restores. */
#define JT_UW_PERF_MASK                                                        \
	((((1ULL << 12) - 1) << PERF_REG_ARM64_X19) |                          \
	 (1ULL << PERF_REG_ARM64_SP) | (1ULL << PERF_REG_ARM64_PC))

#define JT_UW_PERF_SP PERF_REG_ARM64_SP

/* DWARF number of perf register p, or -1: perf numbers them alike. */
static inline int jt_uw_dwarf_reg(int p)
{
	return p >= 0 && p <= PERF_REG_ARM64_PC ? p : -1;
}
#else
#error "jittrace's unwinder knows x86-64 and arm64"
#endif

/*
 * perf's number of the stack pointer on the machine a recording names
 * (uname -m): a fixed ABI number, so another architecture's recording
 * still puts its stack copies back together.
 */
static inline int jt_uw_perf_sp_of(const char *machine)
{
	if (machine && !strcmp(machine, "x86_64"))
		return 7; /* PERF_REG_X86_SP */
	if (machine && !strcmp(machine, "aarch64"))
		return 31; /* PERF_REG_ARM64_SP */
	return JT_UW_PERF_SP;
}

#endif
