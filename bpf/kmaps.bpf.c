// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Kernel tier for the mmap family: probes on the kernel's own mm paths.
 * mmap_region sees every mapping the kernel makes, the ELF loader's in
 * execve included; perf_event_mmap hands over the VMA at the moment perf
 * is told about it; mprotect_fixup gives each piece an mprotect touches,
 * merged as the kernel merges it. On a maple tree the fentry tier runs
 * one exit per call and no more (JT_XO_TREE_*), mmap's on vm_mmap_pgoff
 * where it can. Events keep the tracepoint tier's ABI, so the model
 * cannot tell the tiers apart except by what they see.
 */
#include "lanes.bpf.h"
#include "ktier.bpf.h"
#include "maple.bpf.h"

#define VM_SHARED 0x8
#define VM_MAYSHARE 0x80
#define MAP_SHARED 0x01
#define MAP_PRIVATE 0x02
#define MAP_FIXED 0x10
#define MAP_ANONYMOUS 0x20

/* Probed as a clone without its pkey argument (jt_kfn_target). */
const volatile __u32 mprotect_no_pkey;
/* enum jt_exit_only: hooks the fentry tier takes without entry programs. */
const volatile __u32 exit_only;

struct kcall {
	__u64 args[6];
	struct jt_vma vma;	/* holds the first byte of the result */
	struct jt_vma vma_last; /* holds its last byte */
	__u64 file;		/* struct file * of vma, for the path */
	__u64 pprev;		/* mprotect_fixup's out parameter */
	__u32 type;		/* 0: no call in flight */
	__u32 flags;		/* enum jt_map_flags */
	__u64 time;		/* before its first VMA read (kcall_stamp) */
};

#ifdef JT_LEGACY
/*
 * No task storage before 5.11: a slot per thread id. LRU, since a thread
 * that exits leaves its slot; a call in flight is never the oldest.
 */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, JT_MAX_TRACED);
	__type(key, __u32);
	__type(value, struct kcall);
} kpending SEC(".maps");

static __always_inline struct kcall *kcall_get(bool create)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	struct kcall *c = bpf_map_lookup_elem(&kpending, &tid);
	struct kcall zero = {};

	if (c || !create)
		return c;
	bpf_map_update_elem(&kpending, &tid, &zero, BPF_NOEXIST);
	return bpf_map_lookup_elem(&kpending, &tid);
}
#else
struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct kcall);
} kpending SEC(".maps");

static __always_inline struct kcall *kcall_get(bool create)
{
	return bpf_task_storage_get(&kpending, bpf_get_current_task_btf(), 0,
				    create ? BPF_LOCAL_STORAGE_GET_F_CREATE :
					     0);
}
#endif

static __always_inline struct kcall *kcall_begin(__u32 type)
{
	struct kcall *c;

	if (!jt_is_traced(bpf_get_current_pid_tgid() >> 32))
		return NULL;
	c = kcall_get(true);
	if (!c) {
		jt_count_lost();
		return NULL;
	}
	__builtin_memset(c, 0, sizeof(*c));
	c->type = type;
	/* The ELF loader maps and unmaps in the new mm before EXEC. */
	if (in_execve())
		c->flags |= JT_MF_EXEC_LOAD;
	return c;
}

/*
 * The event's time: taken before the call's first VMA read, as a
 * map_call's is (map_event.bpf.h). Under mmap_lock no other call moves
 * a VMA, so a time taken there falls before any call that changes what
 * we read; one taken at the exit, after the lock is let go, did not.
 */
static __always_inline void kcall_stamp(struct kcall *c)
{
	if (!c->time)
		c->time = bpf_ktime_get_ns();
}

/* The call in flight, if it is of this type. */
static __always_inline struct kcall *kcall_of(__u32 type)
{
	struct kcall *c = kcall_get(false);

	return c && c->type == type ? c : NULL;
}

/*
 * Emit the call in flight with its result, then forget it. lookup: find
 * the result's VMAs now (mmap_lock is free after a syscall), rather
 * than take those the call's probes saw.
 */
