/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * One JIT function as a small ELF file perf can load symbols from, laid
 * out as perf's own genelf does: an ET_DYN with .text at
 * JT_JITELF_TEXT_OFFSET and one function symbol covering it. An MMAP2
 * with pgoff JT_JITELF_TEXT_OFFSET at the code's address makes perf
 * name the code.
 */
#ifndef JT_JITELF_H
#define JT_JITELF_H

#include <stddef.h>
#include <stdint.h>

#define JT_JITELF_TEXT_OFFSET 0x80
/* Code of up to this size gets file bytes (zeros) as perf's genelf's has. */
#define JT_JITELF_MAX_BYTES (64 * 1024)

/* Write the ELF for name, size bytes of code, to fd: 0 or -errno. */
int jt_jitelf_write(int fd, const char *name, uint64_t size);

#endif
