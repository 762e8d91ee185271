/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * jitdump records (tools/perf/Documentation/jitdump-specification.txt),
 * with jittrace's two of its own: what the JVMTI agent (jvmti/) writes
 * and the reader (user/model/jitdump.c) reads.
 */
#ifndef JT_JITDUMP_FORMAT_H
#define JT_JITDUMP_FORMAT_H

#include <stdint.h>
#include <sys/uio.h>

#define JITHEADER_MAGIC 0x4A695444
#define JITHEADER_VERSION 1
#if defined(__x86_64__)
#define JT_ELF_MACH 62 /* EM_X86_64 */
#elif defined(__aarch64__)
#define JT_ELF_MACH 183 /* EM_AARCH64 */
#endif

enum {
	JIT_CODE_LOAD = 0,
	JIT_CODE_MOVE = 1,
	JIT_CODE_DEBUG_INFO = 2,
	JIT_CODE_CLOSE = 3,
	JIT_CODE_UNWINDING_INFO = 4,
	/*
	 * jittrace's own: the code at code_addr was freed. Far above
	 * perf's types, which perf skips by their size.
	 */
	JIT_CODE_UNLOAD = 0x4a540001,
	/*
	 * jittrace's own, before a CODE_LOAD: the methods HotSpot inlined
	 * at each pc of it (its PcDescs), innermost first, the compiled
	 * method itself left out.
	 */
	JIT_CODE_INLINE = 0x4a540002,
};

struct jitheader {
	uint32_t magic;
	uint32_t version;
	uint32_t total_size;
	uint32_t elf_mach;
	uint32_t pad1;
	uint32_t pid;
	uint64_t timestamp;
	uint64_t flags;
};

struct jr_prefix {
	uint32_t id;
	uint32_t total_size;
	uint64_t timestamp;
};

struct jr_code_load {
	struct jr_prefix p;
	uint32_t pid;
	uint32_t tid;
	uint64_t vma;
	uint64_t code_addr;
	uint64_t code_size;
	uint64_t code_index;
	/* name, NUL-terminated, then the code */
};

struct debug_entry {
	uint64_t addr;
	int32_t lineno;
	int32_t discrim;
	/* file name, NUL-terminated */
};

struct jr_code_debug_info {
	struct jr_prefix p;
	uint64_t code_addr;
	uint64_t nr_entry;
	/* nr_entry debug entries */
};

struct jr_code_inline {
	struct jr_prefix p;
	uint64_t code_addr;
	uint64_t nr_entry;
	/* nr_entry of: u64 pc, u32 depth, u32 pad, depth NUL-terminated names
	 */
};

struct jr_code_unload {
	struct jr_prefix p;
	uint32_t pid;
	uint32_t tid;
	uint64_t code_addr;
};

#endif
