/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The agent's reader: the live stream through the pipeline, every sample
 * named at its own time, cut into one pprof profile per window (spooled
 * and pushed) and one per HTTP request.
 */
#ifndef JT_AGENT_PROFILES_H
#define JT_AGENT_PROFILES_H

#include "agent/agent.h"

/* The thread: reads a->fd until the capture closes it. */
void *jt_profiles_run(void *agent);
/*
 * The next `seconds` of samples (of pid, or all when 0) as a gzipped
 * pprof in *buf (the caller frees it): blocks until they are all read.
 * 0, -EBUSY (too many requests at once), -ESHUTDOWN, -ETIMEDOUT, -ENOMEM.
 */
int jt_profiles_request(struct jt_agent *a, uint32_t pid, uint64_t seconds,
			void **buf, size_t *len);

#define JT_AGENT_MAX_REQS 4

#endif
