// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <endian.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "jt_jitdump.h"
#include "model/jitdump.h"

/* Written on a host of the other byte order. */
#define JITHEADER_MAGIC_SWAPPED 0x4454694A
#define JITDUMP_HEADER_MIN 40
#define JITDUMP_ARCH_TIMESTAMP 1
/* No runtime writes a record this big; a larger size is corruption. */
#define JITDUMP_RECORD_MAX (256u << 20)
#define PERFMAP_LINE_MAX 65536
/* One function's CFI; anything bigger is not what a JIT writes. */
#define JITDUMP_UNWIND_MAX (1u << 20)

static int append(unsigned char **buf, size_t *len, size_t *cap,
		  const void *data, size_t n)
{
	if (!n)
		return 0;
	if (*len + n > *cap) {
		size_t ncap = *cap ? *cap : 4096;
		unsigned char *b;

		while (ncap < *len + n)
			ncap *= 2;
		b = realloc(*buf, ncap);
		if (!b)
			return -ENOMEM;
		*buf = b;
		*cap = ncap;
	}
	memcpy(*buf + *len, data, n);
	*len += n;
	return 0;
}

static void consume(unsigned char *buf, size_t *len, size_t n)
{
	memmove(buf, buf + n, *len - n);
	*len -= n;
}

/* The arithmetic perf_event_open(2) gives for cap_user_time_zero. */
uint64_t jt_tsc_to_mono(const struct jt_tsc *c, uint64_t tsc)
{
	uint64_t quot = tsc >> c->shift, rem = tsc & ((1ULL << c->shift) - 1);

	return c->zero + quot * c->mult + ((rem * c->mult) >> c->shift) +
	       c->mono_offset;
}

void jt_jitdump_init(struct jt_jitdump *d)
{
	memset(d, 0, sizeof(*d));
}

void jt_jitdump_free(struct jt_jitdump *d)
{
	free(d->buf);
	free(d->unwind);
	free(d->inl);
	memset(d, 0, sizeof(*d));
}

size_t jt_jitdump_pending(const struct jt_jitdump *d)
{
	return d->len;
}

static uint32_t u32(const struct jt_jitdump *d, const unsigned char *p)
{
	uint32_t v;

	memcpy(&v, p, 4);
	return d->swap ? __builtin_bswap32(v) : v;
}

static uint64_t u64(const struct jt_jitdump *d, const unsigned char *p)
{
	uint64_t v;

	memcpy(&v, p, 8);
	return d->swap ? __builtin_bswap64(v) : v;
}

static int fail(struct jt_jitdump *d, const char *why)
{
	d->failed = true;
	snprintf(d->err, sizeof(d->err), "%s", why);
	return -1;
}

/* 1: header parsed; 0: need more bytes; -1: not a jitdump. */
static int parse_header(struct jt_jitdump *d)
{
	uint32_t magic, total, version;

	if (d->len < 8)
		return 0;
	memcpy(&magic, d->buf, 4);
	if (magic == JITHEADER_MAGIC_SWAPPED)
		d->swap = true;
	else if (magic != JITHEADER_MAGIC)
		return fail(d, "not a jitdump file (bad magic)");
	/* As perf: a later version may lay records out differently. */
	version = u32(d, d->buf + 4);
	if (version > JITHEADER_VERSION) {
		snprintf(d->err, sizeof(d->err),
			 "unsupported jitdump version %u (jittrace, like "
			 "perf, reads up to %u)",
			 version, JITHEADER_VERSION);
		d->failed = true;
		return -1;
	}
	if (d->len < 12)
		return 0;
	total = u32(d, d->buf + 8);
	if (total < JITDUMP_HEADER_MIN || total > 4096)
		return fail(d, "jitdump header size out of range");
	if (d->len < total)
		return 0;
	d->pid = u32(d, d->buf + 20);
	d->arch_time = u64(d, d->buf + 32) & JITDUMP_ARCH_TIMESTAMP;
	d->have_header = true;
	consume(d->buf, &d->len, total);
	return 1;
}

/* A LOAD: fixed part, NUL-terminated name, then code_size bytes. */
static bool parse_load(const struct jt_jitdump *d, const unsigned char *r,
		       uint32_t size, struct jt_jit_event *ev)
{
	const size_t fixed = 16 + 40;
	const char *name = (const char *)r + fixed;
	size_t room;

	if (size < fixed + 1)
		return false;
	room = size - fixed;
	ev->pid = u32(d, r + 16);
	ev->tid = u32(d, r + 20);
	ev->addr = u64(d, r + 32);
	ev->size = u64(d, r + 40);
	ev->code_index = u64(d, r + 48);
	ev->name = name;
	ev->name_len = strnlen(name, room);
	/* No NUL, or a code size that runs past the record or wraps. */
	if (ev->name_len == room || ev->size > room - ev->name_len - 1 ||
	    !ev->size || ev->addr + ev->size < ev->addr)
		return false;
	return true;
}

