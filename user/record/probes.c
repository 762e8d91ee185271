// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "record/probes.h"
#include "jittrace.skel.h"
#include "tier_probe.skel.h"

#define TRACEFS "/sys/kernel/tracing"
#define TRACEFS_MAGIC 0x74726163
#define BPF_FS_MAGIC 0xcafe4a11

struct jt_config {
	__u32 trace_all;
	__u32 self_pid;
};

const char *const jt_hook_names[JT_HOOK_MAX] = {
	[JT_HOOK_MMAP] = "mmap",     [JT_HOOK_MPROTECT] = "mprotect",
	[JT_HOOK_MUNMAP] = "munmap", [JT_HOOK_MREMAP] = "mremap",
	[JT_HOOK_BRK] = "brk",	     [JT_HOOK_FORK] = "fork",
	[JT_HOOK_EXEC] = "exec",     [JT_HOOK_EXIT] = "exit",
};

const char *jt_tier_name(enum jt_tier t)
{
	return t == JT_TIER_KERNEL     ? "kernel" :
	       t == JT_TIER_TRACEPOINT ? "tracepoint" :
					 "none";
}

static bool verbose_libbpf;

static int print_fn(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	if (level == LIBBPF_DEBUG && !verbose_libbpf)
		return 0;
	if (level == LIBBPF_INFO && !verbose_libbpf)
		return 0;
	return vfprintf(stderr, fmt, ap);
}

void jt_libbpf_quiet(bool verbose)
{
	verbose_libbpf = verbose;
	libbpf_set_print(print_fn);
}

static int fs_is(const char *path, long magic)
{
	struct statfs st;

	return !statfs(path, &st) && st.f_type == magic;
}

int jt_ensure_tracefs(void)
{
	if (fs_is(TRACEFS, TRACEFS_MAGIC))
		return 0;
	if (mount("nodev", TRACEFS, "tracefs", 0, NULL))
		return -errno;
	return 0;
}

int jt_ensure_bpffs(void)
{
	if (fs_is("/sys/fs/bpf", BPF_FS_MAGIC))
		return 0;
	if (mount("bpf", "/sys/fs/bpf", "bpf", 0, NULL))
		return -errno;
	return 0;
}

/* 0 when an fentry program loads against fn here, else -errno. */
int jt_probe_kernel_fn(const char *fn)
{
	struct tier_probe_bpf *t = tier_probe_bpf__open();
	int err;

	if (!t)
		return -errno;
	err = bpf_program__set_attach_target(t->progs.jt_tier_probe, 0, fn);
	if (!err)
		err = tier_probe_bpf__load(t);
	tier_probe_bpf__destroy(t);
	return err;
}

/*
 * Every hook has a tracepoint-tier program in this object. The kernel
 * tier (fentry/kprobe on mm functions) slots in here: a hook whose
 * kernel-tier program loads takes it and disables its tracepoint one.
 */
static void choose_tiers(struct jt_probes *p)
{
	int i;

	for (i = 0; i < JT_HOOK_MAX; i++)
		p->tier[i] = JT_TIER_TRACEPOINT;
}

int jt_probes_load(struct jt_probes *p, bool trace_all, bool cow,
		   uint32_t ring_bytes, jt_event_fn fn, void *ctx)
{
	struct jt_config cfg = { trace_all, getpid() };
	__u32 zero = 0;
	int err;

	memset(p, 0, sizeof(*p));
	if (access("/sys/kernel/btf/vmlinux", R_OK)) {
		fprintf(stderr, "jittrace: this kernel has no BTF "
				"(/sys/kernel/btf/vmlinux); jittrace needs a "
				"kernel built with CONFIG_DEBUG_INFO_BTF\n");
		return -ENOTSUP;
	}
	p->skel = jittrace_bpf__open();
	if (!p->skel)
		return -errno;
	choose_tiers(p);
	bpf_program__set_autoload(p->skel->progs.jt_fault, cow);
	err = bpf_map__set_max_entries(p->skel->maps.events, ring_bytes);
	if (!err)
		err = jittrace_bpf__load(p->skel);
	if (err)
		return err;
	err = bpf_map_update_elem(bpf_map__fd(p->skel->maps.jt_cfg), &zero,
				  &cfg, BPF_ANY);
	if (err)
		return -errno;
	p->rb = ring_buffer__new(bpf_map__fd(p->skel->maps.events), fn, ctx,
				 NULL);
	return p->rb ? 0 : -errno;
}

int jt_probes_trace(struct jt_probes *p, pid_t pid)
{
	__u32 key = pid;
	__u8 one = 1;

	if (bpf_map_update_elem(bpf_map__fd(p->skel->maps.traced), &key, &one,
				BPF_ANY))
		return -errno;
	return 0;
}

int jt_probes_attach(struct jt_probes *p)
{
	int err = jt_ensure_tracefs();

	if (err)
		fprintf(stderr,
			"jittrace: cannot mount tracefs on " TRACEFS ": %s\n",
			strerror(-err));
	return jittrace_bpf__attach(p->skel);
}

uint64_t jt_probes_lost(struct jt_probes *p)
{
	int ncpu = libbpf_num_possible_cpus(), i;
	__u64 vals[ncpu > 0 ? ncpu : 1], sum = 0;
	__u32 zero = 0;

	if (ncpu <= 0 ||
	    bpf_map_lookup_elem(bpf_map__fd(p->skel->maps.lost), &zero, vals))
		return 0;
	for (i = 0; i < ncpu; i++)
		sum += vals[i];
	return sum;
}

void jt_probes_close(struct jt_probes *p)
{
	ring_buffer__free(p->rb);
	jittrace_bpf__destroy(p->skel);
	memset(p, 0, sizeof(*p));
}
