// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include "lib/perf_rec.h"
#include "lib/stackdelta.h"

struct prev {
	uint32_t tid;
	uint32_t len;
	uint64_t sp;
	unsigned char *buf;
	size_t cap;
};

static bool tid_eq(const void *val, const void *key)
{
	return ((const struct prev *)val)->tid == *(const uint32_t *)key;
}

void jt_stackdelta_init(struct jt_stackdelta *d, uint64_t sample_type,
			uint64_t regs_mask, unsigned int sp_reg)
{
	memset(d, 0, sizeof(*d));
	d->sample_type = sample_type;
	d->regs_mask = regs_mask;
	d->sp_reg = sp_reg;
}

/* The sample's stack copy: where it starts, its bytes, its length. */
static bool stack_of(const struct jt_stackdelta *d, const void *rec, size_t len,
		     struct jt_sample *s, struct jt_sample_user *u)
{
	return !jt_perf_sample(rec, len, d->sample_type, s) &&
	       !jt_perf_sample_user(s, d->sample_type, d->regs_mask, u) &&
	       u->stack && u->abi && (u->mask & (1ULL << d->sp_reg));
}

static struct prev *prev_of(struct jt_stackdelta *d, uint32_t tid, bool make)
{
	uint64_t h = jt_hash_u64(tid);
	struct prev *p = jt_hash_find(&d->by_tid, h, tid_eq, &tid);

	if (p || !make)
		return p;
	if (d->by_tid.n >= JT_DELTA_THREADS)
		jt_stackdelta_reset(d);
	p = calloc(1, sizeof(*p));
	if (!p || jt_hash_add(&d->by_tid, h, p)) {
		free(p);
		return NULL;
	}
	p->tid = tid;
	return p;
}

static void remember(struct jt_stackdelta *d, uint32_t tid, uint64_t sp,
		     const unsigned char *stack, size_t n)
{
	struct prev *p = prev_of(d, tid, true);

	if (!p)
		return;
	if (n > p->cap) {
		unsigned char *b = realloc(p->buf, n);

		if (!b) {
			p->len = 0;
			return;
		}
		p->buf = b;
		p->cap = n;
	}
	memcpy(p->buf, stack, n);
	p->len = n;
	p->sp = sp;
}

void jt_stackdelta_note(struct jt_stackdelta *d, const void *rec, size_t len)
{
	struct jt_sample s;
	struct jt_sample_user u;

	if (stack_of(d, rec, len, &s, &u))
		remember(d, s.tid, u.regs[d->sp_reg], u.stack,
			 u.stack_len & ~7ULL);
}

/*
 * The longest run of 8-byte words that equals p's copy at the same
 * addresses, searched down from the top of where the copies overlap.
 */
static void common_run(const struct prev *p, uint64_t sp,
		       const unsigned char *stack, size_t n, size_t *head,
		       size_t *keep)
{
	uint64_t lo = sp > p->sp ? sp : p->sp;
	uint64_t hi = sp + n < p->sp + p->len ? sp + n : p->sp + p->len;
	uint64_t top, bot;

	*head = n;
	*keep = 0;
	if (hi <= lo || ((sp ^ p->sp) & 7))
		return;
	for (top = hi; top > lo; top -= 8)
		if (!memcmp(stack + (top - 8 - sp), p->buf + (top - 8 - p->sp),
			    8))
			break;
	for (bot = top; bot > lo; bot -= 8)
		if (memcmp(stack + (bot - 8 - sp), p->buf + (bot - 8 - p->sp),
			   8))
			break;
	*head = bot - sp;
	*keep = top - bot;
}

