/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
#ifndef JT_LIB_CPUS_H
#define JT_LIB_CPUS_H

#include <sched.h>
#include <stdbool.h>

/*
 * Whether this thread may run on more than one CPU (its affinity): on
 * one, a helper thread only takes the caller's turns.
 */
static inline bool jt_cpus_two(void)
{
	cpu_set_t cpus;

	return !sched_getaffinity(0, sizeof(cpus), &cpus) &&
	       CPU_COUNT(&cpus) >= 2;
}

#endif
