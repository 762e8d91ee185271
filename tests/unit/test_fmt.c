// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Names made safe for a terminal: what passes, what is escaped, and how. */
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "lib/fmt.h"

/* A name with nothing to escape is handed back as it is, not copied. */
static void test_plain_names_pass_uncopied(void **state)
{
	unsigned int seed = 3, round;
	char s[80];

	for (round = 0; round < 2000; round++) {
		size_t len = rand_r(&seed) % sizeof(s), i;

		for (i = 0; i < len; i++) {
			s[i] = 0x20 + rand_r(&seed) % 0x5f;
			if (s[i] == '\\')
				s[i] = '/';
		}
		s[len] = 0;
		assert_ptr_equal(jt_tx(s), s);
	}
	assert_null(jt_tx(NULL));
}

static void test_hostile_bytes_are_escaped(void **state)
{
	static const char *const cases[][2] = {
		{ "a\x1b[2Jb", "a\\x1b[2Jb" },
		{ "back\\slash", "back\\\\slash" },
		{ "tab\there", "tab\\x09here" },
		{ "del\x7f", "del\\x7f" },
		{ "csi\xc2\x9b", "csi\\xc2\\x9b" },
		{ "bad\xff", "bad\\xff" },
		{ "cut\xc3", "cut\\xc3" },
		{ "caf\xc3\xa9", "caf\xc3\xa9" },
		{ "\xe2\x82\xac euro", "\xe2\x82\xac euro" },
	};
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		assert_string_equal(jt_tx(cases[i][0]), cases[i][1]);
}

/* A hostile byte anywhere after plain ones: the whole name is escaped. */
static void test_escape_at_every_position(void **state)
{
	char s[40], want[48];
	size_t i, len = 32;

	for (i = 0; i < len; i++) {
		memset(s, 'x', len);
		s[len] = 0;
		s[i] = '\x1b';
		memset(want, 'x', i);
		memcpy(want + i, "\\x1b", 4);
		memset(want + i + 4, 'x', len - i - 1);
		want[len + 3] = 0;
		assert_string_equal(jt_tx(s), want);
	}
}

/* One printf may take JT_TX_SLOTS escaped names at once. */
static void test_results_live_for_the_slots(void **state)
{
	const char *got[JT_TX_SLOTS];
	char in[JT_TX_SLOTS][8], want[16];
	int i;

	for (i = 0; i < JT_TX_SLOTS; i++) {
		snprintf(in[i], sizeof(in[i]), "%d\x01", i);
		got[i] = jt_tx(in[i]);
	}
	for (i = 0; i < JT_TX_SLOTS; i++) {
		snprintf(want, sizeof(want), "%d\\x01", i);
		assert_string_equal(got[i], want);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_plain_names_pass_uncopied),
		cmocka_unit_test(test_hostile_bytes_are_escaped),
		cmocka_unit_test(test_escape_at_every_position),
		cmocka_unit_test(test_results_live_for_the_slots),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
