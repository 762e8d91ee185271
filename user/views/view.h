/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* What the offline views share: opening a recording and naming regions. */
#ifndef JT_VIEW_H
#define JT_VIEW_H

#include <stdio.h>
#include "model/model.h"
#include "model/stream.h"
#include "model/symbolize.h"

/* Load path into s and print its warnings; 0, or 1 after an error. */
int jt_view_open(struct jt_stream *s, const char *path);
/* The same, and name every sample: where report, script and audit start. */
int jt_view_open_named(struct jt_stream *s, struct jt_syms *y,
		       const char *path);
/* "[heap]", "[anon]", the path...: what /proc/PID/maps would print. */
const char *jt_region_name(const struct jt_region *r);
const char *jt_origin_name(uint16_t origin);
const char *jt_event_name(uint16_t type);
/* "# probes: mmap=fentry ...": how the recording's events were caught. */
void jt_print_probes(FILE *f, const struct jt_stream *s);
void jt_print_loss_footer(FILE *f, const struct jt_stream *s,
			  const struct jt_model *m);

#endif
