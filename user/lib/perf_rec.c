// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Field order follows the perf_event_open(2) layout of PERF_RECORD_SAMPLE
 * and of the sample_id trailer. Every read is bounds-checked: records
 * come from a file that may be corrupt.
 */
#include <errno.h>
#include <stdbool.h>
#include <string.h>
#include "lib/perf_rec.h"

struct cursor {
	const unsigned char *p;
	const unsigned char *end;
	int err;
};

static uint64_t take(struct cursor *c)
{
	uint64_t v = 0;

	if (c->end - c->p < 8) {
		c->err = -EINVAL;
		return 0;
	}
	memcpy(&v, c->p, 8);
	c->p += 8;
	return v;
}

/*
 * The fields before the call chain are one word each, present by their
 * bits, so their places follow from sample_type alone: one length check
 * then covers them all. Parsing field by field, a check each, was 6% of
 * report's time. A recording has one sample_type: a thread's last layout
 * is nearly always the one it needs.
 */
enum fixed_field {
	F_IDENTIFIER,
	F_IP,
	F_TID,
	F_TIME,
	F_ADDR,
	F_ID,
	F_STREAM_ID,
	F_CPU,
	F_PERIOD,
	F_MAX
};

/* In the order perf writes them. */
static const uint64_t fixed_bit[F_MAX] = {
	[F_IDENTIFIER] = PERF_SAMPLE_IDENTIFIER,
	[F_IP] = PERF_SAMPLE_IP,
	[F_TID] = PERF_SAMPLE_TID,
	[F_TIME] = PERF_SAMPLE_TIME,
	[F_ADDR] = PERF_SAMPLE_ADDR,
	[F_ID] = PERF_SAMPLE_ID,
	[F_STREAM_ID] = PERF_SAMPLE_STREAM_ID,
	[F_CPU] = PERF_SAMPLE_CPU,
	[F_PERIOD] = PERF_SAMPLE_PERIOD,
};

struct layout {
	uint64_t st;
	bool valid;
	uint8_t fixed;	   /* words before the chain */
	uint8_t at[F_MAX]; /* each field's word, if present */
};

static void layout_of(struct layout *l, uint64_t st)
{
	int f;

	l->st = st;
	l->valid = true;
	l->fixed = 0;
	for (f = 0; f < F_MAX; f++) {
		l->at[f] = l->fixed;
		l->fixed += !!(st & fixed_bit[f]);
	}
}

static uint64_t word(const unsigned char *p, uint8_t at)
{
	uint64_t v;

	memcpy(&v, p + 8 * (size_t)at, 8);
	return v;
}

/* A thread's layout for st, worked out when st changes. */
static const struct layout *layout(uint64_t st)
{
	static __thread struct layout l;

	if (!l.valid || l.st != st)
		layout_of(&l, st);
	return &l;
}

/*
 * A sample's fields, past its header, when its bounds hold: the fixed
 * words, then the chain's count and that many ips (*nr). NULL: cut.
 * Inlined into both callers: as a call it cost 1% of report.
 */
static inline __attribute__((always_inline)) const unsigned char *
sample_bounds(const void *rec, size_t len, uint64_t st, const struct layout *l,
	      uint64_t *nr)
{
	const struct perf_event_header *h = rec;
	const unsigned char *p = (const unsigned char *)rec + sizeof(*h);
	size_t words;

	*nr = 0;
	if (len < sizeof(*h) || h->type != PERF_RECORD_SAMPLE)
		return NULL;
	words = (len - sizeof(*h)) / 8;
	if (words < l->fixed)
		return NULL;
	if (st & PERF_SAMPLE_CALLCHAIN) {
		if (words < l->fixed + 1u)
			return NULL;
		*nr = word(p, l->fixed);
		if (*nr > words - l->fixed - 1)
			return NULL;
	}
	return p;
}

int jt_perf_sample(const void *rec, size_t len, uint64_t st,
		   struct jt_sample *s)
{
	const struct layout *l = layout(st);
	const unsigned char *p, *end = (const unsigned char *)rec + len;
	uint64_t tid;

	memset(s, 0, sizeof(*s));
	p = sample_bounds(rec, len, st, l, &s->nr_chain);
	if (!p)
		return -EINVAL;
	s->misc = ((const struct perf_event_header *)rec)->misc;
	if (st & PERF_SAMPLE_IP)
		s->ip = word(p, l->at[F_IP]);
	if (st & PERF_SAMPLE_TID) {
		tid = word(p, l->at[F_TID]);
		s->pid = (uint32_t)tid;
		s->tid = tid >> 32;
	}
	if (st & PERF_SAMPLE_TIME)
		s->time = word(p, l->at[F_TIME]);
	if (st & PERF_SAMPLE_ADDR)
		s->addr = word(p, l->at[F_ADDR]);
	if (st & PERF_SAMPLE_CPU)
		s->cpu = (uint32_t)word(p, l->at[F_CPU]);
	if (st & PERF_SAMPLE_PERIOD)
		s->period = word(p, l->at[F_PERIOD]);
	p += 8 * (size_t)l->fixed;
	if (st & PERF_SAMPLE_CALLCHAIN) {
		s->chain = (const uint64_t *)(p + 8);
		p += 8 + s->nr_chain * 8;
	}
	s->rest = p;
	s->rest_len = end - p;
	return 0;
}

