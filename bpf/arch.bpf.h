/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * What differs per architecture in the BPF programs, in one place: the
 * syscall numbers, where a syscall's number, arguments and the user's
 * instruction pointer sit in the saved registers, and whether the page
 * fault tracepoints exist. Userspace's counterparts are in
 * user/record/arch.h.
 */
#ifndef JT_ARCH_BPF_H
#define JT_ARCH_BPF_H

#if defined(__TARGET_ARCH_x86)
/* arch/x86/entry/syscalls/syscall_64.tbl */
#define NR_MMAP 9
#define NR_MPROTECT 10
#define NR_MUNMAP 11
#define NR_BRK 12
#define NR_MREMAP 25
#define NR_SHMAT 30
#define NR_SHMDT 67
#define NR_PKEY_MPROTECT 329
/* exceptions:page_fault_user and page_fault_kernel */
#define JT_HAVE_FAULT_TRACEPOINTS 1

#define JT_REGS_SYSCALL_NR(r) BPF_CORE_READ(r, orig_ax)
#define JT_REGS_IP(r) BPF_CORE_READ(r, ip)
#ifndef PT_REGS_PARM6
#define PT_REGS_PARM6(x) ((x)->r9) /* libbpf 1.1 stops at five */
#endif

/*
 * The six syscall arguments, from the registers the task entered the
 * kernel with; also right at the syscall's exit: x86-64 returns in ax.
 */
static __always_inline int jt_syscall_args(struct pt_regs *r, __u64 *a)
{
	/* pt_regs from r10 to di, the argument registers, in one read. */
	struct {
		__u64 r10, r9, r8, ax, cx, dx, si, di;
	} regs;

	if (bpf_probe_read_kernel(&regs, sizeof(regs), &r->r10))
		return -1;
	a[0] = regs.di;
	a[1] = regs.si;
	a[2] = regs.dx;
	a[3] = regs.r10;
	a[4] = regs.r8;
	a[5] = regs.r9;
	return 0;
}

/* The same from a BTF pointer to the registers: plain loads. */
static __always_inline void jt_syscall_args_btf(struct pt_regs *r, __u64 *a)
{
	a[0] = r->di;
	a[1] = r->si;
	a[2] = r->dx;
	a[3] = r->r10;
	a[4] = r->r8;
	a[5] = r->r9;
}
#elif defined(__TARGET_ARCH_arm64)
/* include/uapi/asm-generic/unistd.h */
#define NR_MMAP 222
#define NR_MPROTECT 226
#define NR_MUNMAP 215
#define NR_BRK 214
#define NR_MREMAP 216
#define NR_SHMAT 196
#define NR_SHMDT 197
#define NR_PKEY_MPROTECT 288

#define JT_REGS_SYSCALL_NR(r) BPF_CORE_READ(r, syscallno)
#define JT_REGS_IP(r) BPF_CORE_READ(r, pc)
#ifndef PT_REGS_PARM6
#define PT_REGS_PARM6(x) (((const struct user_pt_regs *)(x))->regs[5])
#endif

/*
 * x0 carries the first argument in and the result out: orig_x0 keeps the
 * argument for the syscall's exit.
 */
static __always_inline int jt_syscall_args(struct pt_regs *r, __u64 *a)
{
	if (bpf_probe_read_kernel(&a[1], 5 * sizeof(__u64), &r->regs[1]))
		return -1;
	a[0] = BPF_CORE_READ(r, orig_x0);
	return 0;
}

/* The same from a BTF pointer to the registers: plain loads. */
static __always_inline void jt_syscall_args_btf(struct pt_regs *r, __u64 *a)
{
	int i;

	a[0] = r->orig_x0;
	for (i = 1; i < 6; i++)
		a[i] = r->regs[i];
}
#else
#error "jittrace's BPF programs know x86-64 and arm64"
#endif

#endif
