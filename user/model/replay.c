// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <string.h>
#include "model/replay.h"

/* perf's COMM names processes the BPF side never saw exec (-a, -p). */
static void perf_comm(struct jt_model *m, const struct jt_item *it)
{
	const struct perf_event_header *h = it->data;
	const uint32_t *p = (const void *)(h + 1);
	char comm[JT_COMM_LEN] = {};
	size_t max = it->len - sizeof(*h) - 8;

	if (it->len < sizeof(*h) + 8 + 1)
		return;
	memcpy(comm, p + 2, max < sizeof(comm) - 1 ? max : sizeof(comm) - 1);
	if (p[0] == p[1]) {
		struct jt_proc *proc = jt_model_find(m, p[0]);

		if (!proc || !proc->comm[0] ||
		    (h->misc & PERF_RECORD_MISC_COMM_EXEC))
			jt_model_set_comm(m, p[0], comm);
	}
}

void jt_replay(struct jt_stream *s, struct jt_model *m, uint64_t until,
	       jt_item_fn fn, void *ctx)
{
	size_t i;

	for (i = 0; i < s->n; i++) {
		const struct jt_item *it = &s->items[i];

		if (until && it->time > until)
			break;
		if (it->kind == JT_IT_BPF) {
			jt_model_apply(m, it->data, it->len);
		} else if (it->kind == JT_IT_JIT) {
			jt_model_apply_jit(m, it->data);
		} else {
			const struct perf_event_header *h = it->data;

			struct jt_mmap2 mm;

			if (h->type == PERF_RECORD_COMM)
				perf_comm(m, it);
			else if (!jt_perf_mmap2(h, it->len, &mm))
				jt_model_perf_vma(m, mm.pid, mm.tid, mm.start,
						  mm.start + mm.len);
		}
		if (fn)
			fn(ctx, m, it);
	}
}

void jt_resolve(struct jt_model *m, uint32_t pid, uint64_t ip, uint16_t misc,
		struct jt_resolved *out)
{
	memset(out, 0, sizeof(*out));
	if (jt_perf_kernel_ip(misc)) {
		out->kernel = 1;
		return;
	}
	out->region = jt_model_lookup(m, pid, ip);
	if (out->region && out->region->kind == JT_RK_FILE)
		out->offset = out->region->pgoff + (ip - out->region->start);
}