static __always_inline int kcall_emit(struct kcall *c, __s64 ret, bool lookup)
{
	struct jt_scratch *s = jt_scratch();
	__u64 time = c->time ?: bpf_ktime_get_ns();
	struct jt_map_event *ev;
	__u32 type = c->type;

	/* The next call on this slot may open without a memset. */
	c->type = 0;
	c->time = 0;
	if (!s)
		return 0;
	ev = &s->map;
	__builtin_memset(ev, 0, sizeof(*ev));
	__builtin_memcpy(ev->args, c->args, sizeof(ev->args));
	jt_fill_hdr_at(&ev->h, type, 0, bpf_get_current_pid_tgid(), time);
	ev->result = ret;
	ev->flags = c->flags;
	if (lookup) {
		find_vmas(s, ev);
	} else {
		ev->vma = c->vma;
		ev->vma_last = c->vma_last;
		if (c->file)
			ev->path_len =
				jt_fill_file(s, ev, (struct file *)c->file);
	}
	ev->h.size = sizeof(*ev) + ev->path_len;
	jt_emit(ev, sizeof(*ev) + (ev->path_len & (JT_PATH_MAX - 1)));
	return 0;
}

/*
 * mmap_region(file, addr, len, vm_flags, pgoff, uf): addr is already
 * chosen and len page-aligned. The syscall's prot and MAP_ flags are
 * rebuilt from vm_flags; the fd is not known here (-1).
 */
static __always_inline void mmap_args(__u64 *args, const struct kargs *k)
{
	__u64 vmf = k->a[3];

	args[0] = k->a[1];
	args[1] = k->a[2];
	args[2] = vmf & 7; /* VM_READ|WRITE|EXEC are PROT_ bits */
	args[3] = (vmf & VM_MAYSHARE ? MAP_SHARED : MAP_PRIVATE) |
		  (k->a[0] ? 0 : MAP_ANONYMOUS) | MAP_FIXED;
	args[4] = (__u64)-1;
	args[5] = k->a[4] << 12;
}

/* shmat maps through do_mmap: its own event describes it. */
static __always_inline bool in_shmat(void)
{
	return JT_REGS_SYSCALL_NR(jt_task_regs(jt_current())) == NR_SHMAT;
}

static __always_inline int on_mmap_region(const struct kargs *k)
{
	/* Every process maps: the scope test comes first (kcall_begin). */
	struct kcall *c = kcall_begin(JT_EV_MMAP);

	if (!c)
		return 0;
	if (in_shmat()) {
		c->type = 0;
		return 0;
	}
	mmap_args(c->args, k);
	return 0;
}

/*
 * Exit only (fentry tier): the call in flight is the VMA perf_event_mmap
 * left, if this call got that far; the arguments are fexit's.
 */
static __always_inline struct kcall *mmap_exit_only(const struct kargs *k,
						    __u64 ret)
{
	struct kcall *c;

	if (!jt_is_traced(bpf_get_current_pid_tgid() >> 32) || in_shmat())
		return NULL;
	c = kcall_get(true);
	if (!c) {
		jt_count_lost();
		return NULL;
	}
	if (c->type != JT_EV_MMAP || IS_ERR_RET(ret) || ret < c->vma.start ||
	    ret >= c->vma.end)
		__builtin_memset(c, 0, sizeof(*c));
	c->type = JT_EV_MMAP;
	c->flags = in_execve() ? JT_MF_EXEC_LOAD : 0;
	mmap_args(c->args, k);
	return c;
}

/*
 * Where perf_event_mmap has no program (5.10 refuses it; the fentry tier
 * does without it on a maple tree, a trampoline fewer per mmap and per
 * mprotect): this task holds mmap_lock until mmap_region returns, so the
 * mm's tree holds the VMA it made. bpf_find_vma would wait for that lock.
 */
static __always_inline bool tree_vma(struct vma_ctx *out, __u64 addr)
{
	struct vma_ctx vc = {};

#ifdef JT_LEGACY
	/* Not jt_find_vma_once: our own write lock would make it busy. */
	if (jt_rb_find_vma_locked(addr, &vc))
		return false;
#else
	if (jt_maple_find_vma(addr, &vc))
		return false;
#endif
	*out = vc;
	return true;
}

/*
 * Exit only, on a maple tree: no other program saw this call, so the
 * event is all this exit's, built in the ring with no per-task slot.
 */
static __always_inline int mmap_tree_exit(const struct kargs *k, __u64 ret)
{
	struct map_call c = {};

	c.id = bpf_get_current_pid_tgid();
	if (!jt_is_traced(c.id >> 32) || in_shmat())
		return 0;
	mmap_args(c.args, k);
	c.flags = in_execve() ? JT_MF_EXEC_LOAD : 0;
	c.time = bpf_ktime_get_ns();
	if (!IS_ERR_RET(ret) && !tree_vma(&c.first, ret)) {
		c.flags |= JT_MF_VMA_BUSY;
		jt_note_busy(ret);
	}
	c.last = c.first.vma;
	return emit_map_call(&c, JT_EV_MMAP, ret);
}

