/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * A perf.data that stock perf reads right: MMAP2 records for the regions
 * processes asked for (never the merged VMA), with real paths, offsets
 * and build-ids, and JIT code given to perf the way `perf inject --jit`
 * gives it, a small ELF per function and an MMAP2 at its load time, so a
 * reused address gets a new mapping at the right moment. Fed the
 * pipeline's items in time order.
 */
#ifndef JT_PERFDATA_H
#define JT_PERFDATA_H

#include <stdbool.h>
#include <stdint.h>
#include "model/model.h"
#include "model/stream.h"
#include "model/symbolize.h"

struct jt_perfdata;

/* JIT ELF files go in PATH.jit/. NULL with *err set on failure. */
struct jt_perfdata *jt_perfdata_open(const char *path,
				     const struct jt_stream *s, uint32_t pid,
				     bool callchain, int *err);
/* After the model took the item in; y names a sample. */
void jt_perfdata_item(struct jt_perfdata *w, struct jt_model *m,
		      const struct jt_item *it, const struct jt_symres *y);
/* Header, features, close: 0 or -errno. Frees w. */
int jt_perfdata_close(struct jt_perfdata *w);
/* Give up: close, remove what was written and free (NULL is fine). */
void jt_perfdata_abort(struct jt_perfdata *w);

#endif