static bool parse_move(const struct jt_jitdump *d, const unsigned char *r,
		       uint32_t size, struct jt_jit_event *ev)
{
	if (size < 16 + 48)
		return false;
	ev->pid = u32(d, r + 16);
	ev->tid = u32(d, r + 20);
	ev->old_addr = u64(d, r + 32);
	ev->addr = u64(d, r + 40);
	ev->size = u64(d, r + 48);
	ev->code_index = u64(d, r + 56);
	return ev->size && ev->addr + ev->size > ev->addr;
}

/*
 * JIT_CODE_UNWINDING_INFO: u64 unwinding_size, eh_frame_hdr_size,
 * mapped_size, then unwinding_size bytes (.eh_frame, then its header).
 * It applies to the next CODE_LOAD, as in perf's jitdump.c.
 */
static bool keep_unwind(struct jt_jitdump *d, const unsigned char *r,
			uint32_t size)
{
	uint64_t len, hdr;
	unsigned char *b;

	d->unwind_len = 0;
	if (size < 16 + 24)
		return false;
	len = u64(d, r + 16);
	hdr = u64(d, r + 24);
	if (!len || len > size - 40 || hdr > len || len > JITDUMP_UNWIND_MAX)
		return false;
	b = realloc(d->unwind, len);
	if (!b)
		return false;
	memcpy(b, r + 40, len);
	d->unwind = b;
	d->unwind_len = len;
	d->unwind_hdr_len = hdr;
	return true;
}

/* u64 code_addr, u64 nr_entry, then the entries, for the next LOAD. */
static bool keep_inline(struct jt_jitdump *d, const unsigned char *r,
			uint32_t size)
{
	uint64_t n;
	unsigned char *b;

	d->inl_len = 0;
	if (size < 16 + 16 || d->swap)
		return false;
	n = u64(d, r + 24);
	if (!n || n > size || size - 32 > JITDUMP_UNWIND_MAX)
		return false;
	b = realloc(d->inl, size - 32);
	if (!b)
		return false;
	memcpy(b, r + 32, size - 32);
	d->inl = b;
	d->inl_len = size - 32;
	d->inl_count = n;
	return true;
}

static void parse_record(struct jt_jitdump *d, const unsigned char *r,
			 uint32_t id, uint32_t size, jt_jit_fn fn, void *ctx)
{
	struct jt_jit_event ev = { .pid = d->pid };
	bool ok = true;

	ev.time = d->arch_time ? 0 : u64(d, r + 8);
	ev.arch_time = d->arch_time ? u64(d, r + 8) : 0;
	switch (id) {
	case JIT_CODE_LOAD:
		ev.op = JT_JIT_LOAD;
		ok = parse_load(d, r, size, &ev);
		break;
	case JIT_CODE_MOVE:
		ev.op = JT_JIT_MOVE;
		ok = parse_move(d, r, size, &ev);
		break;
	case JIT_CODE_CLOSE:
		ev.op = JT_JIT_CLOSE;
		break;
	case JIT_CODE_UNLOAD:
		ev.op = JT_JIT_UNLOAD;
		ok = size >= 16 + 16;
		if (ok) {
			ev.pid = u32(d, r + 16);
			ev.tid = u32(d, r + 20);
			ev.addr = u64(d, r + 24);
		}
		break;
	case JIT_CODE_UNWINDING_INFO:
		if (keep_unwind(d, r, size))
			d->stats.records++;
		else
			d->stats.skipped++;
		return;
	case JIT_CODE_INLINE:
		if (keep_inline(d, r, size))
			d->stats.records++;
		else
			d->stats.skipped++;
		return;
	case JIT_CODE_DEBUG_INFO:
		/* Line tables are not used for naming. */
		d->stats.records++;
		return;
	default:
		/* Newer record types: the size says how to step over them. */
		d->stats.skipped++;
		return;
	}
	if (!ok) {
		d->stats.skipped++;
		return;
	}
	d->stats.records++;
	if (ev.op == JT_JIT_LOAD && d->unwind_len) {
		ev.unwind = d->unwind;
		ev.unwind_len = d->unwind_len;
		ev.unwind_hdr_len = d->unwind_hdr_len;
	}
	if (ev.op == JT_JIT_LOAD && d->inl_len) {
		ev.inl = d->inl;
		ev.inl_len = d->inl_len;
		ev.inl_count = d->inl_count;
	}
	fn(ctx, &ev);
	if (ev.op == JT_JIT_LOAD)
		d->unwind_len = d->inl_len = 0;
}

