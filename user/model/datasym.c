// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <inttypes.h>
#include <stdio.h>
#include "jt_abi.h"
#include "lib/fmt.h"
#include "model/datasym.h"

/* The ELF address of addr in g, and g's file; NULL: not an ELF mapping. */
static struct jt_elffile *elf_addr(struct jt_syms *y, const struct jt_region *g,
				   uint64_t addr, uint64_t *vaddr)
{
	uint64_t off = g->pgoff + (addr - g->start);
	const char *path;
	struct jt_elffile *f = jt_syms_elf(y, g, &path);

	if (!f || jt_elf_page_vaddr(f, off & JT_PAGE_MASK, vaddr))
		return NULL;
	*vaddr += off & ~JT_PAGE_MASK;
	return f;
}

bool jt_datasym_at(struct jt_syms *y, const struct jt_region *g, uint64_t addr,
		   struct jt_datasym *d)
{
	const struct jt_elfsym *o;
	struct jt_elffile *f;
	uint64_t va;
	size_t n;

	if (!(f = elf_addr(y, g, addr, &va)))
		return false;
	/* Objects can nest (a struct and its alias): the innermost holds it. */
	for (n = jt_elf_objects(f, va, va + 1, &o); n; n--) {
		if (o[n - 1].start <= va && va < o[n - 1].end) {
			d->name = o[n - 1].name;
			d->offset = (int64_t)(va - o[n - 1].start);
			d->size = o[n - 1].end - o[n - 1].start;
			return true;
		}
	}
	return false;
}

/* Names are interned: the same name is the same pointer. */
static bool seen(const struct jt_datasym *d, size_t n, const char *name)
{
	while (n--)
		if (d[n].name == name)
			return true;
	return false;
}

size_t jt_datasym_page(struct jt_syms *y, const struct jt_region *g,
		       uint64_t page, struct jt_datasym *out, size_t max)
{
	const char *path;
	struct jt_elffile *f = jt_syms_elf(y, g, &path);

	return f ? jt_datasym_file_page(f, g->pgoff + (page - g->start), out,
					max) :
		   0;
}

size_t jt_datasym_file_page(const struct jt_elffile *f, uint64_t off,
			    struct jt_datasym *out, size_t max)
{
	const struct jt_elfsym *o;
	uint64_t va;
	size_t n, i, k;

	if (jt_elf_page_vaddr(f, off, &va))
		return 0;
	n = jt_elf_objects(f, va, va + JT_PAGE_SIZE, &o);
	for (i = k = 0; i < n; i++) {
		/* One name each: versioned copies (sys_errlist@GLIBC_2.x). */
		if (o[i].end <= va || seen(out, k < max ? k : max, o[i].name))
			continue;
		if (k < max)
			out[k] =
				(struct jt_datasym){ o[i].name,
						     (int64_t)(o[i].start - va),
						     o[i].end - o[i].start };
		k++;
	}
	return k;
}

void jt_datasym_json(struct jt_json *w, const struct jt_datasym *d, size_t n,
		     size_t total)
{
	size_t i;

	jt_json_name(w, "data_syms");
	jt_json_array(w);
	for (i = 0; i < n; i++) {
		jt_json_object(w);
		jt_json_str_field(w, "name", d[i].name);
		jt_json_i64_field(w, "offset", d[i].offset);
		jt_json_u64_field(w, "size", d[i].size);
		jt_json_end(w);
	}
	jt_json_end(w);
	jt_json_u64_field(w, "data_syms_total", total);
}

void jt_datasym_print(FILE *f, const struct jt_datasym *d, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		fprintf(f, "%s%s (%s0x%" PRIx64 ", %" PRIu64 " bytes)",
			i ? ", " : "", jt_tx(d[i].name),
			d[i].offset < 0 ? "-" : "+",
			(uint64_t)(d[i].offset < 0 ? -d[i].offset :
						     d[i].offset),
			d[i].size);
}

const char *jt_datasym_name(const struct jt_datasym *d, char *buf, size_t len)
{
	if (d->offset)
		snprintf(buf, len, "%s+%#" PRIx64, d->name,
			 (uint64_t)d->offset);
	else
		snprintf(buf, len, "%s", d->name);
	return buf;
}
