/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * A sample as the pipeline named it, added to a pprof profile: what
 * `jittrace export` and the agent's windows share, so both name and map
 * frames the same way.
 */
#ifndef JT_PPROF_NAMED_H
#define JT_PPROF_NAMED_H

#include <stdbool.h>
#include "export/pprof.h"
#include "lib/perf_rec.h"
#include "model/model.h"
#include "model/symbolize.h"

/* nanos: CPU time the sample stands for; 0 or -ENOMEM. */
int jt_pprof_add_named(struct jt_pprof *p, struct jt_model *m,
		       const struct jt_sample *smp, const struct jt_symres *y,
		       bool callchain, int64_t nanos);
/* What source label the sample gets: jitdump, perfmap, elf, ... */
const char *jt_pprof_source(const struct jt_symres *y);

#endif
