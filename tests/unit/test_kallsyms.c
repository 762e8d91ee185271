// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Kernel symbols from a recording's copy of /proc/kallsyms: every
 * address in a symbol's span gets its name, lines that are not
 * "ADDR TYPE NAME" are skipped, kptr_restrict's zeros name nothing, and
 * a payload that does not inflate is refused, a program listed inside
 * one the recorder loaded is stale. Samples are named the
 * same through the naming's address cache.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <zlib.h>
#include "lib/strtab.h"
#include "model/kallsyms.h"
#include "model/stream.h"
#include "model/symbolize.h"

#define NKSYMS 64

/* A JT_REC_KALLSYMS payload: the text's length, then the text deflated. */
static void *payload(const char *text, size_t *len)
{
	uint64_t raw = strlen(text);
	uLongf zlen = compressBound(raw);
	unsigned char *p = malloc(sizeof(raw) + zlen);

	assert_non_null(p);
	memcpy(p, &raw, sizeof(raw));
	assert_int_equal(
		compress(p + sizeof(raw), &zlen, (const Bytef *)text, raw),
		Z_OK);
	*len = sizeof(raw) + zlen;
	return p;
}

static void load(struct jt_kallsyms *k, const char *text)
{
	size_t len;
	void *p = payload(text, &len);

	assert_int_equal(jt_kallsyms_load(k, p, len), 0);
	free(p);
}

static void test_names_each_span(void **state)
{
	/* Out of order, as modules and BPF programs come. */
	const char *text = "ffffffff81000000 T _text\n"
			   "ffffffff81002000 t do_one\tmodname\n"
			   "ffffffffc0001000 t bpf_prog_1_x\t[bpf]\n"
			   "ffffffff81001000 T start_kernel\n"
			   "garbage line\n"
			   "ffffffff81003000 T _etext\n";
	struct jt_kallsyms k;

	load(&k, text);
	assert_int_equal(k.n, 5);
	assert_null(jt_kallsyms_find(&k, 0xffffffff80ffffff));
	assert_string_equal(jt_kallsyms_find(&k, 0xffffffff81000000), "_text");
	assert_string_equal(jt_kallsyms_find(&k, 0xffffffff81000fff), "_text");
	assert_string_equal(jt_kallsyms_find(&k, 0xffffffff81001000),
			    "start_kernel");
	assert_string_equal(jt_kallsyms_find(&k, 0xffffffff81002abc), "do_one");
	assert_string_equal(jt_kallsyms_find(&k, 0xffffffffc0001008),
			    "bpf_prog_1_x");
	assert_int_equal(k.syms[0].addr, 0xffffffff81000000);
	assert_string_equal(k.syms[4].name, "bpf_prog_1_x");
	jt_kallsyms_free(&k);
}

/* Many symbols: every name survives the packing, at its own address. */
static void test_many_symbols_keep_their_names(void **state)
{
	size_t n = 20000, i, len = 0;
	char *text = malloc(n * 48);
	struct jt_kallsyms k;

	assert_non_null(text);
	for (i = n; i-- > 0;)
		len += sprintf(text + len, "%016zx t fn_%zu_%s\n",
			       0xffffffff81000000 + i * 16, i,
			       i % 3 ? "x" : "longer_name");
	load(&k, text);
	assert_int_equal(k.n, n);
	for (i = 0; i < n; i++) {
		char want[48];

		snprintf(want, sizeof(want), "fn_%zu_%s", i,
			 i % 3 ? "x" : "longer_name");
		assert_string_equal(
			jt_kallsyms_find(&k, 0xffffffff81000000 + i * 16 + 15),
			want);
	}
	jt_kallsyms_free(&k);
	free(text);
}

/*
 * In address order but for a tail (programs loaded last), as the kernel
 * lists them: the tail falls into place before, between and after the
 * start's symbols, and every symbol names its own span.
 */
