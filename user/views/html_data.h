/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * What jittrace html draws, gathered in one pass of the pipeline: each
 * requested region from the moment it took its shape to the moment it
 * lost it, with the kernel VMA that held it; each JIT function's tenancy
 * of its address; sample ticks; the call-chain tree. Lifetimes are found
 * by comparing a process's address space and JIT tables before and after
 * each event, over the addresses the event touched (they are persistent
 * treaps: keeping the "before" costs O(1)), so each event costs what it
 * changed. What is too much to draw one by one is thinned, and counted.
 */
#ifndef JT_HTML_DATA_H
#define JT_HTML_DATA_H

#include <stdio.h>
#include "lib/json.h"
#include "model/pipeline.h"

/*
 * Sample ticks: each process's first 5000 samples are drawn, then every
 * other one for the next 5000 drawn, then every fourth, ...; a stack tree
 * of up to 20K nodes. The page says what was left out.
 */
#define JT_HTML_TICKS_STEP 5000
#define JT_HTML_FLAME_NODES 20000
/*
 * Regions and JIT functions drawn one by one per process; beyond, one
 * box per kernel VMA (regions) or per region and source (JIT code), with
 * how many it holds.
 */
#define JT_HTML_BOXES 20000

struct html_data;

/* only_pid: that process alone; 0: every one. */
struct html_data *html_data_new(const struct jt_stream *s, uint32_t only_pid);
/* The pipeline's callbacks, ctx the html_data. */
void html_data_item(void *ctx, struct jt_model *m, const struct jt_item *it,
		    const struct jt_symres *y);
void html_data_exited(void *ctx, struct jt_model *m, struct jt_proc *p);
/* After the pipeline: the processes still alive end at the last time. */
void html_data_finish(struct html_data *d, struct jt_model *m);
/*
 * Drops what it keeps of each process's state: its copies of the JIT
 * tables hold names the pipeline owns, so this comes before
 * jt_pipe_free. A JIT item that comes after its process's exit (a
 * perf-map read out at the end) copies them again.
 */
void html_data_release(struct html_data *d);
/* The data as one JSON object, the next value of j; 0 or -errno. */
int html_data_write(struct html_data *d, struct jt_json *j);
void html_data_free(struct html_data *d);

#endif
