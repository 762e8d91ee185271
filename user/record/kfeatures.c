// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <stdbool.h>
#include <stdio.h>
#include <sys/utsname.h>
#include <bpf/libbpf.h>
#include "record/kfeatures.h"

#define BIT(f) (1u << (f))

struct kfeature {
	const char *name;
	const char *since;     /* the first Linux release with it */
	enum bpf_map_type map; /* a map type, or else a helper: */
	enum bpf_func_id helper;
};

static const struct kfeature features[JT_KF_MAX] = {
	[JT_KF_RINGBUF] = { "BPF ring buffer", "5.8", BPF_MAP_TYPE_RINGBUF },
	[JT_KF_TASK_STORAGE] = { "task storage maps", "5.11",
				 BPF_MAP_TYPE_TASK_STORAGE },
	[JT_KF_TASK_BTF] = { "bpf_get_current_task_btf", "5.11", 0,
			     BPF_FUNC_get_current_task_btf },
	[JT_KF_TASK_PT_REGS] = { "bpf_task_pt_regs", "5.15", 0,
				 BPF_FUNC_task_pt_regs },
	[JT_KF_FIND_VMA] = { "bpf_find_vma", "5.17", 0, BPF_FUNC_find_vma },
	[JT_KF_LOOP] = { "bpf_loop", "5.17", 0, BPF_FUNC_loop },
};

/*
 * Per hook, its tracepoint tier's programs: the syscall exits read the
 * arguments from the task's registers and the VMA the call made, and
 * walk the file's path; exec lists the new mm; exit looks up again what
 * was busy; the fault looks up its VMA and, for the kernel's own
 * writes, the task's registers.
 */
static const unsigned int hook_features[JT_HOOK_MAX] = {
	[JT_HOOK_MMAP] = BIT(JT_KF_TASK_BTF) | BIT(JT_KF_TASK_PT_REGS) |
			 BIT(JT_KF_FIND_VMA) | BIT(JT_KF_LOOP),
	[JT_HOOK_MPROTECT] = BIT(JT_KF_TASK_BTF) | BIT(JT_KF_TASK_PT_REGS) |
			     BIT(JT_KF_FIND_VMA) | BIT(JT_KF_LOOP),
	[JT_HOOK_MUNMAP] = BIT(JT_KF_TASK_BTF) | BIT(JT_KF_TASK_PT_REGS) |
			   BIT(JT_KF_FIND_VMA) | BIT(JT_KF_LOOP),
	[JT_HOOK_MREMAP] = BIT(JT_KF_TASK_BTF) | BIT(JT_KF_TASK_PT_REGS) |
			   BIT(JT_KF_FIND_VMA) | BIT(JT_KF_LOOP),
	[JT_HOOK_BRK] = BIT(JT_KF_TASK_BTF) | BIT(JT_KF_TASK_PT_REGS) |
			BIT(JT_KF_FIND_VMA) | BIT(JT_KF_LOOP),
	[JT_HOOK_FORK] = 0,
	[JT_HOOK_EXEC] =
		BIT(JT_KF_TASK_BTF) | BIT(JT_KF_FIND_VMA) | BIT(JT_KF_LOOP),
	[JT_HOOK_EXIT] =
		BIT(JT_KF_TASK_BTF) | BIT(JT_KF_FIND_VMA) | BIT(JT_KF_LOOP),
	[JT_HOOK_COW] = BIT(JT_KF_TASK_BTF) | BIT(JT_KF_TASK_PT_REGS) |
			BIT(JT_KF_FIND_VMA),
};

static bool have(const struct kfeature *f)
{
	if (f->map)
		return libbpf_probe_bpf_map_type(f->map, NULL) > 0;
	/* Every helper here is one raw tracepoints may call. */
	return libbpf_probe_bpf_helper(BPF_PROG_TYPE_RAW_TRACEPOINT, f->helper,
				       NULL) > 0;
}

unsigned int jt_kfeatures_missing(void)
{
	static unsigned int missing;
	static bool probed;
	int i;

	if (probed)
		return missing;
	for (i = 0; i < JT_KF_MAX; i++)
		if (!have(&features[i]))
			missing |= BIT(i);
	probed = true;
	return missing;
}

unsigned int jt_kfeatures_of_hook(enum jt_hook h)
{
	return hook_features[h];
}

unsigned int jt_kfeatures_of_object(void)
{
	/* The kernel tier keeps a slot per task between entry and exit. */
	return BIT(JT_KF_RINGBUF) | BIT(JT_KF_TASK_STORAGE);
}

void jt_kfeatures_describe(unsigned int set, char *buf, size_t len)
{
	size_t n = 0;
	int i;

	buf[0] = 0;
	for (i = 0; i < JT_KF_MAX && n < len; i++)
		if (set & BIT(i))
			n += snprintf(buf + n, len - n, "%s%s (%s)",
				      n ? ", " : "", features[i].name,
				      features[i].since);
}

int jt_kfeatures_explain(void)
{
	unsigned int all = jt_kfeatures_of_object();
	struct utsname u = {};
	char what[256];
	int h;

	for (h = 0; h < JT_HOOK_MAX; h++)
		all |= hook_features[h];
	jt_kfeatures_describe(jt_kfeatures_missing() & all, what, sizeof(what));
	if (!what[0])
		return 0;
	uname(&u);
	fprintf(stderr,
		"jittrace: this kernel (Linux %s) lacks what jittrace's BPF "
		"programs use: %s; 'jittrace doctor' shows it per hook\n",
		u.release, what);
	return 1;
}

const char *jt_kfeature_name(enum jt_kfeature f)
{
	return features[f].name;
}

const char *jt_kfeature_since(enum jt_kfeature f)
{
	return features[f].since;
}
