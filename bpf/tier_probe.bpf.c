// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * An empty fentry program: loading it against a kernel function tells
 * whether this kernel lets the kernel-function tier attach there. The
 * target is set at run time, once per hook.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

SEC("fentry")
int BPF_PROG(jt_tier_probe)
{
	return 0;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
