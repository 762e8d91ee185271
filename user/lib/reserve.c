// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include "lib/reserve.h"

int jt_reserve_grow(void *arr, size_t *cap, size_t need, size_t elem)
{
	void **p = arr, *n;
	size_t c = *cap ? *cap : 16;

	if (need <= *cap)
		return 0;
	while (c < need)
		c *= 2;
	if (c > SIZE_MAX / elem || !(n = realloc(*p, c * elem)))
		return -ENOMEM;
	*p = n;
	*cap = c;
	return 0;
}
