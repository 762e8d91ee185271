// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Counted names: one pointer per string while anything holds it; a name
 * nothing holds is freed only by a sweep past its death, and a name
 * taken again before that is the same pointer and lives on.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "lib/nametab.h"

static void test_one_pointer_per_string(void **state)
{
	struct jt_nametab t = {};
	const char *a = jt_name_get(&t, "frame_a_and_more", 7);
	const char *b = jt_name_get(&t, "frame_a", 7);

	assert_string_equal(a, "frame_a");
	assert_ptr_equal(a, b);
	assert_ptr_not_equal(a, jt_name_get(&t, "frame_b", 7));
	assert_int_equal(t.h.n, 2);
	jt_nametab_free(&t);
}

static void test_freed_only_past_its_death(void **state)
{
	struct jt_nametab t = {};
	const char *a, *b;

	t.now = 10;
	a = jt_name_get(&t, "a", 1);
	jt_name_ref(a);
	jt_name_put(a);
	/* Still held: a sweep leaves it. */
	assert_int_equal(jt_names_sweep(&t, UINT64_MAX), 0);
	jt_name_put(a); /* dies at 10 */
	assert_int_equal(t.h.n, 1);
	/* Samples named at 10 may still hold it. */
	assert_int_equal(jt_names_sweep(&t, 10), 0);
	assert_string_equal(a, "a");
	assert_int_equal(jt_names_sweep(&t, 11), 1);
	assert_int_equal(t.h.n, 0);
	/* A name freed and taken again is new. */
	b = jt_name_get(&t, "a", 1);
	assert_string_equal(b, "a");
	jt_nametab_free(&t);
}

static void test_taken_again_before_the_sweep_lives_on(void **state)
{
	struct jt_nametab t = {};
	const char *a, *b;

	t.now = 1;
	a = jt_name_get(&t, "moved", 5);
	jt_name_put(a);
	t.now = 2;
	b = jt_name_get(&t, "moved", 5);
	assert_ptr_equal(a, b);
	assert_int_equal(jt_names_sweep(&t, UINT64_MAX), 0);
	assert_int_equal(t.h.n, 1);
	/* It dies again, later: the graveyard takes it again. */
	t.now = 5;
	jt_name_put(b);
	assert_int_equal(jt_names_sweep(&t, 5), 0);
	assert_int_equal(jt_names_sweep(&t, 6), 1);
	jt_nametab_free(&t);
}

/* Names that come and go for ever: the table holds what is alive. */
static void test_churn_stays_bounded(void **state)
{
	struct jt_nametab t = {};
	const char *live[64] = {};
	char s[32];
	uint64_t i;

	for (i = 0; i < 200000; i++) {
		t.now = i;
		snprintf(s, sizeof(s), "Lambda$%llu/0x%llx",
			 (unsigned long long)i, (unsigned long long)i * 64);
		jt_name_put(live[i % 64]);
		live[i % 64] = jt_name_get(&t, s, strlen(s));
		assert_non_null(live[i % 64]);
		jt_names_sweep(&t, i > 100 ? i - 100 : 0);
		assert_true(t.h.n <= 64 + 101);
	}
	for (i = 0; i < 64; i++)
		jt_name_put(live[i]);
	jt_names_sweep(&t, UINT64_MAX);
	assert_int_equal(t.h.n, 0);
	jt_nametab_free(&t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_one_pointer_per_string),
		cmocka_unit_test(test_freed_only_past_its_death),
		cmocka_unit_test(test_taken_again_before_the_sweep_lives_on),
		cmocka_unit_test(test_churn_stays_bounded),
	};

	return cmocka_run_group_tests_name("nametab", tests, NULL, NULL);
}
