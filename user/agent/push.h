/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Windows pushed to a Pyroscope-compatible /ingest (format=pprof), from a
 * bounded queue, by a thread of its own so a slow or dead backend never
 * holds up the capture: a failed POST is retried with backoff, and what
 * the queue cannot hold is dropped and counted.
 */
#ifndef JT_AGENT_PUSH_H
#define JT_AGENT_PUSH_H

#include <stddef.h>
#include <stdint.h>

struct jt_agent;
struct jt_push;

#define JT_PUSH_QUEUE 8	   /* windows waiting at most */
#define JT_PUSH_TRIES 5	   /* per window */
#define JT_PUSH_TIMEOUT 10 /* seconds per POST */

/*
 * auth, taken over (may be NULL): "Bearer TOKEN" goes as the Authorization
 * header, anything else as user:password (basic).
 */
struct jt_push *jt_push_start(struct jt_agent *a, const char *url, char *auth);
/* Copies buf; from/until: Unix seconds. */
void jt_push_enqueue(struct jt_push *p, int64_t from, int64_t until,
		     const void *buf, size_t len);
/* One last try for what is queued, then the thread ends. */
void jt_push_stop(struct jt_push *p);

#endif
