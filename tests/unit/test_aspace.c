// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The address-space operations, alone and combined, with exact regions. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <cmocka.h>
#include <sys/mman.h>
#include "jt_abi.h"
#include "model/aspace.h"

#define P(n) (0x7f0000000000ULL + (n)*4096ULL)

static struct jt_region region(int first, int last_excl, uint32_t prot,
			       uint16_t kind)
{
	struct jt_region r = { .start = P(first),
			       .end = P(last_excl),
			       .prot = prot,
			       .kind = kind,
			       .origin = JT_EV_MMAP };

	if (kind == JT_RK_FILE) {
		r.path = "/lib/x.so";
		r.pgoff = 0;
	}
	return r;
}

/* Assert the exact list of [start,end) page pairs, in order. */
static void expect_regions(const struct jt_aspace *as, int n, ...)
{
	va_list ap;
	int i;

	assert_int_equal(jt_aspace_count(as), n);
	va_start(ap, n);
	for (i = 0; i < n; i++) {
		uint64_t s = P(va_arg(ap, int)), e = P(va_arg(ap, int));

		assert_int_equal(jt_aspace_nth(as, i)->start, s);
		assert_int_equal(jt_aspace_nth(as, i)->end, e);
	}
	va_end(ap);
}

static void observe(struct jt_aspace *as, int first, int last_excl)
{
	struct jt_kvma v = { P(first), P(last_excl), 0 };

	jt_aspace_observe(as, &v);
}

static void test_map_and_find(void **state)
{
	struct jt_aspace *as = jt_aspace_new();
	struct jt_region r = region(0, 2, PROT_READ, JT_RK_ANON);

	assert_int_equal(jt_aspace_map(as, &r), 0);
	assert_non_null(jt_aspace_find(as, P(1) + 5));
	assert_null(jt_aspace_find(as, P(2)));
	assert_null(jt_aspace_find(as, P(0) - 1));
	jt_aspace_put(as);
}

/* The JIT case: adjacent pages, one kernel VMA, split and merged back. */
static void test_split_then_merge_back(void **state)
{
	struct jt_aspace *as = jt_aspace_new();
	int i;

	for (i = 2; i >= 0; i--) {
		struct jt_region r =
			region(i, i + 1, PROT_READ | PROT_EXEC, JT_RK_ANON);

		jt_aspace_map(as, &r);
		observe(as, i, 3);
	}
	expect_regions(as, 3, 0, 1, 1, 2, 2, 3);
	for (i = 0; i < 3; i++) {
		assert_int_equal(jt_aspace_kvma(as, jt_aspace_nth(as, i)).start,
				 P(0));
		assert_int_equal(jt_aspace_kvma(as, jt_aspace_nth(as, i)).end,
				 P(3));
		assert_int_equal(
			jt_aspace_vma_members(as, jt_aspace_nth(as, i)), 3);
	}
	/* mprotect the middle page RW: the kernel splits the VMA in three. */
	jt_aspace_protect(as, P(1), P(2), PROT_READ | PROT_WRITE);
	observe(as, 1, 2);
	assert_int_equal(jt_aspace_kvma(as, jt_aspace_nth(as, 0)).end, P(1));
	assert_int_equal(jt_aspace_kvma(as, jt_aspace_nth(as, 2)).start, P(2));
	assert_int_equal(jt_aspace_vma_members(as, jt_aspace_nth(as, 1)), 1);
	/* And back to RX: the kernel merges, the regions stay three. */
	jt_aspace_protect(as, P(1), P(2), PROT_READ | PROT_EXEC);
	observe(as, 0, 3);
	expect_regions(as, 3, 0, 1, 1, 2, 2, 3);
	assert_int_equal(jt_aspace_vma_members(as, jt_aspace_nth(as, 0)), 3);
	assert_int_equal(jt_aspace_nth(as, 1)->prot, PROT_READ | PROT_EXEC);
	jt_aspace_put(as);
}

static void test_protect_splits_one_region(void **state)
{
	struct jt_aspace *as = jt_aspace_new();
	struct jt_region r = region(0, 4, PROT_READ, JT_RK_FILE);

	jt_aspace_map(as, &r);
	jt_aspace_protect(as, P(1), P(3), PROT_READ | PROT_WRITE);
	expect_regions(as, 3, 0, 1, 1, 3, 3, 4);
	assert_int_equal(jt_aspace_nth(as, 0)->prot, PROT_READ);
	assert_int_equal(jt_aspace_nth(as, 1)->prot, PROT_READ | PROT_WRITE);
	assert_int_equal(jt_aspace_nth(as, 2)->prot, PROT_READ);
	/* File offsets follow the split. */
	assert_int_equal(jt_aspace_nth(as, 1)->pgoff, 4096);
	assert_int_equal(jt_aspace_nth(as, 2)->pgoff, 3 * 4096);
	jt_aspace_put(as);
}

