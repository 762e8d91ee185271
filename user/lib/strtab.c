// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include "lib/strtab.h"

struct str_key {
	const char *s;
	size_t len;
};

static bool str_eq(const void *val, const void *key)
{
	const struct str_key *k = key;
	const char *v = val;

	return !strncmp(v, k->s, k->len) && !v[k->len];
}

/* len bytes of s (need not be NUL-terminated); NULL on allocation failure. */
const char *jt_intern(struct jt_strtab *t, const char *s, size_t len)
{
	struct str_key k = { s, len };
	uint64_t hash = jt_hash_bytes(s, len);
	char *v = jt_hash_find(&t->h, hash, str_eq, &k);

	if (v)
		return v;
	v = strndup(s, len);
	if (!v || jt_hash_add(&t->h, hash, v)) {
		free(v);
		return NULL;
	}
	return v;
}

void jt_strtab_free(struct jt_strtab *t)
{
	size_t i;

	jt_hash_for_each (&t->h, i)
		free(t->h.e[i].val);
	jt_hash_free(&t->h);
}
