/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* The agent's counters in Prometheus' text format (/metrics). */
#ifndef JT_AGENT_METRICS_H
#define JT_AGENT_METRICS_H

#include <stdio.h>
#include "agent/agent.h"

void jt_metrics_write(struct jt_agent *a, FILE *f);

#endif
