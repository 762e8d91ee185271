/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Decoding of the perf ring records jittrace stores (samples, side-band). */
#ifndef JT_PERF_REC_H
#define JT_PERF_REC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <linux/perf_event.h>

struct jt_sample {
	uint32_t pid;
	uint32_t tid;
	uint32_t cpu;
	uint16_t misc;
	uint64_t time;
	uint64_t ip;
	uint64_t addr;
	uint64_t period;
	uint64_t nr_chain;
	const uint64_t *chain;
	const unsigned char *rest; /* what follows the chain */
	size_t rest_len;
};

/* A sample's user registers and stack copy (perf's dwarf call graph). */
struct jt_sample_user {
	uint64_t abi; /* PERF_SAMPLE_REGS_ABI_*; 0: no registers */
	uint64_t regs[64];
	uint64_t mask; /* which perf registers regs[] holds, by number */
	const unsigned char *stack;
	uint64_t stack_len; /* the bytes the kernel could copy */
};

/* The pid/tid/time/cpu every record carries (sample_id_all). */
struct jt_sample_id {
	uint32_t pid;
	uint32_t tid;
	uint64_t time;
	uint32_t cpu;
};

struct jt_mmap2 {
	uint32_t pid;
	uint32_t tid;
	uint64_t start;
	uint64_t len;
	uint64_t pgoff;
	uint32_t maj, min;
	uint64_t ino;
	uint32_t prot;
	uint32_t flags;
	const char *filename;
	size_t filename_len;
};

int jt_perf_sample(const void *rec, size_t len, uint64_t sample_type,
		   struct jt_sample *s);
/* Its REGS_USER and STACK_USER, given the attr's sample_regs_user. */
int jt_perf_sample_user(const struct jt_sample *s, uint64_t sample_type,
			uint64_t regs_mask, struct jt_sample_user *u);
/*
 * Cut a sample's stack copy to the bytes the kernel filled (dyn_size),
 * in place: the record's new length. perf keeps the requested size.
 */
size_t jt_perf_sample_trim(void *rec, size_t len, uint64_t sample_type,
			   uint64_t regs_mask);
/* Drop the stack copy altogether (size 0): the record's new length. */
size_t jt_perf_sample_strip(void *rec, size_t len, uint64_t sample_type,
			    uint64_t regs_mask);
/* A sample's ip and pid, from its first fields alone: -EINVAL without. */
int jt_perf_sample_ip(const void *rec, size_t len, uint64_t sample_type,
		      uint64_t *ip, uint32_t *pid);
int jt_perf_sample_id(const void *rec, size_t len, uint64_t sample_type,
		      struct jt_sample_id *id);
int jt_perf_mmap2(const void *rec, size_t len, struct jt_mmap2 *m);
/*
 * m as perf writes it, with the sample_id_all trailer of sample type st,
 * in buf of cap bytes: its size, or 0 when it does not fit.
 */
size_t jt_perf_mmap2_make(void *buf, size_t cap, const struct jt_mmap2 *m,
			  uint16_t misc, const struct jt_sample_id *id,
			  uint64_t st);
/* The time at which a record happened; 0 when it carries none. */
uint64_t jt_perf_time(const void *rec, size_t len, uint64_t sample_type);
bool jt_perf_kernel_ip(uint16_t misc);

#endif
