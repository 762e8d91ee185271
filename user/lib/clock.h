/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* The one clock jittrace times things by: BPF's, perf's (use_clockid) and ours.
 */
#ifndef JT_CLOCK_H
#define JT_CLOCK_H

#include <stdint.h>

/* CLOCK_MONOTONIC in nanoseconds. */
uint64_t jt_mono_ns(void);

#endif