static void test_map_fixed_over_several(void **state)
{
	struct jt_aspace *as = jt_aspace_new();
	struct jt_region a = region(0, 2, PROT_READ, JT_RK_FILE);
	struct jt_region b = region(2, 4, PROT_READ, JT_RK_ANON);
	struct jt_region c = region(4, 6, PROT_READ, JT_RK_FILE);
	struct jt_region fixed =
		region(1, 5, PROT_READ | PROT_WRITE, JT_RK_ANON);

	jt_aspace_map(as, &a);
	jt_aspace_map(as, &b);
	jt_aspace_map(as, &c);
	jt_aspace_map(as, &fixed);
	expect_regions(as, 3, 0, 1, 1, 5, 5, 6);
	assert_int_equal(jt_aspace_nth(as, 1)->prot, PROT_READ | PROT_WRITE);
	assert_int_equal(jt_aspace_nth(as, 2)->kind, JT_RK_FILE);
	assert_int_equal(jt_aspace_nth(as, 2)->pgoff, 4096);
	jt_aspace_put(as);
}

static void test_munmap_middle_piece(void **state)
{
	struct jt_aspace *as = jt_aspace_new();
	struct jt_region r = region(0, 10, PROT_READ, JT_RK_FILE);

	jt_aspace_map(as, &r);
	observe(as, 0, 10);
	jt_aspace_cut(as, P(3), P(5));
	expect_regions(as, 2, 0, 3, 5, 10);
	assert_int_equal(jt_aspace_nth(as, 1)->pgoff, 5 * 4096);
	/* The kernel split its VMA too. */
	assert_int_equal(jt_aspace_kvma(as, jt_aspace_nth(as, 0)).end, P(3));
	assert_int_equal(jt_aspace_kvma(as, jt_aspace_nth(as, 1)).start, P(5));
	assert_null(jt_aspace_find(as, P(4)));
	jt_aspace_put(as);
}

static void test_mremap_grow_and_shrink_in_place(void **state)
{
	struct jt_aspace *as = jt_aspace_new();
	struct jt_region r = region(0, 2, PROT_READ, JT_RK_ANON);

	jt_aspace_map(as, &r);
	jt_aspace_remap(as, P(0), P(2) - P(0), P(0), P(4) - P(0), false, 9);
	expect_regions(as, 1, 0, 4);
	jt_aspace_remap(as, P(0), P(4) - P(0), P(0), P(1) - P(0), false, 10);
	expect_regions(as, 1, 0, 1);
	jt_aspace_put(as);
}

static void test_mremap_maymove(void **state)
{
	struct jt_aspace *as = jt_aspace_new();
	struct jt_region a = region(0, 1, PROT_READ, JT_RK_FILE);
	struct jt_region b = region(1, 2, PROT_READ | PROT_WRITE, JT_RK_FILE);

	b.pgoff = 4096;
	jt_aspace_map(as, &a);
	jt_aspace_map(as, &b);
	/* Two pieces move to page 100 and grow to three pages. */
	jt_aspace_remap(as, P(0), 2 * 4096, P(100), 3 * 4096, false, 77);
	expect_regions(as, 2, 100, 101, 101, 103);
	assert_int_equal(jt_aspace_nth(as, 0)->prot, PROT_READ);
	assert_int_equal(jt_aspace_nth(as, 1)->pgoff, 4096);
	assert_int_equal(jt_aspace_nth(as, 1)->born_ns, 77);
	assert_int_equal(jt_aspace_nth(as, 1)->origin, JT_EV_MREMAP);
	jt_aspace_put(as);
}

static void test_mremap_dontunmap_keeps_old(void **state)
{
	struct jt_aspace *as = jt_aspace_new();
	struct jt_region a = region(0, 2, PROT_READ, JT_RK_ANON);

	jt_aspace_map(as, &a);
	jt_aspace_remap(as, P(0), 2 * 4096, P(50), 2 * 4096, true, 1);
	expect_regions(as, 2, 0, 2, 50, 52);
	jt_aspace_put(as);
}

