// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "lib/reserve.h"
#include "model/jitlog.h"

int jt_jitlog_add(struct jt_jitlog *l, const struct jt_jit_item *j, uint64_t lo,
		  uint64_t hi)
{
	if (jt_reserve(&l->e, &l->cap, l->n + 1, sizeof(*l->e)))
		return -ENOMEM;
	if (!l->n || lo < l->lo)
		l->lo = lo;
	if (!l->n || hi > l->hi)
		l->hi = hi;
	/* The trailing CFI and inlining bytes went to the unwinder already. */
	l->e[l->n++] = *j;
	return 0;
}

int jt_jitlog_copy(struct jt_jitlog *dst, const struct jt_jitlog *src)
{
	jt_jitlog_free(dst);
	if (!src->n)
		return 0;
	dst->e = malloc(src->n * sizeof(*dst->e));
	if (!dst->e)
		return -ENOMEM;
	memcpy(dst->e, src->e, src->n * sizeof(*dst->e));
	dst->n = dst->cap = src->n;
	dst->lo = src->lo;
	dst->hi = src->hi;
	return 0;
}

void jt_jitlog_free(struct jt_jitlog *l)
{
	free(l->e);
	memset(l, 0, sizeof(*l));
}
