/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * A lane per CPU for the mapping calls that carry no path (anonymous
 * memory, munmap, most mprotects): the record goes where the recorder
 * maps it, with no lock taken and no interrupts off. The ring's
 * reservation cost 32 ns an event more here (hookfloor's lane mode).
 *
 * A lane has one writer at a time. The syscall-exit tracepoint programs
 * (maps.bpf.c) run with preemption off, and bpf_prog_active keeps a
 * second tracepoint program off the CPU meanwhile. The kernel tier's
 * exit programs (kmaps.bpf.c) can be preempted part way through a
 * record, and the task that runs next could take the same slot: where
 * they write lanes (jt_klane_slots), the tracepoint programs leave the
 * lanes to them (jt_lane_slots is 0), and each counts itself in first
 * (jt_lane_put_shared).
 * The recorder sees a record before its head only because x86 keeps
 * stores in order: BPF has no release store before 6.15, so the loader
 * turns lanes on for x86-64 alone (jt_lane_slots).
 */
#ifndef JT_LANES_BPF_H
#define JT_LANES_BPF_H

#include "map_event.bpf.h"

/*
 * Records per CPU, a power of two, for the tracepoint programs and for
 * the kernel tier's exits: one of the two is 0, and its calls go to the
 * ring.
 */
const volatile __u32 jt_lane_slots __weak;
const volatile __u32 jt_klane_slots __weak;

/* CPU c's records are slots [c * jt_lane_slots, (c + 1) * jt_lane_slots). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__uint(map_flags, BPF_F_MMAPABLE);
	__type(key, __u32);
	__type(value, struct jt_map_event);
} lane_recs SEC(".maps") __weak;

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__uint(map_flags, BPF_F_MMAPABLE);
	__type(key, __u32);
	__type(value, struct jt_lane_ends);
} lane_ends SEC(".maps") __weak;

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
 * The record in this CPU's lane, by the lane's one writer: false when
 * the lane is full.
 */
static __always_inline bool lane_write(struct jt_lane_ends *e, __u32 cpu,
				       __u32 slots, const struct map_call *c,
				       __u32 type, __s64 ret)
{
	struct jt_map_event *ev;
	__u64 head, used;
	__u32 idx;

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

/*
 * By a syscall-exit tracepoint program, on lanes no kernel-tier exit
 * shares. false: no lane took the call (none configured, or this CPU's
 * is full and the ring takes it, whose own loss count and wakes then
 * apply).
 */
static __always_inline bool jt_lane_put(const struct map_call *c, __u32 type,
					__s64 ret)
{
	__u32 slots = jt_lane_slots, cpu;
	struct jt_lane_ends *e;

	if (!slots)
		return false;
	cpu = bpf_get_smp_processor_id();
	e = bpf_map_lookup_elem(&lane_ends, &cpu);
	return e && lane_write(e, cpu, slots, c, type, ret);
}

/*
 * By a kernel-tier exit, which can be preempted part way through a
 * record by a task that takes the same slot: each writer counts itself
 * in first (a locked add each way; a try-lock takes an exchange, which
 * BPF has only from 5.12), one that finds another in flight gives its
 * record to the ring, and the one that finds itself alone writes. The
 * tracepoint programs leave shared lanes to these (jt_lane_put).
 */
static __always_inline bool jt_lane_put_shared(const struct map_call *c,
					       __u32 type, __s64 ret)
{
	__u32 slots = jt_klane_slots, cpu;
	struct jt_lane_ends *e;
	bool put = false;

	if (!slots)
		return false;
	cpu = bpf_get_smp_processor_id();
	e = bpf_map_lookup_elem(&lane_ends, &cpu);
	if (!e)
		return false;
	__sync_fetch_and_add(&e->writers, 1);
	if (*(volatile __u64 *)&e->writers == 1)
		put = lane_write(e, cpu, slots, c, type, ret);
	__sync_fetch_and_add(&e->writers, -1);
	return put;
}

/* A kernel-tier call with no path and no busy lookup: by its CPU's lane. */
static __always_inline int jt_emit_call(const struct map_call *c, __u32 type,
					__s64 ret)
{
	if ((!c->first.file || type == JT_EV_BRK) &&
	    !(c->flags & JT_MF_VMA_BUSY) && jt_lane_put_shared(c, type, ret))
		return 0;
	return emit_map_call(c, type, ret);
}

#endif