static void test_brk_up_and_down(void **state)
{
	struct jt_aspace *as = jt_aspace_new();
	uint64_t base = P(1000);

	jt_aspace_brk(as, base, base + 0x21000, 1);
	expect_regions(as, 1, 1000, 1033);
	assert_int_equal(jt_aspace_nth(as, 0)->kind, JT_RK_HEAP);
	jt_aspace_brk(as, base, base + 0x42001, 2); /* not page aligned */
	expect_regions(as, 1, 1000, 1067);
	assert_int_equal(jt_aspace_nth(as, 0)->born_ns, 1);
	jt_aspace_brk(as, base, base + 0x10000, 3);
	expect_regions(as, 1, 1000, 1016);
	jt_aspace_brk(as, base, base, 4);
	assert_int_equal(jt_aspace_count(as), 0);
	jt_aspace_put(as);
}

static void test_clone_is_independent(void **state)
{
	struct jt_aspace *as = jt_aspace_new(), *copy;
	struct jt_region a = region(0, 4, PROT_READ, JT_RK_ANON);

	jt_aspace_map(as, &a);
	copy = jt_aspace_clone(as);
	jt_aspace_cut(copy, P(1), P(2));
	expect_regions(copy, 2, 0, 1, 2, 4);
	expect_regions(as, 1, 0, 4);
	jt_aspace_put(copy);
	jt_aspace_put(as);
}

/* A sequence a JIT with W^X toggling produces, checked at every step. */
static void test_jit_churn_sequence(void **state)
{
	struct jt_aspace *as = jt_aspace_new();
	struct jt_region big = region(0, 16, PROT_NONE, JT_RK_ANON);
	struct jt_region code =
		region(4, 6, PROT_READ | PROT_WRITE, JT_RK_ANON);

	jt_aspace_map(as, &big);  /* reserve */
	jt_aspace_map(as, &code); /* MAP_FIXED commit */
	jt_aspace_protect(as, P(4), P(6), PROT_READ | PROT_EXEC);
	jt_aspace_cut(as, P(5), P(6)); /* free half */
	jt_aspace_remap(as, P(4), 4096, P(20), 4096, false, 5);
	expect_regions(as, 3, 0, 4, 6, 16, 20, 21);
	assert_int_equal(jt_aspace_nth(as, 2)->prot, PROT_READ | PROT_EXEC);
	jt_aspace_put(as);
}

static void test_cow_overlay_and_sharing(void **state)
{
	struct jt_aspace *as = jt_aspace_new(), *child;
	struct jt_region file =
		region(0, 4, PROT_READ | PROT_WRITE, JT_RK_FILE);
	struct jt_region anon =
		region(10, 13, PROT_READ | PROT_WRITE, JT_RK_ANON);
	struct jt_region shared =
		region(20, 21, PROT_READ | PROT_WRITE, JT_RK_FILE);

	file.mflags = MAP_PRIVATE;
	anon.mflags = MAP_PRIVATE | MAP_ANONYMOUS;
	shared.mflags = MAP_SHARED;
	jt_aspace_map(as, &file);
	jt_aspace_map(as, &anon);
	jt_aspace_map(as, &shared);
	/* A private file page is the file's until written. */
	assert_int_equal(jt_aspace_sharing(as, P(1) + 5), JT_SHARE_FILE);
	jt_aspace_cow(as, &(struct jt_cowpage){ .page = P(1), .time = 100 });
	assert_int_equal(jt_aspace_sharing(as, P(1) + 5), JT_SHARE_PRIVATE);
	assert_int_equal(jt_aspace_sharing(as, P(2)), JT_SHARE_FILE);
	assert_int_equal(jt_aspace_sharing(as, P(11)), JT_SHARE_PRIVATE);
	assert_int_equal(jt_aspace_sharing(as, P(20)), JT_SHARE_FILE);
	assert_int_equal(jt_aspace_sharing(as, P(30)), JT_SHARE_NONE);
	/* fork: both sides share every private page until they write. */
	child = jt_aspace_clone(as);
	jt_aspace_forked(child, 200);
	jt_aspace_forked(as, 200);
	assert_int_equal(jt_aspace_sharing(child, P(1)), JT_SHARE_ANON);
	assert_int_equal(jt_aspace_sharing(child, P(11)), JT_SHARE_ANON);
	assert_int_equal(jt_aspace_sharing(child, P(2)), JT_SHARE_FILE);
	jt_aspace_cow(child,
		      &(struct jt_cowpage){ .page = P(11), .time = 300 });
	assert_int_equal(jt_aspace_sharing(child, P(11)), JT_SHARE_PRIVATE);
	assert_int_equal(jt_aspace_sharing(as, P(11)), JT_SHARE_ANON);
	/* Unmapping drops the page from the overlay. */
	jt_aspace_cut(child, P(11), P(12));
	assert_null(jt_aspace_cowpage(child, P(11)));
	assert_non_null(jt_aspace_cowpage(child, P(1)));
	assert_int_equal(jt_treap_count(&child->cow), 1);
	jt_aspace_put(child);
	jt_aspace_put(as);
}

