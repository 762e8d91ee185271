// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Rows printed by blocks on two threads come out in order, each once,
 * for counts below the split, at it, and with a last block cut short
 * after an odd or an even number of blocks; the second thread formats
 * its share where the process may run on two CPUs.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "lib/cpus.h"
#include "views/print_blocks.h"

struct side {
	size_t rows, calls;
};

static void print_some(void *ctx, FILE *f, size_t from, size_t to)
{
	struct side *s = ctx;
	size_t i;

	s->calls++;
	for (i = from; i < to; i++, s->rows++)
		fprintf(f, "row %zu of the table\n", i);
}

static void check(size_t n)
{
	struct side here = {}, there = {}, want_side = {};
	char *got = NULL, *want = NULL;
	size_t got_len, want_len;
	FILE *f = open_memstream(&got, &got_len);
	FILE *w = open_memstream(&want, &want_len);

	assert_true(f && w);
	jt_print_blocks(f, n, print_some, &here, &there);
	print_some(&want_side, w, 0, n);
	assert_int_equal(fclose(f), 0);
	assert_int_equal(fclose(w), 0);
	assert_int_equal(got_len, want_len);
	assert_memory_equal(got, want, want_len);
	assert_int_equal(here.rows + there.rows, n);
	if (n < JT_PRINT_SPLIT_MIN) {
		assert_int_equal(there.calls, 0);
	} else if (jt_cpus_two()) {
		/* Every other block: the odd ones. */
		assert_int_equal(there.calls,
				 (n + JT_PRINT_BLOCK - 1) / JT_PRINT_BLOCK / 2);
	}
	free(got);
	free(want);
}

static void test_rows_print_in_order_once(void **state)
{
	if (!jt_cpus_two())
		fprintf(stderr, "NOTE: one CPU: every block formatted here\n");
	check(0);
	check(10);
	check(JT_PRINT_SPLIT_MIN - 1);
	check(JT_PRINT_SPLIT_MIN);
	check(5 * JT_PRINT_BLOCK + 17);
	check(8 * JT_PRINT_BLOCK + 1);
	check(25 * JT_PRINT_BLOCK);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rows_print_in_order_once),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