/* The whole records at the start of buf, parsed; *used: the bytes they took. */
static int parse_records(struct jt_jitdump *d, const unsigned char *buf,
			 size_t len, jt_jit_fn fn, void *ctx, size_t *used)
{
	size_t off = 0;
	int err = 0;

	while (len - off >= 16) {
		const unsigned char *r = buf + off;
		uint32_t id = u32(d, r), size = u32(d, r + 4);

		if (size < 16 || size > JITDUMP_RECORD_MAX) {
			err = fail(d, "jitdump record size out of range");
			break;
		}
		if (size > len - off)
			break;
		parse_record(d, r, id, size, fn, ctx);
		off += size;
	}
	*used = off;
	return err;
}

/*
 * A piece that starts on a record (no part of one left from the last)
 * is parsed where it lies, and only what it ends with of a record is
 * kept: copying every piece first was a copy of each JIT file.
 */
int jt_jitdump_feed(struct jt_jitdump *d, const void *data, size_t len,
		    jt_jit_fn fn, void *ctx)
{
	size_t used;
	int err;

	if (d->failed)
		return -1;
	if (d->have_header && !d->len) {
		err = parse_records(d, data, len, fn, ctx, &used);
		if (!err &&
		    append(&d->buf, &d->len, &d->cap,
			   (const unsigned char *)data + used, len - used))
			err = fail(d, "out of memory");
		return err;
	}
	if (append(&d->buf, &d->len, &d->cap, data, len))
		return fail(d, "out of memory");
	if (!d->have_header && parse_header(d) <= 0)
		return d->failed ? -1 : 0;
	err = parse_records(d, d->buf, d->len, fn, ctx, &used);
	consume(d->buf, &d->len, used);
	return err;
}

void jt_perfmap_init(struct jt_perfmap *m)
{
	memset(m, 0, sizeof(*m));
}

void jt_perfmap_free(struct jt_perfmap *m)
{
	free(m->buf);
	memset(m, 0, sizeof(*m));
}

/*
 * Each byte's value as a hex digit plus one, 0 if none: a table, as a
 * line has twenty of them (isxdigit() and tolower() ask the locale).
 */
static const uint8_t hex_value[256] = {
	['0'] = 1,  ['1'] = 2,	['2'] = 3,  ['3'] = 4,	['4'] = 5,  ['5'] = 6,
	['6'] = 7,  ['7'] = 8,	['8'] = 9,  ['9'] = 10, ['a'] = 11, ['b'] = 12,
	['c'] = 13, ['d'] = 14, ['e'] = 15, ['f'] = 16, ['A'] = 11, ['B'] = 12,
	['C'] = 13, ['D'] = 14, ['E'] = 15, ['F'] = 16,
};

static int hex_digit(unsigned char c)
{
	return hex_value[c] - 1;
}

