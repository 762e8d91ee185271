/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * What every sample of a recording hit, at the moment it hit it: a JIT
 * function (jitdump before perf-map), an ELF symbol, the requested anon
 * region, a kernel symbol, or nothing. One replay computes it for all
 * samples, so that a late code-load record can still name the samples
 * that ran before it ("retro").
 */
#ifndef JT_SYMBOLIZE_H
#define JT_SYMBOLIZE_H

#include <stdbool.h>
#include <stdint.h>
#include "model/stream.h"

struct jt_symres {
	const char *sym;       /* NULL: no symbol */
	const char *dso;       /* short name: libc.so.6, jit-PID.dump, [anon] */
	const char *path;      /* file of a file-backed region */
	uint64_t region_start; /* the requested region; 0 when none */
	uint64_t region_end;
	uint64_t offset;    /* in the file, for file-backed regions */
	uint32_t frame_off; /* callchain names in jt_syms.frames */
	uint32_t nframes;
	uint8_t source; /* enum jt_sym_source */
	uint8_t retro;	/* named by a code-load record written after it */
	uint8_t kernel;
	uint8_t is_sample;
};

struct jt_symstats {
	uint64_t samples;
	uint64_t unknown;
	uint64_t retro;
	uint64_t by_source[JT_SRC_ANON + 1];
	uint64_t kernel_unnamed;   /* no kallsyms in the recording */
	uint64_t buildid_mismatch; /* samples in files changed since */
};

struct jt_syms {
	struct jt_symres *res; /* one per stream item */
	const char **frames;   /* leaf first, as perf gives call chains */
	size_t nframes;
	size_t frames_cap;
	struct jt_symstats st;
	struct jt_strtab strs;
	const char **changed; /* files whose build-id is not the recorded one */
	size_t nchanged;
	size_t changed_cap;
};

int jt_symbolize(struct jt_stream *s, struct jt_syms *out);
/* A name for one frame: the symbol, else [dso], else [unknown]. */
const char *jt_symres_name(const struct jt_symres *r, char *buf, size_t len);
void jt_syms_free(struct jt_syms *out);

#endif
