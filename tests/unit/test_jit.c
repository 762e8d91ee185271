// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* jitdump and perf-map readers, and the JIT symbol table. */
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <setjmp.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "model/jitdump.h"
#include "model/jitsyms.h"

struct got {
	struct jt_jit_event ev[16];
	char names[16][64];
	int n;
};

static void collect(void *ctx, const struct jt_jit_event *ev)
{
	struct got *g = ctx;

	if (g->n == 16)
		return;
	g->ev[g->n] = *ev;
	snprintf(g->names[g->n], 64, "%.*s", (int)ev->name_len, ev->name);
	g->n++;
}

static size_t put32(unsigned char *p, uint32_t v, int swap)
{
	if (swap)
		v = __builtin_bswap32(v);
	memcpy(p, &v, 4);
	return 4;
}

static size_t put64(unsigned char *p, uint64_t v, int swap)
{
	if (swap)
		v = __builtin_bswap64(v);
	memcpy(p, &v, 8);
	return 8;
}

/* A jitdump: header, LOAD f1, DEBUG_INFO, MOVE f1, LOAD f2, CLOSE. */
static size_t build(unsigned char *b, int swap, uint64_t flags)
{
	size_t n = 0, rec;

	n += put32(b + n, 0x4A695444, swap);
	n += put32(b + n, 1, swap);
	n += put32(b + n, 40, swap);
	n += put32(b + n, 62, swap);
	n += put32(b + n, 0, swap);
	n += put32(b + n, 4242, swap);
	n += put64(b + n, 1000, swap);
	n += put64(b + n, flags, swap);
	for (int f = 1; f <= 2; f++) {
		rec = n;
		n += put32(b + n, 0, swap);
		n += put32(b + n, 16 + 40 + 3 + 16, swap);
		n += put64(b + n, 2000 + f, swap);
		n += put32(b + n, 4242, swap);
		n += put32(b + n, 4243, swap);
		n += put64(b + n, 0x1000 * f, swap);
		n += put64(b + n, 0x1000 * f, swap);
		n += put64(b + n, 16, swap);
		n += put64(b + n, f, swap);
		memcpy(b + n, f == 1 ? "f1" : "f2", 3);
		n += 3;
		memset(b + n, 0xc3, 16);
		n += 16;
		if (f == 1) {
			/* DEBUG_INFO with no entries, then MOVE f1. */
			n += put32(b + n, 2, swap);
			n += put32(b + n, 32, swap);
			n += put64(b + n, 2005, swap);
			n += put64(b + n, 0x1000, swap);
			n += put64(b + n, 0, swap);
			n += put32(b + n, 1, swap);
			n += put32(b + n, 16 + 48, swap);
			n += put64(b + n, 2006, swap);
			n += put32(b + n, 4242, swap);
			n += put32(b + n, 4243, swap);
			n += put64(b + n, 0x1000, swap);
			n += put64(b + n, 0x1000, swap);
			n += put64(b + n, 0x5000, swap);
			n += put64(b + n, 16, swap);
			n += put64(b + n, 1, swap);
		}
		(void)rec;
	}
	n += put32(b + n, 3, swap);
	n += put32(b + n, 16, swap);
	n += put64(b + n, 3000, swap);
	return n;
}

static void check_events(const struct got *g, int arch_time)
{
	assert_int_equal(g->n, 4);
	assert_int_equal(g->ev[0].op, JT_JIT_LOAD);
	assert_string_equal(g->names[0], "f1");
	assert_int_equal(g->ev[0].addr, 0x1000);
	assert_int_equal(g->ev[0].size, 16);
	assert_int_equal(g->ev[0].tid, 4243);
	assert_int_equal(g->ev[0].time, arch_time ? 0 : 2001);
	assert_int_equal(g->ev[1].op, JT_JIT_MOVE);
	assert_int_equal(g->ev[1].old_addr, 0x1000);
	assert_int_equal(g->ev[1].addr, 0x5000);
	assert_string_equal(g->names[2], "f2");
	assert_int_equal(g->ev[3].op, JT_JIT_CLOSE);
}

