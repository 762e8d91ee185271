/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The one pipeline every consumer runs: the recording's items in time
 * order (stream), the model advanced by each (the one place an event
 * changes it), and every sample named at its own time. Naming runs a
 * model of its own a little ahead, so that a code-load record written
 * after a sample can still name it; items wait between the two models
 * only while such a sample waits, and never longer than JT_RETRO_NS of
 * stream time or JT_RETRO_MAX items.
 */
#ifndef JT_PIPELINE_H
#define JT_PIPELINE_H

#include <stdbool.h>
#include "lib/perf_rec.h"
#include "model/model.h"
#include "model/stream.h"
#include "model/symbolize.h"

#define JT_RETRO_NS 2000000000ULL
#define JT_RETRO_MAX (1u << 18)

/* Called after m took the item in, so lookups see it; res: samples only. */
typedef void (*jt_item_fn)(void *ctx, struct jt_model *m,
			   const struct jt_item *it,
			   const struct jt_symres *res);

struct jt_pipe_ops {
	jt_item_fn item;
	/* A process ended: the last look at it before it is freed. */
	jt_exit_fn exited;
	void *ctx;
	bool named;	/* name samples */
	bool keep_dead; /* keep exited processes (small inputs, tests) */
	/*
	 * The consumer never looks up a JIT function itself (the agent,
	 * report): JIT records go to the naming model only, which halves
	 * their cost and keeps one copy of the tables, not two.
	 */
	bool jit_naming_only;
	/*
	 * The consumer keeps no name past its item (the agent): JIT names
	 * nothing holds any more are freed once their samples are out, so
	 * names that come and go for days do not pile up.
	 */
	bool free_names;
	/*
	 * The consumer reads only processes from its model (comm, nspid,
	 * exit: the agent, report without --data): its model keeps no
	 * address spaces, and the naming model's stand for them. Named
	 * pipelines only.
	 */
	bool procs_only;
	uint64_t until; /* stop before the first item later; 0: all */
};

struct jt_held {
	struct jt_item *it;
	struct jt_named *named;
	uint64_t step; /* when it was named */
};

struct jt_pipe {
	struct jt_stream *s;
	struct jt_syms syms;
	struct jt_model ahead; /* the naming side's model */
	struct jt_model m;     /* the consumer's model */
	const struct jt_pipe_ops *ops;
	struct jt_nametab names; /* JIT names, counted */
	uint64_t steps;
	struct jt_held *held; /* named, waiting to reach m */
	size_t head;
	size_t n;
	size_t cap;
	uint64_t retro_forced; /* samples that stopped waiting early */
};

/* 0, or -ENOMEM; p->m is the model at the end. */
int jt_pipe_run(struct jt_pipe *p, struct jt_stream *s,
		const struct jt_pipe_ops *ops);
void jt_pipe_free(struct jt_pipe *p);

#endif
