/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * perf's own view of an address space, its MMAP2 records, made from the
 * BPF events that carry the same kernel VMAs: the recorder no longer
 * asks the kernel for them (perf_rings.c).
 */
#ifndef JT_PERF_VIEW_H
#define JT_PERF_VIEW_H

#include <stdbool.h>
#include <stddef.h>
#include "jt_abi.h"
#include "lib/perf_rec.h"

/* One MMAP2 record perf would have written, and its misc bits. */
struct jt_perf_view {
	struct jt_mmap2 m;
	uint16_t misc;
};

/*
 * The MMAP2 records perf writes for the call or exec snapshot VMA in
 * h (len bytes): 0, 1 or 2 of them in out. data: data mappings too, as
 * perf -d (mmap_data) records them; without it, executable ones only.
 */
int jt_perf_view(const struct jt_hdr *h, size_t len, bool data,
		 struct jt_perf_view out[2]);

#endif
