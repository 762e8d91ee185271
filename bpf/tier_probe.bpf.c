// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * An empty kprobe program: attaching it to a kernel function tells
 * whether this kernel lets the kprobe tier attach there. (fentry is
 * probed with a program loaded by hand: see probes.c.)
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

SEC("kprobe")
int jt_tier_kprobe(struct pt_regs *ctx)
{
	return 0;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