static __always_inline int ret_mmap_region(const struct kargs *k, __u64 ret)
{
	struct vma_ctx vc;
	struct kcall *c;

	if (k && (exit_only & JT_XO_TREE_MMAP))
		return mmap_tree_exit(k, ret);
	c = k && (exit_only & JT_XO_MMAP) ? mmap_exit_only(k, ret) :
					    kcall_of(JT_EV_MMAP);
	if (!c)
		return 0;
	if (!IS_ERR_RET(ret) && !c->vma.end) {
		kcall_stamp(c);
		if (tree_vma(&vc, ret)) {
			c->vma = vc.vma;
			c->file = (__u64)vc.file;
		} else {
			c->flags |= JT_MF_VMA_BUSY;
			jt_note_busy(ret);
		}
	}
	c->vma_last = c->vma;
	return kcall_emit(c, ret, false);
}

/*
 * vm_mmap_pgoff(file, addr, len, prot, flags, pgoff): mmap(2) and the
 * kernel's vm_mmap (the ELF loader's), with the caller's own request.
 * Its exit comes after mmap_lock is released, so the VMAs are looked up
 * as the tracepoint tier looks them up: on a maple tree the fentry tier
 * takes this exit in place of mmap_region's, whose walk of the locked
 * tree was twice the tracepoint program's instructions (a guest whose
 * clock counts them, tests/vm/bench.sh). shmat maps through do_mmap,
 * not here: its own exit describes it. A typed fexit and no kprobe
 * twin: its six arguments are the same on every kernel, and the tier
 * takes this exit only where fexit loads (select_mmap_exit).
 */
SEC("fexit/vm_mmap_pgoff")
int BPF_PROG(jt_fx_vm_mmap_pgoff, struct file *file, unsigned long addr,
	     unsigned long len, unsigned long prot, unsigned long flag,
	     unsigned long pgoff, unsigned long ret)
{
	struct map_call c = {};

	c.id = bpf_get_current_pid_tgid();
	if (!jt_is_traced(c.id >> 32))
		return 0;
	c.args[0] = addr;
	c.args[1] = len;
	c.args[2] = prot;
	c.args[3] = flag;
	c.args[4] = (__u64)-1; /* the fd is not known here */
	c.args[5] = pgoff << 12;
	c.time = bpf_ktime_get_ns();
	c.flags = result_vmas(JT_EV_MMAP, c.args, ret, &c.first, &c.last);
	if (in_execve())
		c.flags |= JT_MF_EXEC_LOAD;
	return jt_emit_call(&c, JT_EV_MMAP, ret);
}

/*
 * The merged VMA mmap_region made, as perf is told about it. Exit only,
 * no entry program opened the call: this one does, unless another call
 * is in flight (perf hears of mprotect's and brk's VMAs as well).
 */
static __always_inline struct kcall *perf_vma_call(void)
{
	struct kcall *c;

	if (!(exit_only & JT_XO_MMAP))
		return kcall_of(JT_EV_MMAP);
	if (!jt_is_traced(bpf_get_current_pid_tgid() >> 32))
		return NULL;
	c = kcall_get(true);
	if (!c || (c->type && c->type != JT_EV_MMAP))
		return NULL;
	c->type = JT_EV_MMAP;
	return c;
}

static __always_inline int on_perf_event_mmap(const struct kargs *k)
{
	struct vm_area_struct *vma = (struct vm_area_struct *)k->a[0];
	struct kcall *c = perf_vma_call();

	if (!c)
		return 0;
	kcall_stamp(c);
	c->file = (__u64)jt_read_vma(&c->vma, vma);
	return 0;
}

/* do_mprotect_pkey(start, len, prot, pkey): mprotect and pkey_mprotect. */
static __always_inline void mprotect_args(__u64 *args, const struct kargs *k)
{
	args[0] = k->a[0];
	args[1] = k->a[1];
	args[2] = k->a[2];
	/* -1: plain mprotect */
	args[3] = mprotect_no_pkey ? (__u64)-1 : (__u64)(__s64)(int)k->a[3];
}

static __always_inline int on_do_mprotect_pkey(const struct kargs *k)
{
	struct kcall *c = kcall_begin(JT_EV_MPROTECT);

	if (c)
		mprotect_args(c->args, k);
	return 0;
}

/* execve's setup_arg_pages calls mprotect_fixup too, on the stack. */
static __always_inline bool in_mprotect(void)
{
	long nr = JT_REGS_SYSCALL_NR(jt_task_regs(jt_current()));

	return nr == NR_MPROTECT || nr == NR_PKEY_MPROTECT;
}

