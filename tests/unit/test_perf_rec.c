// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * A sample's fields, each where sample_type puts it; its ip and pid read
 * from its first fields, and its time for the stream, as the full parse.
 */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <linux/perf_event.h>
#include "lib/perf_rec.h"

static const uint64_t bits[] = {
	PERF_SAMPLE_IDENTIFIER, PERF_SAMPLE_TIME,      PERF_SAMPLE_ADDR,
	PERF_SAMPLE_ID,		PERF_SAMPLE_CPU,       PERF_SAMPLE_PERIOD,
	PERF_SAMPLE_CALLCHAIN,	PERF_SAMPLE_STREAM_ID,
};

/* A sample of sample_type st, its fields in the order perf writes them. */
static size_t sample(unsigned char *b, uint64_t st, uint64_t ip, uint32_t pid,
		     unsigned int *seed)
{
	struct perf_event_header h = { PERF_RECORD_SAMPLE, 0, 0 };
	uint64_t w[24], nr = rand_r(seed) % 4, i, more = rand_r(seed) % 3;
	size_t n = 0;

	if (st & PERF_SAMPLE_IDENTIFIER)
		w[n++] = 77;
	if (st & PERF_SAMPLE_IP)
		w[n++] = ip;
	if (st & PERF_SAMPLE_TID)
		w[n++] = ((uint64_t)(pid + 1) << 32) | pid;
	if (st & PERF_SAMPLE_TIME)
		w[n++] = ip ^ 0x1111;
	if (st & PERF_SAMPLE_ADDR)
		w[n++] = ip ^ 0x2222;
	if (st & PERF_SAMPLE_ID)
		w[n++] = 77;
	if (st & PERF_SAMPLE_STREAM_ID)
		w[n++] = 78;
	if (st & PERF_SAMPLE_CPU)
		w[n++] = pid % 61 + 3;
	if (st & PERF_SAMPLE_PERIOD)
		w[n++] = ip ^ 0x3333;
	if (st & PERF_SAMPLE_CALLCHAIN) {
		w[n++] = nr;
		for (i = 0; i < nr; i++)
			w[n++] = ip + i;
	}
	/* What follows (registers, a stack): the parse leaves it as rest. */
	for (i = 0; i < more; i++)
		w[n++] = 0x5555;
	h.size = sizeof(h) + n * 8;
	memcpy(b, &h, sizeof(h));
	memcpy(b + sizeof(h), w, n * 8);
	return h.size;
}

static void test_sample_ip_is_the_parsed_one(void **state)
{
	unsigned int seed = 11, round;
	unsigned char rec[256];

	for (round = 0; round < 5000; round++) {
		uint64_t st = PERF_SAMPLE_IP | PERF_SAMPLE_TID, ip, want_ip;
		uint32_t pid, want_pid = rand_r(&seed);
		struct jt_sample s;
		size_t len, cut, i;

		for (i = 0; i < sizeof(bits) / sizeof(bits[0]); i++)
			if (rand_r(&seed) % 2)
				st |= bits[i];
		want_ip = ((uint64_t)rand_r(&seed) << 32) | rand_r(&seed);
		len = sample(rec, st, want_ip, want_pid, &seed);
		assert_int_equal(jt_perf_sample(rec, len, st, &s), 0);
		assert_int_equal(jt_perf_sample_ip(rec, len, st, &ip, &pid), 0);
		assert_int_equal(ip, s.ip);
		assert_int_equal(ip, want_ip);
		assert_int_equal(pid, s.pid);
		assert_int_equal(pid, want_pid);
		/* Cut short of its pid: refused, never read past the end. */
		cut = sizeof(struct perf_event_header) + 16 +
		      (st & PERF_SAMPLE_IDENTIFIER ? 8 : 0);
		assert_int_equal(jt_perf_sample_ip(rec, cut - 1, st, &ip, &pid),
				 -EINVAL);
		assert_int_equal(jt_perf_sample_ip(rec, cut, st, &ip, &pid), 0);
	}
}

