/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * What a sample hit, at the moment it hit it: a JIT function (jitdump
 * before perf-map), an ELF symbol, the requested anon region, a kernel
 * symbol, or nothing. A sample in executable memory no source names yet
 * waits, for a bounded stretch of the stream, for a late code-load
 * record at its address ("retro").
 */
#ifndef JT_SYMBOLIZE_H
#define JT_SYMBOLIZE_H

#include <stdbool.h>
#include <stdint.h>
#include "lib/hash.h"
#include "model/elfsyms.h"
#include "model/kallsyms.h"
#include "model/callchain.h"
#include "model/demangle.h"
#include "model/inlines.h"
#include "model/model.h"
#include "model/stream.h"

struct jt_symres {
	uint64_t ip;
	const char *sym;       /* NULL: no symbol */
	const char *dso;       /* short name: libc.so.6, jit-PID.dump, [anon] */
	const char *path;      /* file of a file-backed region */
	uint64_t region_start; /* the requested region; 0 when none */
	uint64_t region_end;
	uint64_t offset; /* in the file, for file-backed regions */
	const struct jt_buildid_rec *build_id; /* as recorded, or NULL */
	uint64_t sym_start; /* a JIT symbol's code: [sym_start, sym_end) */
	uint64_t sym_end;
	struct jt_symres *frames; /* the call chain, leaf first as perf gives */
	uint32_t nframes;
	uint8_t source; /* enum jt_sym_source */
	uint8_t retro;	/* named by a code-load record written after it */
	uint8_t kernel;
	uint8_t is_sample;
	uint8_t chain_end; /* enum jt_uw_end + 1 when unwound; else 0 */
	uint8_t call;	   /* a return address: named by its call, ip - 1 */
	uint8_t inlined;   /* a function inlined where the next frame is */
	uint32_t pid;	   /* the process it was named in */
};

/* A frame (or the leaf) waiting for a late code-load record. */
struct jt_wait {
	struct jt_named *n;
	struct jt_symres *r; /* what it will name */
	uint64_t addr;	     /* looked up: the ip, or a call site */
	uint64_t region_start;
	uint64_t region_born;
	struct jt_wait *prev; /* others waiting at the same address */
	struct jt_wait *next;
	void *slot; /* NULL once it stopped waiting */
};

/* A named sample; pending while a late code-load record may still come. */
struct jt_named {
	struct jt_symres res;
	uint32_t pid;
	bool pending;
	uint32_t npending;
	struct jt_wait *waits;
	uint32_t nwaits;
	const struct jt_item *it;   /* the sample, held while pending */
	bool redo;		    /* queued to unwind again */
	struct jt_named *next_free; /* in jt_syms.pool */
};

struct jt_symstats {
	uint64_t samples;
	uint64_t unknown;
	uint64_t retro;
	uint64_t by_source[JT_SRC_ANON + 1];
	uint64_t kernel_unnamed;   /* no kallsyms in the recording */
	uint64_t buildid_mismatch; /* samples in files changed since */
	uint64_t retro_expired;	   /* gave up waiting: window or memory */
};

/*
 * The last file region named, by its model's path and file: the samples
 * of one object come in runs, and each paid for interning its path and
 * finding its file and build-id again.
 */
struct jt_file_named {
	const char *src; /* the region's path, in its model's table */
	uint64_t dev;
	uint64_t ino;
	const char *path; /* interned in strs */
	const struct jt_buildid_rec *build_id;
	struct jt_elffile *f; /* NULL: no symbols */
	bool stale;
};

struct jt_kip;

struct jt_syms {
	struct jt_stream *s;
	struct jt_symstats st;
	/*
	 * Every name the pipeline hands out is one pointer per string, so
	 * views group by pointer without interning each sample's names
	 * again: ELF, kernel and path names in the stream's table (strs),
	 * JIT names in the pipeline's counted one (jitnames).
	 */
	struct jt_strtab *strs;
	struct jt_nametab *jitnames;
	/* The last process's JIT dso names ("jit-PID.dump", "perf-PID.map") */
	uint32_t jit_dso_pid;
	const char *jit_dso[2];
	struct jt_elfcache elf;
	struct jt_file_named elf_last;
	struct jt_kallsyms ksyms;
	int ksyms_state;	/* 0: not tried, 1: loaded, -1: none */
	const char **knames;	/* ksyms' names as interned, by index */
	struct jt_kip *kips;	/* the last address seen in each slot */
	struct jt_hash waiting; /* pid -> addresses with pending samples */
	struct jt_chains chains;
	struct jt_demangler dem;
	struct jt_inlines inl;
	/*
	 * Samples whose unwinding stopped in JIT code whose load record (and
	 * CFI) reached the stream after them: unwound again once it came.
	 */
	struct jt_named **redo;
	size_t nredo;
	size_t redo_cap;
	struct jt_cfi *vdso_cfi;
	int vdso_state;
	size_t npending;
	const char **changed; /* files whose build-id is not the recorded one */
	size_t nchanged;
	size_t changed_cap;
	struct jt_named *pool; /* freed samples' structs, for the next ones */
	size_t npool;
	int err;
};

void jt_syms_init(struct jt_syms *y, struct jt_stream *s);
/*
 * Samples to come: warm the cache for naming their leaves in m, so that
 * the misses overlap the work on the samples before them. For next, the
 * functions the flat copy's index points at; for later, the one after
 * it, that index.
 */
void jt_syms_prefetch(struct jt_syms *y, struct jt_model *m,
		      const struct jt_item *next, const struct jt_item *later);
/* Name the sample in it with m at its time: NULL when it is none. */
struct jt_named *jt_syms_sample(struct jt_syms *y, struct jt_model *m,
				const struct jt_item *it);
/*
 * What held ip of process pid in m now: a sample's leaf, a copy-on-write
 * fault's writer. r's strings live as long as y.
 */
void jt_syms_resolve(struct jt_syms *y, struct jt_model *m, uint32_t pid,
		     uint64_t ip, bool kernel, struct jt_symres *r);
/*
 * The ELF file a file region maps, when it is still the file that was
 * mapped; NULL otherwise. *path: g's path interned in y (NULL: none).
 */
struct jt_elffile *jt_syms_elf(struct jt_syms *y, const struct jt_region *g,
			       const char **path);
/* m has just taken JIT record j: name the samples that waited for it. */
void jt_syms_jit(struct jt_syms *y, struct jt_model *m,
		 const struct jt_jit_item *j);
/* Stop waiting: n keeps the name it has. */
void jt_syms_settle(struct jt_syms *y, struct jt_named *n);
/* The process is gone: nothing more will name its samples. */
void jt_syms_exited(struct jt_syms *y, uint32_t pid);
/* Count n, final, into the totals. */
void jt_syms_count(struct jt_syms *y, const struct jt_named *n);
/* Done with n: its struct goes back to y's pool. */
void jt_named_put(struct jt_syms *y, struct jt_named *n);
/* A name for one frame: the symbol, else [dso], else [unknown]. */
const char *jt_symres_name(const struct jt_symres *r, char *buf, size_t len);
/* The recording's vdso CFI (the recorder's own vdso: the same kernel). */
struct jt_cfi *jt_syms_vdso_cfi(struct jt_syms *y);
void jt_syms_free(struct jt_syms *y);

#endif
