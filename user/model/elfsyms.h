/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Function and data symbols of ELF files (.symtab, else .dynsym) by file
 * offset, with libelf. Each file is opened once and cached for the whole
 * run.
 */
#ifndef JT_ELFSYMS_H
#define JT_ELFSYMS_H

#include <stddef.h>
#include <stdint.h>
#include "lib/hash.h"
#include "lib/strtab.h"

struct jt_cfi;
struct jt_tramp;

struct jt_elfsym {
	uint64_t start; /* ELF virtual address */
	uint64_t end;
	const char *name;
};

struct jt_elfseg {
	uint64_t offset;
	uint64_t filesz;
	uint64_t vaddr;
	uint32_t flags; /* PF_* */
};

struct jt_elffile {
	const char *path;	/* interned: the cache key */
	int ok;			/* 0: could not be read; no symbols */
	struct jt_elfsym *syms; /* functions, by start */
	size_t nsyms;
	struct jt_elfsym *objs; /* data objects (.data, .bss...), by start */
	size_t nobjs;
	uint64_t *objs_reach; /* the furthest end of objs[0..i]: nested ones */
	struct jt_elfseg *segs;
	size_t nsegs;
	unsigned char build_id[20];
	size_t build_id_len;
	uint64_t entry; /* e_entry: where the process starts, in ld.so's */
	/* The unwinder's, loaded when a frame first needs them. */
	struct jt_cfi *cfi;
	struct jt_tramp *tramp; /* CPython's trampoline template, if any */
	int8_t cfi_state;	/* 0: not tried, 1: loaded, -1: none */
	int8_t tramp_state;
	int8_t dwarf_state;
	void *dwarf; /* libdw's Dwarf of its debug info, for inlined frames */
	int dwarf_fd;
};

struct jt_elfcache {
	struct jt_elffile **files;
	size_t n;
	size_t cap;
	struct jt_hash by_path; /* interned path -> file */
	struct jt_strtab *strs;
};

struct jt_elffile *jt_elf_get(struct jt_elfcache *c, const char *path);
/*
 * The same, for a file already open at fd (read, not kept), cached
 * under key: an interned name for its identity, such as dev and inode.
 */
struct jt_elffile *jt_elf_get_fd(struct jt_elfcache *c, const char *key,
				 int fd);
/* f's detached debug file by build-id, open (root's only); or -1. */
int jt_elf_debug_fd(const struct jt_elffile *f);
/* The GNU build-id of the ELF file open at fd; its length, or 0. */
size_t jt_elf_build_id(int fd, unsigned char id[20]);
/* The ELF address of file offset off in a loaded segment; 0, or -1. */
int jt_elf_off_vaddr(const struct jt_elffile *f, uint64_t off, uint64_t *vaddr);
/* The file offset of ELF address vaddr; 0, or -1. */
int jt_elf_vaddr_off(const struct jt_elffile *f, uint64_t vaddr, uint64_t *off);
/* The function holding file offset off, or NULL. */
const char *jt_elf_symbol(const struct jt_elffile *f, uint64_t off);
/*
 * The ELF address of the file page at off as a data mapping would map
 * it (the writable segment first: a page can hold the end of one
 * segment and the start of the next); 0, or -1 when no segment has it.
 */
int jt_elf_page_vaddr(const struct jt_elffile *f, uint64_t off,
		      uint64_t *vaddr);
/* Sort f's objects and index them for jt_elf_objects; -1 without memory. */
int jt_elf_index_objects(struct jt_elffile *f);
/*
 * Data objects overlapping ELF addresses [start, end): they lie in
 * (*first)[0..count), where some may not overlap (an object nested in
 * an earlier, longer one ends first): check each one's end.
 */
size_t jt_elf_objects(const struct jt_elffile *f, uint64_t start, uint64_t end,
		      const struct jt_elfsym **first);
void jt_elfcache_free(struct jt_elfcache *c);

#endif
