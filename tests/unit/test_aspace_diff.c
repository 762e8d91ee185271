// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The address space against a brute-force reference that keeps one entry
 * per page: random mmap, MAP_FIXED over what is there, mprotect and
 * munmap of sub-ranges, mremap (grow, shrink, move, keep the old), kernel
 * VMAs seen over random ranges, copy-on-write and fork, compared after
 * every step. JT_SEED=N reruns one sequence; JT_OPS=N sets its length.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <sys/mman.h>
#include "jt_abi.h"
#include "model/aspace.h"

#define NP 96
#define BASE 0x7f0000000000ULL
#define P(n) (BASE + (uint64_t)(n)*JT_PAGE_SIZE)
#define NK 256

struct ref {
	bool mapped[NP];
	struct jt_region r[NP]; /* the region holding each page */
	struct jt_kvma k[NK];	/* kernel VMAs, unordered */
	int nk;
	uint64_t cow[NP];  /* time the page became private; 0: not */
	uint64_t fork[NP]; /* the fork that shared the page; 0: none */
};

static uint64_t rng_state;
static unsigned long step;

static uint32_t rnd(uint32_t n)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return (uint32_t)(rng_state >> 11) % n;
}

static int page_of(uint64_t a)
{
	return (int)((a - BASE) / JT_PAGE_SIZE);
}

static void ref_split(struct ref *f, int x)
{
	int i, s, e;

	if (x <= 0 || x >= NP || !f->mapped[x] || page_of(f->r[x].start) == x)
		return;
	s = page_of(f->r[x].start);
	e = page_of(f->r[x].end);
	for (i = s; i < e; i++) {
		if (i < x) {
			f->r[i].end = P(x);
		} else {
			f->r[i].pgoff += P(x) - f->r[i].start;
			f->r[i].start = P(x);
		}
	}
}

static void ref_kclear(struct ref *f, uint64_t s, uint64_t e)
{
	int i;

	for (i = 0; i < f->nk; i++) {
		struct jt_kvma *v = &f->k[i];

		if (v->end <= s || v->start >= e)
			continue;
		if (v->start < s && v->end > e) {
			f->k[f->nk] = *v;
			f->k[f->nk++].start = e;
			v->end = s;
		} else if (v->start < s) {
			v->end = s;
		} else if (v->end > e) {
			v->start = e;
		} else {
			f->k[i--] = f->k[--f->nk];
		}
	}
}

static void ref_cut(struct ref *f, int s, int e)
{
	int i;

	ref_split(f, s);
	ref_split(f, e);
	for (i = s; i < e; i++) {
		f->mapped[i] = false;
		f->cow[i] = 0;
	}
	ref_kclear(f, P(s), P(e));
}

static void ref_set(struct ref *f, const struct jt_region *r, uint64_t fork)
{
	int i;

	for (i = page_of(r->start); i < page_of(r->end); i++) {
		f->mapped[i] = true;
		f->r[i] = *r;
		f->fork[i] = fork;
	}
}

static void ref_map(struct ref *f, const struct jt_region *r)
{
	ref_cut(f, page_of(r->start), page_of(r->end));
	ref_set(f, r, 0);
}

static void ref_observe(struct ref *f, const struct jt_kvma *v)
{
	ref_kclear(f, v->start, v->end);
	f->k[f->nk++] = *v;
}

static void ref_protect(struct ref *f, int s, int e, uint32_t prot)
{
	int i;

	ref_split(f, s);
	ref_split(f, e);
	for (i = s; i < e; i++)
		f->r[i].prot = prot;
}

static void ref_remap(struct ref *f, int old, int olen, int new, int nlen,
		      bool keep, uint64_t now)
{
	struct jt_region moved[NP];
	uint64_t forks[NP];
	int i, n = 0;

	if (new == old) {
		if (nlen == olen)
			return;
		if (nlen < olen) {
			ref_cut(f, old + nlen, old + olen);
			return;
		}
		ref_cut(f, old + olen, old + nlen);
		if (!f->mapped[old + olen - 1])
			return;
		struct jt_region g = f->r[old + olen - 1];

		g.end = P(old + nlen);
		ref_set(f, &g, f->fork[old + olen - 1]);
		return;
	}
	ref_split(f, old);
	ref_split(f, old + olen);
	for (i = old; i < old + olen; i++)
		if (f->mapped[i] && page_of(f->r[i].start) == i) {
			forks[n] = f->fork[i];
			moved[n++] = f->r[i];
		}
	if (!keep)
		ref_cut(f, old, old + olen);
	ref_cut(f, new, new + nlen);
	for (i = 0; i < n; i++) {
		struct jt_region r = moved[i];

		r.start = r.start - P(old) + P(new);
		r.end = r.end - P(old) + P(new);
		if (i == n - 1 && nlen > olen)
			r.end = P(new + nlen);
		if (r.start >= P(new + nlen))
			break;
		if (r.end > P(new + nlen))
			r.end = P(new + nlen);
		r.born_ns = now;
		r.origin = JT_EV_MREMAP;
		ref_set(f, &r, forks[i]);
	}
}

