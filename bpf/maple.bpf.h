/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The VMA holding an address, found by walking the mm's maple tree
 * without its lock, as lock_vma_under_rcu walks it. For the page fault
 * tracepoints: interrupts are off there, so bpf_find_vma hands its
 * mmap_lock unlock to an irq_work, a self-IPI per fault: in a VM the
 * program took 7.6 us a fault, 0.45 us with the walk (bpf_stats.py).
 * A program runs under RCU, and maple nodes and VMAs are freed through
 * it; a writer replacing a node meanwhile marks it dead, and what the
 * walk finds is checked against the address it was asked for.
 */
#ifndef JT_MAPLE_BPF_H
#define JT_MAPLE_BPF_H

#include "common.bpf.h"

#define JT_MAPLE_NODE 256 /* a node's size and alignment */
#define JT_MAPLE_HEIGHT 8 /* 65530 VMAs take 5 levels */
#define JT_MAPLE_ENODE_TYPE(e) (((e) >> 3) & 0xf)
#define JT_MAPLE_ROOT_NODE 2 /* xa_is_node: internal, past 4096 */
/* A step's answer where the node could not be read as it stood. */
#define JT_MAPLE_UNSURE 1ULL

struct jt_maple_node {
	__u64 w[JT_MAPLE_NODE / 8];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct jt_maple_node);
} maple_node SEC(".maps") __weak;

/*
 * How the tracepoint tier's faults and the mapping calls found their
 * VMAs, per CPU (enum jt_vma_lookup). The recorder says so.
 */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, JT_LOOKUP_MAX);
	__type(key, __u32);
	__type(value, __u64);
} vma_lookups SEC(".maps") __weak;

static __always_inline void jt_count_lookup(__u32 how)
{
	__u64 *n = bpf_map_lookup_elem(&vma_lookups, &how);

	if (n)
		*n += 1;
}

/*
 * 6.2: a kernel pointer as a typed view whose fields are plain loads.
 * Where it is missing, each node is copied out whole (256 bytes). One
 * object only may name it (JT_MAPLE_VIEW, maps.bpf.c): libbpf 1.1's
 * static linker cannot merge a kfunc declared in two.
 */
#if defined(JT_MAPLE_VIEW) && !defined(JT_LEGACY)
extern void *bpf_rdonly_cast(const void *obj, __u32 btf_id) __ksym __weak;
#define JT_MAPLE_KERNEL_VIEW() (bpf_rdonly_cast != NULL)
#else
#define JT_MAPLE_KERNEL_VIEW() false
#endif

/*
 * Node n's slot i that holds addr: the first whose end pivot is at or
 * past it, among the end in use, else slot end; *max becomes the slot's
 * last address. A view's fields are read at constant offsets only, so
 * the loops are unrolled whole.
 */
#define JT_MAPLE_SEARCH(n, npiv, end, addr, max, e)                            \
	do {                                                                   \
		__u32 i = 0, k;                                                \
                                                                               \
		_Pragma("unroll") for (k = 0; k < (npiv); k++)                 \
		{                                                              \
			if (i != k || k >= (end))                              \
				continue;                                      \
			if ((n)->pivot[k] < (addr))                            \
				i = k + 1;                                     \
			else                                                   \
				*(max) = (n)->pivot[k];                        \
		}                                                              \
		_Pragma("unroll") for (k = 0; k <= (npiv); k++)                \
		{                                                              \
			if (i == k)                                            \
				(e) = (__u64)(n)->slot[k];                     \
		}                                                              \
	} while (0)

/* An internal node with gaps: its end is in its metadata. */
static __always_inline __u64 jt_maple_arange(struct maple_arange_64 *n,
					     __u64 addr, __u64 *max)
{
	__u32 end = n->meta.end;
	__u64 e = 0;

	if (end > 9)
		return JT_MAPLE_UNSURE;
	JT_MAPLE_SEARCH(n, 9, end, addr, max, e);
	return e;
}

/*
 * A range node, leaf or internal, as ma_data_end reads its end: a last
 * pivot of 0 sends it to the metadata (the low byte of the last slot),
 * one equal to the node's max means the last slot is unused.
 */
static __always_inline __u64 jt_maple_range(struct maple_range_64 *n,
					    __u64 addr, __u64 *max)
{
	__u64 last = n->pivot[14], e = 0;
	__u32 end;

	end = !last ? (__u64)n->slot[15] & 0xff : last == *max ? 14 : 15;
	if (end > 15)
		return JT_MAPLE_UNSURE;
	JT_MAPLE_SEARCH(n, 15, end, addr, max, e);
	return e;
}

/* The node at address node as a view, or copied into buf. */
static __always_inline void *jt_maple_read(__u64 node, __u32 btf_id,
					   struct jt_maple_node *buf)
{
#if defined(JT_MAPLE_VIEW) && !defined(JT_LEGACY)
	if (JT_MAPLE_KERNEL_VIEW())
		return bpf_rdonly_cast((void *)node, btf_id);
#endif
	if (bpf_probe_read_kernel(buf, sizeof(*buf), (void *)node))
		return NULL;
	return buf;
}

/* ma_dead_node: a node its writer replaced points to itself. */
static __always_inline bool jt_maple_replaced(const void *parent, __u64 node)
{
	return ((__u64)parent & ~(__u64)(JT_MAPLE_NODE - 1)) == node;
}

/*
 * One level: the entry under addr in the node at entry (0: none), or
 * JT_MAPLE_UNSURE.
 */
static __always_inline __u64 jt_maple_step(__u64 entry, __u64 addr, __u64 *max,
					   struct jt_maple_node *buf)
{
	__u64 node = entry & ~(__u64)(JT_MAPLE_NODE - 1);
	__u64 type = JT_MAPLE_ENODE_TYPE(entry);
	struct maple_range_64 *r;
	struct maple_arange_64 *a;

