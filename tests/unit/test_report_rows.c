// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * report's row order: the keyed merge sort against a plain comparison,
 * down to rows that differ only in their names' source.
 */
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "views/report_rows.h"

static bool graph;

/* perf report's order, read straight from the rows and their strings. */
static int plain_cmp(const void *a, const void *b)
{
	const struct row *x = *(struct row *const *)a,
			 *y = *(struct row *const *)b;
	int c;

	if (graph && x->children != y->children)
		return x->children > y->children ? -1 : 1;
	if (x->samples != y->samples)
		return x->samples > y->samples ? -1 : 1;
	if ((c = strcmp(x->comm, y->comm)))
		return c;
	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	if ((c = strcmp(x->dso, y->dso)) || (c = strcmp(x->sym, y->sym)) ||
	    (c = strcmp(x->dsym, y->dsym)))
		return c;
	return x->source - y->source;
}

/* Names that tie on their first 8 and 16 bytes and differ past them,
 * bytes above 0x7f, and the empty name; one pointer each, as interned. */
static const char *const syms[] = {
	"",
	"a",
	"many_1",
	"many_12",
	"many_123",
	"many_1234",
	"many_12345678901",
	"many_123456789012",
	"many_1234567890123",
	"Ljava/util/HashMap;::get",
	"Ljava/util/HashMap;::put",
	"Ljava/util/HashMap;::putVal",
	"Ljava/util/HashMap",
	"\xc3\xa9t\xc3\xa9",
	"zzzz",
};
static const char *const comms[] = { "java", "node", "jav" };
static const char *const dsos[] = { "jit-1.dump", "libc.so.6", "[anon]" };
static const char *const dsyms[] = { "-", "obj+0x8" };

#define NROWS 600

static void test_order_matches_plain_compare(void **state)
{
	static struct row rows[NROWS];
	struct row *got[NROWS], *want[NROWS];
	unsigned int seed = 7, round;
	size_t n, i, j, want_n;

	for (round = 0; round < 60; round++) {
		graph = round & 1;
		want_n = 2 + rand_r(&seed) % (NROWS - 1);
		for (n = 0; n < want_n;) {
			struct row w = {
				.comm = comms[rand_r(&seed) % 3],
				.pid = 1 + rand_r(&seed) % 3,
				.dso = dsos[rand_r(&seed) % 3],
				.sym = syms[rand_r(&seed) % 15],
				.dsym = dsyms[rand_r(&seed) % 2],
				/* rows may differ in where a name came from */
				.source = rand_r(&seed) % 3,
				.samples = rand_r(&seed) % 4,
				.children = rand_r(&seed) % 3,
			};

			/* Rows are groups: no two share every key. */
			for (i = 0; i < n; i++)
				if (rows[i].comm == w.comm &&
				    rows[i].pid == w.pid &&
				    rows[i].dso == w.dso &&
				    rows[i].sym == w.sym &&
				    rows[i].dsym == w.dsym &&
				    rows[i].source == w.source)
					break;
			if (i == n)
				rows[n++] = w;
		}
		for (i = 0; i < n; i++)
			got[i] = want[i] = &rows[i];
		qsort(want, n, sizeof(*want), plain_cmp);
		assert_int_equal(jt_rows_order(got, n, graph), 0);
		for (j = 0; j < n; j++)
			assert_ptr_equal(got[j], want[j]);
	}
}

static void test_order_of_none_and_one(void **state)
{
	struct row w = { .comm = "a", .dso = "b", .sym = "c", .dsym = "-" };
	struct row *one[1] = { &w };

	assert_int_equal(jt_rows_order(NULL, 0, false), 0);
	assert_int_equal(jt_rows_order(one, 1, true), 0);
	assert_ptr_equal(one[0], &w);
}

/*
 * Enough rows for the sort to split across two threads (16K and more):
 * the same order as the plain comparison, for an even and an odd count,
 * with many ties on the count and on the first bytes of names.
 */
static void test_order_of_many_rows_on_two_threads(void **state)
{
	static const size_t counts[] = { 40000, 40001 };
	unsigned int seed = 3;
	size_t c, i, n;

	for (c = 0; c < 4; c++) {
		struct row *rows, **got, **want, *tmp;

		n = counts[c % 2];
		graph = c >= 2;
		rows = calloc(n, sizeof(*rows));
		got = malloc(n * sizeof(*got));
		want = malloc(n * sizeof(*want));
		assert_true(rows && got && want);
		for (i = 0; i < n; i++) {
			/* Distinct in pid, symbol, dsym and source together. */
			rows[i] = (struct row){
				.comm = comms[rand_r(&seed) % 3],
				.pid = 1 + i / 90,
				.dso = dsos[rand_r(&seed) % 3],
				.sym = syms[i % 15],
				.dsym = dsyms[i / 15 % 2],
				.source = i / 30 % 3,
				.samples = rand_r(&seed) % 5,
				.children = rand_r(&seed) % 4,
			};
			got[i] = want[i] = &rows[i];
		}
		/* In no order the sort could lean on. */
		for (i = n - 1; i > 0; i--) {
			size_t j = rand_r(&seed) % (i + 1);

			tmp = got[i];
			got[i] = want[i] = got[j];
			got[j] = want[j] = tmp;
		}
		qsort(want, n, sizeof(*want), plain_cmp);
		assert_int_equal(jt_rows_order(got, n, graph), 0);
		for (i = 0; i < n; i++)
			assert_ptr_equal(got[i], want[i]);
		free(rows);
		free(got);
		free(want);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_order_matches_plain_compare),
		cmocka_unit_test(test_order_of_none_and_one),
		cmocka_unit_test(test_order_of_many_rows_on_two_threads),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
