// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Tracepoint tier for the mmap family: the arguments a process asked for
 * (sys_enter), the result and the kernel VMA that holds it (sys_exit,
 * bpf_find_vma). The exit side is where the kernel's merge is visible.
 */
#include "map_event.bpf.h"

static __always_inline int on_enter(struct trace_event_raw_sys_enter *ctx,
				    __u32 type, int nargs)
{
	struct task_struct *t = bpf_get_current_task_btf();
	struct pending_call *p;

	if (!jt_is_traced(bpf_get_current_pid_tgid() >> 32))
		return 0;
	p = bpf_task_storage_get(&pending, t, 0,
				 BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!p) {
		jt_count_lost();
		return 0;
	}
	__builtin_memset(p->args, 0, sizeof(p->args));
	p->type = type;
	/* Constant ctx offsets only: the verifier rejects a moving ctx pointer.
	 */
	p->args[0] = ctx->args[0];
	if (nargs > 1)
		p->args[1] = ctx->args[1];
	if (nargs > 2)
		p->args[2] = ctx->args[2];
	if (nargs > 3)
		p->args[3] = ctx->args[3];
	if (nargs > 4)
		p->args[4] = ctx->args[4];
	if (nargs > 5)
		p->args[5] = ctx->args[5];
	if (type == JT_EV_MPROTECT && nargs == 3)
		p->args[3] = (__u64)-1; /* plain mprotect: no pkey */
	if (type == JT_EV_BRK)
		p->args[1] = BPF_CORE_READ(t, mm, start_brk);
	return 0;
}

static __always_inline int on_exit(struct trace_event_raw_sys_exit *ctx)
{
	struct pending_call *p = bpf_task_storage_get(
		&pending, bpf_get_current_task_btf(), 0, 0);
	struct jt_scratch *s = jt_scratch();
	struct jt_map_event *ev;

	if (!p || !p->type)
		return 0;
	if (!s)
		goto out;
	ev = &s->map;
	__builtin_memset(ev, 0, sizeof(*ev));
	__builtin_memcpy(ev->args, p->args, sizeof(ev->args));
	jt_fill_hdr(&ev->h, p->type, 0);
	ev->result = ctx->ret;
	find_vmas(s, ev);
	ev->h.size = sizeof(*ev) + ev->path_len;
	jt_emit(ev, sizeof(*ev) + (ev->path_len & (JT_PATH_MAX - 1)));
out:
	p->type = 0;
	return 0;
}

#define JT_SYSCALL(name, type, nargs)                                          \
	SEC("tracepoint/syscalls/sys_enter_" #name)                            \
	int jt_enter_##name(struct trace_event_raw_sys_enter *ctx)             \
	{                                                                      \
		return on_enter(ctx, type, nargs);                             \
	}                                                                      \
	SEC("tracepoint/syscalls/sys_exit_" #name)                             \
	int jt_exit_##name(struct trace_event_raw_sys_exit *ctx)               \
	{                                                                      \
		return on_exit(ctx);                                           \
	}

JT_SYSCALL(mmap, JT_EV_MMAP, 6)
JT_SYSCALL(mprotect, JT_EV_MPROTECT, 3)
JT_SYSCALL(pkey_mprotect, JT_EV_MPROTECT, 4)
JT_SYSCALL(munmap, JT_EV_MUNMAP, 2)
JT_SYSCALL(mremap, JT_EV_MREMAP, 5)
JT_SYSCALL(brk, JT_EV_BRK, 1)
JT_SYSCALL(shmat, JT_EV_SHMAT, 3)
JT_SYSCALL(shmdt, JT_EV_SHMDT, 1)

char LICENSE[] SEC("license") = "Dual BSD/GPL";
