// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Data objects by file page: the writable segment wins a page two
 * segments share, objects that began on an earlier page count, nested
 * objects are found, and versioned copies of one name come once.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>
#include <elf.h>
#include "model/datasym.h"
#include "model/elfsyms.h"

/* The layout of a small library: .rodata, then .data from 0x3e60. */
static struct jt_elfseg segs[] = {
	{ 0x2000, 0x98, 0x2000, PF_R },
	{ 0x2e60, 0x41a0, 0x3e60, PF_R | PF_W },
};

static const char *const A = "a", *const BIG = "big", *const IN = "inner",
			 *const ERR = "errlist";

/* By start, as the reader sorts them; errlist twice, as glibc has it. */
static struct jt_elfsym objs[] = {
	{ 0x3e60, 0x3e68, A },	 { 0x4f00, 0x6100, BIG },
	{ 0x5010, 0x5020, IN },	 { 0x6200, 0x6300, ERR },
	{ 0x6200, 0x6340, ERR },
};

static struct jt_elffile file = { .path = "lib",
				  .ok = 1,
				  .objs = objs,
				  .nobjs = 5,
				  .segs = segs,
				  .nsegs = 2 };

static int setup(void **state)
{
	return jt_elf_index_objects(&file);
}

static void test_writable_segment_wins_a_shared_page(void **state)
{
	uint64_t va;

	/* File page 0x2000 holds .rodata and the start of .data. */
	assert_int_equal(jt_elf_page_vaddr(&file, 0x2000, &va), 0);
	assert_int_equal(va, 0x3000);
	assert_int_equal(jt_elf_page_vaddr(&file, 0x9000, &va), -1);
}

static void test_objects_on_a_page(void **state)
{
	struct jt_datasym d[8];

	/* va 0x4000-0x5000: big starts 0xf00 in. */
	assert_int_equal(jt_datasym_file_page(&file, 0x3000, d, 8), 1);
	assert_ptr_equal(d[0].name, BIG);
	assert_int_equal(d[0].offset, 0xf00);
	assert_int_equal(d[0].size, 0x1200);
	/* va 0x5000: big began on the page before; inner lies in it. */
	assert_int_equal(jt_datasym_file_page(&file, 0x4000, d, 8), 2);
	assert_ptr_equal(d[0].name, BIG);
	assert_int_equal(d[0].offset, -0x100);
	assert_ptr_equal(d[1].name, IN);
	assert_int_equal(d[1].offset, 0x10);
	/* va 0x6000: the end of big, and errlist once. */
	assert_int_equal(jt_datasym_file_page(&file, 0x5000, d, 8), 2);
	assert_ptr_equal(d[1].name, ERR);
	/* More than fit: the count says so, out holds the first. */
	assert_int_equal(jt_datasym_file_page(&file, 0x4000, d, 1), 2);
	assert_ptr_equal(d[0].name, BIG);
}

static void test_objects_by_range(void **state)
{
	const struct jt_elfsym *o;

	/* An address inside inner is inside big too. */
	assert_int_equal(jt_elf_objects(&file, 0x5018, 0x5019, &o), 2);
	assert_ptr_equal(o[0].name, BIG);
	assert_ptr_equal(o[1].name, IN);
	/* After inner ends, big still holds it: inner is listed, to skip. */
	assert_int_equal(jt_elf_objects(&file, 0x6000, 0x6001, &o), 2);
	assert_ptr_equal(o[0].name, BIG);
	assert_true(o[1].end <= 0x6000);
	assert_int_equal(jt_elf_objects(&file, 0x3e68, 0x3e70, &o), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_writable_segment_wins_a_shared_page),
		cmocka_unit_test(test_objects_on_a_page),
		cmocka_unit_test(test_objects_by_range),
	};

	return cmocka_run_group_tests(tests, setup, NULL);
}