static void test_jitdump_both_byte_orders(void **state)
{
	unsigned char buf[1024];

	for (int swap = 0; swap <= 1; swap++) {
		struct jt_jitdump d;
		struct got g = {};
		size_t n = build(buf, swap, 0);

		jt_jitdump_init(&d);
		assert_int_equal(jt_jitdump_feed(&d, buf, n, collect, &g), 0);
		check_events(&g, 0);
		assert_int_equal(d.pid, 4242);
		assert_int_equal(d.stats.records, 5);
		assert_int_equal(jt_jitdump_pending(&d), 0);
		jt_jitdump_free(&d);
	}
}

static void test_jitdump_arch_timestamps_have_no_time(void **state)
{
	unsigned char buf[1024];
	struct jt_jitdump d;
	struct got g = {};
	size_t n = build(buf, 0, 1);

	jt_jitdump_init(&d);
	jt_jitdump_feed(&d, buf, n, collect, &g);
	assert_true(d.arch_time);
	check_events(&g, 1);
	assert_int_equal(g.ev[0].arch_time, 2001);
	jt_jitdump_free(&d);
}

/* A file still being written: every split point gives the same events. */
/* perf_event_open(2)'s arithmetic, done by hand. */
static void test_tsc_conversion(void **state)
{
	struct jt_tsc c = {
		.zero = 1000, .mult = 3 << 20, .shift = 21, .mono_offset = -7
	};
	uint64_t tsc = (5ULL << 21) + 12345;
	uint64_t want =
		1000 + 5 * (3ULL << 20) + ((12345ULL * (3 << 20)) >> 21) - 7;

	assert_int_equal(jt_tsc_to_mono(&c, tsc), want);
	/* Days of uptime: the split multiply matches exact arithmetic. */
	tsc = (1ULL << 50) + 987654321;
	want = 1000 + (uint64_t)(((unsigned __int128)tsc * (3 << 20)) >> 21) -
	       7;
	assert_int_equal(jt_tsc_to_mono(&c, tsc), want);
}

static void test_jitdump_every_split_point(void **state)
{
	unsigned char buf[1024];
	size_t n = build(buf, 0, 0), cut;

	for (cut = 0; cut <= n; cut++) {
		struct jt_jitdump d;
		struct got g = {};

		jt_jitdump_init(&d);
		assert_int_equal(jt_jitdump_feed(&d, buf, cut, collect, &g), 0);
		assert_int_equal(
			jt_jitdump_feed(&d, buf + cut, n - cut, collect, &g),
			0);
		check_events(&g, 0);
		jt_jitdump_free(&d);
	}
}

/* Truncated at every byte: what was whole is delivered, the rest held. */
static void test_jitdump_every_truncation(void **state)
{
	unsigned char buf[1024];
	size_t n = build(buf, 0, 0), cut;
	int last = -1;

	for (cut = 0; cut < n; cut++) {
		struct jt_jitdump d;
		struct got g = {};

		jt_jitdump_init(&d);
		assert_int_equal(jt_jitdump_feed(&d, buf, cut, collect, &g), 0);
		assert_true(g.n < 4);
		assert_true(g.n >= last);
		last = g.n;
		jt_jitdump_free(&d);
	}
}

