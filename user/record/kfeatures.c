// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <stdio.h>
#include <string.h>
#include <sys/utsname.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include "record/kfeatures.h"
#include "record/probes.h"

#define BIT(f) (1u << (f))

struct kfeature {
	const char *name;
	const char *since;     /* the first Linux release with it */
	enum bpf_map_type map; /* a map type, or else a helper: */
	enum bpf_func_id helper;
	const char *btf_name; /* a fentry-only helper: asked of the BTF */
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
	/*
	 * The fentry programs read arguments with it; kprobes need not, nor
	 * the legacy object's, which load them by shape (ktier.bpf.h).
	 */
	[JT_KF_FUNC_ARG] = { "bpf_get_func_arg", "5.17", 0,
			     BPF_FUNC_get_func_arg, "BPF_FUNC_get_func_arg" },
};

/* What the legacy object reaches by other means (bpf/common.bpf.h). */
#define LEGACY_STANDS_IN                                                       \
	(BIT(JT_KF_TASK_STORAGE) | BIT(JT_KF_TASK_BTF) |                       \
	 BIT(JT_KF_TASK_PT_REGS) | BIT(JT_KF_FIND_VMA) | BIT(JT_KF_LOOP))

/*
 * Whether the kernel knows helper id: its BTF names it in enum
 * bpf_func_id. For helpers only fentry programs may call, which
 * libbpf's probe cannot load.
 */
static bool knows_helper(const char *name)
{
	struct btf *btf = jt_vmlinux_btf();
	const struct btf_enum *e;
	const struct btf_type *t;
	int id, i;

	id = btf ? btf__find_by_name_kind(btf, "bpf_func_id", BTF_KIND_ENUM) :
		   -1;
	if (id < 0)
		return false;
	t = btf__type_by_id(btf, id);
	e = btf_enum(t);
	for (i = 0; i < btf_vlen(t); i++)
		if (!strcmp(btf__name_by_offset(btf, e[i].name_off), name))
			return true;
	return false;
}

static bool have(const struct kfeature *f)
{
	if (f->map)
		return libbpf_probe_bpf_map_type(f->map, NULL) > 0;
	if (f->btf_name)
		return knows_helper(f->btf_name);
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

bool jt_kfeatures_legacy(void)
{
	return jt_kfeatures_missing() & LEGACY_STANDS_IN;
}

unsigned int jt_kfeatures_required(void)
{
	return BIT(JT_KF_RINGBUF);
}

const char *jt_kfeature_name(enum jt_kfeature f)
{
	return features[f].name;
}

const char *jt_kfeature_since(enum jt_kfeature f)
{
	return features[f].since;
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
	struct utsname u = {};
	char what[256];

	jt_kfeatures_describe(jt_kfeatures_missing() & jt_kfeatures_required(),
			      what, sizeof(what));
	if (!what[0])
		return 0;
	uname(&u);
	fprintf(stderr,
		"jittrace: this kernel (Linux %s) lacks what jittrace's BPF "
		"programs need: %s; 'jittrace doctor' shows the rest\n",
		u.release, what);
	return 1;
}
