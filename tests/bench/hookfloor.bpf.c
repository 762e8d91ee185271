// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The floor under jittrace's mmap path: what a syscall-exit tracepoint
 * program costs here with nothing in it, with the one clock read a
 * record's time takes, with one ring record of a map event's size, with
 * the same records gathered in a per-CPU batch of 16 (a ring record a
 * batch), with each in its CPU's lane of a mapped array (no lock taken,
 * no interrupts off), and with a ring record and one VMA lookup; and the first
 * two as fexit programs on the kernel functions the fentry tier probes, where a
 * trampoline stands in for the tracepoint. The bench runs the same loop
 * under each (tests/bench/hookfloor.c).
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include "jt_abi.h"

enum floor_mode {
	FLOOR_EMPTY,  /* return at once */
	FLOOR_RING,   /* a ring record */
	FLOOR_LOOKUP, /* a VMA lookup and a ring record */
	FLOOR_CLOCK,  /* the record's clock read, nothing written */
	FLOOR_BATCH,  /* a record in the CPU's batch, the batch to the ring */
	FLOOR_LANE,   /* a record in the CPU's own lane, read by mapping it */
};

const volatile __u32 mode;
const volatile __u32 pid;

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 8 << 20);
} floor_ring SEC(".maps");

#define FLOOR_BATCH_N 16

/* A CPU's records not yet in the ring (at exit up to 15 never are). */
struct floor_batch {
	__u32 n;
	struct jt_map_event ev[FLOOR_BATCH_N];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct floor_batch);
} floor_batches SEC(".maps");

#define FLOOR_LANE_BYTES (32 << 10)

/*
 * A CPU's records where the reader maps them: no lock and no interrupts
 * off, as nothing else writes the lane of a CPU whose syscall tracepoint
 * runs with preemption off. The floor wraps without a reader.
 */
struct floor_lane {
	__u64 head;
	__u8 data[FLOOR_LANE_BYTES];
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 64);
	__uint(map_flags, BPF_F_MMAPABLE);
	__type(key, __u32);
	__type(value, struct floor_lane);
} floor_lanes SEC(".maps");

static long vma_end(struct task_struct *t, struct vm_area_struct *v, void *d)
{
	*(__u64 *)d = v->vm_end;
	return 0;
}

static __always_inline void fill(struct jt_map_event *ev, __u64 id, long ret,
				 __u64 end)
{
	ev->h.pid = id >> 32;
	ev->h.tid = id;
	ev->h.time = bpf_ktime_get_ns();
	ev->result = ret;
	ev->vma.end = end;
}

static __always_inline int batch(__u64 id, long ret)
{
	__u32 zero = 0, n;
	struct floor_batch *b = bpf_map_lookup_elem(&floor_batches, &zero);

	if (!b)
		return 0;
	n = b->n < FLOOR_BATCH_N ? b->n : 0;
	fill(&b->ev[n], id, ret, 0);
	if (++n == FLOOR_BATCH_N) {
		bpf_ringbuf_output(&floor_ring, b->ev, sizeof(b->ev),
				   BPF_RB_NO_WAKEUP);
		n = 0;
	}
	b->n = n;
	return 0;
}

static __always_inline int lane(__u64 id, long ret)
{
	__u32 cpu = bpf_get_smp_processor_id();
	struct floor_lane *l = bpf_map_lookup_elem(&floor_lanes, &cpu);
	struct jt_map_event *ev;
	__u64 h;

	if (!l)
		return 0;
	h = l->head;
	if (h > FLOOR_LANE_BYTES - sizeof(*ev))
		h = 0;
	ev = (void *)l->data + h;
	fill(ev, id, ret, 0);
	asm volatile("" ::: "memory");
	l->head = h + sizeof(*ev);
	return 0;
}

static __always_inline int hook(long ret)
{
	__u64 id = bpf_get_current_pid_tgid();
	struct jt_map_event *ev;
	__u64 end = 0;

	if (mode == FLOOR_EMPTY || id >> 32 != pid)
		return 0;
	if (mode == FLOOR_CLOCK) {
		bpf_ktime_get_ns();
		return 0;
	}
	if (mode == FLOOR_BATCH)
		return batch(id, ret);
	if (mode == FLOOR_LANE)
		return lane(id, ret);
	if (mode == FLOOR_LOOKUP && ret > 0)
		bpf_find_vma(bpf_get_current_task_btf(), ret, vma_end, &end, 0);
	ev = bpf_ringbuf_reserve(&floor_ring, sizeof(*ev), 0);
	if (!ev)
		return 0;
	fill(ev, id, ret, end);
	bpf_ringbuf_submit(ev, BPF_RB_NO_WAKEUP);
	return 0;
}

SEC("tracepoint/syscalls/sys_exit_mmap")
int floor_mmap(struct trace_event_raw_sys_exit *ctx)
{
	return hook(ctx->ret);
}

SEC("tracepoint/syscalls/sys_exit_mprotect")
int floor_mprotect(struct trace_event_raw_sys_exit *ctx)
{
	return hook(ctx->ret);
}

SEC("tracepoint/syscalls/sys_exit_munmap")
int floor_munmap(struct trace_event_raw_sys_exit *ctx)
{
	return hook(0);
}

static __always_inline int kfn_hook(__u64 *ctx)
{
	__u64 ret = 0;

	bpf_get_func_ret(ctx, &ret);
	return hook(ret);
}

SEC("fexit/mmap_region")
int floor_fx_mmap(__u64 *ctx)
{
	return kfn_hook(ctx);
}

SEC("fexit/do_mprotect_pkey")
int floor_fx_mprotect(__u64 *ctx)
{
	return kfn_hook(ctx);
}

SEC("fexit/__vm_munmap")
int floor_fx_munmap(__u64 *ctx)
{
	return hook(0);
}

/*
 * A raw tracepoint no syscall path runs: mmap_lock_released fires as each
 * of the loop's calls lets the lock go (munmap's after its downgrade), so
 * it says what a hook off the slow syscall path would cost here.
 */
SEC("tp_btf/mmap_lock_released")
int BPF_PROG(floor_lk_released, struct mm_struct *mm, bool write)
{
	return hook(0);
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
