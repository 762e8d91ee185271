/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * What differs per architecture in recording: the prefix of the syscall
 * wrappers' names, whether the page fault tracepoints exist, and the
 * user-readable counter perf's clock is derived from.
 * The BPF side's counterpart is bpf/arch.bpf.h; the unwinder's is
 * user/unwind/regs.h.
 */
#ifndef JT_RECORD_ARCH_H
#define JT_RECORD_ARCH_H

#include <stdint.h>

#if defined(__x86_64__)
#define JT_SYSCALL_PREFIX "__x64_"

/* The counter perf's time_zero/mult/shift convert (perf_event_mmap_page). */
static inline uint64_t jt_user_counter(void)
{
	return __builtin_ia32_rdtsc();
}
/* exceptions:page_fault_user/kernel: the COW hook's tracepoint tier. */
#define JT_COW_TRACEPOINTS                                                     \
	{                                                                      \
		"jt_fault", "jt_kfault"                                        \
	}
#elif defined(__aarch64__)
#define JT_SYSCALL_PREFIX "__arm64_"

/* The generic timer's virtual count, as perf's arm64 tsc.c reads it. */
static inline uint64_t jt_user_counter(void)
{
	uint64_t v;

	__asm__ volatile("mrs %0, cntvct_el0" : "=r"(v));
	return v;
}
/* arm64 has no page fault tracepoints: COW needs the kernel tier. */
#define JT_COW_TRACEPOINTS                                                     \
	{                                                                      \
		NULL                                                           \
	}
#else
#error "jittrace knows x86-64 and arm64"
#endif

#endif