static void test_a_late_tail_falls_into_place(void **state)
{
	size_t n = 5000, m = 300, i, len = 0;
	uint64_t base = 0xffffffff81000000ULL;
	char *text = malloc((n + m) * 48);
	unsigned int seed = 9;
	size_t *order = malloc(n * sizeof(*order));
	struct jt_kallsyms k;

	assert_non_null(text);
	for (i = 0; i < n; i++) {
		len += sprintf(text + len, "%016llx t s_%zu\n",
			       (unsigned long long)(base + 32 * i), i);
		order[i] = i;
	}
	/* Distinct slots, in random order; the first five before the start. */
	for (i = 0; i < m; i++) {
		size_t j = i + rand_r(&seed) % (n - i), t = order[i];

		order[i] = order[j];
		order[j] = t;
		if (i < 5)
			len += sprintf(
				text + len, "%016llX T early_%zu\n",
				(unsigned long long)(base - 16 * (i + 1)), i);
		else
			len += sprintf(
				text + len, "%016llx t t_%zu\n",
				(unsigned long long)(base + 32 * order[i] + 16),
				order[i]);
	}
	load(&k, text);
	assert_int_equal(k.n, n + m);
	for (i = 1; i < k.n; i++)
		assert_true(k.syms[i - 1].addr < k.syms[i].addr);
	for (i = 0; i < n; i++) {
		char want[32];

		snprintf(want, sizeof(want), "s_%zu", i);
		assert_string_equal(jt_kallsyms_find(&k, base + 32 * i + 15),
				    want);
	}
	for (i = 5; i < m; i++) {
		char want[32];

		snprintf(want, sizeof(want), "t_%zu", order[i]);
		assert_string_equal(
			jt_kallsyms_find(&k, base + 32 * order[i] + 16), want);
		assert_string_equal(
			jt_kallsyms_find(&k, base + 32 * order[i] + 31), want);
	}
	for (i = 0; i < 5; i++) {
		char want[32];

		snprintf(want, sizeof(want), "early_%zu", i);
		assert_string_equal(
			jt_kallsyms_find(&k, base - 16 * (i + 1) + 15), want);
	}
	jt_kallsyms_free(&k);
	free(order);
	free(text);
}

/*
 * The recorder's own programs come with their length: past the end of the
 * last one in a pack is free space, named by nothing. The same program
 * read from /proc/kallsyms as well, and one that starts where another
 * ends, are named as before.
 */
static void test_a_programs_length_ends_its_span(void **state)
{
	const char *text = "ffffffffc0001000 t bpf_prog_a_one\t[bpf]\n"
			   "ffffffffc0001000 t bpf_prog_a_one\t[bpf]\t256\n"
			   "ffffffffc0001100 t bpf_prog_b_two\t[bpf]\t64\n"
			   "ffffffffc0201000 t ftrace_trampoline\t[ftrace]\n"
			   "ffffffff81000000 T _text\n";
	struct jt_kallsyms k;

	load(&k, text);
	assert_string_equal(jt_kallsyms_find(&k, 0xffffffffc00010ff),
			    "bpf_prog_a_one");
	assert_string_equal(jt_kallsyms_find(&k, 0xffffffffc0001100),
			    "bpf_prog_b_two");
	assert_string_equal(jt_kallsyms_find(&k, 0xffffffffc000113f),
			    "bpf_prog_b_two");
	assert_null(jt_kallsyms_find(&k, 0xffffffffc0001140));
	assert_null(jt_kallsyms_find(&k, 0xffffffffc0200fff));
	/* The index symbolize interns by: the same symbol, or none. */
	assert_string_equal(
		k.syms[jt_kallsyms_index(&k, 0xffffffffc000113f)].name,
		"bpf_prog_b_two");
	assert_int_equal(jt_kallsyms_index(&k, 0xffffffffc0001140), -1);
	assert_string_equal(jt_kallsyms_find(&k, 0xffffffffc0201000),
			    "ftrace_trampoline");
	assert_false(k.hidden);
	jt_kallsyms_free(&k);
}

/*
 * /proc/kallsyms read while programs came and went: a program freed
 * before ours was loaded in its place is still listed, inside ours. It
 * is left out, and ours keeps its whole span; a symbol at our end or
 * past it stays.
 */