/*
 * Exit only: the first program of the call to run opens it. An MMAP call
 * found open was left by perf_event_mmap inside this mprotect_fixup.
 */
static __always_inline struct kcall *mprotect_call(bool piece)
{
	struct kcall *c = kcall_get(false);

	if (c && c->type == JT_EV_MPROTECT)
		return c;
	return piece && !in_mprotect() ? NULL : kcall_begin(JT_EV_MPROTECT);
}

/*
 * mprotect_fixup's argument i as numbered in (vma, pprev, start, end,
 * newflags), its arguments to 6.0: 6.1 put tlb first, and 6.2 vmi too.
 * The loader reads its arity from the kernel's BTF (jt_kshape); unknown,
 * it is taken as the newest.
 */
static __always_inline __u64 fixup_arg(const struct kargs *k, int i)
{
	__u32 argc = JT_KSHAPE_ARGC(jt_kshape[JT_KFN_mprotect_fixup]);

	return argc == 5 ? k->a[i] : argc == 6 ? k->a[i + 1] : k->a[i + 2];
}

static __always_inline int on_mprotect_fixup(const struct kargs *k)
{
	struct kcall *c = kcall_of(JT_EV_MPROTECT);

	if (c)
		c->pprev = fixup_arg(k, 1);
	return 0;
}

/*
 * *pprev is the VMA the piece ended in, after any merge. A later piece
 * that merges back into an earlier one reports the grown VMA, so the
 * last piece holding a byte wins. Exit only, the request is not known
 * yet: the first piece starts where it does, and each piece's last byte
 * stands for its end until do_mprotect_pkey returns.
 */
static __always_inline int ret_mprotect_fixup(const struct kargs *k, __u64 ret)
{
	bool xo = k && (exit_only & JT_XO_MPROTECT);
	struct kcall *c = xo ? mprotect_call(true) : kcall_of(JT_EV_MPROTECT);
	__u64 first, last, vma = 0;
	struct jt_vma v;

	if (!c)
		return 0;
	if (xo) {
		c->pprev = fixup_arg(k, 1);
		if (!c->args[0])
			c->args[0] = fixup_arg(k, 2);
	}
	if (!c->pprev || (int)ret)
		return 0;
	bpf_probe_read_kernel(&vma, sizeof(vma), (void *)c->pprev);
	if (!vma)
		return 0;
	kcall_stamp(c);
	jt_read_vma(&v, (struct vm_area_struct *)vma);
	first = c->args[0];
	last = xo ? fixup_arg(k, 3) - 1 : first + JT_PAGE_ALIGN(c->args[1]) - 1;
	if (v.start <= first && first < v.end)
		c->vma = v;
	if (v.start <= last && last < v.end)
		c->vma_last = v;
	return 0;
}

/* A bound no piece reported (already that prot): look it up unlocked. */
static __always_inline void fill_missing(struct jt_vma *v, __u64 addr,
					 __u32 *flags)
{
	struct vma_ctx vc = {};

	if (v->end)
		return;
	if (!find_vma(addr, &vc))
		*flags |= JT_MF_VMA_BUSY;
	*v = vc.vma;
}

/* A VMA of a piece that does not hold this byte of the request. */
static __always_inline void drop_unless(struct jt_vma *v, __u64 addr)
{
	if (v->end && !(v->start <= addr && addr < v->end))
		__builtin_memset(v, 0, sizeof(*v));
}

/*
 * Exit only, on a maple tree, with no program on the pieces: the VMAs
 * are looked up once mmap_lock is free, as the tracepoint tier does.
 */
static __always_inline int mprotect_lookup_exit(const struct kargs *k, int ret)
{
	struct map_call c = {};

	c.id = bpf_get_current_pid_tgid();
	if (!jt_is_traced(c.id >> 32))
		return 0;
	mprotect_args(c.args, k);
	c.time = bpf_ktime_get_ns();
	c.flags = result_vmas(JT_EV_MPROTECT, c.args, ret, &c.first, &c.last);
	return jt_emit_call(&c, JT_EV_MPROTECT, ret);
}

