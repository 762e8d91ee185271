// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Three arrays of initialised data (.data, file-backed), each exactly a
 * page on a page of its own, and the function that writes the first.
 */
long jt_counters[512] __attribute__((aligned(4096))) = { 1 };
long jt_table[512] __attribute__((aligned(4096))) = { 2 };
long jt_config[512] __attribute__((aligned(4096))) = { 3 };

__attribute__((noinline)) void jt_fill(long v)
{
	int i;

	for (i = 0; i < 512; i++)
		jt_counters[i] += v;
}
