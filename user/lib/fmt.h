/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Output helpers shared by the views: prot, time. */
#ifndef JT_FMT_H
#define JT_FMT_H

#include <stdint.h>
#include <stdio.h>

/* "r-xp" from PROT_* and whether the mapping is shared. */
const char *jt_prot_str(uint32_t prot, int shared, char buf[5]);
/* seconds.nanoseconds, as perf script prints times */
const char *jt_time_str(uint64_t ns, char buf[32]);

#endif
