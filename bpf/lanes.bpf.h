/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * A lane per CPU for the mapping calls that carry no path (anonymous
 * memory, munmap, most mprotects): the record goes where the recorder
 * maps it, with no lock taken and no interrupts off. The ring's
 * reservation cost 32 ns an event more here (hookfloor's lane mode).
 *
 * A lane has one writer: only the syscall-exit tracepoint programs
 * (maps.bpf.c) write lanes, the kernel runs them with preemption off,
 * and bpf_prog_active keeps a second tracepoint program off the CPU
 * meanwhile. The recorder sees a record before its head only because
 * x86 keeps stores in order: BPF has no release store before 6.15, so
 * the loader turns lanes on for x86-64 alone (jt_lane_slots).
 */
#ifndef JT_LANES_BPF_H
#define JT_LANES_BPF_H

#include "map_event.bpf.h"

/* Records per CPU, a power of two; 0: every record goes to the ring. */
const volatile __u32 jt_lane_slots;

/* CPU c's records are slots [c * jt_lane_slots, (c + 1) * jt_lane_slots). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__uint(map_flags, BPF_F_MMAPABLE);
	__type(key, __u32);
	__type(value, struct jt_map_event);
} lane_recs SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__uint(map_flags, BPF_F_MMAPABLE);
	__type(key, __u32);
	__type(value, struct jt_lane_ends);
} lane_ends SEC(".maps");

/*
 * Half a lane waits: wake the recorder through the ring's epoll with a
 * record it skips. Once per crossing, where the ring's mark forced a
 * wake on every event past it until the recorder read.
 */
static __always_inline void jt_lane_wake(void)
{
	void *w = bpf_ringbuf_reserve(&events, 8, 0);

	if (w)
		bpf_ringbuf_discard(w, BPF_RB_FORCE_WAKEUP);
}

/*
 * false: no lane took the call (none configured, or this CPU's is full
 * and the ring takes it, whose own loss count and wakes then apply).
 */
static __always_inline bool jt_lane_put(const struct map_call *c, __u32 type,
					__s64 ret)
{
	__u32 slots = jt_lane_slots, cpu, idx;
	struct jt_lane_ends *e;
	struct jt_map_event *ev;
	__u64 head, used;

	if (!slots)
		return false;
	cpu = bpf_get_smp_processor_id();
	e = bpf_map_lookup_elem(&lane_ends, &cpu);
	if (!e)
		return false;
	head = e->head;
	used = head - *(volatile __u64 *)&e->tail;
	if (used >= slots)
		return false;
	idx = cpu * slots + (head & (slots - 1));
	ev = bpf_map_lookup_elem(&lane_recs, &idx);
	if (!ev)
		return false;
	map_fill(ev, c, type, ret);
	/* The record before its head, in the program as on x86. */
	asm volatile("" ::: "memory");
	*(volatile __u64 *)&e->head = head + 1;
	if (used + 1 == slots / 2)
		jt_lane_wake();
	return true;
}

#endif
