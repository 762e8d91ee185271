// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "model/inlines.h"

struct inl {
	const struct jt_elffile *f;
	uint64_t vaddr;
	int n;
	const char *names[JT_INLINE_MAX];
};

struct inl_key {
	const struct jt_elffile *f;
	uint64_t vaddr;
};

static bool inl_eq(const void *val, const void *key)
{
	const struct inl *a = val;
	const struct inl_key *k = key;

	return a->f == k->f && a->vaddr == k->vaddr;
}

/* The debug file when there is one, else the object's own sections. */
static Dwarf *dwarf_of(struct jt_elffile *f)
{
	int fd;

	if (f->dwarf_state)
		return f->dwarf;
	f->dwarf_state = -1;
	fd = jt_elf_debug_fd(f);
	if (fd >= 0 && !(f->dwarf = dwarf_begin(fd, DWARF_C_READ))) {
		close(fd);
		fd = -1;
	}
	if (fd < 0) {
		fd = open(f->path, O_RDONLY | O_CLOEXEC);
		if (fd >= 0 && !(f->dwarf = dwarf_begin(fd, DWARF_C_READ))) {
			close(fd);
			return NULL;
		}
	}
	if (!f->dwarf)
		return NULL;
	f->dwarf_fd = fd;
	f->dwarf_state = 1;
	return f->dwarf;
}

static const char *die_name(struct jt_inlines *c, Dwarf_Die *die)
{
	Dwarf_Attribute a;
	const char *s;

	if (dwarf_attr_integrate(die, DW_AT_linkage_name, &a) &&
	    (s = dwarf_formstring(&a)))
		return jt_demangle(c->dem, jt_intern(c->strs, s, strlen(s)));
	if (dwarf_attr_integrate(die, DW_AT_name, &a) &&
	    (s = dwarf_formstring(&a)))
		return jt_intern(c->strs, s, strlen(s));
	return NULL;
}

static void lookup(struct jt_inlines *c, Dwarf *dw, struct inl *r)
{
	Dwarf_Die cu, *scopes = NULL;
	int n, i;

	if (!dwarf_addrdie(dw, r->vaddr, &cu))
		return;
	n = dwarf_getscopes(&cu, r->vaddr, &scopes);
	for (i = 0; i < n && r->n < JT_INLINE_MAX; i++) {
		const char *name;

		if (dwarf_tag(&scopes[i]) != DW_TAG_inlined_subroutine)
			continue;
		if ((name = die_name(c, &scopes[i])))
			r->names[r->n++] = name;
	}
	free(scopes);
}

int jt_inlines_at(struct jt_inlines *c, struct jt_elffile *f, uint64_t vaddr,
		  const char **out, int max)
{
	struct inl_key k = { f, vaddr };
	uint64_t h = jt_hash_u64((uintptr_t)f ^ jt_hash_u64(vaddr));
	struct inl *r = jt_hash_find(&c->at, h, inl_eq, &k);
	Dwarf *dw;
	int i;

	if (!r) {
		if (!(dw = dwarf_of(f)))
			return 0;
		r = calloc(1, sizeof(*r));
		if (!r)
			return 0;
		r->f = f;
		r->vaddr = vaddr;
		lookup(c, dw, r);
		if (jt_hash_add(&c->at, h, r)) {
			free(r);
			return 0;
		}
	}
	for (i = 0; i < r->n && i < max; i++)
		out[i] = r->names[i];
	return i;
}

void jt_inlines_close(struct jt_elffile *f)
{
	if (f->dwarf_state != 1)
		return;
	dwarf_end(f->dwarf);
	close(f->dwarf_fd);
	f->dwarf = NULL;
	f->dwarf_state = 0;
}

void jt_inlines_free(struct jt_inlines *c)
{
	size_t i;

	jt_hash_for_each (&c->at, i)
		free(c->at.e[i].val);
	jt_hash_free(&c->at);
}