static void test_jitdump_hostile(void **state)
{
	unsigned char buf[1024];
	size_t n = build(buf, 0, 0);
	struct jt_jitdump d;
	struct got g;
	size_t load1 = 40, size_off = load1 + 4, code_size = load1 + 40;

	/* Bad magic. */
	memcpy(buf, "ELF!", 4);
	jt_jitdump_init(&d);
	g.n = 0;
	assert_int_equal(jt_jitdump_feed(&d, buf, n, collect, &g), -1);
	assert_non_null(strstr(d.err, "magic"));
	jt_jitdump_free(&d);
	/* A version this reader does not know, in either byte order. */
	for (int sw = 0; sw < 2; sw++) {
		n = build(buf, 0, sw);
		put32(buf + 4, 0xffffffff, sw);
		jt_jitdump_init(&d);
		g.n = 0;
		assert_int_equal(jt_jitdump_feed(&d, buf, n, collect, &g), -1);
		assert_int_equal(g.n, 0);
		assert_true(d.failed);
		assert_non_null(strstr(
			d.err, "unsupported jitdump version 4294967295"));
		jt_jitdump_free(&d);
	}
	/* A code size that runs past the record: skipped, counted. */
	n = build(buf, 0, 0);
	put64(buf + code_size, 1ULL << 62, 0);
	jt_jitdump_init(&d);
	g.n = 0;
	assert_int_equal(jt_jitdump_feed(&d, buf, n, collect, &g), 0);
	assert_int_equal(g.n, 3);
	assert_int_equal(d.stats.skipped, 1);
	jt_jitdump_free(&d);
	/* A name without its NUL. */
	n = build(buf, 0, 0);
	memset(buf + load1 + 56, 'x', 3 + 16);
	jt_jitdump_init(&d);
	g.n = 0;
	jt_jitdump_feed(&d, buf, n, collect, &g);
	assert_int_equal(d.stats.skipped, 1);
	assert_string_not_equal(g.names[0], "f1");
	jt_jitdump_free(&d);
	/* A record size smaller than a header, or absurdly large: stop. */
	for (uint32_t bad = 0; bad < 2; bad++) {
		n = build(buf, 0, 0);
		put32(buf + size_off, bad ? 0xfffffff0 : 8, 0);
		jt_jitdump_init(&d);
		g.n = 0;
		assert_int_equal(jt_jitdump_feed(&d, buf, n, collect, &g), -1);
		assert_int_equal(g.n, 0);
		assert_non_null(strstr(d.err, "size"));
		jt_jitdump_free(&d);
	}
}

static void test_perfmap_lines(void **state)
{
	const char text[] = "7f0000001000 20 LazyCompile:~foo app.js:1\n"
			    "0x7f0000002000 0x10 bar\r\n"
			    "zz 10 bad\n"
			    "7f0000003000 0 zero-size\n"
			    "7f0000004000 8\n"
			    "7f0000005000 8 partial";
	size_t n = strlen(text), cut;

	for (cut = 0; cut <= n; cut++) {
		struct jt_perfmap m;
		struct got g = {};

		jt_perfmap_init(&m);
		jt_perfmap_feed(&m, text, cut, 7, 99, collect, &g);
		jt_perfmap_feed(&m, text + cut, n - cut, 8, 99, collect, &g);
		assert_int_equal(g.n, 2);
		assert_string_equal(g.names[0], "LazyCompile:~foo app.js:1");
		assert_int_equal(g.ev[0].addr, 0x7f0000001000);
		assert_int_equal(g.ev[0].size, 0x20);
		assert_string_equal(g.names[1], "bar");
		assert_int_equal(g.ev[1].size, 0x10);
		assert_int_equal(m.stats.skipped, 3);
		/* The unfinished last line waits for its newline. */
		assert_int_equal(m.len, strlen("7f0000005000 8 partial"));
		jt_perfmap_free(&m);
	}
}

/* Eight bytes a step counts as one at a time does, at every alignment. */
static void test_perfmap_line_count(void **state)
{
	static const char bytes[] = "\n\nab\n\x8a\x0a\xff";
	unsigned int seed = 5, round;
	char s[64];

	for (round = 0; round < 20000; round++) {
		size_t len = rand_r(&seed) % sizeof(s), i;
		uint64_t ends = 0;
		bool last = true;

		for (i = 0; i < len; i++) {
			s[i] = bytes[rand_r(&seed) % (sizeof(bytes) - 1)];
			ends += s[i] == '\n' && !last;
			last = s[i] == '\n';
		}
		assert_int_equal(jt_perfmap_lines(s, len), ends);
	}
}

static void test_perfmap_hostile(void **state)
{
	char *big = malloc(200000);
	struct jt_perfmap m;
	struct got g = {};

	memset(big, 'a', 200000);
	memcpy(big, "1000 10 ", 8);
	big[199999] = '\n';
	jt_perfmap_init(&m);
	jt_perfmap_feed(&m, big, 200000, 1, 1, collect, &g);
	jt_perfmap_feed(&m, "ffffffffffffffff 10 wraps\n", 26, 1, 1, collect,
			&g);
	jt_perfmap_feed(&m, "11111111111111111 10 too-long-hex\n", 34, 1, 1,
			collect, &g);
	jt_perfmap_feed(&m, "2000 10 ok\n", 11, 1, 1, collect, &g);
	assert_int_equal(g.n, 1);
	assert_string_equal(g.names[0], "ok");
	assert_int_equal(m.stats.skipped, 3);
	jt_perfmap_free(&m);
	free(big);
}