int jt_perf_sample_user(const struct jt_sample *s, uint64_t st,
			uint64_t regs_mask, struct jt_sample_user *u)
{
	struct cursor c = { s->rest, s->rest + s->rest_len, 0 };
	uint64_t size;
	int i;

	memset(u, 0, sizeof(*u));
	if (st &
	    (PERF_SAMPLE_RAW | PERF_SAMPLE_BRANCH_STACK | PERF_SAMPLE_READ))
		return -EINVAL; /* never recorded with a stack: not parsed */
	if (st & PERF_SAMPLE_REGS_USER) {
		u->abi = take(&c);
		if (u->abi) {
			u->mask = regs_mask;
			for (i = 0; i < 64; i++)
				if (regs_mask & (1ULL << i))
					u->regs[i] = take(&c);
		}
	}
	if ((st & PERF_SAMPLE_STACK_USER) && !c.err) {
		size = take(&c);
		if (size) {
			if (size > (size_t)(c.end - c.p) ||
			    (size_t)(c.end - c.p) - size < 8)
				return -EINVAL;
			u->stack = c.p;
			c.p += size;
			u->stack_len = take(&c);
			if (u->stack_len > size)
				u->stack_len = size;
		}
	}
	return c.err;
}

size_t jt_perf_sample_trim(void *rec, size_t len, uint64_t st,
			   uint64_t regs_mask)
{
	struct perf_event_header *h = rec;
	struct jt_sample s;
	struct jt_sample_user u;
	unsigned char *size_at, *end;
	uint64_t keep, dyn, size;

	if (!(st & PERF_SAMPLE_STACK_USER) ||
	    jt_perf_sample(rec, len, st, &s) ||
	    jt_perf_sample_user(&s, st, regs_mask, &u) || !u.stack)
		return len;
	/* Whole words only: the unwinder reads nothing else. */
	keep = u.stack_len & ~7ULL;
	size_at = (unsigned char *)u.stack - 8;
	end = (unsigned char *)u.stack + keep;
	memcpy(&size, size_at, 8);
	if (keep == size)
		return len;
	dyn = keep;
	memcpy(size_at, &keep, 8);
	memcpy(end, &dyn, 8);
	/* Nothing follows STACK_USER in what jittrace records. */
	h->size = end + 8 - (unsigned char *)rec;
	return h->size;
}

size_t jt_perf_sample_strip(void *rec, size_t len, uint64_t st,
			    uint64_t regs_mask)
{
	struct perf_event_header *h = rec;
	struct jt_sample s;
	struct jt_sample_user u;
	unsigned char *size_at;
	uint64_t zero = 0;

	if (!(st & PERF_SAMPLE_STACK_USER) ||
	    jt_perf_sample(rec, len, st, &s) ||
	    jt_perf_sample_user(&s, st, regs_mask, &u) || !u.stack)
		return len;
	size_at = (unsigned char *)u.stack - 8;
	memcpy(size_at, &zero, 8);
	h->size = size_at + 8 - (unsigned char *)rec;
	return h->size;
}

static size_t id_size(uint64_t st)
{
	uint64_t bits = st & (PERF_SAMPLE_TID | PERF_SAMPLE_TIME |
			      PERF_SAMPLE_ID | PERF_SAMPLE_STREAM_ID |
			      PERF_SAMPLE_CPU | PERF_SAMPLE_IDENTIFIER);

	return 8 * __builtin_popcountll(bits);
}

int jt_perf_sample_ip(const void *rec, size_t len, uint64_t st, uint64_t *ip,
		      uint32_t *pid)
{
	const unsigned char *p =
		(const unsigned char *)rec + sizeof(struct perf_event_header);
	size_t skip = st & PERF_SAMPLE_IDENTIFIER ? 8 : 0;

	if (!(st & PERF_SAMPLE_IP) || !(st & PERF_SAMPLE_TID) ||
	    len < sizeof(struct perf_event_header) + skip + 16)
		return -EINVAL;
	memcpy(ip, p + skip, sizeof(*ip));
	memcpy(pid, p + skip + 8, sizeof(*pid));
	return 0;
}

int jt_perf_sample_id(const void *rec, size_t len, uint64_t st,
		      struct jt_sample_id *id)
{
	size_t n = id_size(st);
	struct cursor c = { (const unsigned char *)rec + len - n,
			    (const unsigned char *)rec + len, 0 };
	uint64_t v;

