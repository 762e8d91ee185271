/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Data addresses named the way perf mem and perf c2c name them: the ELF
 * object (.symtab, else .dynsym) of a file mapping that holds an address,
 * and the objects that lie on one page of it.
 */
#ifndef JT_DATASYM_H
#define JT_DATASYM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include "lib/json.h"
#include "model/aspace.h"
#include "model/symbolize.h"

struct jt_datasym {
	const char *name; /* lives as long as the jt_syms it came from */
	/*
	 * jt_datasym_at: the address's offset into the object.
	 * jt_datasym_page: where the object starts relative to the page,
	 * negative when it began on an earlier page.
	 */
	int64_t offset;
	uint64_t size;
};

/* The object holding addr of file region g; false when none does. */
bool jt_datasym_at(struct jt_syms *y, const struct jt_region *g, uint64_t addr,
		   struct jt_datasym *d);
/*
 * The objects on the page at page of g, in address order: up to max of
 * them into out. Returns how many there are, which may be more than max.
 */
size_t jt_datasym_page(struct jt_syms *y, const struct jt_region *g,
		       uint64_t page, struct jt_datasym *out, size_t max);
/* The same for the page at file offset off of ELF file f. */
size_t jt_datasym_file_page(const struct jt_elffile *f, uint64_t off,
			    struct jt_datasym *out, size_t max);
/* "data_syms": [{name, offset, size}...], "data_syms_total": total. */
void jt_datasym_json(struct jt_json *w, const struct jt_datasym *d, size_t n,
		     size_t total);
/* "a (+0x0, 8 bytes), b (-0x40, 4160 bytes)": a page's objects, for people. */
void jt_datasym_print(FILE *f, const struct jt_datasym *d, size_t n);
/* "name+0x40" ("name" at offset 0) into buf. */
const char *jt_datasym_name(const struct jt_datasym *d, char *buf, size_t len);

#endif
