/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The VMA holding an address, for the mapping calls and the exit
 * snapshot: a walk of the maple tree that no writer overlapped
 * (maple.bpf.h), else bpf_find_vma, retried while a sibling thread holds
 * mmap_lock; what stays busy is noted for the exit to look up again.
 */
#ifndef JT_VMA_FIND_BPF_H
#define JT_VMA_FIND_BPF_H

#include "maple.bpf.h"

#ifndef JT_LEGACY
/*
 * bpf_find_vma hands over a BTF pointer: plain loads, where a probe read
 * per field cost about a tenth of a traced mmap's program.
 */
static long __attribute__((unused))
vma_cb(struct task_struct *task, struct vm_area_struct *vma, void *data)
{
	struct vma_ctx *c = data;

	c->vma.start = vma->vm_start;
	c->vma.end = vma->vm_end;
	c->vma.flags = vma->vm_flags;
	c->vma.pgoff = vma->vm_pgoff;
	c->file = vma->vm_file;
	return 0;
}
#endif

/*
 * bpf_find_vma only try-locks mmap_lock, so it fails with EBUSY while a
 * sibling thread holds it to map or protect. Such holds are short, but
 * an munmap's TLB shootdown can outlast 256 tries: four threads mapping
 * at once lost a VMA in 6 runs of 20. 8192 tries (a few hundred us at
 * worst, spent only while a sibling holds the lock) lost none; what is
 * still busy the recorder reads from /proc, and perf's MMAP2 with -d.
 */
#define FIND_VMA_TRIES 8192

struct find_retry {
	__u64 addr;
	long err;
	struct vma_ctx *c;
};

#ifdef JT_LEGACY
/* An rb-tree of 65530 VMAs (max_map_count) is at most 32 deep. */
#define JT_RB_DEPTH 40
#define JT_SPAN_BYTES sizeof(((struct jt_scratch *)0)->span)
/* The field at offset off of a span read from offset lo. */
#define JT_SPAN_AT(buf, lo, off, type)                                         \
	(*(type *)((char *)(buf) + ((off) - (lo))))

/*
 * Bytes lo to hi of the struct at p, in one probe read where they fit.
 * On 5.10 a probe read costs about 130 instructions and 1.7 a byte
 * (bpf_stats in the VM, variants reading fewer bytes): a VMA lookup read
 * field by field, two or three reads a level, and five for the VMA found.
 */
static __always_inline bool jt_span(__u64 *buf, const void *p, __u32 lo,
				    __u32 hi)
{
	return hi - lo <= JT_SPAN_BYTES &&
	       !bpf_probe_read_kernel(buf, hi - lo, p + lo);
}

/*
 * Where a level of the walk finds a VMA's node, bounds and the node's
 * children, in bytes from the VMA: worked out once a walk, as 64-bit
 * values the verifier keeps exact across the loop.
 */
struct jt_rb_offs {
	__u64 rb, start, end, left, right, span;
};

static __always_inline void jt_rb_offs(struct jt_rb_offs *o)
{
	o->rb = bpf_core_field_offset(struct vm_area_struct___legacy, vm_rb);
	o->start = bpf_core_field_offset(struct vm_area_struct, vm_start);
	o->end = bpf_core_field_offset(struct vm_area_struct, vm_end);
	o->left = o->rb + bpf_core_field_offset(struct rb_node, rb_left);
	o->right = o->rb + bpf_core_field_offset(struct rb_node, rb_right);
	/* Read from the VMA's start: on 5.x the four lie in its first 56. */
	o->span =
		JT_MAX(JT_MAX(o->start, o->end), JT_MAX(o->left, o->right)) + 8;
}

/* What a level of the walk reads of a VMA. */
struct jt_rb_level {
	__u64 start, end;
	struct rb_node *left, *right;
};

/*
 * false where the span does not fit or cannot be read. No fallback read
 * by field: 5.10's verifier refuses a loop whose back-edge is a call's
 * or a store's fall-through, and the fallback's reads made one
 * (test_legacy_loops_pass_the_5_10_verifiers_cfg_check).
 */
