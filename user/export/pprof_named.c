// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <errno.h>
#include "export/pprof_named.h"

static void hex(const struct jt_buildid_rec *b, char *out)
{
	static const char digits[] = "0123456789abcdef";
	size_t i;

	out[0] = 0;
	for (i = 0; b && i < b->len && i < 20; i++) {
		out[2 * i] = digits[b->id[i] >> 4];
		out[2 * i + 1] = digits[b->id[i] & 15];
		out[2 * i + 2] = 0;
	}
}

#define KERNEL_START 0xffff800000000000ULL

/* A frame as pprof sees it: its mapping is the requested region. */
static void pprof_frame(const struct jt_symres *r, struct jt_pprof_frame *f,
			char *name, size_t len, char *bid)
{
	*f = (struct jt_pprof_frame){ .addr = r->ip };
	f->name = jt_symres_name(r, name, len);
	hex(r->build_id, bid);
	f->build_id = bid[0] ? bid : NULL;
	if (r->kernel) {
		f->file = "[kernel.kallsyms]";
		f->map_start = KERNEL_START;
		f->map_limit = UINT64_MAX;
		return;
	}
	f->file = r->path ? r->path : r->dso ? r->dso : "[unknown]";
	if (!r->region_start)
		return;
	f->map_start = r->region_start;
	f->map_limit = r->region_end;
	if (r->path)
		f->map_offset = r->offset - (r->ip - r->region_start);
}

const char *jt_pprof_source(const struct jt_symres *y)
{
	if (y->kernel)
		return y->sym ? "kallsyms" : "unknown";
	return jt_source_name(y->source);
}

#define MAX_FRAMES 128

/* Names are copied by jt_pprof_add: one buffer set serves every call. */
static char names[MAX_FRAMES][256], bids[MAX_FRAMES][41];

int jt_pprof_add_named(struct jt_pprof *p, struct jt_model *m,
		       const struct jt_sample *smp, const struct jt_symres *y,
		       bool callchain, int64_t nanos)
{
	struct jt_pprof_frame frames[MAX_FRAMES];
	const struct jt_proc *proc = jt_model_find(m, smp->pid);
	struct jt_pprof_sample s = {
		.frames = frames,
		.pid = smp->pid,
		.comm = jt_proc_comm(proc, smp->pid),
		.source = jt_pprof_source(y),
		.count = 1,
		.nanos = nanos ? nanos : (int64_t)smp->period,
	};
	size_t i;

	if (callchain && y->nframes) {
		for (i = 0; i < y->nframes && i < MAX_FRAMES; i++)
			pprof_frame(&y->frames[i], &frames[i], names[i],
				    sizeof(names[i]), bids[i]);
		s.nframes = i;
	} else {
		pprof_frame(y, &frames[0], names[0], sizeof(names[0]), bids[0]);
		s.nframes = 1;
	}
	return jt_pprof_add(p, &s) ? -ENOMEM : 0;
}
