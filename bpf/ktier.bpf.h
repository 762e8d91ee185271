/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The kernel tier attaches each handler twice: as fentry/fexit, and as
 * kprobe/kretprobe for kernels that have kprobes but refuse fentry.
 * Userspace loads one of the two per hook. Handlers take plain values,
 * never typed BPF_PROG arguments: the functions' signatures change
 * between releases (mprotect_fixup gained an argument in 6.2), and
 * bpf_get_func_arg reads any of them without the verifier checking a
 * prototype compiled in here.
 */
#ifndef JT_KTIER_BPF_H
#define JT_KTIER_BPF_H

#include "common.bpf.h"

struct kargs {
	__u64 a[6];
};

/*
 * A function's first n arguments, the first sure of them loaded from the
 * context: one instruction each, where bpf_get_func_arg inlines to a
 * dozen (a guest that counts instructions put fexit's programs 80 to 95
 * above the tracepoint tier's, doing the same work). The verifier
 * checks a load against the running kernel's prototype, so sure must
 * not pass the function's arity on any kernel; the rest leave 0 past it
 * (a GCC clone may drop an argument). Constant indexes, all of them.
 */
static __always_inline void kfn_args(__u64 *ctx, struct kargs *k, int sure,
				     int n)
{
	int i;

#pragma unroll
	for (i = 0; i < 6; i++) {
		if (i < sure)
			k->a[i] = ctx[i];
		else if (i < n)
			bpf_get_func_arg(ctx, i, &k->a[i]);
	}
}

/*
 * Set by the loader (jt_abi.h, enum jt_kfn). A section of its own keeps
 * it at the same offset in both objects, which share one skeleton: in
 * .rodata, the constants clang puts before it differ between them.
 */
const volatile __u32 jt_kshape[JT_KFN_MAX] __weak SEC(".rodata.kshape");

#ifdef JT_LEGACY
/*
 * The first n arguments, as many as the kernel's prototype has, each
 * loaded from the context, or probe-read where the verifier refuses the
 * load (5.10: mprotect_fixup's pprev). The shape is rodata, so the
 * verifier knows it and never walks the loads it rules out.
 */
static __always_inline void kfn_args_shaped(__u64 *ctx, struct kargs *k, int n,
					    __u32 shape)
{
	int i;

#pragma unroll
	for (i = 0; i < 6; i++) {
		if (i >= n || i >= JT_KSHAPE_ARGC(shape))
			continue;
		if (JT_KSHAPE_READ(shape) & (1u << i))
			bpf_probe_read_kernel(&k->a[i], sizeof(k->a[i]),
					      &ctx[i]);
		else
			k->a[i] = ctx[i];
	}
}

/*
 * fexit's return value is the slot after the arguments. Each load has
 * its own constant offset, in asm: the verifier refuses a context load at
 * a computed one, which is what clang would make of the plain switch.
 */
#define JT_CTX_LOAD(ctx, i, v)                                                 \
	asm volatile("%0 = *(u64 *)(%1 + %2)" : "=r"(v) : "r"(ctx), "i"((i)*8))

/* One case of kfn_ret_shaped: arity i, the result in slot i. */
#define JT_RET_CASE(i)                                                         \
	case i:                                                                \
		JT_CTX_LOAD(ctx, i, ret);                                      \
		break

static __always_inline __u64 kfn_ret_shaped(__u64 *ctx, __u32 shape)
{
	__u64 ret = 0;

	switch (JT_KSHAPE_ARGC(shape)) {
		JT_RET_CASE(0);
		JT_RET_CASE(1);
		JT_RET_CASE(2);
		JT_RET_CASE(3);
		JT_RET_CASE(4);
		JT_RET_CASE(5);
		JT_RET_CASE(6);
	}
	return ret;
}

#define JT_FENTRY_ARGS(ctx, k, sure, n, shape) kfn_args_shaped(ctx, k, n, shape)
#define JT_FEXIT_RET(ctx, ret, shape) ((ret) = kfn_ret_shaped(ctx, shape))
#else
#define JT_FENTRY_ARGS(ctx, k, sure, n, shape) kfn_args(ctx, k, sure, n)
#define JT_FEXIT_RET(ctx, ret, shape) bpf_get_func_ret(ctx, &(ret))
#endif

/*
 * Entry handler: on_##fn(const struct kargs *), with the first n
 * arguments (kfn_args), or all six through bpf_get_func_arg (JT_KENTRY).
 */
#define JT_KENTRY_ARGS(fn, sure, n)                                            \
	SEC("fentry/" #fn)                                                     \
	int jt_fe_##fn(__u64 *ctx)                                             \
	{                                                                      \
		struct kargs k = {};                                           \
                                                                               \
		JT_FENTRY_ARGS(ctx, &k, sure, n, jt_kshape[JT_KFN_##fn]);      \
		return on_##fn(&k);                                            \
	}                                                                      \
	SEC("kprobe/" #fn)                                                     \
	int jt_kp_##fn(struct pt_regs *ctx)                                    \
	{                                                                      \
		struct kargs k = { { PT_REGS_PARM1(ctx), PT_REGS_PARM2(ctx),   \
				     PT_REGS_PARM3(ctx), PT_REGS_PARM4(ctx),   \
				     PT_REGS_PARM5(ctx),                       \
				     PT_REGS_PARM6(ctx) } };                   \
                                                                               \
		return on_##fn(&k);                                            \
	}

#define JT_KENTRY(fn) JT_KENTRY_ARGS(fn, 0, 6)

/*
 * Return handler with the arguments: ret_##fn(const struct kargs *, __u64
 * return value). fexit reads them (kfn_args, or by shape on the legacy
 * object); kretprobe cannot: NULL, and the entry program kept them.
 */
#define JT_FEXIT_ARGS(ctx, k, sure, n, shape)                                  \
	(JT_FENTRY_ARGS(ctx, k, sure, n, shape), (const struct kargs *)k)

#define JT_KEXIT_ARGS(fn, sure, nargs)                                         \
	SEC("fexit/" #fn)                                                      \
	int jt_fx_##fn(__u64 *ctx)                                             \
	{                                                                      \
		struct kargs k = {};                                           \
		__u64 ret = 0;                                                 \
                                                                               \
		JT_FEXIT_RET(ctx, ret, jt_kshape[JT_KFN_##fn]);                \
		return ret_##fn(JT_FEXIT_ARGS(ctx, &k, sure, nargs,            \
					      jt_kshape[JT_KFN_##fn]),         \
				ret);                                          \
	}                                                                      \
	SEC("kretprobe/" #fn)                                                  \
	int jt_kr_##fn(struct pt_regs *ctx)                                    \
	{                                                                      \
		return ret_##fn(NULL, PT_REGS_RC(ctx));                        \
	}

/* Return handler: ret_##fn(__u64 return value). */
#define JT_KEXIT(fn)                                                           \
	SEC("fexit/" #fn)                                                      \
	int jt_fx_##fn(__u64 *ctx)                                             \
	{                                                                      \
		__u64 ret = 0;                                                 \
                                                                               \
		JT_FEXIT_RET(ctx, ret, jt_kshape[JT_KFN_##fn]);                \
		return ret_##fn(ret);                                          \
	}                                                                      \
	SEC("kretprobe/" #fn)                                                  \
	int jt_kr_##fn(struct pt_regs *ctx)                                    \
	{                                                                      \
		return ret_##fn(PT_REGS_RC(ctx));                              \
	}

#endif