	memset(id, 0, sizeof(*id));
	if (len < sizeof(struct perf_event_header) + n)
		return -EINVAL;
	if (st & PERF_SAMPLE_TID) {
		v = take(&c);
		id->pid = (uint32_t)v;
		id->tid = v >> 32;
	}
	if (st & PERF_SAMPLE_TIME)
		id->time = take(&c);
	if (st & PERF_SAMPLE_ID)
		take(&c);
	if (st & PERF_SAMPLE_STREAM_ID)
		take(&c);
	if (st & PERF_SAMPLE_CPU)
		id->cpu = (uint32_t)take(&c);
	return c.err;
}

int jt_perf_mmap2(const void *rec, size_t len, struct jt_mmap2 *m)
{
	const struct perf_event_header *h = rec;
	const unsigned char *p = rec;
	size_t fixed = sizeof(*h) + 8 + 8 * 3 + 4 * 2 + 8 * 2 + 4 * 2;
	uint32_t u32[2];

	memset(m, 0, sizeof(*m));
	if (len < fixed || h->type != PERF_RECORD_MMAP2)
		return -EINVAL;
	p += sizeof(*h);
	memcpy(u32, p, 8);
	m->pid = u32[0];
	m->tid = u32[1];
	memcpy(&m->start, p + 8, 8);
	memcpy(&m->len, p + 16, 8);
	memcpy(&m->pgoff, p + 24, 8);
	memcpy(&m->maj, p + 32, 4);
	memcpy(&m->min, p + 36, 4);
	memcpy(&m->ino, p + 40, 8);
	memcpy(&m->prot, p + 56, 4);
	memcpy(&m->flags, p + 60, 4);
	m->filename = (const char *)rec + fixed;
	m->filename_len = strnlen(m->filename, len - fixed);
	return 0;
}

size_t jt_perf_mmap2_make(void *buf, size_t cap, const struct jt_mmap2 *m,
			  uint16_t misc, const struct jt_sample_id *id,
			  uint64_t st)
{
	size_t fixed = sizeof(struct perf_event_header) + 64;
	size_t name = (m->filename_len + 1 + 7) & ~(size_t)7;
	size_t size = fixed + name + id_size(st);
	struct perf_event_header h = { PERF_RECORD_MMAP2, misc, size };
	uint32_t u32[2] = { m->pid, m->tid };
	unsigned char *p = buf;
	uint64_t w;

	if (size > cap || size > UINT16_MAX)
		return 0;
	memset(buf, 0, size);
	memcpy(p, &h, sizeof(h));
	p += sizeof(h);
	memcpy(p, u32, 8);
	memcpy(p + 8, &m->start, 8);
	memcpy(p + 16, &m->len, 8);
	memcpy(p + 24, &m->pgoff, 8);
	memcpy(p + 32, &m->maj, 4);
	memcpy(p + 36, &m->min, 4);
	memcpy(p + 40, &m->ino, 8);
	memcpy(p + 56, &m->prot, 4);
	memcpy(p + 60, &m->flags, 4);
	memcpy(p + 64, m->filename, m->filename_len);
	/* sample_id_all, in the order perf writes it; ids stay 0 */
	p += 64 + name;
	if (st & PERF_SAMPLE_TID) {
		u32[0] = id->pid;
		u32[1] = id->tid;
		memcpy(p, u32, 8);
		p += 8;
	}
	if (st & PERF_SAMPLE_TIME) {
		memcpy(p, &id->time, 8);
		p += 8;
	}
	p += 8 * !!(st & PERF_SAMPLE_ID) + 8 * !!(st & PERF_SAMPLE_STREAM_ID);
	if (st & PERF_SAMPLE_CPU) {
		w = id->cpu;
		memcpy(p, &w, 8);
	}
	return size;
}

uint64_t jt_perf_time(const void *rec, size_t len, uint64_t st)
{
	const struct perf_event_header *h = rec;
	struct jt_sample_id id;

	if (len < sizeof(*h))
		return 0;
	/* Every item is timed by this: a sample's one word, in its bounds. */
	if (h->type == PERF_RECORD_SAMPLE) {
		const struct layout *l = layout(st);
		const unsigned char *p;
		uint64_t nr;

		if (!(st & PERF_SAMPLE_TIME) ||
		    !(p = sample_bounds(rec, len, st, l, &nr)))
			return 0;
		return word(p, l->at[F_TIME]);
	}
	return jt_perf_sample_id(rec, len, st, &id) ? 0 : id.time;
}

bool jt_perf_kernel_ip(uint16_t misc)
{
	uint16_t mode = misc & PERF_RECORD_MISC_CPUMODE_MASK;

	return mode == PERF_RECORD_MISC_KERNEL ||
	       mode == PERF_RECORD_MISC_GUEST_KERNEL;
}
