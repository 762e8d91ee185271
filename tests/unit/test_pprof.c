// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The pprof encoder, decoded back with protobuf-c: one location per
 * (address, function), so an address reused by another JIT function
 * gives a second location; same stacks summed; labels and types set.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <zlib.h>
#include "export/pprof.h"
#include "gen/profile.pb-c.h"

static Perftools__Profiles__Profile *decode(struct jt_pprof *p)
{
	static unsigned char raw[1 << 20];
	Perftools__Profiles__Profile *prof;
	uLongf rawlen = sizeof(raw);
	z_stream z = {};
	void *buf;
	size_t len;

	assert_int_equal(jt_pprof_encode(p, &buf, &len), 0);
	assert_int_equal(inflateInit2(&z, 15 + 16), Z_OK);
	z.next_in = buf;
	z.avail_in = len;
	z.next_out = raw;
	z.avail_out = rawlen;
	assert_int_equal(inflate(&z, Z_FINISH), Z_STREAM_END);
	rawlen = z.total_out;
	inflateEnd(&z);
	free(buf);
	prof = perftools__profiles__profile__unpack(NULL, rawlen, raw);
	assert_non_null(prof);
	return prof;
}

static const char *str(const Perftools__Profiles__Profile *p, int64_t i)
{
	assert_true(i >= 0 && (size_t)i < p->n_string_table);
	return p->string_table[i];
}

static void add(struct jt_pprof *p, const char *name, uint64_t addr,
		uint32_t pid)
{
	struct jt_pprof_frame f[2] = {
		{ addr, name, "jit-7.dump", 0x1000, 0x3000, 0, NULL },
		{ 0x401000, "main", "/usr/bin/app", 0x400000, 0x500000, 0x1000,
		  "abcd" },
	};
	struct jt_pprof_sample s = { f, 2, pid, "app", "jitdump", 1, 1000 };

	assert_int_equal(jt_pprof_add(p, &s), 0);
}

static void test_reused_address_two_functions(void **state)
{
	struct jt_pprof *p = jt_pprof_new(5, 1000);
	Perftools__Profiles__Profile *prof;
	size_t i, foo = 0, bar = 0;

	add(p, "foo", 0x1010, 7);
	add(p, "foo", 0x1010, 7);
	add(p, "bar", 0x1010,
	    7); /* the same address, later: another function */
	add(p, "foo", 0x1010, 8); /* another process: another sample */
	jt_pprof_set_duration(p, 77);
	prof = decode(p);
	assert_string_equal(str(prof, 0), "");
	assert_int_equal(prof->n_sample_type, 2);
	assert_string_equal(str(prof, prof->sample_type[0]->type), "samples");
	assert_string_equal(str(prof, prof->sample_type[1]->unit),
			    "nanoseconds");
	assert_int_equal(prof->period, 1000);
	assert_int_equal(prof->time_nanos, 5);
	assert_int_equal(prof->duration_nanos, 77);
	/* foo and bar at one address; main: three locations, three functions */
	assert_int_equal(prof->n_location, 3);
	assert_int_equal(prof->n_function, 3);
	assert_int_equal(prof->n_mapping, 2);
	assert_int_equal(prof->n_sample, 3);
	for (i = 0; i < prof->n_sample; i++) {
		Perftools__Profiles__Sample *s = prof->sample[i];
		Perftools__Profiles__Location *leaf = NULL;
		size_t k;

		assert_int_equal(s->n_location_id, 2);
		assert_int_equal(s->n_label, 3);
		assert_string_equal(str(prof, s->label[0]->key), "pid");
		for (k = 0; k < prof->n_location; k++)
			if (prof->location[k]->id == s->location_id[0])
				leaf = prof->location[k];
		assert_non_null(leaf);
		assert_int_equal(leaf->address, 0x1010);
		if (!strcmp(str(prof,
				prof->function[leaf->line[0]->function_id - 1]
					->name),
			    "foo"))
			foo += s->value[0];
		else
			bar += s->value[0];
		assert_int_equal(s->value[1], 1000 * s->value[0]);
	}
	assert_int_equal(foo, 3);
	assert_int_equal(bar, 1);
	for (i = 0; i < prof->n_mapping; i++) {
		Perftools__Profiles__Mapping *m = prof->mapping[i];

		assert_true(m->has_functions);
		if (!strcmp(str(prof, m->filename), "/usr/bin/app")) {
			assert_int_equal(m->memory_start, 0x400000);
			assert_int_equal(m->file_offset, 0x1000);
			assert_string_equal(str(prof, m->build_id), "abcd");
		}
	}
	perftools__profiles__profile__free_unpacked(prof, NULL);
	jt_pprof_free(p);
}

