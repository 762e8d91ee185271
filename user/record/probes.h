/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Loading, tier choice and attachment of the BPF programs. */
#ifndef JT_PROBES_H
#define JT_PROBES_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include "jt_abi.h"
#include "record/lanes.h"

enum jt_tier {
	JT_TIER_NONE,
	JT_TIER_FENTRY,	    /* kernel tier: fentry/fexit on mm functions */
	JT_TIER_KPROBE,	    /* kernel tier: kprobe/kretprobe, same functions */
	JT_TIER_TRACEPOINT, /* syscall, fault and sched tracepoints */
};

/* What --tier asks for; auto and kernel try fentry before kprobe. */
enum jt_tier_want {
	JT_WANT_AUTO,
	JT_WANT_KERNEL,
	JT_WANT_FENTRY,
	JT_WANT_KPROBE,
	JT_WANT_TRACEPOINT,
};

#define JT_MAX_LINKS 32

struct bpf_link;
struct jittrace_bpf;
struct exec_snap_bpf;
struct ring_buffer;

struct jt_probes {
	struct jittrace_bpf *skel;
	struct exec_snap_bpf *snap; /* NULL: exec VMAs come from /proc */
	bool legacy;		    /* the object for kernels before 5.17 */
	/* write(2) and shm are timed at vfs_write's and do_shmat's exits */
	bool fexit_syscalls;
	struct ring_buffer *rb;
	enum jt_tier tier[JT_HOOK_MAX];
	char why[JT_HOOK_MAX][160]; /* why the kernel tier was not taken */
	/* Hooks whose working kprobes auto passed over, by bit. */
	unsigned int kprobes_passed;
	/* Per hook, its kernel functions (by index) done without. */
	unsigned char kskip[JT_HOOK_MAX];
	/* Hooks whose fentry tier is their xo_exit function's exit alone. */
	unsigned int xo_exits;
	/* Syscall exits of jt_exit_call's, by bit (probes.c's call_tps). */
	unsigned int call_tps;
	struct bpf_link *links[JT_MAX_LINKS]; /* kprobes, attached by hand */
	int nlinks;
	const volatile __u64 *lost; /* the lost map's slots, mapped */
	struct jt_lanes lanes;	    /* the mapping calls with no path */
};

extern const char *const jt_hook_names[JT_HOOK_MAX];
/* How exec is snapshotted: "iterator", "anchors" or "list". */
const char *jt_probes_snapshot(const struct jt_probes *p);
const char *jt_tier_name(enum jt_tier t);
/* "auto", "kernel", ...; -1 when s names no tier. */
/* --tier's words, by enum jt_tier_want; NULL-terminated */
extern const char *const jt_tier_wants[];
int jt_tier_want_parse(const char *s);
/*
 * Decide each hook's tier on this kernel, as record would, without
 * loading anything but the probe programs. cow: decide the COW hook too.
 * Returns -EPERM when a forced tier is refused for some hook (why[]
 * says which and how).
 */
int jt_choose_tiers(struct jt_probes *p, enum jt_tier_want want, bool cow);
/* Kernel functions a hook's kernel tier attaches to, NULL-terminated. */
const char *const *jt_hook_kernel_fns(enum jt_hook h);
/* The one the fentry tier may take in their place, or NULL. */
const char *jt_hook_exit_fn(enum jt_hook h);
/* Whether the hook's chosen tier puts a program on kernel function fn. */
bool jt_probes_use_fn(const struct jt_probes *p, enum jt_hook h,
		      const char *fn);
struct btf;
/* The running kernel's BTF, parsed once; NULL if it has none. */
struct btf *jt_vmlinux_btf(void);
/* Frees it once every program is loaded; asking again parses it again. */
void jt_vmlinux_btf_release(void);
/* The function probed for fn here (some kernels inline fn away). */
const char *jt_kfn_target(const char *fn);

/* ring_bytes: the BPF ring's size, a power of two of at least a page. */
/* cow: attach the write-fault probe (costs a VMA lookup per fault). */
int jt_probes_load(struct jt_probes *p, enum jt_tier_want want, bool trace_all,
		   bool cow, uint32_t ring_bytes, jt_event_fn fn, void *ctx);
/* "mmap=fentry mprotect=fentry ...": the one line record prints. */
void jt_probes_describe(const struct jt_probes *p, char *buf, size_t len);
int jt_probes_trace(struct jt_probes *p, pid_t pid);
int jt_probes_attach(struct jt_probes *p);
/* Events the BPF ring refused so far, summed over CPUs. */
uint64_t jt_probes_lost(struct jt_probes *p);
/* How faults' and calls' VMAs were found (enum jt_vma_lookup), summed. */
int jt_probes_vma_lookups(struct jt_probes *p, uint64_t *out);
/* The fds of every loaded program (for their kernel symbols); how many. */
size_t jt_probes_prog_fds(const struct jt_probes *p, int *fds, size_t max);
/* The fds of every attached link, for jt_detach_after_exit; how many. */
size_t jt_probes_link_fds(const struct jt_probes *p, int *fds, size_t max);
void jt_probes_close(struct jt_probes *p);
/* Mount tracefs and bpffs where missing; 0 or -errno. */
int jt_ensure_tracefs(void);
int jt_ensure_bpffs(void);
void jt_libbpf_quiet(bool verbose);
/* Whether the kernel has the open-coded task_vma iterator (6.7+). */
bool jt_kernel_has_vma_iter(void);
/* Tests only (JT_TEST_VMA_BUSY): lookups by non-first threads fail busy. */
bool jt_test_vma_busy(void);

#endif
