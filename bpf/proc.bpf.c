// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Process lifecycle: fork (thread or process, shared mm or copy), exec
 * with a snapshot of the new mm, exit. Fork is also where the traced
 * scope grows: a traced parent's children are traced.
 */
#include "exec.bpf.h"
#include "vma_find.bpf.h"

SEC("tp_btf/sched_process_fork")
int BPF_PROG(jt_fork, struct task_struct *parent, struct task_struct *child)
{
	struct jt_fork_event ev = {};
	__u32 ptgid = BPF_CORE_READ(parent, tgid);
	__u32 ctgid = BPF_CORE_READ(child, tgid);
	__u8 one = 1;

	if (!jt_is_traced(ptgid))
		return 0;
	jt_fill_hdr(&ev.h, JT_EV_FORK, sizeof(ev));
	ev.child_pid = ctgid;
	ev.child_tid = BPF_CORE_READ(child, pid);
	ev.child_nspid = jt_task_nspid(child);
	/* The recorder vets the child's files by it: no /proc read per fork. */
	ev.child_euid = BPF_CORE_READ(child, cred, euid.val);
	ev.flags = JT_FORK_EUID;
	if (ctgid == ptgid)
		ev.flags |= JT_FORK_THREAD;
	if (BPF_CORE_READ(child, mm) == BPF_CORE_READ(parent, mm))
		ev.flags |= JT_FORK_VM;
	if (ctgid != ptgid) {
		bpf_map_update_elem(&traced, &ctgid, &one, BPF_ANY);
		jt_scope_changed();
	}
	jt_emit(&ev, sizeof(ev));
	return 0;
}

/*
 * Kernels without the open-coded task_vma iterator (before 6.7) cannot
 * list the new mm. What execve mapped is still reachable: the binary's
 * segments around start_code, the interpreter's from AT_BASE, vvar and
 * vdso around the vdso, the stack. Each is a run of adjacent VMAs, so
 * bpf_find_vma from each anchor, then at each neighbour's edge, lists
 * them exactly, before the new program runs.
 */
#define AT_BASE 7
#define SNAP_MAX 64 /* VMAs per exec; a dynamic PIE program has ~20 */
/*
 * Pages looked past a gap for a file's next segment: arm64 links with
 * 64 KiB segment alignment, so text and data lie up to two alignments
 * apart (mapops: 29 pages; ld.so: 23).
 */
#define SNAP_BRIDGE_PAGES 40
#define AUXV_LEN 56

struct snap_walk {
	__u64 time;
	__u64 auxv[AUXV_LEN];
	__u64 mm_args[4];
	__u64 addr;	      /* next address to look up */
	__u64 seen[SNAP_MAX]; /* starts emitted, to skip a run met twice */
	__u32 nseen;
	int dir;      /* 1: forward from addr, -1: backward */
	__u32 bridge; /* pages looked at past the last VMA */
	bool found;
	struct vma_ctx c;
};

/* The anchor walk's state: too big for the BPF stack. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct snap_walk);
} snap_scratch SEC(".maps");

/* bpf_loop wants its context on the stack: callbacks look the walk up. */
static __always_inline struct snap_walk *snap_walk(void)
{
	__u32 zero = 0;

	return bpf_map_lookup_elem(&snap_scratch, &zero);
}

static long snap_seen_cb(__u64 i, void *data)
{
	struct snap_walk *w = snap_walk();

	if (!w || i >= w->nseen || i >= SNAP_MAX)
		return 1;
	if (w->seen[i] == w->c.vma.start) {
		w->found = true;
		return 1;
	}
	return 0;
}

