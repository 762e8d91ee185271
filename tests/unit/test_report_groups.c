// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * report's counts by group against a plain tally, here and on the
 * counting thread: samples spread over 162 places and 3,000 symbols,
 * enough groups for the table to grow five times. Draining gives each
 * group once, with its exact samples and retro counts, and its place's
 * first nspid; after it the table is as new.
 */
#include <sched.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "lib/cpus.h"
#include "views/report_groups.h"

#define NSYMS 3000
#define NSAMPLES 200000

static const char *const comms[] = { "java", "node", "jav" };
static const char *const dsos[] = { "jit-1.dump", "libc.so.6", "[anon]" };
static const char *const dsyms[] = { "-", "obj+0x8" };
static char syms[NSYMS][16];

/* A place: comm, pid, dso, dsym and source, as one number. */
#define NPLACES (3 * 3 * 3 * 2 * 3)

struct tally {
	uint64_t samples[NPLACES][NSYMS];
	uint64_t retro[NPLACES][NSYMS];
	bool seen[NPLACES][NSYMS];
	uint32_t first_nspid[NPLACES];
	size_t groups;
};

static struct tally want;

static struct row key_of(unsigned int place, unsigned int sym)
{
	unsigned int p = place;
	struct row k = {};

	k.source = p % 3, p /= 3;
	k.dsym = dsyms[p % 2], p /= 2;
	k.dso = dsos[p % 3], p /= 3;
	k.pid = 100 + p % 3, p /= 3;
	k.comm = comms[p % 3];
	k.sym = syms[sym];
	return k;
}

static unsigned int place_num(const struct row *w)
{
	unsigned int c = 0, d = 0, x = 0;

	while (comms[c] != w->comm)
		c++;
	while (dsos[d] != w->dso)
		d++;
	while (dsyms[x] != w->dsym)
		x++;
	return (((c * 3 + (w->pid - 100)) * 3 + d) * 2 + x) * 3 + w->source;
}

static unsigned int sym_num(const char *sym)
{
	return (unsigned int)((const char(*)[16])sym - syms);
}

struct got {
	size_t rows;
	int fail;
};

static int check_row(void *ctx, const struct row *w)
{
	struct got *g = ctx;
	unsigned int p = place_num(w), s = sym_num(w->sym);

	g->rows++;
	if (!want.samples[p][s] || want.seen[p][s] ||
	    w->samples != want.samples[p][s] || w->retro != want.retro[p][s] ||
	    w->nspid != want.first_nspid[p] || w->children || w->callers) {
		g->fail++;
		return 0;
	}
	want.seen[p][s] = true;
	return 0;
}

/* Returns whether the samples went to the counting thread. */
static bool tally_and_check(bool threaded)
{
	struct jt_groups g = { .threaded = threaded };
	struct got got = {};
	unsigned int seed = 11, i;
	bool counter = false;

	for (i = 0; i < NSYMS; i++)
		snprintf(syms[i], sizeof(syms[i]), "sym_%u", i);
	memset(&want, 0, sizeof(want));
	for (i = 0; i < NSAMPLES; i++) {
		/* A few hot places and symbols, and a long tail of both. */
		unsigned int p = rand_r(&seed) % (i & 1 ? NPLACES : 4);
		unsigned int s = rand_r(&seed) % (i & 2 ? NSYMS : 16);
		struct row k = key_of(p, s);

		k.retro = rand_r(&seed) % 5 == 0;
		k.nspid = 1 + i; /* a place keeps its first */
		if (!want.samples[p][s])
			want.groups++;
		if (!want.first_nspid[p])
			want.first_nspid[p] = k.nspid;
		want.samples[p][s]++;
		want.retro[p][s] += k.retro;
		assert_int_equal(jt_groups_add(&g, &k), 0);
		counter |= g.feed != NULL;
	}
	assert_true(want.groups > 20000); /* past 1K slots, five doublings */
	assert_int_equal(jt_groups_drain(&g, check_row, &got), 0);
	assert_int_equal(got.fail, 0);
	assert_int_equal(got.rows, want.groups);
	assert_int_equal(g.n, 0);
	assert_int_equal(g.cap, 0);
	assert_int_equal(g.nplaces, 0);
	assert_null(g.e);
	assert_null(g.feed);
	return counter;
}

