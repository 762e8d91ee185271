// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include "lib/nametab.h"

struct jt_name {
	struct jt_nametab *t;
	struct jt_name *next_dead;
	uint64_t died;
	uint32_t refs;
	bool buried; /* in the graveyard, perhaps alive again since */
	char s[];
};

struct name_key {
	const char *s;
	size_t len;
};

static struct jt_name *name_of(const char *s)
{
	return (struct jt_name *)(s - offsetof(struct jt_name, s));
}

static bool name_eq(const void *val, const void *key)
{
	const struct jt_name *n = val;
	const struct name_key *k = key;

	return !strncmp(n->s, k->s, k->len) && !n->s[k->len];
}

const char *jt_name_get(struct jt_nametab *t, const char *s, size_t len)
{
	struct name_key k = { s, len };
	uint64_t hash = jt_hash_bytes(s, len);
	struct jt_name *n = jt_hash_find(&t->h, hash, name_eq, &k);

	if (n) {
		n->refs++;
		return n->s;
	}
	n = malloc(sizeof(*n) + len + 1);
	if (!n || jt_hash_add(&t->h, hash, n)) {
		free(n);
		return NULL;
	}
	*n = (struct jt_name){ .t = t, .refs = 1 };
	memcpy(n->s, s, len);
	n->s[len] = 0;
	return n->s;
}

void jt_name_prefetch(const struct jt_nametab *t, const char *s, size_t len)
{
	jt_hash_prefetch(&t->h, jt_hash_bytes(s, len));
}

void jt_name_ref(const char *name)
{
	name_of(name)->refs++;
}

void jt_name_put(const char *name)
{
	struct jt_name *n;
	struct jt_nametab *t;

	if (!name)
		return;
	n = name_of(name);
	t = n->t;
	if (--n->refs)
		return;
	n->died = t->now;
	/* Buried already: it keeps its place, and waits a little longer. */
	if (n->buried)
		return;
	n->buried = true;
	n->next_dead = NULL;
	if (t->grave_last)
		t->grave_last->next_dead = n;
	else
		t->grave = n;
	t->grave_last = n;
}

static bool same(const void *val, const void *key)
{
	return val == key;
}

size_t jt_names_sweep(struct jt_nametab *t, uint64_t before)
{
	size_t freed = 0;
	struct jt_name *n;

	while ((n = t->grave) && (n->refs || n->died < before)) {
		t->grave = n->next_dead;
		if (!t->grave)
			t->grave_last = NULL;
		n->buried = false;
		if (n->refs)
			continue;
		jt_hash_del(&t->h, jt_hash_bytes(n->s, strlen(n->s)), same, n);
		free(n);
		freed++;
	}
	return freed;
}

void jt_nametab_free(struct jt_nametab *t)
{
	size_t i;

	jt_hash_for_each (&t->h, i)
		free(t->h.e[i].val);
	jt_hash_free(&t->h);
	memset(t, 0, sizeof(*t));
}