static struct jt_jitsym sym(uint64_t start, uint64_t size, const char *name)
{
	return (struct jt_jitsym){ start, start + size, name, 0, 0 };
}

static void test_table_load_reuse_move_unmap(void **state)
{
	struct jt_jittab t = {};
	struct jt_jitsym a = sym(0x1000, 0x100, "a"),
			 b = sym(0x1100, 0x100, "b");
	struct jt_jitsym c = sym(0x1080, 0x100, "c"), d = sym(0x500, 0x10, "d");

	jt_jittab_load(&t, &a);
	jt_jittab_load(&t, &b);
	jt_jittab_load(&t, &d); /* below: the slow path */
	assert_string_equal(jt_jittab_find(&t, 0x10ff)->name, "a");
	assert_string_equal(jt_jittab_find(&t, 0x505)->name, "d");
	assert_null(jt_jittab_find(&t, 0x1200));
	/* Reuse: c overlaps both a and b and ends them. */
	jt_jittab_load(&t, &c);
	assert_int_equal(jt_jittab_count(&t), 2);
	assert_null(jt_jittab_find(&t, 0x1000));
	assert_string_equal(jt_jittab_find(&t, 0x1080)->name, "c");
	assert_null(jt_jittab_find(&t, 0x1190));
	/* Move c. */
	assert_int_equal(jt_jittab_move(&t, 0x1080, 0x9000, 0x100, 5), 0);
	assert_null(jt_jittab_find(&t, 0x1080));
	assert_string_equal(jt_jittab_find(&t, 0x90ff)->name, "c");
	assert_int_equal(jt_jittab_find(&t, 0x9000)->loaded_ns, 5);
	assert_int_equal(jt_jittab_move(&t, 0x1234, 0x2000, 1, 6), -ENOENT);
	/* Unmap ends everything in the range. */
	jt_jittab_cut(&t, 0x400, 0x9001);
	assert_int_equal(jt_jittab_count(&t), 0);
	jt_jittab_free(&t);
}

/* Lookups past an eighth of the table go to the flat copy; a change, a
 * fork's copy and every address in and between functions agree with it. */
static void test_table_flat_copy_agrees(void **state)
{
	struct jt_jittab t = {}, child = {};
	struct jt_jitsym s;
	uint64_t i, a;

	for (i = 0; i < 1000; i++) {
		s = sym(0x100000 + i * 0x40, 0x30, i & 1 ? "odd" : "even");
		jt_jittab_load(&t, &s);
	}
	for (i = 0; i < 200; i++)
		jt_jittab_find(&t, 0x100000);
	assert_true(t.flat.valid);
	for (a = 0xfffc0; a < 0x100000 + 1000 * 0x40 + 0x40; a += 8) {
		const struct jt_jitsym *f = jt_jittab_find(&t, a);
		uint64_t off = a - 0x100000;

		if (a < 0x100000 || off >= 1000 * 0x40 || off % 0x40 >= 0x30)
			assert_null(f);
		else
			assert_int_equal(f->start, a - off % 0x40);
	}
	jt_jittab_copy(&child, &t);
	s = sym(0x100000, 0x40 * 10, "big");
	jt_jittab_load(&t, &s); /* ends the first ten, drops the copy */
	assert_false(t.flat.valid);
	assert_string_equal(jt_jittab_find(&t, 0x100000 + 0x40 * 9)->name,
			    "big");
	assert_string_equal(jt_jittab_find(&child, 0x100000 + 0x40 * 9)->name,
			    "odd");
	for (i = 0; i < 200; i++)
		jt_jittab_find(&t, 0x100000);
	assert_true(t.flat.valid);
	assert_string_equal(jt_jittab_find(&t, 0x100000 + 0x40 * 9)->name,
			    "big");
	assert_null(jt_jittab_find(&t, 0x100000 + 0x40 * 10 + 0x30));
	jt_jittab_free(&child);
	jt_jittab_free(&t);
}