/*
 * The main binary moves to the front, as pprof wants; ids stay their
 * index plus one (Parca refuses a profile otherwise), and every location
 * still names its own mapping.
 */
static void test_mapping_ids_sequential(void **state)
{
	struct jt_pprof *p = jt_pprof_new(5, 1000);
	Perftools__Profiles__Profile *prof;
	size_t i, k;

	add(p, "foo", 0x1010, 7); /* jit-7.dump first, then /usr/bin/app */
	prof = decode(p);
	assert_int_equal(prof->n_mapping, 2);
	assert_string_equal(str(prof, prof->mapping[0]->filename),
			    "/usr/bin/app");
	for (i = 0; i < prof->n_mapping; i++)
		assert_int_equal(prof->mapping[i]->id, i + 1);
	for (i = 0; i < prof->n_location; i++) {
		const Perftools__Profiles__Location *l = prof->location[i];
		const char *fn =
			str(prof,
			    prof->function[l->line[0]->function_id - 1]->name);

		for (k = 0; k < prof->n_mapping; k++)
			if (prof->mapping[k]->id == l->mapping_id)
				break;
		assert_true(k < prof->n_mapping);
		assert_string_equal(str(prof, prof->mapping[k]->filename),
				    strcmp(fn, "main") ? "jit-7.dump" :
							 "/usr/bin/app");
	}
	perftools__profiles__profile__free_unpacked(prof, NULL);
	jt_pprof_free(p);
}

/* Names are the JIT's bytes: a profile holds only valid UTF-8. */
static void test_names_made_valid_utf8(void **state)
{
	struct jt_pprof *p = jt_pprof_new(5, 1000);
	Perftools__Profiles__Profile *prof;
	size_t i;

	add(p, "bad_\xff\xfe\xc3\xbc", 0x1010, 7);
	prof = decode(p);
	for (i = 0; i < prof->n_function; i++)
		if (!strncmp(str(prof, prof->function[i]->name), "bad_", 4))
			break;
	assert_true(i < prof->n_function);
	assert_string_equal(str(prof, prof->function[i]->name),
			    "bad_\xef\xbf\xbd\xef\xbf\xbd\xc3\xbc");
	perftools__profiles__profile__free_unpacked(prof, NULL);
	jt_pprof_free(p);
}

/* Periods come from the recording: a hostile one must not wrap the sum. */
static void test_sums_saturate(void **state)
{
	struct jt_pprof *p = jt_pprof_new(5, 1000);
	struct jt_pprof_frame f = { 0x1010, "foo", "jit-7.dump", 0x1000,
				    0x3000, 0,	   NULL };
	struct jt_pprof_sample s = { &f,	1,	   7,	     "app",
				     "jitdump", INT64_MAX, INT64_MAX };
	Perftools__Profiles__Profile *prof;

	assert_int_equal(jt_pprof_add(p, &s), 0);
	assert_int_equal(jt_pprof_add(p, &s), 0);
	prof = decode(p);
	assert_int_equal(prof->n_sample, 1);
	assert_true(prof->sample[0]->value[0] == INT64_MAX);
	assert_true(prof->sample[0]->value[1] == INT64_MAX);
	perftools__profiles__profile__free_unpacked(prof, NULL);
	jt_pprof_free(p);
}

/* Kernel addresses as 0 for a reader kptr_restrict keeps them from. */
static void test_kernel_addresses_hidden(void **state)
{
	struct jt_pprof *p = jt_pprof_new(5, 1000);
	struct jt_pprof_frame f = { 0xffffffff81001234ULL,
				    "do_mmap",
				    "[kernel.kallsyms]",
				    0xffffffff81000000ULL,
				    0xffffffff82000000ULL,
				    0,
				    NULL };
	struct jt_pprof_sample s = { &f, 1, 7, "app", "kallsyms", 1, 1000 };
	Perftools__Profiles__Profile *prof;

	jt_pprof_hide_kernel(p);
	assert_int_equal(jt_pprof_add(p, &s), 0);
	prof = decode(p);
	assert_int_equal(prof->n_location, 1);
	assert_int_equal(prof->location[0]->address, 0);
	assert_int_equal(prof->mapping[0]->memory_start, 0);
	assert_int_equal(prof->mapping[0]->memory_limit, 0);
	assert_string_equal(
		str(prof,
		    prof->function[prof->location[0]->line[0]->function_id - 1]
			    ->name),
		"do_mmap");
	perftools__profiles__profile__free_unpacked(prof, NULL);
	jt_pprof_free(p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_reused_address_two_functions),
		cmocka_unit_test(test_mapping_ids_sequential),
		cmocka_unit_test(test_names_made_valid_utf8),
		cmocka_unit_test(test_sums_saturate),
		cmocka_unit_test(test_kernel_addresses_hidden),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
