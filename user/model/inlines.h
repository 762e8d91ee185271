/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Functions the compiler inlined at an address of an ELF object, from
 * its DWARF (its own .debug_info, else its detached debug file), read by
 * libdw and kept per address: the frames perf shows as "(inlined)".
 */
#ifndef JT_INLINES_H
#define JT_INLINES_H

#include <stdint.h>
#include "lib/hash.h"
#include "lib/strtab.h"
#include "model/demangle.h"
#include "model/elfsyms.h"

#define JT_INLINE_MAX 8

struct jt_inlines {
	struct jt_hash at; /* (file, address) -> its inlined functions */
	struct jt_strtab *strs;
	struct jt_demangler *dem;
};

/* Inlined at ELF address vaddr of f, innermost first, into out: count. */
int jt_inlines_at(struct jt_inlines *c, struct jt_elffile *f, uint64_t vaddr,
		  const char **out, int max);
void jt_inlines_free(struct jt_inlines *c);
/* Let go of f's DWARF (the ELF cache frees the file). */
void jt_inlines_close(struct jt_elffile *f);

#endif