static void test_counts_match_a_plain_tally(void **state)
{
	assert_false(tally_and_check(false));
}

/*
 * The same samples through the counting thread: twelve chunks and a
 * part, handed over while it counts, give the same groups.
 */
static void test_counts_on_a_second_thread_match_a_plain_tally(void **state)
{
	if (!jt_cpus_two()) {
		fprintf(stderr, "SKIP: this process may run on one CPU only\n");
		skip();
	}
	assert_true(NSAMPLES > 12 * JT_GROUPS_CHUNK);
	assert_true(tally_and_check(true));
}

/* Where the process may run on one CPU, no thread: counted here. */
static void test_one_cpu_counts_without_a_thread(void **state)
{
	cpu_set_t one, old;

	assert_int_equal(sched_getaffinity(0, sizeof(old), &old), 0);
	CPU_ZERO(&one);
	CPU_SET(sched_getcpu(), &one);
	assert_int_equal(sched_setaffinity(0, sizeof(one), &one), 0);
	assert_false(tally_and_check(true));
	assert_int_equal(sched_setaffinity(0, sizeof(old), &old), 0);
}

struct last {
	struct row w;
	int calls;
	int fail_at; /* the call that returns 7; 0: none */
};

static int keep_last(void *ctx, const struct row *w)
{
	struct last *l = ctx;

	l->w = *w;
	return ++l->calls == l->fail_at ? 7 : 0;
}

static void test_drained_table_counts_anew(void **state)
{
	/* Fewer samples than a chunk never start the counting thread. */
	struct jt_groups g = { .threaded = true };
	struct row k = key_of(5, 9);
	struct last l = {};
	int i;

	for (i = 0; i < 3; i++)
		assert_int_equal(jt_groups_add(&g, &k), 0);
	assert_int_equal(jt_groups_drain(&g, keep_last, &l), 0);
	assert_int_equal(l.calls, 1);
	assert_int_equal(l.w.samples, 3);
	assert_true(g.threaded);
	/* Fewer samples than a batch: drained all the same, and anew. */
	assert_int_equal(jt_groups_add(&g, &k), 0);
	memset(&l, 0, sizeof(l));
	assert_int_equal(jt_groups_drain(&g, keep_last, &l), 0);
	assert_int_equal(l.calls, 1);
	assert_int_equal(l.w.samples, 1);
	assert_ptr_equal(l.w.sym, k.sym);
	assert_ptr_equal(l.w.comm, k.comm);
	assert_ptr_equal(l.w.dso, k.dso);
	assert_int_equal(l.w.pid, k.pid);
	assert_int_equal(l.w.source, k.source);
}

/* fn's first nonzero return ends the drain, which returns it. */
static void test_drain_stops_at_the_first_error(void **state)
{
	struct jt_groups g = {};
	struct row k = key_of(7, 1);
	struct last l = { .fail_at = 1 };

	assert_int_equal(jt_groups_add(&g, &k), 0);
	k = key_of(8, 2);
	assert_int_equal(jt_groups_add(&g, &k), 0);
	assert_int_equal(jt_groups_drain(&g, keep_last, &l), 7);
	assert_int_equal(l.calls, 1);
	assert_null(g.e);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_counts_match_a_plain_tally),
		cmocka_unit_test(
			test_counts_on_a_second_thread_match_a_plain_tally),
		cmocka_unit_test(test_one_cpu_counts_without_a_thread),
		cmocka_unit_test(test_drained_table_counts_anew),
		cmocka_unit_test(test_drain_stops_at_the_first_error),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
