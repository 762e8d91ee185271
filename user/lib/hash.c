// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include "lib/hash.h"

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

#define HUGE_PAGE (2UL << 20)

uint64_t jt_hash_bytes(const void *p, size_t len)
{
	const unsigned char *s = p;
	uint64_t h = 1469598103934665603ULL; /* FNV-1a */

	while (len--)
		h = (h ^ *s++) * 1099511628211ULL;
	/*
	 * FNV's low bits, which pick the slot, hear little of the bytes
	 * before the last: names that differ in a digit clustered.
	 */
	return jt_hash_u64(h);
}

uint64_t jt_hash_u64(uint64_t x)
{
	/* splitmix64's finalizer: every input bit reaches every output bit */
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ULL;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebULL;
	return x ^ (x >> 31);
}

void *jt_hash_find(const struct jt_hash *h, uint64_t hash, jt_hash_eq eq,
		   const void *key)
{
	size_t i;

	if (!h->cap)
		return NULL;
	for (i = hash & (h->cap - 1); h->e[i].val; i = (i + 1) & (h->cap - 1))
		if (h->e[i].hash == hash && eq(h->e[i].val, key))
			return h->e[i].val;
	return NULL;
}

static void place(struct jt_hash_ent *e, size_t cap, uint64_t hash, void *val)
{
	size_t i = hash & (cap - 1);

	while (e[i].val)
		i = (i + 1) & (cap - 1);
	e[i] = (struct jt_hash_ent){ hash, val };
}

/*
 * A table of a huge page or more is mapped on its own, aligned, in huge
 * pages where the kernel gives them, and written in one call. From
 * calloc, rehashing into it read each fresh page before writing it: two
 * faults a page, 40% of the naming bench's faults for its two big tables,
 * and each slot read at random a TLB miss as well.
 */
void *jt_table_alloc(size_t len)
{
	size_t head;
	char *p;

	if (len < HUGE_PAGE)
		return calloc(1, len);
	p = mmap(NULL, len + HUGE_PAGE, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return NULL;
	head = -(uintptr_t)p & (HUGE_PAGE - 1);
	if (head)
		munmap(p, head);
	munmap(p + head + len, HUGE_PAGE - head);
	p += head;
	/* Advice only: without THP, or before 5.14, pages come as faulted. */
	madvise(p, len, MADV_HUGEPAGE);
	madvise(p, len, MADV_POPULATE_WRITE);
	return p;
}

void jt_table_free(void *p, size_t len)
{
	if (len < HUGE_PAGE)
		free(p);
	else if (p)
		munmap(p, len);
}

static int grow(struct jt_hash *h)
{
	size_t cap = h->cap ? h->cap * 2 : 64, i;
	struct jt_hash_ent *e = jt_table_alloc(cap * sizeof(*e));

	if (!e)
		return -ENOMEM;
	for (i = 0; i < h->cap; i++)
		if (h->e[i].val)
			place(e, cap, h->e[i].hash, h->e[i].val);
	jt_table_free(h->e, h->cap * sizeof(*h->e));
	h->e = e;
	h->cap = cap;
	return 0;
}

int jt_hash_add(struct jt_hash *h, uint64_t hash, void *val)
{
	if ((h->n + 1) * 2 > h->cap && grow(h))
		return -ENOMEM;
	place(h->e, h->cap, hash, val);
	h->n++;
	return 0;
}

void *jt_hash_del(struct jt_hash *h, uint64_t hash, jt_hash_eq eq,
		  const void *key)
{
	size_t mask = h->cap - 1, i, j;
	void *val;

	if (!h->cap)
		return NULL;
	for (i = hash & mask; h->e[i].val; i = (i + 1) & mask)
		if (h->e[i].hash == hash && eq(h->e[i].val, key))
			break;
	val = h->e[i].val;
	if (!val)
		return NULL;
	/* Shift back every entry the hole would cut off from its home. */
	for (j = (i + 1) & mask; h->e[j].val; j = (j + 1) & mask) {
		size_t home = h->e[j].hash & mask;

		if (((j - home) & mask) >= ((j - i) & mask)) {
			h->e[i] = h->e[j];
			i = j;
		}
	}
	h->e[i] = (struct jt_hash_ent){};
	h->n--;
	return val;
}

void jt_hash_free(struct jt_hash *h)
{
	jt_table_free(h->e, h->cap * sizeof(*h->e));
	*h = (struct jt_hash){};
}
