// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <assert.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include "lib/json.h"
#include "lib/utf8.h"

void jt_json_init(struct jt_json *j, FILE *f)
{
	memset(j, 0, sizeof(*j));
	j->f = f;
}

/* The separator and layout before any value, or before a member name. */
static void before(struct jt_json *j)
{
	if (j->named) {
		j->named = false;
		return;
	}
	if (!j->depth)
		return;
	if (j->any[j->depth])
		fputc(',', j->f);
	if (j->depth == 1 && j->open[1] == '[')
		fputs("\n  ", j->f);
	j->any[j->depth] = true;
}

/* After a whole value: a top-level one ends its line. */
static void after(struct jt_json *j)
{
	if (!j->depth)
		fputc('\n', j->f);
}

static void push(struct jt_json *j, char c)
{
	before(j);
	assert(j->depth + 1 < JT_JSON_DEPTH);
	j->depth++;
	j->open[j->depth] = c;
	j->any[j->depth] = false;
	fputc(c, j->f);
}

void jt_json_object(struct jt_json *j)
{
	push(j, '{');
}

void jt_json_array(struct jt_json *j)
{
	push(j, '[');
}

void jt_json_end(struct jt_json *j)
{
	char c = j->open[j->depth];

	assert(j->depth > 0 && !j->named);
	if (j->depth == 1 && c == '[' && j->any[1])
		fputc('\n', j->f);
	fputc(c == '{' ? '}' : ']', j->f);
	j->depth--;
	after(j);
}

static void escape(FILE *f, const unsigned char *s, size_t n)
{
	size_t i = 0, len;

	fputc('"', f);
	while (i < n) {
		unsigned char c = s[i];

		if (c == '"' || c == '\\') {
			fputc('\\', f);
			fputc(c, f);
		} else if (c == '\n') {
			fputs("\\n", f);
		} else if (c == '\t') {
			fputs("\\t", f);
		} else if (c < 0x20 || c == 0x7f) {
			fprintf(f, "\\u%04x", c);
		} else if (c < 0x80) {
			fputc(c, f);
		} else if ((len = jt_utf8_len(s + i, n - i))) {
			fwrite(s + i, 1, len, f);
			i += len;
			continue;
		} else {
			fputs("\\ufffd", f);
		}
		i++;
	}
	fputc('"', f);
}

void jt_json_name(struct jt_json *j, const char *name)
{
	assert(j->depth > 0 && j->open[j->depth] == '{' && !j->named);
	before(j);
	escape(j->f, (const unsigned char *)name, strlen(name));
	fputc(':', j->f);
	j->named = true;
}

static void value_check(struct jt_json *j)
{
	/* In an object every value needs its name first. */
	assert(!j->depth || j->open[j->depth] != '{' || j->named);
	before(j);
}

void jt_json_strn(struct jt_json *j, const char *s, size_t n)
{
	value_check(j);
	escape(j->f, (const unsigned char *)s, n);
	after(j);
}

void jt_json_str(struct jt_json *j, const char *s)
{
	if (s)
		jt_json_strn(j, s, strlen(s));
	else
		jt_json_null(j);
}

void jt_json_u64(struct jt_json *j, uint64_t v)
{
	value_check(j);
	fprintf(j->f, "%" PRIu64, v);
	after(j);
}

void jt_json_i64(struct jt_json *j, int64_t v)
{
	value_check(j);
	fprintf(j->f, "%" PRId64, v);
	after(j);
}

void jt_json_hex(struct jt_json *j, uint64_t v)
{
	value_check(j);
	fprintf(j->f, "\"0x%" PRIx64 "\"", v);
	after(j);
}

void jt_json_f2(struct jt_json *j, double v)
{
	value_check(j);
	fprintf(j->f, "%.2f", v);
	after(j);
}

void jt_json_bool(struct jt_json *j, bool v)
{
	value_check(j);
	fputs(v ? "true" : "false", j->f);
	after(j);
}

void jt_json_null(struct jt_json *j)
{
	value_check(j);
	fputs("null", j->f);
	after(j);
}

void jt_json_raw(struct jt_json *j, const char *json)
{
	value_check(j);
	fputs(json ? json : "null", j->f);
	after(j);
}

int jt_json_raw_file(struct jt_json *j, FILE *src)
{
	char buf[65536];
	size_t n;

	value_check(j);
	fflush(j->f);
	rewind(src);
	while ((n = fread(buf, 1, sizeof(buf), src)) > 0)
		if (fwrite(buf, 1, n, j->f) != n)
			return -1;
	after(j);
	return ferror(src) ? -1 : 0;
}

void jt_json_str_field(struct jt_json *j, const char *name, const char *s)
{
	jt_json_name(j, name);
	jt_json_str(j, s);
}

void jt_json_u64_field(struct jt_json *j, const char *name, uint64_t v)
{
	jt_json_name(j, name);
	jt_json_u64(j, v);
}

void jt_json_i64_field(struct jt_json *j, const char *name, int64_t v)
{
	jt_json_name(j, name);
	jt_json_i64(j, v);
}

void jt_json_hex_field(struct jt_json *j, const char *name, uint64_t v)
{
	jt_json_name(j, name);
	jt_json_hex(j, v);
}

void jt_json_bool_field(struct jt_json *j, const char *name, bool v)
{
	jt_json_name(j, name);
	jt_json_bool(j, v);
}

struct jt_json *jt_json_mem_open(struct jt_json_mem *m)
{
	FILE *f;

	m->buf = NULL;
	m->len = 0;
	f = open_memstream(&m->buf, &m->len);
	jt_json_init(&m->j, f);
	return f ? &m->j : NULL;
}

char *jt_json_mem_close(struct jt_json_mem *m)
{
	if (!m->j.f)
		return NULL;
	fclose(m->j.f);
	m->j.f = NULL;
	/* Drop the newline a top-level value ends with. */
	if (m->buf && m->len && m->buf[m->len - 1] == '\n')
		m->buf[--m->len] = 0;
	return m->buf;
}
