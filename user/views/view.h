/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* What the offline views share: opening a recording and naming regions. */
#ifndef JT_VIEW_H
#define JT_VIEW_H

#include <stdio.h>
#include "model/model.h"
#include "model/pipeline.h"
#include "model/stream.h"
#include "model/symbolize.h"

/* Open path as a stream; 0, or 1 after saying why not. */
int jt_view_open(struct jt_stream *s, const char *path);
/*
 * Run the pipeline over s, then print the stream's warnings; 0, or 1
 * after an error. p->m is the model at the end.
 */
int jt_view_run(struct jt_pipe *p, struct jt_stream *s, const char *path,
		const struct jt_pipe_ops *ops);
const char *jt_origin_name(uint16_t origin);
const char *jt_event_name(uint16_t type);
/* enum jt_cow_kind as script and audit print it. */
const char *jt_cow_kind_name(uint32_t kind);
/* "# probes: mmap=fentry ...": how the recording's events were caught. */
void jt_print_probes(FILE *f, const struct jt_stream *s);
void jt_print_loss_footer(FILE *f, const struct jt_stream *s,
			  const struct jt_pipe *p);

#endif