/* Function k of n starts at 0x1000 + k * 0x20 and is 0x10 + k % 0x10 long. */
static void assert_names(const struct jt_jittab *t, uint64_t a, uint64_t n)
{
	uint64_t k = (a - 0x1000) / 0x20;
	bool in = a >= 0x1000 && k < n && (a - 0x1000) % 0x20 < 0x10 + k % 0x10;
	struct jt_jitname name;

	if (!in) {
		assert_null(jt_jittab_find(t, a));
		assert_false(jt_jittab_name(t, a, &name));
		return;
	}
	assert_int_equal(jt_jittab_find(t, a)->code_index, k);
	assert_true(jt_jittab_name(t, a, &name));
	assert_int_equal(name.start, 0x1000 + k * 0x20);
	assert_int_equal(name.end, name.start + 0x10 + k % 0x10);
	assert_string_equal(name.name, k & 1 ? "odd" : "even");
}

/* The flat copy's layout is a tree of every shape: tables of 1 to 70
 * functions, full and partial last levels, name every address right. */
static void test_table_flat_copy_of_every_size(void **state)
{
	uint64_t n, i, a;

	for (n = 1; n <= 70; n++) {
		struct jt_jittab t = {};
		struct jt_jitsym s;

		for (i = n; i-- > 0;) {
			s = sym(0x1000 + i * 0x20, 0x10 + i % 0x10,
				i & 1 ? "odd" : "even");
			s.code_index = i;
			jt_jittab_load(&t, &s);
		}
		/* From the treap: a fresh copy has no flat copy yet. */
		for (a = 0xfe0; a < 0x1000 + n * 0x20 + 0x20; a++) {
			struct jt_jittab c = {};

			jt_jittab_copy(&c, &t);
			assert_names(&c, a, n);
			assert_false(c.flat.valid);
			jt_jittab_free(&c);
		}
		for (i = 0; i < 40; i++)
			jt_jittab_find(&t, 0);
		assert_true(t.flat.valid);
		for (a = 0xfe0; a < 0x1000 + n * 0x20 + 0x20; a++)
			assert_names(&t, a, n);
		jt_jittab_free(&t);
	}
}

/* The flat copy names a as a scan of the n functions [at[2i], at[2i+1]). */
static void assert_scan(const struct jt_jittab *t, const uint64_t *at, size_t n,
			uint64_t a)
{
	const struct jt_jitsym *f = jt_jittab_find(t, a);
	size_t i;

	assert_true(t->flat.valid);
	for (i = 0; i < n; i++)
		if (at[2 * i] <= a && a < at[2 * i + 1])
			break;
	if (i == n) {
		assert_null(f);
		return;
	}
	assert_non_null(f);
	assert_int_equal(f->start, at[2 * i]);
	assert_int_equal(f->end, at[2 * i + 1]);
}

/* Every boundary of the n functions, and a byte either side of it. */
static void assert_boundaries(const struct jt_jittab *t, const uint64_t *at,
			      size_t n)
{
	size_t i;

	for (i = 0; i < 2 * n; i++) {
		assert_scan(t, at, n, at[i] - 1);
		assert_scan(t, at, n, at[i]);
		assert_scan(t, at, n, at[i] + 1);
	}
}

/* Load a function of len bytes at start, noted in at[]; its end. */
static uint64_t load_at(struct jt_jittab *t, uint64_t *at, size_t *n,
			uint64_t start, uint64_t len)
{
	struct jt_jitsym s = sym(start, len, "f");

	jt_jittab_load(t, &s);
	at[2 * *n] = s.start;
	at[2 * (*n)++ + 1] = s.end;
	return s.end;
}

/*
 * Code in far-apart clusters (the lowest and highest addresses among
 * them) fills few buckets with many functions each; every boundary of
 * every function, and addresses between, resolve as a scan does.
 */
