// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * libFuzzer harness: any byte string as a recording, through everything
 * a view does with one: framing, event validation, the model, perf
 * record decoding and sample resolution.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "lib/perf_rec.h"
#include "model/pipeline.h"

static void on_item(void *ctx, struct jt_model *m, const struct jt_item *it,
		    const struct jt_symres *y)
{
	const struct jt_stream *s = ctx;
	const struct jt_region *r;
	struct jt_sample smp;
	struct jt_mmap2 mm;

	if (it->kind != JT_IT_PERF)
		return;
	if (!jt_perf_sample(it->data, it->len, s->sample_type, &smp) &&
	    (r = jt_model_lookup(m, smp.pid, smp.ip)))
		jt_aspace_vma_members(jt_model_find(m, smp.pid)->as, r);
	jt_perf_mmap2(it->data, it->len, &mm);
}

static void run(const uint8_t *data, size_t size, bool free_dead_sources)
{
	struct jt_pipe_ops ops = { .item = on_item, .named = true };
	struct jt_stream s;
	struct jt_pipe p;
	char msg[256];

	if (jt_stream_open_mem(&s, data, size, msg, sizeof(msg)))
		return;
	s.free_dead_sources = free_dead_sources;
	ops.ctx = &s;
	jt_pipe_run(&p, &s, &ops);
	jt_pipe_free(&p);
	jt_stream_free(&s);
}

/* As the views read a recording, and as the agent does: it frees the
 * JIT files of processes gone past the grace. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	run(data, size, false);
	run(data, size, true);
	return 0;
}
