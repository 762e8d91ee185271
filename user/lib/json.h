/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The one JSON writer every --json output goes through (after bpftool's
 * json_writer). Names and file paths come from traced processes, which
 * any user controls: every string is escaped here, and bytes that are
 * not UTF-8 become U+FFFD, so the output always parses.
 *
 * Layout: a top-level array puts each element on a line of its own, and
 * every top-level value ends with a newline (JSON lines for a stream of
 * top-level objects).
 */
#ifndef JT_JSON_H
#define JT_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define JT_JSON_DEPTH 16

struct jt_json {
	FILE *f;
	int depth;
	char open[JT_JSON_DEPTH]; /* '{' or '[' per level */
	bool any[JT_JSON_DEPTH];  /* a value already written at that level */
	bool named;		  /* a member name waits for its value */
};

void jt_json_init(struct jt_json *j, FILE *f);
void jt_json_object(struct jt_json *j);
void jt_json_array(struct jt_json *j);
void jt_json_end(struct jt_json *j); /* the innermost object or array */
void jt_json_name(struct jt_json *j, const char *name);

void jt_json_str(struct jt_json *j, const char *s); /* NULL: null */
void jt_json_strn(struct jt_json *j, const char *s, size_t n);
void jt_json_u64(struct jt_json *j, uint64_t v);
void jt_json_i64(struct jt_json *j, int64_t v);
void jt_json_hex(struct jt_json *j, uint64_t v); /* "0x..." */
void jt_json_f2(struct jt_json *j, double v);	 /* two decimals */
void jt_json_bool(struct jt_json *j, bool v);
void jt_json_null(struct jt_json *j);
/* A whole value made by a jt_json_mem writer. */
void jt_json_raw(struct jt_json *j, const char *json);
/* The value is already JSON, in src from its start: copied; 0 or -1. */
int jt_json_raw_file(struct jt_json *j, FILE *src);

/* name, then value: the common case */
void jt_json_str_field(struct jt_json *j, const char *name, const char *s);
void jt_json_u64_field(struct jt_json *j, const char *name, uint64_t v);
void jt_json_i64_field(struct jt_json *j, const char *name, int64_t v);
void jt_json_hex_field(struct jt_json *j, const char *name, uint64_t v);
void jt_json_bool_field(struct jt_json *j, const char *name, bool v);

/* A value built now and written later (a finding's detail). */
struct jt_json_mem {
	struct jt_json j;
	char *buf;
	size_t len;
};

struct jt_json *jt_json_mem_open(struct jt_json_mem *m);
/* The text made, for the caller to free; NULL without memory. */
char *jt_json_mem_close(struct jt_json_mem *m);

#endif
