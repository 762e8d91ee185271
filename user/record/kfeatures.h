/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The BPF features of the running kernel that jittrace's programs use,
 * each with the first Linux release that has it: what doctor and record
 * name when the programs cannot load.
 */
#ifndef JT_KFEATURES_H
#define JT_KFEATURES_H

#include <stddef.h>
#include "record/probes.h"

enum jt_kfeature {
	JT_KF_RINGBUF,
	JT_KF_TASK_STORAGE,
	JT_KF_TASK_BTF,
	JT_KF_TASK_PT_REGS,
	JT_KF_FIND_VMA,
	JT_KF_LOOP,
	JT_KF_MAX,
};

const char *jt_kfeature_name(enum jt_kfeature f);
const char *jt_kfeature_since(enum jt_kfeature f); /* "5.17" */
/* A bit per enum jt_kfeature this kernel lacks; probed once. */
unsigned int jt_kfeatures_missing(void);
/* What a hook's own programs use, beside what the one object needs. */
unsigned int jt_kfeatures_of_hook(enum jt_hook h);
/* What every hook needs: its programs load as one object. */
unsigned int jt_kfeatures_of_object(void);
/* "bpf_find_vma (5.17), bpf_loop (5.17)"; "" for none. */
void jt_kfeatures_describe(unsigned int set, char *buf, size_t len);
/*
 * After the programs failed to load: one line on stderr naming what this
 * kernel lacks, if it lacks anything; 1 if it said so.
 */
int jt_kfeatures_explain(void);

#endif
