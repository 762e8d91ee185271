/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The BPF features of the running kernel that jittrace's programs use,
 * each with the first Linux release that has it: which object to load
 * (the current one, or the legacy one for kernels before 5.17), and what
 * doctor and record name when nothing can load.
 */
#ifndef JT_KFEATURES_H
#define JT_KFEATURES_H

#include <stdbool.h>
#include <stddef.h>

enum jt_kfeature {
	JT_KF_RINGBUF,
	JT_KF_TASK_STORAGE,
	JT_KF_TASK_BTF,
	JT_KF_TASK_PT_REGS,
	JT_KF_FIND_VMA,
	JT_KF_LOOP,
	JT_KF_FUNC_ARG,
	JT_KF_MAX,
};

const char *jt_kfeature_name(enum jt_kfeature f);
const char *jt_kfeature_since(enum jt_kfeature f); /* "5.17" */
/* A bit per enum jt_kfeature this kernel lacks; probed once. */
unsigned int jt_kfeatures_missing(void);
/*
 * The current object needs everything above but the ring buffer's
 * successors' stand-ins: without one of them, load the legacy object.
 */
bool jt_kfeatures_legacy(void);
/* What the legacy object still needs: without it nothing loads. */
unsigned int jt_kfeatures_required(void);
/* "bpf_find_vma (5.17), bpf_loop (5.17)"; "" for none. */
void jt_kfeatures_describe(unsigned int set, char *buf, size_t len);
/*
 * After the programs failed to load: one line on stderr naming what this
 * kernel lacks, if it lacks anything required; 1 if it said so.
 */
int jt_kfeatures_explain(void);

#endif