static __always_inline bool jt_rb_level(struct jt_rb_level *l,
					const struct jt_rb_offs *o,
					struct vm_area_struct *v, __u64 *buf)
{
	if (o->span > JT_SPAN_BYTES || bpf_probe_read_kernel(buf, o->span, v))
		return false;
	l->start = JT_SPAN_AT(buf, 0, o->start, __u64);
	l->end = JT_SPAN_AT(buf, 0, o->end, __u64);
	l->left = JT_SPAN_AT(buf, 0, o->left, struct rb_node *);
	l->right = JT_SPAN_AT(buf, 0, o->right, struct rb_node *);
	return true;
}

/* The VMA found: its bounds are the level's, the rest one read more. */
static __always_inline void jt_rb_hit(struct vma_ctx *c,
				      const struct jt_rb_level *l,
				      struct vm_area_struct *v, __u64 *buf)
{
	__u32 o_flags = bpf_core_field_offset(v->vm_flags);
	__u32 o_pgoff = bpf_core_field_offset(v->vm_pgoff);
	__u32 o_file = bpf_core_field_offset(v->vm_file);
	__u32 lo = JT_MIN(JT_MIN(o_flags, o_pgoff), o_file);
	__u32 hi = JT_MAX(JT_MAX(o_flags, o_pgoff), o_file) + 8;

	c->vma.start = l->start;
	c->vma.end = l->end;
	if (!jt_span(buf, v, lo, hi)) {
		c->vma.flags = BPF_CORE_READ(v, vm_flags);
		c->vma.pgoff = BPF_CORE_READ(v, vm_pgoff);
		c->file = BPF_CORE_READ(v, vm_file);
		return;
	}
	c->vma.flags = JT_SPAN_AT(buf, lo, o_flags, __u64);
	c->vma.pgoff = JT_SPAN_AT(buf, lo, o_pgoff, __u64);
	c->file = JT_SPAN_AT(buf, lo, o_file, struct file *);
}

/* A VMA whole, for the exec snapshot's walk of the VMA list. */
static __always_inline bool jt_rb_vma(struct vma_ctx *c,
				      struct vm_area_struct *v, __u64 *buf)
{
	struct jt_rb_offs o;
	struct jt_rb_level l;

	jt_rb_offs(&o);
	if (!jt_rb_level(&l, &o, v, buf))
		return false;
	jt_rb_hit(c, &l, v, buf);
	return true;
}

/*
 * The VMA holding addr, by the rb-tree from root, as find_vma walks it:
 * 0, -ENOENT, or -EBUSY where a level could not be read.
 */
static __always_inline long jt_rb_walk(struct rb_node *n, __u64 addr,
				       struct vma_ctx *c, __u64 *buf)
{
	struct jt_rb_offs o;
	struct jt_rb_level l;
	int i;

	jt_rb_offs(&o);
	for (i = 0; i < JT_RB_DEPTH; i++) {
		struct vm_area_struct *v = (void *)n - o.rb;

		if (!n)
			return -ENOENT;
		if (!jt_rb_level(&l, &o, v, buf))
			return -EBUSY; /* unread: the exit or /proc reads it */
		if (addr < l.start) {
			n = l.left;
		} else if (addr >= l.end) {
			n = l.right;
		} else {
			jt_rb_hit(c, &l, v, buf);
			return 0;
		}
	}
	return -ENOENT;
}

/* For a caller that holds mmap_lock (mmap_region's kprobe exit). */
static __always_inline long jt_rb_find_vma_locked(__u64 addr, struct vma_ctx *c)
{
	struct mm_struct___legacy *mm = (void *)BPF_CORE_READ(jt_current(), mm);
	struct jt_scratch *s = jt_scratch();

	if (!s)
		return -ENOENT;
	return jt_rb_walk(BPF_CORE_READ(mm, mm_rb.rb_node), addr, c, s->span);
}

