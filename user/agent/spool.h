/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Windows kept on disk: DIR/jittrace-HOST-START.pb.gz, each written under
 * a temporary name and renamed, so a reader never sees half a profile;
 * the oldest go once the directory holds more than its limit.
 */
#ifndef JT_AGENT_SPOOL_H
#define JT_AGENT_SPOOL_H

#include <stddef.h>
#include <stdint.h>

struct jt_agent;
struct jt_spool;

/* NULL after saying why on stderr. */
struct jt_spool *jt_spool_open(struct jt_agent *a, const char *dir,
			       uint64_t max_bytes);
/* start: the window's start, Unix seconds. */
void jt_spool_write(struct jt_spool *s, int64_t start, const void *buf,
		    size_t len);
void jt_spool_close(struct jt_spool *s);

#endif
