// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Built -O2 -fomit-frame-pointer (the Makefile): a known call chain with
 * no frame pointers. "chain S": main -> c -> b -> a, a spinning; "qsort
 * S": main -> sort_many -> libc's qsort -> cmp. Until the process has
 * used S seconds of CPU: as many samples on any machine.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static volatile unsigned long sink;

__attribute__((noinline)) static unsigned long a(unsigned long x)
{
	unsigned long i, s = x;

	for (i = 0; i < 100000; i++)
		s = s * 6364136223846793005ULL + i;
	return s;
}

__attribute__((noinline)) static unsigned long b(unsigned long x)
{
	unsigned long s = a(x) ^ 1;

	sink += s;
	return s + 1;
}

__attribute__((noinline)) static unsigned long c(unsigned long x)
{
	unsigned long s = b(x) * 3;

	sink += s;
	return s + 2;
}

static int cmp(const void *p, const void *q)
{
	unsigned long x = *(const unsigned long *)p,
		      y = *(const unsigned long *)q;
	int i;

	/* Work in the comparator, so most samples land in it. */
	for (i = 0; i < 40; i++)
		x = x * 2862933555777941757ULL + 3037000493ULL;
	sink += x;
	return (x & 0xffff) < (y & 0xffff) ? -1 : (x & 0xffff) > (y & 0xffff);
}

__attribute__((noinline)) static void sort_many(unsigned long *v, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		v[i] = i * 7919 % n;
	qsort(v, n, sizeof(*v), cmp);
	sink += v[0]; /* no tail call: sort_many stays on the stack */
}

static double cpu_seconds(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	double until = cpu_seconds() + (argc > 2 ? atof(argv[2]) : 1);
	unsigned long *v = malloc(4096 * sizeof(*v));
	long r;

	if (argc < 2 || !v)
		return 2;
	for (r = 0; cpu_seconds() < until; r++) {
		if (!strcmp(argv[1], "qsort"))
			sort_many(v, 4096);
		else
			sink += c(r);
	}
	free(v);
	return 0;
}
