/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Loading, tier choice and attachment of the BPF programs. */
#ifndef JT_PROBES_H
#define JT_PROBES_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include "jt_abi.h"

enum jt_tier {
	JT_TIER_NONE,
	JT_TIER_KERNEL,	    /* fentry/kprobe on mm functions */
	JT_TIER_TRACEPOINT, /* syscall and sched tracepoints */
};

struct jittrace_bpf;
struct ring_buffer;

struct jt_probes {
	struct jittrace_bpf *skel;
	struct ring_buffer *rb;
	enum jt_tier tier[JT_HOOK_MAX];
};

extern const char *const jt_hook_names[JT_HOOK_MAX];
const char *jt_tier_name(enum jt_tier t);

typedef int (*jt_event_fn)(void *ctx, void *data, size_t size);

/* ring_bytes: the BPF ring's size, a power of two of at least a page. */
/* cow: attach the write-fault probe (costs a VMA lookup per fault). */
int jt_probes_load(struct jt_probes *p, bool trace_all, bool cow,
		   uint32_t ring_bytes, jt_event_fn fn, void *ctx);
int jt_probes_trace(struct jt_probes *p, pid_t pid);
int jt_probes_attach(struct jt_probes *p);
/* Events the BPF ring refused so far, summed over CPUs. */
uint64_t jt_probes_lost(struct jt_probes *p);
void jt_probes_close(struct jt_probes *p);
/* Mount tracefs and bpffs where missing; 0 or -errno. */
int jt_ensure_tracefs(void);
int jt_ensure_bpffs(void);
void jt_libbpf_quiet(bool verbose);
int jt_probe_kernel_fn(const char *fn);

#endif
