/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * One address space (one mm): the regions processes asked for, cut and
 * replaced the way the kernel's VMA code does, but never merged, so the
 * requested boundaries survive. The kernel VMAs last seen are kept apart,
 * once each, not copied into every region they hold: a JIT's code heap
 * is one VMA over 100K regions. Regions, VMAs and private pages are each
 * a treap, so every step is O(log n), and a fork shares them: O(1).
 */
#ifndef JT_ASPACE_H
#define JT_ASPACE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "lib/treap.h"

enum jt_region_kind {
	JT_RK_ANON,
	JT_RK_SHARED_ANON,
	JT_RK_FILE,
	JT_RK_HEAP,
	JT_RK_STACK,
	JT_RK_VDSO,
	JT_RK_VVAR,
};

struct jt_kvma {
	uint64_t start;
	uint64_t end; /* 0: not seen */
	uint64_t flags;
};

struct jt_region {
	uint64_t start;
	uint64_t end;
	uint64_t pgoff; /* file offset of start, bytes */
	uint64_t dev;
	uint64_t ino;
	const char *path; /* interned; NULL when not file-backed */
	uint64_t born_ns;
	uint64_t pages_ns; /* its pages since: born, or what mremap moved */
	uint32_t prot;	   /* PROT_* */
	uint32_t mflags;   /* MAP_* as requested; 0 for snapshot regions */
	uint16_t kind;
	uint16_t origin; /* JT_EV_* that made the region */
};

/* A page this mm made private by copy-on-write: when, how, by whom. */
struct jt_cowpage {
	uint64_t page;
	uint64_t time;
	uint64_t ip;   /* the writing instruction; 0: not recorded */
	uint32_t tid;  /* the writing thread */
	uint16_t kind; /* enum jt_cow_kind, as the model decided it */
	/* Why: a copy shared with a fork relative was written, not a file's. */
	uint8_t fork_shared;
	/* The ELF loader zeroed it in execve (padzero): no instruction did. */
	uint8_t exec_load;
};

struct jt_aspace {
	struct jt_treap regions; /* by start, never overlapping */
	struct jt_treap kvmas;	 /* kernel VMAs by start, never overlapping */
	struct jt_treap cow;	 /* private pages by address */
	uint64_t fork_ns;	 /* the last fork, on either side of it */
	int refs;		 /* processes sharing this mm (CLONE_VM) */
	/*
	 * The region the last lookup found: a process's samples come in
	 * runs in one region. Every change to regions clears it.
	 */
	const struct jt_region *hit;
};

enum jt_sharing {
	JT_SHARE_NONE, /* nothing mapped there */
	JT_SHARE_PRIVATE,
	JT_SHARE_FILE, /* a page of a file other mappings of it see */
	JT_SHARE_ANON, /* shared anon, SysV shm, or shared with a fork */
};

/* MAP_SHARED or MAP_SHARED_VALIDATE in the low bits of the flags. */
static inline bool jt_region_shared(const struct jt_region *r)
{
	return (r->mflags & 3) == 1 || (r->mflags & 3) == 3;
}

struct jt_aspace *jt_aspace_new(void);
struct jt_aspace *jt_aspace_clone(const struct jt_aspace *as);
void jt_aspace_put(struct jt_aspace *as);

/* Remove [start, end), splitting regions that straddle its edges. */
int jt_aspace_cut(struct jt_aspace *as, uint64_t start, uint64_t end);
/* Cut [r->start, r->end), then insert r (MAP_FIXED semantics). */
int jt_aspace_map(struct jt_aspace *as, const struct jt_region *r);
/* Split at start and end; set prot on what lies between. */
int jt_aspace_protect(struct jt_aspace *as, uint64_t start, uint64_t end,
		      uint32_t prot);
int jt_aspace_remap(struct jt_aspace *as, uint64_t old, uint64_t old_len,
		    uint64_t new, uint64_t new_len, bool keep_old,
		    uint64_t now);
/* The heap is one region from start_brk that grows and shrinks. */
int jt_aspace_brk(struct jt_aspace *as, uint64_t start_brk, uint64_t brk,
		  uint64_t now);
/* The kernel reported VMA v: it now holds what lies in it. */
void jt_aspace_observe(struct jt_aspace *as, const struct jt_kvma *v);
/* The kernel VMA last seen holding r's start; end 0 when none. */
struct jt_kvma jt_aspace_kvma(const struct jt_aspace *as,
			      const struct jt_region *r);
/* The last fork that made r's pages shared with another mm; 0: none. */
uint64_t jt_aspace_fork_ns(const struct jt_aspace *as,
			   const struct jt_region *r);

const struct jt_region *jt_aspace_find(const struct jt_aspace *as,
				       uint64_t addr);
/* Regions in address order: first, the one after r, the i-th; count. */
const struct jt_region *jt_aspace_first(const struct jt_aspace *as);
const struct jt_region *jt_aspace_next(const struct jt_aspace *as,
				       const struct jt_region *r);
const struct jt_region *jt_aspace_nth(const struct jt_aspace *as, size_t i);
/* The region holding addr, else the first after it; NULL: none. */
const struct jt_region *jt_aspace_from(const struct jt_aspace *as,
				       uint64_t addr);
size_t jt_aspace_count(const struct jt_aspace *as);
/* c->page became private at c->time (copy-on-write). */
int jt_aspace_cow(struct jt_aspace *as, const struct jt_cowpage *c);
const struct jt_cowpage *jt_aspace_cowpage(const struct jt_aspace *as,
					   uint64_t page);
/* The first private page at or after addr, to walk a range in order. */
const struct jt_cowpage *jt_aspace_cow_from(const struct jt_aspace *as,
					    uint64_t addr);
/* fork: every private mapping's pages are shared until written again. */
void jt_aspace_forked(struct jt_aspace *as, uint64_t now);
enum jt_sharing jt_aspace_sharing(const struct jt_aspace *as, uint64_t addr);
const char *jt_sharing_name(enum jt_sharing s);
/* "[heap]", "[anon]", the path...: what /proc/PID/maps would print. */
const char *jt_region_name(const struct jt_region *r);
/* Requested regions lying in r's kernel VMA (1 when not coalesced). */
size_t jt_aspace_vma_members(const struct jt_aspace *as,
			     const struct jt_region *r);

#endif /* JT_ASPACE_H */