static __always_inline int ret_do_mprotect_pkey(const struct kargs *k,
						__u64 ret)
{
	bool xo = k && (exit_only & JT_XO_MPROTECT);
	struct kcall *c;
	__u64 first, last;

	if (k && (exit_only & JT_XO_TREE_MPROTECT))
		return mprotect_lookup_exit(k, (int)ret);
	c = xo ? mprotect_call(false) : kcall_of(JT_EV_MPROTECT);
	if (!c)
		return 0;
	if (xo)
		mprotect_args(c->args, k);
	first = c->args[0];
	last = first + JT_PAGE_ALIGN(c->args[1]) - 1;
	if (xo) {
		/* A call that failed part way: as with its entry. */
		drop_unless(&c->vma, first);
		drop_unless(&c->vma_last, last);
	}
	if (!(int)ret && c->args[1]) {
		if (!c->vma.end || !c->vma_last.end)
			kcall_stamp(c);
		fill_missing(&c->vma, first, &c->flags);
		fill_missing(&c->vma_last, last, &c->flags);
	}
	return kcall_emit(c, (int)ret, false);
}

/* __vm_munmap(start, len, downgrade|unlock): munmap(2) and vm_munmap. */
static __always_inline int on___vm_munmap(const struct kargs *k)
{
	struct kcall *c = kcall_begin(JT_EV_MUNMAP);

	if (c) {
		c->args[0] = k->a[0];
		c->args[1] = k->a[1];
	}
	return 0;
}

/*
 * Exit only: the whole event from fexit's arguments, built in the ring.
 * Every field is set: ring memory is not zeroed.
 */
static __always_inline int munmap_exit_only(const struct kargs *k, __u64 ret)
{
	struct map_call c = {};

	c.id = bpf_get_current_pid_tgid();
	if (!jt_is_traced(c.id >> 32))
		return 0;
	c.args[0] = k->a[0];
	c.args[1] = k->a[1];
	c.flags = in_execve() ? JT_MF_EXEC_LOAD : 0;
	c.time = bpf_ktime_get_ns();
	return jt_emit_call(&c, JT_EV_MUNMAP, (int)ret);
}

static __always_inline int ret___vm_munmap(const struct kargs *k, __u64 ret)
{
	struct kcall *c;

	if (k && (exit_only & JT_XO_MUNMAP))
		return munmap_exit_only(k, ret);
	c = kcall_of(JT_EV_MUNMAP);
	return c ? kcall_emit(c, (int)ret, false) : 0;
}

/*
 * mremap and brk spread over static helpers whose signatures change
 * every few releases; the syscall function itself is the kernel
 * function that sees every request. Its one argument is the user's
 * registers. Its name is the architecture's (__x64_sys_mremap,
 * __arm64_sys_mremap): userspace attaches these there.
 */
static __always_inline int on_sys_mremap(const struct kargs *k)
{
	struct kcall *c = kcall_begin(JT_EV_MREMAP);
	__u64 a[6];

	if (!c || jt_syscall_args((struct pt_regs *)k->a[0], a))
		return 0;
	__builtin_memcpy(c->args, a, 5 * sizeof(__u64));
	return 0;
}

static __always_inline int on_sys_brk(const struct kargs *k)
{
	struct kcall *c = kcall_begin(JT_EV_BRK);
	struct task_struct *t = jt_current();
	__u64 a[6];

	if (!c || jt_syscall_args((struct pt_regs *)k->a[0], a))
		return 0;
	c->args[0] = a[0];
	c->args[1] = BPF_CORE_READ(t, mm, start_brk);
	return 0;
}

/* After the syscall mmap_lock is free: look the result up as tier T. */
static __always_inline int ret_syscall(__u32 type, __u64 ret)
{
	struct kcall *c = kcall_of(type);

	return c ? kcall_emit(c, ret, true) : 0;
}

static __always_inline int ret_sys_mremap(__u64 ret)
{
	return ret_syscall(JT_EV_MREMAP, ret);
}

static __always_inline int ret_sys_brk(__u64 ret)
{
	return ret_syscall(JT_EV_BRK, ret);
}

JT_KENTRY(mmap_region)
JT_KEXIT_ARGS(mmap_region, 0, 5)
JT_KENTRY(perf_event_mmap)
JT_KENTRY(do_mprotect_pkey)
JT_KEXIT_ARGS(do_mprotect_pkey, 3, 4)
JT_KENTRY(mprotect_fixup)
JT_KEXIT_ARGS(mprotect_fixup, 0, 6)
JT_KENTRY(__vm_munmap)
JT_KEXIT_ARGS(__vm_munmap, 2, 2)
/* The syscall wrappers, named per architecture: see jt_kfn_target. */
JT_KENTRY(sys_mremap)
JT_KEXIT(sys_mremap)
JT_KENTRY(sys_brk)
JT_KEXIT(sys_brk)

char LICENSE[] SEC("license") = "Dual BSD/GPL";
