/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
#ifndef JT_RESERVE_H
#define JT_RESERVE_H

#include <stddef.h>

int jt_reserve_grow(void *arr, size_t *cap, size_t need, size_t elem);

/*
 * Room for need elements of elem bytes in the array *arr (a pointer to
 * the array pointer) of capacity *cap, doubling: 0 or -ENOMEM, with the
 * array untouched on failure. Inline: most calls have room already, and
 * per-item ones (the reorder queues) made a call each 1.5% of report.
 */
static inline int jt_reserve(void *arr, size_t *cap, size_t need, size_t elem)
{
	return need <= *cap ? 0 : jt_reserve_grow(arr, cap, need, elem);
}

#endif