/* The region holding a, by a scan of them all. */
static const struct jt_region *scan(const struct jt_aspace *as, uint64_t a)
{
	const struct jt_region *r;
	size_t i;

	for (i = 0; i < jt_aspace_count(as); i++)
		if ((r = jt_aspace_nth(as, i))->start <= a && a < r->end)
			return r;
	return NULL;
}

/*
 * The remembered region, if any, is one of the tree as it is now, not a
 * node a change freed or copied away; and every page's first and last
 * byte finds what a scan finds.
 */
static void assert_finds(const struct jt_aspace *as)
{
	const struct jt_region *g, *r;
	uint64_t a;
	int p;

	if (as->hit)
		assert_ptr_equal(as->hit, scan(as, as->hit->start));
	for (p = 0; p < 72; p++)
		for (a = P(p); a < P(p + 1); a += 4095) {
			g = jt_aspace_find(as, a);
			r = scan(as, a);
			if (!r) {
				assert_null(g);
				continue;
			}
			assert_non_null(g);
			assert_int_equal(g->start, r->start);
			assert_int_equal(g->end, r->end);
			assert_int_equal(g->prot, r->prot);
		}
}

/*
 * A lookup remembers its region for the next; every change forgets it.
 * Random maps, protects, cuts, remaps and forks, each after a lookup
 * inside the range it changes, and lookups after it agree with a scan,
 * on both sides of a fork.
 */
static void test_find_after_every_change(void **state)
{
	struct jt_aspace *as = jt_aspace_new(), *child = NULL;
	unsigned int seed = 3;
	int i;

	for (i = 0; i < 2000; i++) {
		int a = rand_r(&seed) % 64, n = 1 + rand_r(&seed) % 6;
		uint32_t prot = rand_r(&seed) % 8;
		struct jt_region r = region(a, a + n, prot, JT_RK_ANON);
		struct jt_aspace *on = child && i % 2 ? child : as;

		jt_aspace_find(on, P(a + rand_r(&seed) % n));
		switch (rand_r(&seed) % 6) {
		case 0:
		case 1:
			assert_int_equal(jt_aspace_map(on, &r), 0);
			break;
		case 2:
			assert_int_equal(
				jt_aspace_protect(on, P(a), P(a + n), prot), 0);
			break;
		case 3:
			assert_int_equal(jt_aspace_cut(on, P(a), P(a + n)), 0);
			break;
		case 4:
			/* In place, grown or shrunk; or moved. */
			assert_int_equal(
				jt_aspace_remap(on, P(a), n * 4096ULL,
						i % 3 ? P(a) : P(64 - n),
						(1 + rand_r(&seed) % 6) *
							4096ULL,
						false, i),
				0);
			break;
		default:
			jt_aspace_put(child);
			child = jt_aspace_clone(as);
			break;
		}
		assert_finds(as);
		if (child)
			assert_finds(child);
	}
	jt_aspace_put(child);
	jt_aspace_put(as);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_map_and_find),
		cmocka_unit_test(test_find_after_every_change),
		cmocka_unit_test(test_split_then_merge_back),
		cmocka_unit_test(test_protect_splits_one_region),
		cmocka_unit_test(test_map_fixed_over_several),
		cmocka_unit_test(test_munmap_middle_piece),
		cmocka_unit_test(test_mremap_grow_and_shrink_in_place),
		cmocka_unit_test(test_mremap_maymove),
		cmocka_unit_test(test_mremap_dontunmap_keeps_old),
		cmocka_unit_test(test_brk_up_and_down),
		cmocka_unit_test(test_clone_is_independent),
		cmocka_unit_test(test_jit_churn_sequence),
		cmocka_unit_test(test_cow_overlay_and_sharing),
	};

	return cmocka_run_group_tests_name("aspace", tests, NULL, NULL);
}
