// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "model/jitsyms.h"
#include "lib/reserve.h"

static size_t lower(const struct jt_jittab *t, uint64_t addr)
{
	size_t lo = 0, hi = t->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (t->e[mid].end <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

void jt_jittab_cut(struct jt_jittab *t, uint64_t start, uint64_t end)
{
	size_t i = lower(t, start), j = i;

	if (!t->n)
		return;
	while (j < t->n && t->e[j].start < end)
		j++;
	memmove(&t->e[i], &t->e[j], (t->n - j) * sizeof(*t->e));
	t->n -= j - i;
}

int jt_jittab_load(struct jt_jittab *t, const struct jt_jitsym *s)
{
	size_t i;

	if (jt_reserve(&t->e, &t->cap, t->n + 1, sizeof(*t->e)))
		return -ENOMEM;
	if (!t->n || t->e[t->n - 1].end <= s->start) {
		t->e[t->n++] = *s;
		return 0;
	}
	jt_jittab_cut(t, s->start, s->end);
	i = lower(t, s->start);
	memmove(&t->e[i + 1], &t->e[i], (t->n - i) * sizeof(*t->e));
	t->e[i] = *s;
	t->n++;
	return 0;
}

int jt_jittab_move(struct jt_jittab *t, uint64_t old, uint64_t new,
		   uint64_t size, uint64_t now)
{
	size_t i = lower(t, old);
	struct jt_jitsym s;

	if (i == t->n || t->e[i].start != old)
		return -ENOENT;
	s = t->e[i];
	memmove(&t->e[i], &t->e[i + 1], (t->n - i - 1) * sizeof(*t->e));
	t->n--;
	s.start = new;
	s.end = new + size;
	s.loaded_ns = now;
	return jt_jittab_load(t, &s);
}

const struct jt_jitsym *jt_jittab_find(const struct jt_jittab *t, uint64_t addr)
{
	size_t i = lower(t, addr);

	return i < t->n && t->e[i].start <= addr ? &t->e[i] : NULL;
}

int jt_jittab_copy(struct jt_jittab *dst, const struct jt_jittab *src)
{
	dst->e = NULL;
	dst->n = dst->cap = 0;
	if (!src->n)
		return 0;
	dst->e = malloc(src->n * sizeof(*dst->e));
	if (!dst->e)
		return -ENOMEM;
	memcpy(dst->e, src->e, src->n * sizeof(*dst->e));
	dst->n = dst->cap = src->n;
	return 0;
}

void jt_jittab_free(struct jt_jittab *t)
{
	free(t->e);
	memset(t, 0, sizeof(*t));
}
