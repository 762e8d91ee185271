/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Output helpers shared by the views: prot, time, names made safe. */
#ifndef JT_FMT_H
#define JT_FMT_H

#include <stdint.h>
#include <stdio.h>

/* "r-xp" from PROT_* and whether the mapping is shared. */
const char *jt_prot_str(uint32_t prot, int shared, char buf[5]);
/* seconds.nanoseconds, as perf script prints times */
const char *jt_time_str(uint64_t ns, char buf[32]);

/*
 * s as a terminal may be shown it: control bytes (C0, DEL and C1), invalid
 * UTF-8 and the backslash itself written as \xNN and \\. Names come from
 * the traced processes; an ESC in one must not reach root's terminal, nor
 * a tab break a column. The result lives until JT_TX_SLOTS more calls on
 * this thread, so one printf may take several; a string with nothing to
 * escape is s itself. NULL stays NULL.
 */
#define JT_TX_SLOTS 8
const char *jt_tx(const char *s);

/*
 * A string from a file, at most len bytes: copied into buf with a NUL,
 * since nothing read from a file may be trusted to end in one. NULL when
 * len is 0 (no string).
 */
const char *jt_bounded_str(char *buf, size_t size, const char *s, size_t len);

#endif