bool jt_stackdelta_encode(struct jt_stackdelta *d, const void *rec, size_t len,
			  void *out, size_t *olen, struct jt_delta_hdr *h)
{
	struct jt_sample s;
	struct jt_sample_user u;
	const unsigned char *r = rec, *stack;
	unsigned char *o = out;
	size_t n, head, keep, pre, tail;
	uint64_t sp, size;
	struct prev *p;

	if (!stack_of(d, rec, len, &s, &u))
		return false;
	stack = u.stack;
	n = u.stack_len & ~7ULL;
	sp = u.regs[d->sp_reg];
	p = prev_of(d, s.tid, false);
	head = n;
	keep = 0;
	if (p && p->len)
		common_run(p, sp, stack, n, &head, &keep);
	/* Not worth a record of its own kind below a few words. */
	if (keep < 64) {
		remember(d, s.tid, sp, stack, n);
		return false;
	}
	/* A stack of size 0 is no stack in perf's format: keep a word. */
	if (head + keep == n && !head) {
		head = 8;
		keep -= 8;
	}
	tail = n - head - keep;
	pre = stack - 8 - r; /* up to the stack's size field */
	size = head + tail;
	memcpy(o, r, pre);
	memcpy(o + pre, &size, 8);
	memcpy(o + pre + 8, stack, head);
	memcpy(o + pre + 8 + head, stack + head + keep, tail);
	memcpy(o + pre + 8 + size, &u.stack_len, 8);
	*olen = pre + 16 + size;
	((struct perf_event_header *)out)->size = *olen;
	h->head = head;
	h->keep = keep;
	remember(d, s.tid, sp, stack, n);
	return true;
}

int jt_stackdelta_decode(struct jt_stackdelta *d, const struct jt_delta_hdr *h,
			 const void *rec, size_t len, void *out, size_t cap,
			 size_t *olen)
{
	struct jt_sample s;
	struct jt_sample_user u;
	const unsigned char *r = rec;
	unsigned char *o = out, *stack;
	uint64_t sp, size, full;
	size_t pre, tail;
	struct prev *p;

	if (!stack_of(d, rec, len, &s, &u))
		goto bad;
	/* The stored part: head + tail; dyn_size: the whole copy. */
	memcpy(&size, u.stack - 8, 8);
	memcpy(&full, u.stack + size, 8);
	if (size > full || h->head > size || (full & 7) ||
	    full - size != h->keep || h->keep > full)
		goto bad;
	tail = size - h->head;
	sp = u.regs[d->sp_reg];
	p = prev_of(d, s.tid, false);
	if (!p || sp + h->head < p->sp ||
	    sp + h->head + h->keep > p->sp + p->len)
		goto bad;
	pre = u.stack - 8 - r;
	if (pre + 16 + full > cap || pre + 16 + full > 0xffff)
		goto bad;
	memcpy(o, r, pre);
	memcpy(o + pre, &full, 8);
	stack = o + pre + 8;
	memcpy(stack, u.stack, h->head);
	memcpy(stack + h->head, p->buf + (sp + h->head - p->sp), h->keep);
	memcpy(stack + h->head + h->keep, u.stack + h->head, tail);
	memcpy(stack + full, &full, 8);
	*olen = pre + 16 + full;
	((struct perf_event_header *)out)->size = *olen;
	remember(d, s.tid, sp, stack, full);
	return 0;
bad:
	d->missing++;
	return -1;
}

void jt_stackdelta_forget(struct jt_stackdelta *d, uint32_t tid)
{
	struct prev *p =
		jt_hash_del(&d->by_tid, jt_hash_u64(tid), tid_eq, &tid);

	if (p)
		free(p->buf);
	free(p);
}

void jt_stackdelta_reset(struct jt_stackdelta *d)
{
	size_t i;

	jt_hash_for_each (&d->by_tid, i) {
		struct prev *p = d->by_tid.e[i].val;

		free(p->buf);
		free(p);
	}
	jt_hash_free(&d->by_tid);
	memset(&d->by_tid, 0, sizeof(d->by_tid));
}

void jt_stackdelta_free(struct jt_stackdelta *d)
{
	jt_stackdelta_reset(d);
}
