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

#ifdef JT_LEGACY
/*
 * Field by field, not jt_read_vma: this is a subprogram under the exit
 * handler's frame, and its span buffer took the pair past the 512-byte
 * combined stack (5.10's verifier refused the object).
 */
static long __attribute__((unused))
vma_cb(struct task_struct *task, struct vm_area_struct *vma, void *data)
{
	struct vma_ctx *c = data;

	jt_fill_vma(&c->vma, vma);
	c->file = BPF_CORE_READ(vma, vm_file);
	return 0;
}
#else
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

/*
 * The VMA holding addr, by the mm's rb-tree, as find_vma walks it: 0, or
 * -ENOENT. Read without mmap_lock, as bpf_find_vma's trylock would
 * not wait either: a sibling changing the tree meanwhile can make it miss.
 */
static __always_inline long jt_find_vma_once(__u64 addr, struct vma_ctx *c)
{
	struct mm_struct___legacy *mm = (void *)BPF_CORE_READ(jt_current(), mm);
	struct rb_node *n = BPF_CORE_READ(mm, mm_rb.rb_node);
	int i;

	for (i = 0; i < JT_RB_DEPTH && n; i++) {
		struct vm_area_struct *v =
			(void *)n -
			bpf_core_field_offset(struct vm_area_struct___legacy,
					      vm_rb);
		__u64 start = BPF_CORE_READ(v, vm_start);

		if (addr < start) {
			n = BPF_CORE_READ(n, rb_left);
		} else if (addr >= BPF_CORE_READ(v, vm_end)) {
			n = BPF_CORE_READ(n, rb_right);
		} else {
			vma_cb(NULL, v, c);
			return 0;
		}
	}
	return -ENOENT;
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
 * counted by which answered (the legacy object's rb-tree descent is not).
 */
static __always_inline long jt_call_vma_once(__u64 addr, struct vma_ctx *c)
{
#ifndef JT_LEGACY
	long err = jt_maple_find_vma_seq(addr, c);

	jt_count_lookup(err == -EAGAIN ? JT_LOOKUP_CALL_FIND_VMA :
					 JT_LOOKUP_CALL_WALK);
	if (err != -EAGAIN)
		return err;
#endif
	return jt_find_vma_once(addr, c);
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
