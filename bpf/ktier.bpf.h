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

static __always_inline void fentry_args(__u64 *ctx, struct kargs *k)
{
	/* Constant indexes: past the function's arity they leave 0. */
	bpf_get_func_arg(ctx, 0, &k->a[0]);
	bpf_get_func_arg(ctx, 1, &k->a[1]);
	bpf_get_func_arg(ctx, 2, &k->a[2]);
	bpf_get_func_arg(ctx, 3, &k->a[3]);
	bpf_get_func_arg(ctx, 4, &k->a[4]);
	bpf_get_func_arg(ctx, 5, &k->a[5]);
}

/* Entry handler: on_##fn(const struct kargs *). */
#define JT_KENTRY(fn)                                                          \
	SEC("fentry/" #fn)                                                     \
	int jt_fe_##fn(__u64 *ctx)                                             \
	{                                                                      \
		struct kargs k = {};                                           \
                                                                               \
		fentry_args(ctx, &k);                                          \
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

/*
 * Return handler with the arguments: ret_##fn(const struct kargs *, __u64
 * return value). fexit reads them (bpf_get_func_arg); kretprobe cannot,
 * nor can the legacy object: NULL, and the entry program kept them.
 */
#ifdef JT_LEGACY
#define JT_FEXIT_ARGS(ctx, k) ((void)(k), (const struct kargs *)0)
#else
#define JT_FEXIT_ARGS(ctx, k) (fentry_args(ctx, k), (const struct kargs *)k)
#endif

#define JT_KEXIT_ARGS(fn)                                                      \
	SEC("fexit/" #fn)                                                      \
	int jt_fx_##fn(__u64 *ctx)                                             \
	{                                                                      \
		struct kargs k = {};                                           \
		__u64 ret = 0;                                                 \
                                                                               \
		bpf_get_func_ret(ctx, &ret);                                   \
		return ret_##fn(JT_FEXIT_ARGS(ctx, &k), ret);                  \
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
