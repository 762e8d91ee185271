// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Tracepoint tier for the mmap family: a program at each call's exit
 * (syscalls:sys_exit_*), where the result and the kernel VMA that holds
 * it (bpf_find_vma) are known and the kernel's merge is visible. The
 * arguments are in the user registers the kernel saved at entry, which
 * still hold them at exit: an entry program per call cost as much
 * again, and a per-thread slot to carry the arguments across.
 *
 * Not raw_syscalls:sys_exit, though one program there would do: it runs
 * for every syscall of every task on the machine, and a getppid loop in
 * a process nobody traces went 22% slower; these run only for the calls
 * they are named for.
 */
/* This object's lookups read the maple tree through a view (maple.bpf.h). */
#define JT_MAPLE_VIEW
#include "lanes.bpf.h"

/*
 * One call, its arguments known: look its result up and emit it. lane:
 * a syscall tracepoint's, which may write its CPU's lane (lanes.bpf.h).
 */
static __always_inline int emit_call(__u64 id, long ret, __u32 type,
				     const __u64 *a, int nargs, bool lane)
{
	struct map_call c = { .id = id };
	int i;

	/* The call's own arguments; the rest stay 0. */
	for (i = 0; i < 6; i++)
		c.args[i] = i < nargs ? a[i] : 0;
	if (type == JT_EV_BRK)
		c.args[1] = BPF_CORE_READ(jt_current(), mm, start_brk);
	c.time = bpf_ktime_get_ns();
	c.flags = result_vmas(type, c.args, ret, &c.first, &c.last);
	/* A path, or a busy lookup the recorder must act on now: the ring. */
	if (lane && (!c.first.file || type == JT_EV_BRK) &&
	    !(c.flags & JT_MF_VMA_BUSY) && jt_lane_put(&c, type, ret))
		return 0;
	return emit_map_call(&c, type, ret);
}

static __always_inline int on_exit(long ret, __u32 type, __u64 nr, int nargs)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u64 a[6];

	/* Every process's calls come here: the scope test comes first. */
	if (!jt_is_traced(id >> 32))
		return 0;
	if (jt_task_syscall_args(jt_current(), a)) {
		jt_count_lost(); /* a traced call we cannot report */
		return 0;
	}
	if (nr == NR_MPROTECT)
		a[3] = (__u64)-1; /* plain mprotect: no pkey */
	return emit_call(id, ret, type, a, nargs, true);
}

#define JT_SYSCALL(name, type, nr, nargs)                                      \
	SEC("tracepoint/syscalls/sys_exit_" #name)                             \
	int jt_exit_##name(struct trace_event_raw_sys_exit *ctx)               \
	{                                                                      \
		return on_exit(ctx->ret, type, nr, nargs);                     \
	}

JT_SYSCALL(mmap, JT_EV_MMAP, NR_MMAP, 6)
JT_SYSCALL(mprotect, JT_EV_MPROTECT, NR_MPROTECT, 3)
JT_SYSCALL(munmap, JT_EV_MUNMAP, NR_MUNMAP, 2)
/*
 * System V shm maps without mmap(2): this and shmat's exit (jt_exit_call),
 * or on the fentry tier the exits of do_shmat and ksys_shmdt, which take
 * no task of the machine to the slow syscall path (the loader picks).
 */
JT_SYSCALL(shmdt, JT_EV_SHMDT, NR_SHMDT, 1)

/*
 * The calls a loop rarely makes, one program the loader attaches at each
 * of their exits (jt_call_tps in probes.c): the verifier checks a
 * program's maple walk once, and four programs of their own were 55K
 * verified instructions, 40 ms of start-up.
 */
__noinline int jt_call_exit(long ret, __u32 type, __u64 nr, int nargs)
{
	return on_exit(ret, type, nr, nargs);
}

SEC("tracepoint")
int jt_exit_call(struct trace_event_raw_sys_exit *ctx)
{
	switch (ctx->id) {
	case NR_PKEY_MPROTECT:
		return jt_call_exit(ctx->ret, JT_EV_MPROTECT, NR_PKEY_MPROTECT,
				    4);
	case NR_MREMAP:
		return jt_call_exit(ctx->ret, JT_EV_MREMAP, NR_MREMAP, 5);
	case NR_BRK:
		return jt_call_exit(ctx->ret, JT_EV_BRK, NR_BRK, 1);
	case NR_SHMAT:
		return jt_call_exit(ctx->ret, JT_EV_SHMAT, NR_SHMAT, 3);
	}
	return 0;
}

/*
 * do_shmat(shmid, shmaddr, shmflg, raddr, shmlba): the address in *raddr.
 * An fexit program can be preempted, so it writes the ring, never a lane.
 */
SEC("fexit/do_shmat")
int BPF_PROG(jt_fx_do_shmat, int shmid, char *shmaddr, int shmflg,
	     unsigned long *raddr, unsigned long shmlba, long ret)
{
	__u64 a[3] = { shmid, (__u64)shmaddr, shmflg };
	__u64 id = bpf_get_current_pid_tgid();
	unsigned long addr = 0;

	if (!jt_is_traced(id >> 32))
		return 0;
	if (!ret && bpf_probe_read_kernel(&addr, sizeof(addr), raddr))
		return 0;
	return emit_call(id, ret ? ret : (long)addr, JT_EV_SHMAT, a, 3, false);
}

SEC("fexit/ksys_shmdt")
int BPF_PROG(jt_fx_ksys_shmdt, char *shmaddr, long ret)
{
	__u64 a[1] = { (__u64)shmaddr };
	__u64 id = bpf_get_current_pid_tgid();

	if (!jt_is_traced(id >> 32))
		return 0;
	return emit_call(id, ret, JT_EV_SHMDT, a, 1, false);
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
