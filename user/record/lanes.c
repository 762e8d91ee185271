// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <errno.h>
#include <stdbool.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include "record/lanes.h"

static size_t page_up(size_t n)
{
	size_t page = sysconf(_SC_PAGESIZE);

	return (n + page - 1) & ~(page - 1);
}

static bool stores_in_order(void)
{
#ifdef __x86_64__
	return true;
#else
	return false;
#endif
}

uint32_t jt_lanes_slots(uint32_t ring_bytes, uint32_t ncpus)
{
	uint64_t fit = ring_bytes / 2 / (ncpus ? ncpus : 1) /
		       sizeof(struct jt_map_event);
	uint32_t slots = JT_LANE_SLOTS_MAX;

	if (!stores_in_order())
		return 0;
	while (slots > fit && slots >= JT_LANE_SLOTS_MIN)
		slots /= 2;
	return slots < JT_LANE_SLOTS_MIN ? 0 : slots;
}

int jt_lanes_map(struct jt_lanes *l, int recs_fd, int ends_fd, uint32_t slots,
		 uint32_t ncpus)
{
	void *r, *e;

	memset(l, 0, sizeof(*l));
	if (!slots)
		return 0;
	l->recs_bytes = page_up((size_t)ncpus * slots * sizeof(*l->recs));
	l->ends_bytes = page_up((size_t)ncpus * sizeof(*l->ends));
	r = mmap(NULL, l->recs_bytes, PROT_READ, MAP_SHARED, recs_fd, 0);
	if (r == MAP_FAILED)
		return -errno;
	e = mmap(NULL, l->ends_bytes, PROT_READ | PROT_WRITE, MAP_SHARED,
		 ends_fd, 0);
	if (e == MAP_FAILED) {
		int err = -errno;

		munmap(r, l->recs_bytes);
		return err;
	}
	l->recs = r;
	l->ends = e;
	l->slots = slots;
	l->ncpus = ncpus;
	return 0;
}

/*
 * The head is read before the records it covers and the tail stored
 * after they are copied out: BPF never writes a slot between the two.
 */
static uint64_t drain_cpu(struct jt_lanes *l, uint32_t cpu, jt_event_fn fn,
			  void *ctx)
{
	struct jt_lane_ends *e = &l->ends[cpu];
	const struct jt_map_event *base = l->recs + (size_t)cpu * l->slots;
	uint64_t head = __atomic_load_n(&e->head, __ATOMIC_ACQUIRE);
	uint64_t tail = e->tail, n;

	/* BPF keeps head within a lane of tail; a wilder one reads a lane. */
	if (head - tail > l->slots)
		tail = head - l->slots;
	n = head - tail;
	for (; tail != head; tail++)
		fn(ctx, (void *)&base[tail & (l->slots - 1)],
		   sizeof(struct jt_map_event));
	__atomic_store_n(&e->tail, head, __ATOMIC_RELEASE);
	return n;
}

uint64_t jt_lanes_drain(struct jt_lanes *l, jt_event_fn fn, void *ctx)
{
	uint64_t n = 0;
	uint32_t cpu;

	for (cpu = 0; cpu < l->ncpus; cpu++)
		n += drain_cpu(l, cpu, fn, ctx);
	return n;
}

void jt_lanes_unmap(struct jt_lanes *l)
{
	if (l->recs)
		munmap((void *)l->recs, l->recs_bytes);
	if (l->ends)
		munmap(l->ends, l->ends_bytes);
	memset(l, 0, sizeof(*l));
}
