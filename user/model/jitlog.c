// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "lib/reserve.h"
#include "model/jitlog.h"

/* Names go in chunks of this size, one after another; longer ones alone. */
#define NAME_CHUNK 4096

struct jt_jitlog_names {
	struct jt_jitlog_names *next;
	size_t used;
	size_t cap;
	char data[];
};

/* A copy of name that lives as long as the log; NULL without memory. */
static const char *keep_name(struct jt_jitlog *l, const char *name, size_t len)
{
	struct jt_jitlog_names *c = l->names;
	char *p;

	if (!c || c->cap - c->used < len + 1) {
		size_t cap = len + 1 > NAME_CHUNK ? len + 1 : NAME_CHUNK;

		c = malloc(sizeof(*c) + cap);
		if (!c)
			return NULL;
		c->used = 0;
		c->cap = cap;
		c->next = l->names;
		l->names = c;
	}
	p = c->data + c->used;
	memcpy(p, name, len);
	p[len] = 0;
	c->used += len + 1;
	return p;
}

static int append(struct jt_jitlog *l, const struct jt_jit_item *j)
{
	struct jt_jit_item *e;

	if (jt_reserve(&l->e, &l->cap, l->n + 1, sizeof(*l->e)))
		return -ENOMEM;
	/* The trailing CFI and inlining bytes went to the unwinder already;
	 * the name is the item's, which is freed once it is out. */
	e = &l->e[l->n];
	*e = *j;
	if (j->name) {
		e->name = keep_name(l, j->name, j->name_len);
		if (!e->name)
			return -ENOMEM;
		l->bytes += j->name_len;
	}
	l->records += j->op == JT_JIT_TEXT ? j->size : 1;
	l->n++;
	return 0;
}

int jt_jitlog_add(struct jt_jitlog *l, const struct jt_jit_item *j, uint64_t lo,
		  uint64_t hi)
{
	int err = append(l, j);

	if (err)
		return err;
	if (l->n == 1 || lo < l->lo)
		l->lo = lo;
	if (l->n == 1 || hi > l->hi)
		l->hi = hi;
	return 0;
}

int jt_jitlog_copy(struct jt_jitlog *dst, const struct jt_jitlog *src)
{
	size_t i;

	jt_jitlog_free(dst);
	for (i = 0; i < src->n; i++)
		if (append(dst, &src->e[i])) {
			jt_jitlog_free(dst);
			return -ENOMEM;
		}
	dst->lo = src->lo;
	dst->hi = src->hi;
	return 0;
}

void jt_jitlog_free(struct jt_jitlog *l)
{
	while (l->names) {
		struct jt_jitlog_names *c = l->names;

		l->names = c->next;
		free(c);
	}
	free(l->e);
	memset(l, 0, sizeof(*l));
}
