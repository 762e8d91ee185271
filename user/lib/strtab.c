// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "lib/strtab.h"

static uint64_t hash(const char *s, size_t len)
{
	uint64_t h = 1469598103934665603ULL;

	while (len--)
		h = (h ^ (unsigned char)*s++) * 1099511628211ULL;
	return h;
}

static int grow(struct jt_strtab *t)
{
	size_t cap = t->cap ? t->cap * 2 : 256, i;
	char **slots = calloc(cap, sizeof(*slots));

	if (!slots)
		return -1;
	for (i = 0; i < t->cap; i++) {
		size_t j;

		if (!t->slots[i])
			continue;
		j = hash(t->slots[i], strlen(t->slots[i])) & (cap - 1);
		while (slots[j])
			j = (j + 1) & (cap - 1);
		slots[j] = t->slots[i];
	}
	free(t->slots);
	t->slots = slots;
	t->cap = cap;
	return 0;
}

/* len bytes of s (need not be NUL-terminated); NULL on allocation failure. */
const char *jt_intern(struct jt_strtab *t, const char *s, size_t len)
{
	size_t j;

	if (t->n * 2 >= t->cap && grow(t))
		return NULL;
	j = hash(s, len) & (t->cap - 1);
	for (; t->slots[j]; j = (j + 1) & (t->cap - 1))
		if (!strncmp(t->slots[j], s, len) && !t->slots[j][len])
			return t->slots[j];
	t->slots[j] = strndup(s, len);
	if (!t->slots[j])
		return NULL;
	t->n++;
	return t->slots[j];
}

void jt_strtab_free(struct jt_strtab *t)
{
	size_t i;

	for (i = 0; i < t->cap; i++)
		free(t->slots[i]);
	free(t->slots);
	memset(t, 0, sizeof(*t));
}