static void ref_forked(struct ref *f, uint64_t now)
{
	int i;

	for (i = 0; i < NP; i++)
		if (f->mapped[i] && !jt_region_shared(&f->r[i]))
			f->fork[i] = now;
}

static struct jt_kvma ref_kvma(const struct ref *f, uint64_t addr)
{
	int i;

	for (i = 0; i < f->nk; i++)
		if (f->k[i].start <= addr && addr < f->k[i].end)
			return f->k[i];
	return (struct jt_kvma){};
}

static size_t ref_members(const struct ref *f, const struct jt_kvma *v)
{
	size_t n = 0;
	int i;

	if (!v->end)
		return 1;
	for (i = 0; i < NP; i++)
		if (f->mapped[i] && page_of(f->r[i].start) == i &&
		    f->r[i].end > v->start && f->r[i].start < v->end)
			n++;
	return n ? n : 1;
}

#define SAME(a, b, what)                                                       \
	do {                                                                   \
		if ((a) != (b))                                                \
			fail_msg("step %lu: %s: 0x%llx != 0x%llx", step, what, \
				 (unsigned long long)(a),                      \
				 (unsigned long long)(b));                     \
	} while (0)

static void compare(const struct jt_aspace *as, const struct ref *f)
{
	const struct jt_region *g = jt_aspace_first(as);
	size_t regions = 0;
	int i;

	for (i = 0; i < NP; i++) {
		const struct jt_region *w = &f->r[i];
		struct jt_kvma k;

		if (!f->mapped[i] || page_of(w->start) != i)
			continue;
		if (!g)
			fail_msg("step %lu: region at page %d missing", step,
				 i);
		k = ref_kvma(f, w->start);
		SAME(g->start, w->start, "start");
		SAME(g->end, w->end, "end");
		SAME(g->pgoff, w->pgoff, "pgoff");
		SAME(g->prot, w->prot, "prot");
		SAME(g->kind, w->kind, "kind");
		SAME(g->origin, w->origin, "origin");
		SAME(g->born_ns, w->born_ns, "born");
		SAME(jt_aspace_fork_ns(as, g), f->fork[i], "fork");
		SAME(jt_aspace_kvma(as, g).start, k.start, "kvma.start");
		SAME(jt_aspace_kvma(as, g).end, k.end, "kvma.end");
		SAME(jt_aspace_vma_members(as, g), ref_members(f, &k),
		     "members");
		SAME(jt_aspace_find(as, w->end - 1)->start, w->start, "find");
		regions++;
		g = jt_aspace_next(as, g);
	}
	if (g)
		fail_msg("step %lu: extra region at 0x%llx", step,
			 (unsigned long long)g->start);
	SAME(jt_aspace_count(as), regions, "count");
	for (i = 0; i < NP; i++) {
		const struct jt_cowpage *c = jt_aspace_cowpage(as, P(i));

		SAME(c ? c->time : 0, f->cow[i], "cow");
		/* The writer travels with the page: moved, inherited, cut. */
		SAME(c ? c->ip : 0, f->cow[i] ? f->cow[i] * 7 + 1 : 0,
		     "cow writer");
		if (!f->mapped[i])
			SAME(jt_aspace_find(as, P(i)) != NULL, 0, "hole");
	}
}

static struct jt_region random_region(int s, int e, uint64_t now)
{
	static const uint32_t flags[] = { MAP_PRIVATE | MAP_ANONYMOUS,
					  MAP_SHARED | MAP_ANONYMOUS,
					  MAP_PRIVATE, MAP_SHARED };
	uint32_t fl = flags[rnd(4)];
	struct jt_region r = {
		.start = P(s),
		.end = P(e),
		.prot = rnd(8),
		.mflags = fl,
		.born_ns = now,
		.origin = JT_EV_MMAP,
	};

