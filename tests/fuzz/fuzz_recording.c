// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * libFuzzer harness: any byte string as a recording, through everything
 * a view does with one: framing, event validation, the model, perf
 * record decoding and sample resolution.
 */
#include <stddef.h>
#include <stdint.h>
#include "lib/perf_rec.h"
#include "model/replay.h"

static void on_item(void *ctx, struct jt_model *m, const struct jt_item *it)
{
	const struct jt_stream *s = ctx;
	struct jt_resolved res;
	struct jt_sample smp;
	struct jt_mmap2 mm;

	if (it->kind != JT_IT_PERF)
		return;
	if (!jt_perf_sample(it->data, it->len, s->sample_type, &smp)) {
		jt_resolve(m, smp.pid, smp.ip, smp.misc, &res);
		if (res.region)
			jt_aspace_vma_members(jt_model_find(m, smp.pid)->as,
					      res.region);
	}
	jt_perf_mmap2(it->data, it->len, &mm);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct jt_stream s;
	struct jt_model m;
	char msg[256];

	if (jt_stream_load_mem(&s, data, size, msg, sizeof(msg)))
		return 0;
	jt_model_init(&m);
	jt_replay(&s, &m, 0, on_item, &s);
	jt_model_free(&m);
	jt_stream_free(&s);
	return 0;
}
