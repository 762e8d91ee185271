/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Bytes written one field after another, as a file holds them: tests
 * build .eh_frame sections and jitdump records in it. Include after
 * cmocka.h.
 */
#ifndef JT_TEST_BYTES_H
#define JT_TEST_BYTES_H

#include <stdint.h>
#include <string.h>

struct bytes {
	unsigned char b[4096];
	size_t n;
};

static inline void put(struct bytes *b, const void *p, size_t n)
{
	assert_true(b->n + n <= sizeof(b->b));
	memcpy(b->b + b->n, p, n);
	b->n += n;
}

static inline void put_u32(struct bytes *b, uint32_t v)
{
	put(b, &v, 4);
}

static inline void put_u64(struct bytes *b, uint64_t v)
{
	put(b, &v, 8);
}

#endif
