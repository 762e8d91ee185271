/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * A system-wide recording written to a descriptor instead of a file,
 * for as long as no SIGINT or SIGTERM came: what the agent reads live,
 * through the same stream and pipeline as a recording on disk.
 */
#ifndef JT_RECORD_LIVE_H
#define JT_RECORD_LIVE_H

#include <stdbool.h>
#include <stdint.h>
#include "record/probes.h"

struct jt_live_opts {
	uint64_t freq;
	const char *event; /* NULL: cycles, cpu-clock without a PMU */
	bool callchain;
	uint8_t callgraph; /* enum jt_callgraph */
	uint32_t stack_size;
	bool cow;
	bool jvmti; /* attach our JVMTI agent to the JVMs running at start */
	enum jt_tier_want tier;
	uint64_t max_jit_bytes; /* per JIT file, the rest counted */
	bool verbose;
	/* Called once every probe is attached and sampling runs. */
	void (*ready)(void *ctx);
	void *ctx;
};

struct jt_chan;

/* Writes to c, and says the end there; 0, or -errno after saying why. */
int jt_record_live(const struct jt_live_opts *lo, struct jt_chan *c);
/* Ask a running jt_record_live to finish (as SIGTERM does). */
void jt_record_live_stop(void);
#endif
