/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Drive the model through a stream in time order, one callback per item. */
#ifndef JT_REPLAY_H
#define JT_REPLAY_H

#include "lib/perf_rec.h"
#include "model/model.h"
#include "model/stream.h"

/* Called after the model has taken the item in, so lookups see it. */
typedef void (*jt_item_fn)(void *ctx, struct jt_model *m,
			   const struct jt_item *it);

/* until: stop before the first item later than this; 0 for all. */
void jt_replay(struct jt_stream *s, struct jt_model *m, uint64_t until,
	       jt_item_fn fn, void *ctx);

struct jt_resolved {
	const struct jt_region *region;
	uint64_t offset; /* file offset of the address, file regions only */
	int kernel;
};

void jt_resolve(struct jt_model *m, uint32_t pid, uint64_t ip, uint16_t misc,
		struct jt_resolved *out);

#endif