/* The VMA in w->c, as a VMA record of the EXEC at w->time. */
static void snap_out(struct snap_walk *w)
{
	struct jt_scratch *s = jt_scratch();
	struct jt_map_event *ev;
	__u32 len;

	if (!s)
		return;
	ev = &s->map;
	__builtin_memset(ev, 0, sizeof(*ev));
	jt_fill_hdr(&ev->h, JT_EV_VMA, 0);
	ev->h.time = w->time;
	__builtin_memcpy(ev->args, w->mm_args, sizeof(w->mm_args));
	ev->vma = w->c.vma;
	ev->vma_last = w->c.vma;
	len = jt_fill_file(s, ev, w->c.file);
	ev->path_len = len;
	ev->h.size = sizeof(*ev) + len;
	jt_emit(ev, sizeof(*ev) + (len & (JT_PATH_MAX - 1)));
}

static __always_inline void snap_fill_mm(struct snap_walk *w,
					 struct mm_struct *mm, __u64 time)
{
	w->nseen = 0; /* seen[] counts only up to nseen */
	w->time = time;
	bpf_core_read(w->auxv, sizeof(w->auxv), &mm->saved_auxv);
	w->mm_args[0] = BPF_CORE_READ(mm, start_brk);
	w->mm_args[1] = BPF_CORE_READ(mm, brk);
	w->mm_args[2] = BPF_CORE_READ(mm, start_stack);
	w->mm_args[3] = (__u64)BPF_CORE_READ(mm, context.vdso);
}

#ifdef JT_LEGACY
/* Before 6.1 the mm also lists its VMAs in order: walk the list. */
static __always_inline void snapshot_vmas(__u64 time)
{
	struct mm_struct *mm = BPF_CORE_READ(jt_current(), mm);
	struct snap_walk *w = snap_walk();
	struct jt_scratch *s = jt_scratch();
	struct vm_area_struct *v;
	int i;

	if (!w || !s)
		return;
	snap_fill_mm(w, mm, time);
	v = BPF_CORE_READ((struct mm_struct___legacy *)mm, mmap);
	for (i = 0; i < SNAP_MAX && v; i++) {
		if (jt_rb_vma(&w->c, v, s->span))
			snap_out(w);
		v = BPF_CORE_READ((struct vm_area_struct___legacy *)v, vm_next);
	}
}
#else
static void snap_emit(struct snap_walk *w)
{
	w->found = false;
	bpf_loop(SNAP_MAX, snap_seen_cb, NULL, 0);
	if (w->found || w->nseen >= SNAP_MAX)
		return;
	w->seen[w->nseen & (SNAP_MAX - 1)] = w->c.vma.start;
	w->nseen++;
	snap_out(w);
}

/*
 * Past a file's VMA going up, a gap may only be the ELF alignment
 * between its segments: look a bounded way on for that file's next one.
 */
static long snap_bridge(struct snap_walk *w)
{
	if (w->dir < 0 || !w->c.file || w->bridge >= SNAP_BRIDGE_PAGES)
		return 1;
	w->bridge++;
	w->addr += JT_PAGE_SIZE;
	return 0;
}

/* One VMA of the run, or one page of a gap, per call. */
static long snap_step(__u64 i, void *data)
{
	struct snap_walk *w = snap_walk();
	struct vma_ctx c = {};

	if (!w || !w->addr || !find_vma(w->addr, &c))
		return 1;
	if (!c.vma.end)
		return snap_bridge(w);
	if (w->bridge && c.file != w->c.file)
		return 1; /* across a gap, only the same file continues */
	w->bridge = 0;
	w->c = c;
	snap_emit(w);
	w->addr = w->dir > 0 ? w->c.vma.end : w->c.vma.start - 1;
	return 0;
}

static __always_inline void snap_dir(struct snap_walk *w, __u64 anchor, int dir)
{
	__builtin_memset(&w->c, 0, sizeof(w->c));
	w->bridge = 0;
	w->dir = dir;
	w->addr = anchor;
	bpf_loop(SNAP_MAX + SNAP_BRIDGE_PAGES, snap_step, NULL, 0);
}

static __always_inline void snap_run(struct snap_walk *w, __u64 anchor)
{
	if (!anchor)
		return;
	snap_dir(w, anchor, -1);
	snap_dir(w, anchor, 1);
}