	if (type == bpf_core_enum_value(enum maple_type, maple_arange_64)) {
		a = jt_maple_read(
			node, bpf_core_type_id_kernel(struct maple_arange_64),
			buf);
		if (!a || jt_maple_replaced(a->parent, node))
			return JT_MAPLE_UNSURE;
		return jt_maple_arange(a, addr, max);
	}
	if (type != bpf_core_enum_value(enum maple_type, maple_range_64) &&
	    type != bpf_core_enum_value(enum maple_type, maple_leaf_64))
		return JT_MAPLE_UNSURE;
	r = jt_maple_read(node, bpf_core_type_id_kernel(struct maple_range_64),
			  buf);
	if (!r || jt_maple_replaced(r->parent, node))
		return JT_MAPLE_UNSURE;
	return jt_maple_range(r, addr, max);
}

/*
 * A VMA's fields, by plain loads where the kernel gives a view, else
 * copied through buf, which the walk is done with.
 */
static __always_inline void jt_maple_vma(__u64 entry, struct vma_ctx *c,
					 struct jt_maple_node *buf)
{
#if defined(JT_MAPLE_VIEW) && !defined(JT_LEGACY)
	if (JT_MAPLE_KERNEL_VIEW()) {
		struct vm_area_struct *v = bpf_rdonly_cast(
			(void *)entry,
			bpf_core_type_id_kernel(struct vm_area_struct));

		c->vma.start = v->vm_start;
		c->vma.end = v->vm_end;
		c->vma.flags = v->vm_flags;
		c->vma.pgoff = v->vm_pgoff;
		c->file = v->vm_file;
		return;
	}
#endif
	c->file = jt_read_vma_buf(&c->vma, (struct vm_area_struct *)entry,
				  buf->w);
}

/*
 * From the tree's root entry: 0 and the VMA in c; -ENOENT for an
 * address no VMA holds; -EAGAIN where the walk cannot tell (no maple
 * tree, a node replaced meanwhile), and c is left zeroed.
 */
static __always_inline long jt_maple_walk(__u64 entry, __u64 addr,
					  struct vma_ctx *c)
{
	__u32 zero = 0, d;
	struct jt_maple_node *n = bpf_map_lookup_elem(&maple_node, &zero);
	__u64 max = ~0ULL;

	if (!n || (entry & 3) != JT_MAPLE_ROOT_NODE || entry <= 4096)
		return -EAGAIN;
	for (d = 0; d < JT_MAPLE_HEIGHT; d++) {
		__u64 type = JT_MAPLE_ENODE_TYPE(entry);

		entry = jt_maple_step(entry, addr, &max, n);
		if (entry == JT_MAPLE_UNSURE)
			return -EAGAIN;
		if (type >
		    bpf_core_enum_value(enum maple_type, maple_leaf_64)) {
			if (!entry)
				return -EAGAIN;
			continue;
		}
		if (!entry)
			return -ENOENT;
		jt_maple_vma(entry, c, n);
		if (c->vma.start <= addr && addr < c->vma.end)
			return 0;
		__builtin_memset(c, 0, sizeof(*c));
		return -EAGAIN;
	}
	return -EAGAIN;
}

/* The current task's VMA at addr, as jt_maple_walk answers. */
static __always_inline long jt_maple_find_vma(__u64 addr, struct vma_ctx *c)
{
	struct mm_struct *mm = BPF_CORE_READ(jt_current(), mm);

	if (!mm || !bpf_core_field_exists(mm->mm_mt))
		return -EAGAIN;
	return jt_maple_walk((__u64)BPF_CORE_READ(mm, mm_mt.ma_root), addr, c);
}

/*
 * The walk where no writer took mmap_lock meanwhile, which makes its
 * answer the one the lock would have given: mm_lock_seq (a seqcount from
 * 6.14) is odd while a writer holds the lock and moves on at each. For a
 * call's exit, where bpf_find_vma's try-lock, callback and unlock cost
 * twice the walk. x86 keeps loads in order; without a read barrier in
 * BPF, other architectures answer -EAGAIN, as does a writer.
 *
 * A global function, so the verifier checks the walk once for each
 * program that calls it, as a function of any arguments: inlined, it
 * was checked at each of a call's two lookups in each of six programs,
 * 45 to 70 ms a program, and doubled the start-up of record.
 */
#if defined(__TARGET_ARCH_x86) && defined(JT_MAPLE_VIEW) && !defined(JT_LEGACY)
__noinline long jt_maple_find_vma_seq(__u64 addr, struct vma_ctx *c)
{
	struct mm_struct *mm = bpf_get_current_task_btf()->mm;
	__u32 seq;
	long err;

	if (!c || !bpf_core_field_exists(mm->mm_lock_seq.sequence) ||
	    !JT_MAPLE_KERNEL_VIEW())
		return -EAGAIN;
	seq = *(volatile __u32 *)&mm->mm_lock_seq.sequence;
	if (seq & 1)
		return -EAGAIN;
	asm volatile("" ::: "memory");
	err = jt_maple_walk((__u64)mm->mm_mt.ma_root, addr, c);
	asm volatile("" ::: "memory");
	if (*(volatile __u32 *)&mm->mm_lock_seq.sequence == seq)
		return err;
	__builtin_memset(c, 0, sizeof(*c));
	return -EAGAIN;
}
#else
static __always_inline long jt_maple_find_vma_seq(__u64 addr, struct vma_ctx *c)
{
	return -EAGAIN;
}
#endif

#endif /* JT_MAPLE_BPF_H */
