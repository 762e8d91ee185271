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
 * Entry handler: on_##fn(const struct kargs *), with the first n
 * arguments (kfn_args), or all six through bpf_get_func_arg (JT_KENTRY).
 */
#define JT_KENTRY_ARGS(fn, sure, n)                                            \
	SEC("fentry/" #fn)                                                     \
	int jt_fe_##fn(__u64 *ctx)                                             \
	{                                                                      \
		struct kargs k = {};                                           \
                                                                               \
		kfn_args(ctx, &k, sure, n);                                    \
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
 * return value). fexit reads them (kfn_args); kretprobe cannot,
 * nor can the legacy object: NULL, and the entry program kept them.
 */
#ifdef JT_LEGACY
#define JT_FEXIT_ARGS(ctx, k, sure, n) ((void)(k), (const struct kargs *)0)
#else
#define JT_FEXIT_ARGS(ctx, k, sure, n)                                         \
	(kfn_args(ctx, k, sure, n), (const struct kargs *)k)
#endif

#define JT_KEXIT_ARGS(fn, sure, nargs)                                         \
	SEC("fexit/" #fn)                                                      \
	int jt_fx_##fn(__u64 *ctx)                                             \
	{                                                                      \
		struct kargs k = {};                                           \
		__u64 ret = 0;                                                 \
                                                                               \
		bpf_get_func_ret(ctx, &ret);                                   \
		return ret_##fn(JT_FEXIT_ARGS(ctx, &k, sure, nargs), ret);     \
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
		bpf_get_func_ret(ctx, &ret);                                   \
		return ret_##fn(ret);                                          \
	}                                                                      \
	SEC("kretprobe/" #fn)                                                  \
	int jt_kr_##fn(struct pt_regs *ctx)                                    \
	{                                                                      \
		return ret_##fn(PT_REGS_RC(ctx));                              \
	}

#endif