static void test_table_flat_copy_of_clusters(void **state)
{
	static const uint64_t bases[] = { 0, 0x10000, 0x7f0000000000,
					  UINT64_MAX - 0x100000 };
	unsigned int seed = 1, round;

	for (round = 0; round < 100; round++) {
		struct jt_jittab t = {};
		uint64_t a, at[800];
		size_t n = 0, i, k;

		for (k = 0; k < 4; k++) {
			if (rand_r(&seed) % 2)
				continue;
			a = bases[k];
			for (i = rand_r(&seed) % 100; i > 0; i--)
				a = load_at(&t, at, &n, a,
					    1 + rand_r(&seed) % 0x80) +
				    rand_r(&seed) % 3 * 0x40;
		}
		for (i = 0; i < 200; i++)
			jt_jittab_find(&t, 0);
		assert_int_equal(t.flat.valid, n > 0);
		assert_boundaries(&t, at, n);
		for (i = 0; n && i < 1000; i++)
			assert_scan(&t, at, n,
				    ((uint64_t)rand_r(&seed) << 33) ^
					    ((uint64_t)rand_r(&seed) << 1) ^
					    bases[i % 4]);
		jt_jittab_free(&t);
	}
}

/*
 * One table through many versions, grown in batches and cut down to a
 * few functions: each version's flat copy, made in the arrays of the one
 * before (grown, kept or cut), names every boundary as a scan does.
 */
static void test_table_flat_copy_kept_through_changes(void **state)
{
	static uint64_t at[2 * 4000];
	struct jt_jittab t = {};
	uint64_t next = 0x400000;
	unsigned int seed = 7, round;
	size_t n = 0, keep, i;

	for (round = 0; round < 60; round++) {
		if (round % 5 == 4) {
			keep = rand_r(&seed) % 4;
			if (keep < n) {
				jt_jittab_cut(&t, at[2 * keep], next);
				n = keep;
			}
		}
		for (i = round % 5 == 4 ? 0 : 1 + rand_r(&seed) % 600;
		     i > 0 && n < 4000; i--)
			next = load_at(&t, at, &n, next,
				       1 + rand_r(&seed) % 0x40) +
			       rand_r(&seed) % 2 * 0x10;
		for (i = 0; i < n / 8 + 16; i++)
			jt_jittab_find(&t, 0);
		assert_int_equal(t.flat.valid, n > 0);
		assert_boundaries(&t, at, n);
	}
	jt_jittab_free(&t);
}

/*
 * Code loaded past every function, as runtimes load it, joins the flat
 * copy at its end, past the room it was made with too; a load among the
 * functions, one too far away for
 * the buckets, or one into a table a fork still shares, drops it. Every
 * boundary names as a scan does throughout.
 */
static void test_table_flat_copy_takes_code_past_its_end(void **state)
{
	static uint64_t at[2 * 3000];
	struct jt_jittab t = {}, child = {};
	uint64_t next = 0x400000;
	struct jt_jitsym s;
	size_t n = 0, i;

	for (i = 0; i < 1000; i++)
		next = load_at(&t, at, &n, next, 0x30) + 0x10;
	for (i = 0; i < n / 8 + 16; i++)
		jt_jittab_find(&t, 0);
	assert_true(t.flat.valid);
	/* Past the end, a gap of empty buckets now and then: kept. */
	for (i = 0; i < 400; i++) {
		next = load_at(&t, at, &n, next, 0x30) + 0x10 +
		       (i % 40 == 39) * 0x100;
		assert_true(t.flat.valid);
	}
	assert_boundaries(&t, at, n);
	/* Beyond the room the copy was made with: it grows, and stays. */
	for (i = 0; i < 1500; i++) {
		next = load_at(&t, at, &n, next, 0x20);
		assert_true(t.flat.valid);
	}
	assert_boundaries(&t, at, n);
	/* An empty function at the end still holds its start. */
	s = sym(next, 0, "empty");
	jt_jittab_load(&t, &s);
	assert_true(t.flat.valid);
	s = sym(next, 0x10, "after");
	jt_jittab_load(&t, &s);
	assert_false(t.flat.valid);
	assert_int_equal(jt_jittab_count(&t), n + 1);
	assert_string_equal(jt_jittab_find(&t, next)->name, "after");
	jt_jittab_cut(&t, next, next + 0x10);
	/* After a fork, code past the end is the parent's alone: kept. */
	for (i = 0; i < n / 8 + 16; i++)
		jt_jittab_find(&t, 0);
	jt_jittab_copy(&child, &t);
	next = load_at(&t, at, &n, next + 0x100, 0x20);
	assert_true(t.flat.valid);
	assert_string_equal(jt_jittab_find(&t, at[2 * n - 2])->name, "f");
	assert_null(jt_jittab_find(&child, at[2 * n - 2]));
	jt_jittab_free(&child);
	next = load_at(&t, at, &n, next, 0x20);
	assert_true(t.flat.valid);
	assert_boundaries(&t, at, n);
	/* Far past the end: the buckets would outnumber the functions. */
	next = load_at(&t, at, &n, next + ((uint64_t)1 << 40), 0x20);
	assert_false(t.flat.valid);
	/* Among the functions: not past the end. */
	for (i = 0; i < n / 8 + 16; i++)
		jt_jittab_find(&t, 0);
	s = sym(at[0] + 0x30, 0x8, "between");
	jt_jittab_load(&t, &s);
	assert_false(t.flat.valid);
	assert_string_equal(jt_jittab_find(&t, at[0] + 0x30)->name, "between");
	jt_jittab_free(&t);
}