/* The interpreter's load address, from the auxv execve built. */
static __always_inline __u64 interp_base(struct snap_walk *w)
{
	int i;

	for (i = 0; i + 1 < AUXV_LEN; i += 2) {
		if (!w->auxv[i])
			break;
		if (w->auxv[i] == AT_BASE)
			return w->auxv[i + 1];
	}
	return 0;
}

static __always_inline void snapshot_vmas(__u64 time)
{
	struct task_struct *t = bpf_get_current_task_btf();
	struct mm_struct *mm = BPF_CORE_READ(t, mm);
	struct snap_walk *w;

	w = snap_walk();
	if (!w)
		return;
	snap_fill_mm(w, mm, time);
	snap_run(w, BPF_CORE_READ(mm, start_code));
	snap_run(w, interp_base(w));
	snap_run(w, w->mm_args[3]);
	snap_run(w, w->mm_args[2]);
}
#endif

SEC("tp_btf/sched_process_exec")
int BPF_PROG(jt_exec, struct task_struct *p, pid_t old_pid,
	     struct linux_binprm *bprm)
{
	__u64 time = jt_emit_exec(p, bprm, old_pid);

	if (time)
		snapshot_vmas(time);
	return 0;
}

/* One busy address of the exiting process, looked up again. */
static long reread_cb(__u64 i, void *data)
{
	struct jt_busy *b = data;
	struct jt_scratch *s = jt_scratch();
	struct vma_ctx c = {};
	struct jt_map_event *ev;
	__u32 len;

	if (i >= JT_BUSY_ADDRS || !s)
		return 1;
	if (!b->addr[i] || !find_vma(b->addr[i], &c) || !c.vma.end)
		return 0;
	ev = &s->map;
	__builtin_memset(ev, 0, sizeof(*ev));
	jt_fill_hdr(&ev->h, JT_EV_VMA, 0);
	ev->flags = JT_MF_VMA_REREAD;
	ev->vma = c.vma;
	ev->vma_last = c.vma;
	len = jt_fill_file(s, ev, c.file);
	ev->path_len = len;
	ev->h.size = sizeof(*ev) + len;
	jt_emit(ev, sizeof(*ev) + (len & (JT_PATH_MAX - 1)));
	return 0;
}

/*
 * The last moment a process's VMAs can be read: what a lookup found busy
 * earlier is read here, as an observation like the recorder's /proc read.
 */
SEC("tracepoint/syscalls/sys_enter_exit_group")
int jt_exit_group(void *ctx)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;
	struct jt_busy *b = bpf_map_lookup_elem(&busy_addrs, &tgid);
	struct jt_busy copy;

	if (!b)
		return 0;
	copy = *b;
	bpf_map_delete_elem(&busy_addrs, &tgid);
#ifdef JT_LEGACY
	for (int i = 0; i < JT_BUSY_ADDRS; i++)
		if (reread_cb(i, &copy))
			break;
#else
	bpf_loop(JT_BUSY_ADDRS, reread_cb, &copy, 0);
#endif
	return 0;
}

SEC("tp_btf/sched_process_exit")
int BPF_PROG(jt_exit, struct task_struct *task)
{
	__u32 tgid = BPF_CORE_READ(task, tgid);
	struct jt_exit_event ev = {};

	if (!jt_is_traced(tgid))
		return 0;
	jt_fill_hdr(&ev.h, JT_EV_EXIT, sizeof(ev));
	/* signal->live is already decremented here, on 6.1 and later. */
	ev.group_dead = BPF_CORE_READ(task, signal, live.counter) == 0;
	if (ev.group_dead) /* killed: exit_group did not run */
		bpf_map_delete_elem(&busy_addrs, &tgid);
	ev.exit_code = BPF_CORE_READ(task, exit_code);
	jt_emit(&ev, sizeof(ev));
	if (ev.group_dead) {
		bpf_map_delete_elem(&traced, &tgid);
		jt_scope_changed();
	}
	return 0;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