	if (fl & MAP_ANONYMOUS) {
		r.kind = (fl & MAP_SHARED) ? JT_RK_SHARED_ANON : JT_RK_ANON;
	} else {
		r.kind = JT_RK_FILE;
		r.path = "/lib/x.so";
		r.pgoff = rnd(16) * JT_PAGE_SIZE;
	}
	return r;
}

/* A range of 1 to 16 pages inside the space. */
static void random_range(int *s, int *e)
{
	*s = rnd(NP - 1);
	*e = *s + 1 + rnd(16);
	if (*e > NP)
		*e = NP;
}

/* Two address spaces, so that a fork leaves both sides to check. */
struct side {
	struct jt_aspace *as;
	struct ref *f;
};

static void one_step(struct side *sides, uint64_t now)
{
	struct side *me = &sides[rnd(2)];
	struct jt_aspace *as = me->as;
	struct ref *f = me->f;
	int s, e, op = rnd(100);

	random_range(&s, &e);
	if (getenv("JT_TRACE"))
		fprintf(stderr, "step %lu side %d op %d [%d,%d)\n", step,
			(int)(me - sides), op, s, e);
	if (op < 30) {
		struct jt_region r = random_region(s, e, now);

		assert_int_equal(jt_aspace_map(as, &r), 0);
		ref_map(f, &r);
	} else if (op < 45) {
		uint32_t prot = rnd(8);

		assert_int_equal(jt_aspace_protect(as, P(s), P(e), prot), 0);
		ref_protect(f, s, e, prot);
	} else if (op < 58) {
		assert_int_equal(jt_aspace_cut(as, P(s), P(e)), 0);
		ref_cut(f, s, e);
	} else if (op < 70) {
		int olen = e - s, nlen = 1 + rnd(16), new = s;
		bool keep = false;

		if (rnd(2)) {
			new = rnd(NP - nlen);
			keep = rnd(4) == 0;
		} else if (s + nlen > NP) {
			nlen = NP - s;
		}
		if (new != s &&new<s + olen &&new + nlen> s)
			return; /* the kernel refuses overlapping moves */
		assert_int_equal(jt_aspace_remap(as, P(s), P(e) - P(s), P(new),
						 (uint64_t)nlen * JT_PAGE_SIZE,
						 keep, now),
				 0);
		ref_remap(f, s, olen, new, nlen, keep, now);
	} else if (op < 85) {
		struct jt_kvma v = { P(s), P(e), rnd(16) };

		jt_aspace_observe(as, &v);
		ref_observe(f, &v);
	} else if (op < 97) {
		if (!f->mapped[s])
			return;
		struct jt_cowpage c = { .page = P(s),
					.time = now,
					.ip = now * 7 + 1,
					.tid = 1,
					.kind = JT_COW_FILE_WP };

		assert_int_equal(jt_aspace_cow(as, &c), 0);
		f->cow[s] = now;
	} else {
		/* fork: the other side becomes this one's child */
		struct side *other = &sides[me == sides];

		jt_aspace_put(other->as);
		other->as = jt_aspace_clone(as);
		assert_non_null(other->as);
		jt_aspace_forked(as, now);
		jt_aspace_forked(other->as, now);
		ref_forked(f, now);
		*other->f = *f;
	}
}

static void test_random_against_pages(void **state)
{
	const char *seed_env = getenv("JT_SEED"), *ops_env = getenv("JT_OPS");
	uint64_t seed = seed_env ? strtoull(seed_env, NULL, 0) : 20261130;
	unsigned long ops = ops_env ? strtoul(ops_env, NULL, 0) : 200000;
	struct side sides[2] = {};
	int k;

	printf("# aspace differential: JT_SEED=%llu JT_OPS=%lu\n",
	       (unsigned long long)seed, ops);
	rng_state = seed ? seed : 1;
	for (step = 0; step < ops; step++) {
		/* Fresh spaces now and then, so sparse ones get tested too. */
		for (k = 0; k < 2 && step % 2000 == 0; k++) {
			jt_aspace_put(sides[k].as);
			free(sides[k].f);
			sides[k].as = jt_aspace_new();
			sides[k].f = calloc(1, sizeof(*sides[k].f));
			assert_non_null(sides[k].as);
			assert_non_null(sides[k].f);
		}
		one_step(sides, step + 1);
		for (k = 0; k < 2; k++) {
			compare(sides[k].as, sides[k].f);
			assert_true(sides[k].f->nk < NK - 2);
		}
	}
	for (k = 0; k < 2; k++) {
		jt_aspace_put(sides[k].as);
		free(sides[k].f);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_random_against_pages),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