/*
 * A table that is all tail is copied at its first lookup; cutting its
 * newest code, as a runtime frees it, keeps the copy, which then names
 * nothing that was cut and takes the code loaded after.
 */
static void test_table_tail_cut_keeps_flat_copy(void **state)
{
	static uint64_t at[2 * 300];
	struct jt_jittab t = {};
	uint64_t next = 0x400000, cut;
	size_t n = 0, i;

	for (i = 0; i < 300; i++)
		next = load_at(&t, at, &n, next, 0x30) + 0x10;
	assert_null(t.t.root);
	assert_false(t.flat.valid);
	jt_jittab_find(&t, 0);
	assert_true(t.flat.valid);
	/* From the middle of function 200 on. */
	cut = at[2 * 200] + 0x8;
	jt_jittab_cut(&t, cut, next);
	assert_true(t.flat.valid);
	assert_int_equal(jt_jittab_count(&t), 200);
	assert_null(jt_jittab_find(&t, at[2 * 200]));
	assert_null(jt_jittab_find(&t, at[2 * 299]));
	n = 200;
	assert_boundaries(&t, at, n);
	/* Loads at the addresses cut free join the copy at its end. */
	for (i = 0; i < 50; i++)
		load_at(&t, at, &n, at[2 * n - 1] + 0x20, 0x18);
	assert_true(t.flat.valid);
	assert_null(t.t.root);
	assert_boundaries(&t, at, n);
	jt_jittab_free(&t);
}

/*
 * A table as a list: what every change should leave, found by a scan.
 * Code indexes tell the functions apart.
 */
#define SCAN_MAX 512

struct scan {
	struct jt_jitsym f[SCAN_MAX];
	size_t n;
};

static uint64_t held_to(const struct jt_jitsym *f)
{
	return f->end > f->start ? f->end : f->start + 1;
}

static void scan_cut(struct scan *m, uint64_t start, uint64_t end)
{
	size_t i, k = 0;

	for (i = 0; i < m->n; i++)
		if (m->f[i].start >= end || held_to(&m->f[i]) <= start)
			m->f[k++] = m->f[i];
	m->n = k;
}

static void scan_load(struct scan *m, const struct jt_jitsym *s)
{
	scan_cut(m, s->start, held_to(s));
	m->f[m->n++] = *s;
}

static const struct jt_jitsym *scan_find(const struct scan *m, uint64_t a)
{
	size_t i;

	for (i = 0; i < m->n; i++)
		if (m->f[i].start <= a && a < m->f[i].end)
			return &m->f[i];
	return NULL;
}

static size_t scan_count_in(const struct scan *m, uint64_t lo, uint64_t hi)
{
	size_t i, n = 0;

	for (i = 0; i < m->n; i++)
		n += m->f[i].start < hi && held_to(&m->f[i]) > lo;
	return n;
}

static void assert_same(const struct jt_jittab *t, const struct scan *m,
			uint64_t a)
{
	const struct jt_jitsym *want = scan_find(m, a), *got;
	struct jt_jitname name;

	got = jt_jittab_find(t, a);
	assert_int_equal(!got, !want);
	assert_int_equal(jt_jittab_name(t, a, &name), !!want);
	if (!want)
		return;
	assert_int_equal(got->code_index, want->code_index);
	assert_int_equal(got->start, want->start);
	assert_int_equal(name.start, want->start);
	assert_int_equal(name.end, want->end);
}

