/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The one hash table: open addressing with linear probing over (hash,
 * value) pairs. Callers keep their keys inside their values and say how
 * to compare; values are never NULL. Removal shifts entries back, so
 * there are no tombstones and a table of live state stays small.
 */
#ifndef JT_HASH_H
#define JT_HASH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct jt_hash_ent {
	uint64_t hash;
	void *val;
};

struct jt_hash {
	struct jt_hash_ent *e;
	size_t cap; /* a power of two, or 0 */
	size_t n;
};

typedef bool (*jt_hash_eq)(const void *val, const void *key);

void *jt_hash_find(const struct jt_hash *h, uint64_t hash, jt_hash_eq eq,
		   const void *key);
/* Add val under hash; the caller knows no equal value is there. */
int jt_hash_add(struct jt_hash *h, uint64_t hash, void *val);
/* Remove and return the value equal to key, or NULL. */
void *jt_hash_del(struct jt_hash *h, uint64_t hash, jt_hash_eq eq,
		  const void *key);
void jt_hash_free(struct jt_hash *h);

/* For a find of hash soon: warm its slot. */
static inline void jt_hash_prefetch(const struct jt_hash *h, uint64_t hash)
{
	if (h->cap)
		__builtin_prefetch(&h->e[hash & (h->cap - 1)]);
}

/*
 * A zeroed table of len bytes, for slots read at random: of 2 MiB or
 * more, mapped on its own in huge pages and given back when freed.
 */
void *jt_table_alloc(size_t len);
void jt_table_free(void *p, size_t len);

uint64_t jt_hash_bytes(const void *p, size_t len);
uint64_t jt_hash_u64(uint64_t x);

#define jt_hash_for_each(h, i)                                                 \
	for ((i) = 0; (i) < (h)->cap; (i)++)                                   \
		if ((h)->e[i].val)

#endif /* JT_HASH_H */
