// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Empty programs: loading the fentry one against a kernel function, or
 * attaching the kprobe one to it, tells whether this kernel lets the
 * kernel tier attach there. The target is set at run time, per function.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

SEC("fentry")
int BPF_PROG(jt_tier_probe)
{
	return 0;
}

SEC("kprobe")
int jt_tier_kprobe(struct pt_regs *ctx)
{
	return 0;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
