// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Exec with a snapshot of the new mm taken in the kernel, for kernels with
 * the open-coded task_vma iterator (6.7 and later). A separate object:
 * libbpf resolves every kfunc an object names at load, so on older
 * kernels this one is not loaded at all and proc.bpf.c's jt_exec runs.
 * Its maps are the main object's, shared by file descriptor.
 */
#include "exec.bpf.h"

extern int bpf_iter_task_vma_new(struct bpf_iter_task_vma *it,
				 struct task_struct *task, __u64 addr) __ksym;
extern struct vm_area_struct *
bpf_iter_task_vma_next(struct bpf_iter_task_vma *it) __ksym;
extern void bpf_iter_task_vma_destroy(struct bpf_iter_task_vma *it) __ksym;

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
int BPF_PROG(jt_exec_snap, struct task_struct *p, pid_t old_pid,
	     struct linux_binprm *bprm)
{
	__u64 time = jt_emit_exec(p, bprm, old_pid);
	struct jt_scratch *s = jt_scratch();

	if (time && s)
		snapshot_vmas(s, bpf_get_current_task_btf(), time);
	return 0;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
