// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Burns CPU in one named function of its own: ELF symbol ground truth.
 * Counts CPU time, so samples do not depend on the machine's load.
 */
#include <stdlib.h>
#include <time.h>

__attribute__((noinline)) unsigned long spin_here(double secs)
{
	struct timespec t0, t;
	unsigned long x = 0;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t0);
	do {
		for (int i = 0; i < 100000; i++)
			x = x * 6364136223846793005UL + i;
		clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
	} while (t.tv_sec - t0.tv_sec + (t.tv_nsec - t0.tv_nsec) / 1e9 < secs);
	return x;
}

int main(int argc, char **argv)
{
	return spin_here(argc > 1 ? atof(argv[1]) : 1) == 42;
}
