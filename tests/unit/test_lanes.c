// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The per-CPU lanes' reader (record/lanes.c) on lanes in plain memory,
 * written here as BPF writes them: each CPU's records between its tail
 * and its head, in order, across the lane's end; the tail moved to the
 * head; a head further than a lane from the tail read as one lane. And
 * the lanes' size: half the ring's bytes at most, over all CPUs.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "record/lanes.h"

#define SLOTS 8
#define CPUS 3

static struct jt_map_event recs[CPUS * SLOTS];
static struct jt_lane_ends ends[CPUS];

struct seen {
	int n;
	uint64_t key[4 * SLOTS]; /* cpu << 32 | the record's sequence */
};

static int take(void *ctx, void *data, size_t size)
{
	struct seen *s = ctx;
	const struct jt_map_event *ev = data;

	assert_int_equal(size, sizeof(*ev));
	assert_true(s->n < 4 * SLOTS);
	s->key[s->n++] = (uint64_t)ev->h.cpu << 32 | ev->result;
	return 0;
}

/* BPF's side: record number seq of cpu, at its head. */
static void put(uint32_t cpu, uint64_t seq)
{
	struct jt_map_event *ev =
		&recs[cpu * SLOTS + (ends[cpu].head & (SLOTS - 1))];

	ev->h.cpu = cpu;
	ev->result = seq;
	ends[cpu].head++;
}

static struct jt_lanes lanes(void)
{
	struct jt_lanes l = {
		.slots = SLOTS, .ncpus = CPUS, .recs = recs, .ends = ends
	};

	memset(ends, 0, sizeof(ends));
	return l;
}

static void each_cpu_in_order_across_the_end(void **state)
{
	struct jt_lanes l = lanes();
	struct seen s = {};
	uint64_t i;
	int k = 0;

	(void)state;
	/* CPU 2's lane starts 5 records from its end, read up to there. */
	ends[2].head = ends[2].tail = 5;
	for (i = 0; i < 3; i++)
		put(0, i);
	for (i = 0; i < SLOTS; i++)
		put(2, 100 + i);
	assert_int_equal(jt_lanes_drain(&l, take, &s), 3 + SLOTS);
	for (i = 0; i < 3; i++)
		assert_int_equal(s.key[k++], i);
	for (i = 0; i < SLOTS; i++)
		assert_int_equal(s.key[k++], 2ULL << 32 | (100 + i));
	assert_int_equal(s.n, k);
	assert_int_equal(ends[0].tail, 3);
	assert_int_equal(ends[1].tail, 0);
	assert_int_equal(ends[2].tail, 5 + SLOTS);
	/* Read once: a second pass finds nothing until BPF writes more. */
	s.n = 0;
	assert_int_equal(jt_lanes_drain(&l, take, &s), 0);
	put(1, 7);
	assert_int_equal(jt_lanes_drain(&l, take, &s), 1);
	assert_int_equal(s.key[0], 1ULL << 32 | 7);
}

static void a_head_past_a_lane_reads_one_lane(void **state)
{
	struct jt_lanes l = lanes();
	struct seen s = {};
	int i;

	(void)state;
	for (i = 0; i < SLOTS; i++)
		put(1, i);
	ends[1].head += 1000;
	assert_int_equal(jt_lanes_drain(&l, take, &s), SLOTS);
	assert_int_equal(ends[1].tail, ends[1].head);
}

static void lanes_take_half_the_ring_at_most(void **state)
{
	uint32_t ring = 8 << 20, n;

	(void)state;
#ifdef __x86_64__
	/* 8 MiB over 2 CPUs: 12,483 records' room each, 8,192 the most. */
	assert_int_equal(jt_lanes_slots(ring, 2), JT_LANE_SLOTS_MAX);
	for (n = 1; n <= 4096; n *= 2) {
		uint32_t slots = jt_lanes_slots(ring, n);

		assert_true(!slots ||
			    (uint64_t)slots * n * sizeof(struct jt_map_event) <=
				    ring / 2);
		assert_int_equal(slots & (slots - 1), 0);
	}
	/* 64 CPUs: 390 records each, so 256. */
	assert_int_equal(jt_lanes_slots(ring, 64), 256);
	/* 4 KiB, or 8 MiB over 128 CPUs: too little to help. */
	assert_int_equal(jt_lanes_slots(4096, 1), 0);
	assert_int_equal(jt_lanes_slots(ring, 128), 0);
#else
	/* No release store in BPF here: the ring takes every record. */
	for (n = 1; n <= 4096; n *= 2)
		assert_int_equal(jt_lanes_slots(ring, n), 0);
#endif
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(each_cpu_in_order_across_the_end),
		cmocka_unit_test(a_head_past_a_lane_reads_one_lane),
		cmocka_unit_test(lanes_take_half_the_ring_at_most),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