/* rwsem's count: bit 0 while a writer holds it (kernel/locking/rwsem.c). */
#define JT_RWSEM_WRITER_LOCKED 1

/* What a lookup reads of the mm, before the walk and after it. */
struct jt_rb_mm {
	struct rb_node *root;
	__u64 unlinks; /* vmacache_seqnum: moves at each unlink */
	long lock;     /* mmap_lock's count */
	int users;
};

static __always_inline void jt_rb_mm(struct jt_rb_mm *m,
				     struct mm_struct___legacy *mm, __u64 *buf)
{
	__u32 o_root = bpf_core_field_offset(mm->mm_rb.rb_node);
	__u32 o_users = bpf_core_field_offset(mm->mm_users);
	__u32 o_seq, o_lock, lo, hi;

	/* PREEMPT_RT's rwsem has no count: the walk stands unchecked. */
	if (!bpf_core_field_exists(mm->vmacache_seqnum) ||
	    !bpf_core_field_exists(mm->mmap_lock.count)) {
		m->root = BPF_CORE_READ(mm, mm_rb.rb_node);
		m->users = BPF_CORE_READ(mm, mm_users.counter);
		m->unlinks = 0;
		m->lock = 0;
		return;
	}
	o_seq = bpf_core_field_offset(mm->vmacache_seqnum);
	o_lock = bpf_core_field_offset(mm->mmap_lock.count);
	lo = JT_MIN(JT_MIN(o_root, o_users), JT_MIN(o_seq, o_lock));
	hi = JT_MAX(JT_MAX(o_root, o_users), JT_MAX(o_seq, o_lock)) + 8;
	if (!jt_span(buf, mm, lo, hi)) {
		m->root = BPF_CORE_READ(mm, mm_rb.rb_node);
		m->users = BPF_CORE_READ(mm, mm_users.counter);
		m->unlinks = BPF_CORE_READ(mm, vmacache_seqnum);
		m->lock = BPF_CORE_READ(mm, mmap_lock.count.counter);
		return;
	}
	m->root = JT_SPAN_AT(buf, lo, o_root, struct rb_node *);
	m->users = JT_SPAN_AT(buf, lo, o_users, int);
	m->unlinks = JT_SPAN_AT(buf, lo, o_seq, __u64);
	m->lock = JT_SPAN_AT(buf, lo, o_lock, long);
}

/*
 * The walk without mmap_lock, which these kernels give a program no way
 * to take: 0, -ENOENT, or -EBUSY where another task sharing the mm (a
 * sibling thread, vfork's child) held the lock to write before or after
 * the walk, or unlinked a VMA during it (only an unlinked VMA is freed),
 * as bpf_find_vma's try-lock answers on later kernels. No other task
 * changes a mm only its owner uses, so most processes' lookups stay
 * exact as they stand. What the checks cannot see is a sibling's whole
 * write section between them, a walk apart; x86 keeps loads in order,
 * other architectures may not.
 */
static __always_inline long jt_find_vma_once(__u64 addr, struct vma_ctx *c)
{
	struct mm_struct___legacy *mm = (void *)BPF_CORE_READ(jt_current(), mm);
	struct jt_scratch *s = jt_scratch();
	struct jt_rb_mm m;
	__u64 unlinks;
	long err;

	if (!s)
		return -EBUSY;
	jt_rb_mm(&m, mm, s->span);
	if (m.users <= 1)
		return jt_rb_walk(m.root, addr, c, s->span);
	if (m.lock & JT_RWSEM_WRITER_LOCKED)
		return -EBUSY;
	unlinks = m.unlinks;
	err = jt_rb_walk(m.root, addr, c, s->span);
	jt_rb_mm(&m, mm, s->span);
	if (!(m.lock & JT_RWSEM_WRITER_LOCKED) && m.unlinks == unlinks)
		return err;
	__builtin_memset(c, 0, sizeof(*c));
	return -EBUSY;
}
#else
/* One lookup, no retry: 0, -ENOENT, or -EBUSY. */
static __always_inline long jt_find_vma_once(__u64 addr, struct vma_ctx *c)
{
	return bpf_find_vma(bpf_get_current_task_btf(), addr, vma_cb, c, 0);
}

