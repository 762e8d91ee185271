/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* jittrace script: shared between its text and JSON renderings. */
#ifndef JT_SCRIPT_H
#define JT_SCRIPT_H

#include "lib/json.h"
#include "lib/perf_rec.h"
#include "lib/hash.h"
#include "model/pipeline.h"
#include "model/symbolize.h"

struct script_ctx {
	const struct jt_stream *s;
	int json;
	int folded;
	struct jt_json j;
	struct jt_hash stacks; /* folded: "comm;outer;...;leaf" -> count */
	uint64_t samples;
};

void jt_script_json_bpf(struct script_ctx *c, const struct jt_item *it);
void jt_script_json_sample(struct script_ctx *c, struct jt_model *m,
			   const struct jt_sample *s,
			   const struct jt_symres *y);
void jt_script_json_mmap2(struct script_ctx *c, const struct jt_item *it,
			  const struct jt_mmap2 *mm, const char *name);
void jt_script_json_perf(struct script_ctx *c, const char *name,
			 const struct jt_item *it,
			 const struct jt_sample_id *id);
void jt_script_json_jit(struct script_ctx *c, const struct jt_jit_item *j,
			const char *op);

#endif
