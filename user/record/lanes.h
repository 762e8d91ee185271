/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Reading the per-CPU lanes (bpf/lanes.bpf.h) where BPF writes the
 * mapping calls that carry no path: each CPU's records between the tail
 * we last stored and the head BPF last stored.
 */
#ifndef JT_RECORD_LANES_H
#define JT_RECORD_LANES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "jt_abi.h"

struct jt_lanes {
	uint32_t slots; /* records per CPU; 0: no lanes, all in the ring */
	uint32_t ncpus;
	bool kernel_tier; /* written by the kernel tier's exits (shared) */
	const struct jt_map_event *recs; /* ncpus * slots, mapped */
	struct jt_lane_ends *ends;	 /* ncpus, mapped */
	size_t recs_bytes, ends_bytes;
};

/*
 * Records per CPU for lanes that, with the ring of ring_bytes, take at
 * most half as much memory again: 0 where that is too little to help,
 * or where the CPU does not keep its stores in order (lanes.bpf.h).
 */
uint32_t jt_lanes_slots(uint32_t ring_bytes, uint32_t ncpus);
/* Map the loaded lane maps; 0 or -errno. slots 0 maps nothing. */
int jt_lanes_map(struct jt_lanes *l, int recs_fd, int ends_fd, uint32_t slots,
		 uint32_t ncpus);
/* A handler of one BPF record, from the ring or from a lane. */
typedef int (*jt_event_fn)(void *ctx, void *data, size_t size);
/* Hand every waiting record to fn, CPU by CPU, in each CPU's order. */
uint64_t jt_lanes_drain(struct jt_lanes *l, jt_event_fn fn, void *ctx);
void jt_lanes_unmap(struct jt_lanes *l);

#endif