static void test_a_stale_program_inside_ours_is_left_out(void **state)
{
	const char *text = "ffffffffc0001000 t bpf_prog_a_one\t[bpf]\n"
			   "ffffffffc0001040 t bpf_prog_f_probe\t[bpf]\n"
			   "ffffffffc0001100 t bpf_prog_c_next\t[bpf]\n"
			   "ffffffffc0001000 t bpf_prog_a_one\t[bpf]\t256\n"
			   "ffffffff81000000 T _text\n";
	struct jt_kallsyms k;

	load(&k, text);
	assert_int_equal(k.stale, 1);
	assert_string_equal(jt_kallsyms_find(&k, 0xffffffffc0001040),
			    "bpf_prog_a_one");
	assert_string_equal(jt_kallsyms_find(&k, 0xffffffffc00010ff),
			    "bpf_prog_a_one");
	assert_string_equal(jt_kallsyms_find(&k, 0xffffffffc0001100),
			    "bpf_prog_c_next");
	assert_string_equal(jt_kallsyms_find(&k, 0xffffffff81000010), "_text");
	jt_kallsyms_free(&k);
}

static void test_hidden_addresses_name_nothing(void **state)
{
	struct jt_kallsyms k;

	load(&k, "0000000000000000 T _text\n0000000000000000 T start\n");
	assert_true(k.hidden);
	assert_null(jt_kallsyms_find(&k, 0));
	assert_int_equal(jt_kallsyms_index(&k, 0), -1);
	jt_kallsyms_free(&k);
}

static void test_a_corrupt_payload_is_refused(void **state)
{
	size_t len;
	unsigned char *p = payload("ffffffff81000000 T _text\n", &len);
	struct jt_kallsyms k;

	p[len - 3] ^= 0xff;
	assert_int_equal(jt_kallsyms_load(&k, p, len), -1);
	assert_int_equal(jt_kallsyms_load(&k, p, 4), -1);
	free(p);
}

/*
 * Kernel samples named as the pipeline names them (jt_syms_resolve): the
 * names jt_kallsyms_find gives, for addresses in no symbol and for ones
 * 4 KiB apart, in different symbols, that share a slot of the naming's
 * address cache; each symbol's name one pointer.
 */
static void test_samples_are_named_as_the_table_names_them(void **state)
{
	const uint64_t base = 0xffffffff81000000ULL;
	static struct jt_stream s;
	const char *names[NKSYMS] = {};
	char *text = malloc(NKSYMS * 48), *p = text;
	unsigned int seed = 3, i;
	struct jt_kallsyms k;
	struct jt_symres r;
	struct jt_syms y;

	for (i = 0; i < NKSYMS; i++)
		p += sprintf(p, "%016llx T ksym_%u\n",
			     (unsigned long long)(base + 0x1000ULL * i), i);
	p += sprintf(p, "%016llx t bpf_prog_1\t[bpf]\t256\n",
		     (unsigned long long)(base + 0x1000ULL * NKSYMS + 0x800));
	load(&k, text);
	s.kallsyms = payload(text, &s.kallsyms_len);
	jt_syms_init(&y, &s);
	for (i = 0; i < 40000; i++) {
		uint64_t ip = base - 0x100 +
			      rand_r(&seed) % (0x1000 * NKSYMS + 0xc00);
		const char *want;
		long at;

		/* Half of them at one offset in each symbol: one slot. */
		if (rand_r(&seed) % 2)
			ip = (ip & ~0xfffULL) | 0x123;
		want = jt_kallsyms_find(&k, ip);
		at = jt_kallsyms_index(&k, ip);
		jt_syms_resolve(&y, NULL, 1, ip, true, &r);
		assert_true(r.kernel);
		if (!want) {
			assert_null(r.sym);
			continue;
		}
		assert_non_null(r.sym);
		assert_string_equal(r.sym, want);
		assert_int_equal(r.source, JT_SRC_KALLSYMS);
		assert_true(at >= 0 && at < NKSYMS + 1);
		if (at < NKSYMS && names[at])
			assert_ptr_equal(r.sym, names[at]);
		else if (at < NKSYMS)
			names[at] = r.sym;
	}
	jt_syms_free(&y);
	jt_strtab_free(&s.strs);
	free(s.kallsyms);
	jt_kallsyms_free(&k);
	free(text);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_names_each_span),
		cmocka_unit_test(
			test_samples_are_named_as_the_table_names_them),
		cmocka_unit_test(test_many_symbols_keep_their_names),
		cmocka_unit_test(test_a_late_tail_falls_into_place),
		cmocka_unit_test(test_a_programs_length_ends_its_span),
		cmocka_unit_test(test_a_stale_program_inside_ours_is_left_out),
		cmocka_unit_test(test_hidden_addresses_name_nothing),
		cmocka_unit_test(test_a_corrupt_payload_is_refused),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
