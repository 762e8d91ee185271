// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The hash table through its growth: small tables from the heap, and
 * tables of a huge page or more mapped on their own, aligned to it. Every
 * value is found under its hash after each growth and after removals
 * that shift others back.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <cmocka.h>
#include "lib/hash.h"

#define HUGE_PAGE (2UL << 20)

static bool same(const void *val, const void *key)
{
	return val == key;
}

/* Values are 1..n as pointers; their hashes collide in runs of three. */
static uint64_t hash_of(uintptr_t v)
{
	return jt_hash_u64(v / 3);
}

static void check_all(const struct jt_hash *h, uintptr_t n, uintptr_t gone)
{
	uintptr_t v;

	for (v = 1; v <= n; v++) {
		void *got = jt_hash_find(h, hash_of(v), same, (void *)v);

		assert_ptr_equal(got, v % 2 && v <= gone ? NULL : (void *)v);
	}
}

static void test_grows_past_a_huge_page_and_keeps_every_value(void **state)
{
	/* 150,000 values: the table's last growth is to 512K slots, 8 MiB. */
	const uintptr_t n = 150000;
	struct jt_hash h = {};
	bool mapped = false;
	uintptr_t v;

	for (v = 1; v <= n; v++) {
		assert_int_equal(jt_hash_add(&h, hash_of(v), (void *)v), 0);
		if (h.cap * sizeof(*h.e) >= HUGE_PAGE) {
			assert_int_equal((uintptr_t)h.e % HUGE_PAGE, 0);
			mapped = true;
		}
	}
	assert_true(mapped);
	assert_int_equal(h.cap, 512 * 1024);
	assert_int_equal(h.n, n);
	check_all(&h, n, 0);
	/* Every odd value of the first 100,000 out: the rest are shifted. */
	for (v = 1; v <= 100000; v += 2)
		assert_ptr_equal(jt_hash_del(&h, hash_of(v), same, (void *)v),
				 (void *)v);
	assert_int_equal(h.n, n - 50000);
	check_all(&h, n, 100000);
	jt_hash_free(&h);
	assert_null(h.e);
	assert_int_equal(h.cap, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(
			test_grows_past_a_huge_page_and_keeps_every_value),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
