/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The agent's memory cap. JIT tables are what grows without a bound a
 * tracer can set (a runtime may write a perf-map of any size), so they
 * are what gives way: past the budget, the tables of the processes
 * sampled least recently are freed, in both of the pipeline's models,
 * and their later records dropped, each counted.
 */
#ifndef JT_AGENT_JITBUDGET_H
#define JT_AGENT_JITBUDGET_H

#include <stdint.h>
#include "lib/hash.h"
#include "model/pipeline.h"

/*
 * What one JIT function costs, measured: 423,134 perf-map lines took
 * 131 MB of RSS (a node in each model's table, the name, the parser).
 */
#define JT_JITSYM_BYTES 384

struct jt_jitbudget {
	struct jt_hash procs; /* pid -> struct jit_use */
	uint64_t syms;	      /* JIT records held, all processes */
	uint64_t max_syms;
	uint64_t evicted_procs;
	uint64_t evicted_syms;
};

void jt_jitbudget_init(struct jt_jitbudget *b, uint64_t bytes);
/* n JIT records of pid reached the models; may evict. */
void jt_jitbudget_loaded(struct jt_jitbudget *b, struct jt_pipe *p,
			 uint32_t pid, uint64_t n);
void jt_jitbudget_sampled(struct jt_jitbudget *b, uint32_t pid, uint64_t t);
void jt_jitbudget_exited(struct jt_jitbudget *b, uint32_t pid);
void jt_jitbudget_free(struct jt_jitbudget *b);

#endif
