/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
#ifndef JT_RESERVE_H
#define JT_RESERVE_H

#include <stddef.h>

/*
 * Room for need elements of elem bytes in the array *arr (a pointer to
 * the array pointer) of capacity *cap, doubling: 0 or -ENOMEM, with the
 * array untouched on failure.
 */
int jt_reserve(void *arr, size_t *cap, size_t need, size_t elem);

#endif
