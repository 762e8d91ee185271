// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <time.h>
#include "lib/clock.h"

uint64_t jt_mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}
