/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * A recording as one time-ordered stream. The BPF ring and each CPU's
 * perf ring are each in time order but interleave arbitrarily in the
 * file; views need the merge.
 */
#ifndef JT_STREAM_H
#define JT_STREAM_H

#include <stdint.h>
#include "lib/jt_file.h"

enum jt_item_kind {
	JT_IT_BPF,
	JT_IT_PERF,
};

struct jt_item {
	uint64_t time;
	uint64_t seq; /* file order: ties keep it (exec before its VMAs) */
	const void *data;
	uint32_t len;
	uint16_t kind;
	uint16_t cpu;
};

struct jt_meta {
	char *key;
	char *value;
};

struct jt_stream {
	struct jt_reader rd;
	struct jt_item *items;
	size_t n;
	struct jt_meta *meta;
	size_t nmeta;
	uint64_t sample_type;
	struct jt_lost_rec lost; /* the last one in the file */
	struct jt_finish_rec finish;
	int finished;	    /* a FINISH record was read */
	uint64_t untimed;   /* perf records with no time: left out */
	uint64_t perf_lost; /* PERF_RECORD_LOST counts in the stream */
	uint64_t unknown_recs;
};

/* 0, or -errno with msg set to a sentence for the user. */
int jt_stream_load(struct jt_stream *s, const char *path, char *msg,
		   size_t msglen);
int jt_stream_load_mem(struct jt_stream *s, const void *buf, size_t len,
		       char *msg, size_t msglen);
void jt_stream_free(struct jt_stream *s);
const char *jt_stream_meta(const struct jt_stream *s, const char *key);
/* Print a one-line warning if the file stops before its end or lost data. */
void jt_stream_warn(const struct jt_stream *s, const char *path);

#endif