/* Every field the parse gives, for every mix of the fields before it. */
static void test_sample_fields_where_perf_writes_them(void **state)
{
	unsigned int seed = 5, round;
	unsigned char rec[256];

	for (round = 0; round < 5000; round++) {
		uint64_t st = 0, ip = ((uint64_t)rand_r(&seed) << 32) | round;
		uint32_t pid = rand_r(&seed);
		size_t len, cut, i, fixed = 0, rest;
		struct jt_sample s;

		for (i = 0; i < sizeof(bits) / sizeof(bits[0]); i++)
			if (rand_r(&seed) % 2)
				st |= bits[i];
		st |= rand_r(&seed) % 2 ? PERF_SAMPLE_IP : 0;
		st |= rand_r(&seed) % 2 ? PERF_SAMPLE_TID : 0;
		len = sample(rec, st, ip, pid, &seed);
		assert_int_equal(jt_perf_sample(rec, len, st, &s), 0);
		assert_int_equal(s.ip, st & PERF_SAMPLE_IP ? ip : 0);
		assert_int_equal(s.pid, st & PERF_SAMPLE_TID ? pid : 0);
		assert_int_equal(s.tid, st & PERF_SAMPLE_TID ? pid + 1 : 0);
		assert_int_equal(s.time,
				 st & PERF_SAMPLE_TIME ? ip ^ 0x1111 : 0);
		assert_int_equal(s.addr,
				 st & PERF_SAMPLE_ADDR ? ip ^ 0x2222 : 0);
		assert_int_equal(s.cpu,
				 st & PERF_SAMPLE_CPU ? pid % 61 + 3 : 0);
		assert_int_equal(s.period,
				 st & PERF_SAMPLE_PERIOD ? ip ^ 0x3333 : 0);
		for (i = 0; i < s.nr_chain; i++)
			assert_int_equal(s.chain[i], ip + i);
		for (i = 0; i < sizeof(bits) / sizeof(bits[0]); i++)
			fixed += !!(st & bits[i]) &&
				 bits[i] != PERF_SAMPLE_CALLCHAIN;
		fixed += !!(st & PERF_SAMPLE_IP) + !!(st & PERF_SAMPLE_TID);
		rest = len - sizeof(struct perf_event_header) - 8 * fixed -
		       (st & PERF_SAMPLE_CALLCHAIN ? 8 * (1 + s.nr_chain) : 0);
		assert_int_equal(s.rest_len, rest);
		assert_ptr_equal(s.rest, rec + len - rest);
		/* Cut anywhere before the rest: refused, never read past it. */
		for (cut = 0; cut < len - rest; cut++)
			assert_int_equal(jt_perf_sample(rec, cut, st, &s),
					 -EINVAL);
	}
}

/* Without an ip or a pid in the sample there is nothing to read. */
static void test_sample_ip_needs_ip_and_tid(void **state)
{
	unsigned int seed = 3;
	unsigned char rec[256];
	uint64_t ip;
	uint32_t pid;
	size_t len;

	len = sample(rec, PERF_SAMPLE_IP | PERF_SAMPLE_TIME, 1, 2, &seed);
	assert_int_equal(jt_perf_sample_ip(rec, len,
					   PERF_SAMPLE_IP | PERF_SAMPLE_TIME,
					   &ip, &pid),
			 -EINVAL);
	len = sample(rec, PERF_SAMPLE_TID | PERF_SAMPLE_TIME, 1, 2, &seed);
	assert_int_equal(jt_perf_sample_ip(rec, len,
					   PERF_SAMPLE_TID | PERF_SAMPLE_TIME,
					   &ip, &pid),
			 -EINVAL);
}

/*
 * The stream times every sample with jt_perf_time: the time the parse
 * gives, and 0 (untimed, counted) wherever the parse refuses it: cut
 * anywhere, or with a call chain longer than the record.
 */
static void test_sample_time_is_the_parsed_one(void **state)
{
	unsigned int seed = 17, round;
	unsigned char rec[256];

	for (round = 0; round < 5000; round++) {
		uint64_t st = PERF_SAMPLE_TIME, ip = 0x1000 + round, nr;
		struct jt_sample s;
		size_t len, cut, at;
		int err;

		for (at = 0; at < sizeof(bits) / sizeof(bits[0]); at++)
			if (rand_r(&seed) % 2)
				st |= bits[at];
		st |= rand_r(&seed) % 2 ? PERF_SAMPLE_IP : 0;
		st |= rand_r(&seed) % 2 ? PERF_SAMPLE_TID : 0;
		len = sample(rec, st, ip, 42, &seed);
		assert_int_equal(jt_perf_time(rec, len, st), ip ^ 0x1111);
		for (cut = 0; cut <= len; cut++) {
			err = jt_perf_sample(rec, cut, st, &s);
			assert_int_equal(jt_perf_time(rec, cut, st),
					 err ? 0 : s.time);
		}
		if (!(st & PERF_SAMPLE_CALLCHAIN))
			continue;
		/* The chain's count, just past the fixed words: made huge. */
		assert_int_equal(jt_perf_sample(rec, len, st, &s), 0);
		at = (const unsigned char *)s.chain - rec - 8;
		nr = (len - at) / 8;
		memcpy(rec + at, &nr, 8);
		assert_int_equal(jt_perf_sample(rec, len, st, &s), -EINVAL);
		assert_int_equal(jt_perf_time(rec, len, st), 0);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sample_ip_is_the_parsed_one),
		cmocka_unit_test(test_sample_ip_needs_ip_and_tid),
		cmocka_unit_test(test_sample_fields_where_perf_writes_them),
		cmocka_unit_test(test_sample_time_is_the_parsed_one),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
