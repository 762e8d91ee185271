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
 * How the tracepoint tier's faults found their VMAs, per CPU: by a walk
 * of the tree (JT_LOOKUP_WALK) or by bpf_find_vma. The recorder says so.
 */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, JT_LOOKUP_MAX);
	__type(key, __u32);
	__type(value, __u64);
} fault_lookups SEC(".maps") __weak;

static __always_inline void jt_count_lookup(__u32 how)
{
	__u64 *n = bpf_map_lookup_elem(&fault_lookups, &how);

	if (n)
		*n += 1;
}

/* Where a node type keeps its pivots, slots and end, in words. */
struct jt_maple_shape {
	__u32 piv, slot, npiv, meta; /* meta: a byte offset */
};

/* Where struct T (maple_range_64, maple_arange_64) keeps them. */
#define JT_MAPLE_SHAPE(T)                                                      \
	((struct jt_maple_shape){ bpf_core_field_offset(struct T, pivot) / 8,  \
				  bpf_core_field_offset(struct T, slot) / 8,   \
				  bpf_core_field_size(struct T, pivot) / 8,    \
				  bpf_core_field_offset(struct T, meta) })

static __always_inline bool jt_maple_shape(__u64 type, struct jt_maple_shape *s)
{
	if (type == bpf_core_enum_value(enum maple_type, maple_arange_64)) {
		*s = JT_MAPLE_SHAPE(maple_arange_64);
		return true;
	}
	if (type == bpf_core_enum_value(enum maple_type, maple_range_64) ||
	    type == bpf_core_enum_value(enum maple_type, maple_leaf_64)) {
		*s = JT_MAPLE_SHAPE(maple_range_64);
		return true;
	}
	return false;
}

/* The slots in use, less one, as ma_data_end says. */
static __always_inline __u32 jt_maple_end(const struct jt_maple_node *n,
					  __u64 type,
					  const struct jt_maple_shape *s,
					  __u64 max)
{
	__u64 last = n->w[(s->piv + s->npiv - 1) & 31];
	const __u8 *meta = (const __u8 *)n->w + (s->meta & 255);

	if (type == bpf_core_enum_value(enum maple_type, maple_arange_64) ||
	    !last)
		return *meta;
	return last == max ? s->npiv - 1 : s->npiv;
}

/*
 * 0 and the VMA in c; -ENOENT for an address no VMA holds; -EAGAIN
 * where the walk cannot tell (no maple tree, a node replaced meanwhile).
 */
static __always_inline long jt_maple_find_vma(__u64 addr, struct vma_ctx *c)
{
	struct mm_struct *mm = BPF_CORE_READ(jt_current(), mm);
	__u32 zero = 0, d, i, end;
	struct jt_maple_node *n = bpf_map_lookup_elem(&maple_node, &zero);
	struct jt_maple_shape s;
	__u64 entry, node, type, max = ~0ULL;

	if (!n || !mm || !bpf_core_field_exists(mm->mm_mt))
		return -EAGAIN;
	entry = (__u64)BPF_CORE_READ(mm, mm_mt.ma_root);
	if ((entry & 3) != JT_MAPLE_ROOT_NODE || entry <= 4096)
		return -EAGAIN;
	for (d = 0; d < JT_MAPLE_HEIGHT; d++) {
		node = entry & ~(__u64)(JT_MAPLE_NODE - 1);
		type = JT_MAPLE_ENODE_TYPE(entry);
		if (!jt_maple_shape(type, &s) ||
		    bpf_probe_read_kernel(n, sizeof(*n), (void *)node))
			return -EAGAIN;
		/* ma_dead_node: a replaced node points to itself */
		if ((n->w[0] & ~(__u64)(JT_MAPLE_NODE - 1)) == node)
			return -EAGAIN;
		end = jt_maple_end(n, type, &s, max);
		if (end > s.npiv)
			return -EAGAIN;
		for (i = 0; i < 16 && i < end; i++)
			if (n->w[(s.piv + i) & 31] >= addr)
				break;
		if (i < end)
			max = n->w[(s.piv + i) & 31];
		entry = n->w[(s.slot + i) & 31];
		if (type > bpf_core_enum_value(enum maple_type, maple_leaf_64))
			continue;
		if (!entry)
			return -ENOENT;
		c->file = jt_read_vma(&c->vma, (struct vm_area_struct *)entry);
		return c->vma.start <= addr && addr < c->vma.end ? 0 : -EAGAIN;
	}
	return -EAGAIN;
}

#endif /* JT_MAPLE_BPF_H */
