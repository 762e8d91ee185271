// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Stack copies stored as deltas: what the writer encodes, the reader
 * gets back byte for byte, thread by thread; a delta with no copy to
 * apply it to, or one that does not add up, is refused.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <linux/perf_event.h>
#include "lib/perf_rec.h"
#include "lib/stackdelta.h"

#define ST                                                                     \
	(PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME |                 \
	 PERF_SAMPLE_CPU | PERF_SAMPLE_PERIOD | PERF_SAMPLE_CALLCHAIN |        \
	 PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER)
#define SP_REG 7
#define MASK ((1ULL << SP_REG) | (1ULL << 8))
#define N 4096

/* A sample of tid with sp and a stack copy of N bytes. */
static size_t sample(unsigned char *b, uint32_t tid, uint64_t sp,
		     const unsigned char *stack)
{
	uint64_t w[] = { 0x401000,
			 ((uint64_t)tid << 32) | 7,
			 1000 + tid,
			 0,
			 1,
			 0 /* no kernel chain */,
			 PERF_SAMPLE_REGS_ABI_64,
			 sp,
			 0x401000,
			 N };
	struct perf_event_header h = { PERF_RECORD_SAMPLE, 0, 0 };
	size_t n = sizeof(h);
	uint64_t dyn = N;

	memcpy(b + n, w, sizeof(w));
	n += sizeof(w);
	memcpy(b + n, stack, N);
	n += N;
	memcpy(b + n, &dyn, 8);
	n += 8;
	h.size = n;
	memcpy(b, &h, sizeof(h));
	return n;
}

static unsigned char stk[3][N];

static void fill(unsigned char *s, unsigned seed)
{
	size_t i;

	for (i = 0; i < N; i++)
		s[i] = (i * 131 + seed * 7) & 0xff;
}

static void roundtrip(struct jt_stackdelta *wr, struct jt_stackdelta *rd,
		      uint32_t tid, uint64_t sp, const unsigned char *stack,
		      bool want_delta)
{
	static unsigned char rec[N + 256], enc[N + 256], dec[N + 256];
	struct jt_delta_hdr h;
	size_t len = sample(rec, tid, sp, stack), olen, dlen;
	bool delta = jt_stackdelta_encode(wr, rec, len, enc, &olen, &h);

	assert_int_equal(delta, want_delta);
	if (!delta) {
		jt_stackdelta_note(rd, rec, len);
		return;
	}
	assert_true(olen < len);
	assert_int_equal(jt_stackdelta_decode(rd, &h, enc, olen, dec,
					      sizeof(dec), &dlen),
			 0);
	assert_int_equal(dlen, len);
	assert_memory_equal(dec, rec, len);
}

static void test_roundtrip_threads(void **state)
{
	struct jt_stackdelta wr, rd;
	uint64_t sp = 0x7ffc0000;

	jt_stackdelta_init(&wr, ST, MASK, SP_REG);
	jt_stackdelta_init(&rd, ST, MASK, SP_REG);
	fill(stk[0], 1);
	roundtrip(&wr, &rd, 10, sp, stk[0], false); /* first: whole */
	/* The same thread, deeper by 64 bytes: the outer frames are kept. */
	memcpy(stk[1] + 64, stk[0], N - 64);
	memset(stk[1], 0xaa, 64);
	roundtrip(&wr, &rd, 10, sp - 64, stk[1], true);
	/* Shallower again, with a changed word in the middle. */
	memcpy(stk[2], stk[0], N);
	stk[2][2000] ^= 1;
	roundtrip(&wr, &rd, 10, sp, stk[2], true);
	/* Another thread has no copy yet; then its own. */
	roundtrip(&wr, &rd, 11, sp + 0x100000, stk[0], false);
	roundtrip(&wr, &rd, 11, sp + 0x100000, stk[0], true);
	/* Exit: the next sample of that tid is whole again. */
	jt_stackdelta_forget(&wr, 10);
	jt_stackdelta_forget(&rd, 10);
	roundtrip(&wr, &rd, 10, sp, stk[0], false);
	jt_stackdelta_free(&wr);
	jt_stackdelta_free(&rd);
}

static void test_refuses_what_does_not_add_up(void **state)
{
	static unsigned char rec[N + 256], enc[N + 256], dec[N + 256];
	struct jt_stackdelta wr, rd;
	struct jt_delta_hdr h, bad;
	size_t len, olen, dlen;

	jt_stackdelta_init(&wr, ST, MASK, SP_REG);
	jt_stackdelta_init(&rd, ST, MASK, SP_REG);
	fill(stk[0], 3);
	len = sample(rec, 20, 0x7ffc0000, stk[0]);
	jt_stackdelta_encode(&wr, rec, len, enc, &olen, &h);
	len = sample(rec, 20, 0x7ffc0000, stk[0]);
	assert_true(jt_stackdelta_encode(&wr, rec, len, enc, &olen, &h));
	/* The reader never saw the thread's first sample. */
	assert_int_equal(jt_stackdelta_decode(&rd, &h, enc, olen, dec,
					      sizeof(dec), &dlen),
			 -1);
	assert_int_equal(rd.missing, 1);
	/* It did; but the header claims more than the copy holds. */
	len = sample(rec, 20, 0x7ffc0000, stk[0]);
	jt_stackdelta_note(&rd, rec, len);
	bad = h;
	bad.keep += 8;
	assert_int_equal(jt_stackdelta_decode(&rd, &bad, enc, olen, dec,
					      sizeof(dec), &dlen),
			 -1);
	bad = h;
	bad.head = N * 2;
	assert_int_equal(jt_stackdelta_decode(&rd, &bad, enc, olen, dec,
					      sizeof(dec), &dlen),
			 -1);
	/* Too small an output. */
	assert_int_equal(
		jt_stackdelta_decode(&rd, &h, enc, olen, dec, 100, &dlen), -1);
	assert_int_equal(jt_stackdelta_decode(&rd, &h, enc, olen, dec,
					      sizeof(dec), &dlen),
			 0);
	jt_stackdelta_free(&wr);
	jt_stackdelta_free(&rd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_roundtrip_threads),
		cmocka_unit_test(test_refuses_what_does_not_add_up),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
