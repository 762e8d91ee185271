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
/* Who asked for a profile, and how to tell that they left. */
struct jt_profile_asker {
	uint32_t pid;	  /* only this process; 0: all */
	uid_t uid;	  /* only this user's processes; -1: all */
	bool hide_kernel; /* kernel addresses as 0 (kptr_restrict) */
	bool (*gone)(void *ctx);
	void *ctx;
};

/*
 * The next `seconds` of samples as a gzipped pprof in *buf (the caller
 * frees it): blocks until they are all read, or the asker is gone.
 * 0, -EBUSY (too many requests at once), -ESHUTDOWN, -ETIMEDOUT,
 * -ECONNABORTED, -ENOMEM.
 */
int jt_profiles_request(struct jt_agent *a, const struct jt_profile_asker *who,
			uint64_t seconds, void **buf, size_t *len);

#define JT_AGENT_MAX_REQS 4

#endif
