/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * audit's copy-on-write questions of a recording: which pages of a file
 * mapping each process made its own, when, which thread and instruction
 * wrote them, and what data lives on them; and which cache lines the
 * data samples of several processes hit, on one physical page or each
 * on a private copy (what perf c2c, keyed by file, cannot tell apart).
 */
#ifndef JT_AUDIT_COW_H
#define JT_AUDIT_COW_H

#include <stdio.h>
#include "lib/json.h"
#include "lib/perf_rec.h"
#include "model/model.h"
#include "model/symbolize.h"

/* A finding: detail is an open writer holding its detail object. */
typedef void (*audit_add_fn)(void *ctx, const char *kind, uint32_t pid,
			     uint64_t start, uint64_t end, const char *text,
			     struct jt_json_mem *detail);

struct audit_cow;

struct audit_cow *audit_cow_new(struct jt_syms *y, audit_add_fn add, void *ctx);
/* m has just taken the fault: name its writer as m sees it now. */
void audit_cow_fault(struct audit_cow *c, struct jt_model *m,
		     const struct jt_cow_event *ev);
/* A sample with a data address, at its time. */
void audit_cow_sample(struct audit_cow *c, struct jt_model *m,
		      const struct jt_sample *smp);
/* p's last state: a "cow" finding per file mapping with private pages. */
void audit_cow_proc(struct audit_cow *c, const struct jt_proc *p);
/* At the end: a "false-sharing-suspect" finding per line so hit. */
void audit_cow_lines(struct audit_cow *c);
/* The "cow" findings for people: by file, then page, then process. */
void audit_cow_print(struct audit_cow *c, FILE *f);
void audit_cow_free(struct audit_cow *c);

#endif
