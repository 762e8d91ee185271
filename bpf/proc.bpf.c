// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Process lifecycle: fork (thread or process, shared mm or copy), exec
 * with a snapshot of the new mm, exit. Fork is also where the traced
 * scope grows: a traced parent's children are traced.
 */
#include "common.bpf.h"

extern int bpf_iter_task_vma_new(struct bpf_iter_task_vma *it,
				 struct task_struct *task, __u64 addr) __ksym;
extern struct vm_area_struct *
bpf_iter_task_vma_next(struct bpf_iter_task_vma *it) __ksym;
extern void bpf_iter_task_vma_destroy(struct bpf_iter_task_vma *it) __ksym;

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
	if (ctgid == ptgid)
		ev.flags |= JT_FORK_THREAD;
	if (BPF_CORE_READ(child, mm) == BPF_CORE_READ(parent, mm))
		ev.flags |= JT_FORK_VM;
	if (ctgid != ptgid)
		bpf_map_update_elem(&traced, &ctgid, &one, BPF_ANY);
	jt_emit(&ev, sizeof(ev));
	return 0;
}

/*
 * execve maps the binary, the interpreter, the stack and the vdso without
 * any mmap syscall; snapshot them here, before the new program runs, so
 * the list is exact and no later mmap can race into it.
 */
static __always_inline void snapshot_vmas(struct jt_scratch *s,
					  struct task_struct *task, __u64 time)
{
	struct mm_struct *mm = BPF_CORE_READ(task, mm);
	struct jt_map_event *ev = &s->map;
	struct bpf_iter_task_vma it;
	struct vm_area_struct *vma;

	bpf_iter_task_vma_new(&it, task, 0);
	while ((vma = bpf_iter_task_vma_next(&it))) {
		__u32 len;

		__builtin_memset(ev, 0, sizeof(*ev));
		jt_fill_hdr(&ev->h, JT_EV_VMA, 0);
		ev->h.time = time;
		ev->args[0] = BPF_CORE_READ(mm, start_brk);
		ev->args[1] = BPF_CORE_READ(mm, brk);
		ev->args[2] = BPF_CORE_READ(mm, start_stack);
		ev->args[3] = (__u64)BPF_CORE_READ(mm, context.vdso);
		jt_fill_vma(&ev->vma, vma);
		ev->vma_last = ev->vma;
		len = jt_fill_file(s, ev, BPF_CORE_READ(vma, vm_file));
		ev->path_len = len;
		ev->h.size = sizeof(*ev) + len;
		jt_emit(ev, sizeof(*ev) + (len & (JT_PATH_MAX - 1)));
	}
	bpf_iter_task_vma_destroy(&it);
}

SEC("tp_btf/sched_process_exec")
int BPF_PROG(jt_exec, struct task_struct *p, pid_t old_pid,
	     struct linux_binprm *bprm)
{
	struct jt_scratch *s = jt_scratch();
	struct jt_exec_event *ev;
	__u32 trunc = 0;

	if (!s || !jt_is_traced(BPF_CORE_READ(p, tgid)))
		return 0;
	ev = &s->exec;
	__builtin_memset(ev, 0, sizeof(*ev));
	jt_fill_hdr(&ev->h, JT_EV_EXEC, 0);
	bpf_get_current_comm(ev->comm, sizeof(ev->comm));
	ev->old_tid = old_pid;
	/* The file, not the string given to execve: absolute, no symlinks. */
	ev->path_len =
		jt_file_path(s, BPF_CORE_READ(bprm, file), ev->path, &trunc);
	ev->h.size = sizeof(*ev) + ev->path_len;
	jt_emit(ev, sizeof(*ev) + (ev->path_len & (JT_PATH_MAX - 1)));
	snapshot_vmas(s, bpf_get_current_task_btf(), ev->h.time);
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
	ev.exit_code = BPF_CORE_READ(task, exit_code);
	jt_emit(&ev, sizeof(ev));
	if (ev.group_dead)
		bpf_map_delete_elem(&traced, &tgid);
	return 0;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