static long __attribute__((unused)) find_retry_cb(__u64 i, void *data)
{
	struct find_retry *f = data;

	f->err = bpf_find_vma(bpf_get_current_task_btf(), f->addr, vma_cb, f->c,
			      0);
	return f->err != -EBUSY;
}
#endif

/*
 * Addresses whose VMA stayed busy, per process. The recorder's /proc read
 * can come after a short-lived process is gone (1 run in ~50 of four
 * threads mapping at once), so the process's exit_group looks them up
 * again: its VMAs are all still there, and no sibling is mapping.
 */
#define JT_BUSY_ADDRS 16

struct jt_busy {
	__u64 addr[JT_BUSY_ADDRS]; /* by page number: 0 is a free slot */
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32); /* tgid */
	__type(value, struct jt_busy);
} busy_addrs SEC(".maps") __weak;

static __always_inline void jt_note_busy(__u64 addr)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;
	struct jt_busy *b, zero = {};
	int i;

	b = bpf_map_lookup_elem(&busy_addrs, &tgid);
	if (!b) {
		bpf_map_update_elem(&busy_addrs, &tgid, &zero, BPF_NOEXIST);
		b = bpf_map_lookup_elem(&busy_addrs, &tgid);
		if (!b)
			return;
	}
	/*
	 * Probed from the page number's slot, without a lock: siblings that
	 * race for one slot, or a 17th address, leave one to the /proc read.
	 */
	for (i = 0; i < JT_BUSY_ADDRS; i++) {
		__u64 *slot =
			&b->addr[((addr >> 12) + i) & (JT_BUSY_ADDRS - 1)];

		if (!*slot || *slot == addr) {
			*slot = addr;
			return;
		}
	}
}

/*
 * Fault injection for tests (JT_TEST_VMA_BUSY=1): lookups from a process's
 * threads other than its first fail as busy, which is otherwise a race.
 * The verifier drops the test when it is 0.
 */
const volatile __u32 jt_test_vma_busy __weak = 0;

static __always_inline bool jt_first_thread(void)
{
	__u64 id = bpf_get_current_pid_tgid();

	return (__u32)id == id >> 32;
}

/*
 * A call's VMA: the walk, where it can be checked, else bpf_find_vma once;
 * counted by which answered. The legacy object's walk is counted where
 * no writer overlapped it, as it is then taken.
 */
static __always_inline long jt_call_vma_once(__u64 addr, struct vma_ctx *c)
{
#ifndef JT_LEGACY
	long err = jt_maple_find_vma_seq(addr, c);

	jt_count_lookup(err == -EAGAIN ? JT_LOOKUP_CALL_FIND_VMA :
					 JT_LOOKUP_CALL_WALK);
	if (err != -EAGAIN)
		return err;
	return jt_find_vma_once(addr, c);
#else
	long err = jt_find_vma_once(addr, c);

	if (err != -EBUSY)
		jt_count_lookup(JT_LOOKUP_CALL_WALK);
	return err;
#endif
}

static __always_inline bool find_vma(__u64 addr, struct vma_ctx *c)
{
	struct find_retry f = { .addr = addr, .c = c };

	if (jt_test_vma_busy && !jt_first_thread()) {
		jt_note_busy(addr);
		return false;
	}
	/* The lock is almost always free: the loop only when it is not. */
	f.err = jt_call_vma_once(addr, c);
#ifndef JT_LEGACY
	if (f.err == -EBUSY)
		bpf_loop(FIND_VMA_TRIES, find_retry_cb, &f, 0);
#endif
	if (f.err == -EBUSY)
		jt_note_busy(addr);
	return f.err != -EBUSY;
}

#endif /* JT_VMA_FIND_BPF_H */