/* Mostly past the end, as runtimes load; now and then among the rest. */
static uint64_t pick_start(unsigned int *seed, uint64_t *next)
{
	uint64_t a;

	if (rand_r(seed) % 4) {
		a = *next + rand_r(seed) % 3 * 0x20;
		*next = a + 0x40;
		return a;
	}
	return 0x10000 + rand_r(seed) % 0x4000;
}

/*
 * Loads past the end and among the functions, moves, unloads, cuts to
 * the end and in the middle, and forks, in random order: the table and
 * every fork of it name each address, and count each range, as a scan of
 * the same changes does, with the flat copy and without.
 */
static void test_table_as_a_scan(void **state)
{
	static struct scan m, cm;
	unsigned int seed = 11, round, step;

	for (round = 0; round < 40; round++) {
		struct jt_jittab t = {}, child = {};
		uint64_t next = 0x10000, a, b, idx = 0;
		bool forked = false;

		m.n = cm.n = 0;
		for (step = 0; step < 400 && m.n < SCAN_MAX - 1; step++) {
			unsigned int op = rand_r(&seed) % 16;
			struct jt_jitsym s;

			if (op < 10) {
				a = pick_start(&seed, &next);
				s = sym(a, rand_r(&seed) % 0x40, "f");
				s.code_index = ++idx;
				assert_int_equal(jt_jittab_load(&t, &s), 0);
				scan_load(&m, &s);
			} else if (op == 10 && m.n) {
				s = m.f[rand_r(&seed) % m.n];
				a = pick_start(&seed, &next);
				assert_int_equal(
					jt_jittab_move(&t, s.start, a, 0x10, 9),
					0);
				scan_cut(&m, s.start, s.start + 1);
				s.start = a;
				s.end = a + 0x10;
				scan_load(&m, &s);
			} else if (op == 11) {
				a = 0x10000 + rand_r(&seed) % (next - 0xf000);
				b = rand_r(&seed) % 2 ?
					    next + 1 :
					    a + rand_r(&seed) % 0x200;
				jt_jittab_cut(&t, a, b);
				scan_cut(&m, a, b);
			} else if (op == 12) {
				a = 0x10000 + rand_r(&seed) % (next - 0xf000);
				b = a + 1 + rand_r(&seed) % 0x400;
				assert_int_equal(jt_jittab_count_in(&t, a, b),
						 scan_count_in(&m, a, b));
			} else if (op == 13 && !forked) {
				assert_int_equal(jt_jittab_copy(&child, &t), 0);
				cm = m;
				forked = true;
			} else {
				for (a = 0; a < 16; a++)
					assert_same(&t, &m,
						    0x10000 + rand_r(&seed) %
								      (next -
								       0xf000));
			}
			if (step % 50 == 49)
				for (a = 0x10000 - 1; a < next + 2; a += 7)
					assert_same(&t, &m, a);
			assert_int_equal(jt_jittab_count(&t), m.n);
		}
		for (a = 0x10000 - 1; forked && a < next + 2; a += 5)
			assert_same(&child, &cm, a);
		jt_jittab_free(&child);
		jt_jittab_free(&t);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_table_flat_copy_takes_code_past_its_end),
		cmocka_unit_test(test_table_flat_copy_agrees),
		cmocka_unit_test(test_table_flat_copy_of_every_size),
		cmocka_unit_test(test_table_flat_copy_of_clusters),
		cmocka_unit_test(test_table_flat_copy_kept_through_changes),
		cmocka_unit_test(test_jitdump_both_byte_orders),
		cmocka_unit_test(test_jitdump_arch_timestamps_have_no_time),
		cmocka_unit_test(test_tsc_conversion),
		cmocka_unit_test(test_jitdump_every_split_point),
		cmocka_unit_test(test_jitdump_every_truncation),
		cmocka_unit_test(test_jitdump_hostile),
		cmocka_unit_test(test_perfmap_lines),
		cmocka_unit_test(test_perfmap_hostile),
		cmocka_unit_test(test_perfmap_line_count),
		cmocka_unit_test(test_table_load_reuse_move_unmap),
		cmocka_unit_test(test_table_as_a_scan),
		cmocka_unit_test(test_table_tail_cut_keeps_flat_copy),
	};

	return cmocka_run_group_tests_name("jit", tests, NULL, NULL);
}
