/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
#ifndef JT_AUDIT_LIVE_H
#define JT_AUDIT_LIVE_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

/* audit -p: findings of a running process, and answers for addrs. */
int jt_audit_live(pid_t pid, const uint64_t *addrs, int naddrs, bool json);
struct jt_json;
/* Its findings as objects of j's open array (the agent's /audit). */
int jt_audit_live_into(pid_t pid, struct jt_json *j);

#endif