static bool hex_field(const char **p, const char *end, uint64_t *out)
{
	const char *s = *p;
	int digits = 0, d;

	*out = 0;
	if (end - s > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X'))
		s += 2;
	for (; s < end && (d = hex_digit(*s)) >= 0; s++, digits++) {
		if (digits == 16)
			return false;
		*out = *out << 4 | d;
	}
	if (!digits || s == end || *s != ' ')
		return false;
	*p = s + 1;
	return true;
}

/* "START SIZE name": hex with or without 0x; the name may hold spaces. */
static void parse_line(struct jt_perfmap *m, const char *s, size_t len,
		       uint64_t time, uint32_t pid, jt_jit_fn fn, void *ctx)
{
	const char *end = s + len;
	struct jt_jit_event ev = { .op = JT_JIT_LOAD,
				   .time = time,
				   .pid = pid,
				   .tid = pid,
				   .file_end = m->offset };

	m->stats.lines++;
	if (!len) {
		m->stats.skipped++;
		return;
	}
	if (end[-1] == '\r')
		end--;
	if (!hex_field(&s, end, &ev.addr) || !hex_field(&s, end, &ev.size) ||
	    s == end || !ev.size || ev.addr + ev.size < ev.addr ||
	    memchr(s, 0, end - s)) {
		m->stats.skipped++;
		return;
	}
	ev.name = s;
	ev.name_len = end - s;
	m->stats.records++;
	fn(ctx, &ev);
}

/* Lines as they are, each with its '\n': one TEXT event. */
static void text_out(struct jt_perfmap *m, const char *s, size_t len,
		     uint64_t time, uint32_t pid, jt_jit_fn fn, void *ctx)
{
	struct jt_jit_event ev = { .op = JT_JIT_TEXT,
				   .time = time,
				   .pid = pid,
				   .tid = pid,
				   .name = s,
				   .name_len = len,
				   .file_end = m->offset };

	fn(ctx, &ev);
}

/*
 * Lines that are not empty in len bytes of whole lines, eight bytes a
 * step: a line ends at a '\n' whose byte before is not one (nor the
 * start).
 */
uint64_t jt_perfmap_lines(const char *s, size_t len)
{
	const uint64_t ones = 0x0101010101010101ULL, low7 = 0x7f * ones;
	uint64_t ends = 0, prev = 1ULL << 63, x, nl;
	size_t i = 0;
	bool last;

	for (; i + 8 <= len; i += 8) {
		memcpy(&x, s + i, 8);
		x = le64toh(x) ^ ('\n' * ones);
		/* The top bit of each byte that was '\n'. */
		nl = ~(((x & low7) + low7) | x) & ~low7;
		ends += (((nl & ~(nl << 8 | prev >> 56)) >> 7) * ones) >> 56;
		prev = nl;
	}
	last = !i || (prev >> 63);
	for (; i < len; i++) {
		ends += s[i] == '\n' && !last;
		last = s[i] == '\n';
	}
	return ends;
}

/*
 * Text mode, from p, the start of a whole line: the lines up to the last
 * '\n' of the piece go out as one event, unread but for their ends, and
 * uncounted (the stream counts them as it cuts them by write). A line
 * too long to be a symbol is dropped and ends the run. Returns where the
 * next line starts.
 */
static const char *text_run(struct jt_perfmap *m, const char *p,
			    const char *end, uint64_t time, uint32_t pid,
			    jt_jit_fn fn, void *ctx)
{
	const char *s = (const char *)memrchr(p, '\n', end - p) + 1, *nl;

	/* A run no longer than a line may be holds no line too long. */
	if (s - p > PERFMAP_LINE_MAX + 1)
		for (s = p; s < end && (nl = memchr(s, '\n', end - s)) &&
			    nl - s <= PERFMAP_LINE_MAX;)
			s = nl + 1;
	if (s > p) {
		m->offset += s - p;
		text_out(m, p, s - p, time, pid, fn, ctx);
		return s;
	}
	/* A line this long is no symbol: drop it whole. */
	nl = memchr(p, '\n', end - p); /* the caller saw it */
	m->offset += nl + 1 - p;
	m->stats.skipped++;
	return nl + 1;
}

/* The line held back, now ended: in text mode with its '\n'. */
static int held_line(struct jt_perfmap *m, uint64_t time, uint32_t pid,
		     jt_jit_fn fn, void *ctx)
{
	if (!m->text) {
		parse_line(m, m->buf, m->len, time, pid, fn, ctx);
		return 0;
	}
	if (append((unsigned char **)&m->buf, &m->len, &m->cap, "\n", 1))
		return -ENOMEM;
	text_out(m, m->buf, m->len, time, pid, fn, ctx);
	return 0;
}

int jt_perfmap_feed(struct jt_perfmap *m, const void *data, size_t len,
		    uint64_t time, uint32_t pid, jt_jit_fn fn, void *ctx)
{
	const char *p = data, *end = p + len;

	while (p < end) {
		const char *nl = memchr(p, '\n', end - p);
		size_t n = (nl ? nl : end) - p;

		if (m->text && !m->len && nl) {
			p = text_run(m, p, end, time, pid, fn, ctx);
			continue;
		}
		m->offset += n + !!nl;
		if (m->len + n > PERFMAP_LINE_MAX) {
			/* A line this long is no symbol: drop it whole. */
			m->stats.skipped += !!nl;
			m->len = nl ? 0 : PERFMAP_LINE_MAX + 1;
			p += n + !!nl;
			continue;
		}
		/* A whole line in the piece is read where it is. */
		if (!m->len && nl) {
			parse_line(m, p, n, time, pid, fn, ctx);
			p = nl + 1;
			continue;
		}
		if (append((unsigned char **)&m->buf, &m->len, &m->cap, p, n))
			return -ENOMEM;
		if (!nl)
			break;
		if (held_line(m, time, pid, fn, ctx))
			return -ENOMEM;
		m->len = 0;
		p = nl + 1;
	}
	return 0;
}

int jt_perfmap_text_each(const char *text, size_t len, uint64_t time,
			 uint32_t pid, jt_jit_fn fn, void *ctx)
{
	struct jt_perfmap m;
	int err;

	jt_perfmap_init(&m);
	err = jt_perfmap_feed(&m, text, len, time, pid, fn, ctx);
	if (!err && m.len)
		err = jt_perfmap_feed(&m, "\n", 1, time, pid, fn, ctx);
	if (!err)
		err = m.stats.skipped;
	jt_perfmap_free(&m);
	return err;
}
