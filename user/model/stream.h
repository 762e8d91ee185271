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
#include "lib/strtab.h"
#include "model/jitdump.h"

enum jt_item_kind {
	JT_IT_BPF,
	JT_IT_PERF,
	JT_IT_JIT, /* data: struct jt_jit_item */
};

enum jt_sym_source {
	JT_SRC_UNKNOWN,
	JT_SRC_JITDUMP,
	JT_SRC_PERFMAP,
	JT_SRC_ELF,
	JT_SRC_KALLSYMS,
	JT_SRC_ANON,
};

/* One jitdump record or perf-map line, for the process that wrote it. */
struct jt_jit_item {
	uint64_t time;
	uint32_t pid;
	uint16_t op;	 /* enum jt_jit_op */
	uint16_t source; /* JT_SRC_JITDUMP or JT_SRC_PERFMAP */
	uint64_t addr;
	uint64_t old_addr;
	uint64_t size;
	uint64_t code_index;
	const char *name; /* interned */
};

/* A JIT file the recorder found, read or refused. */
struct jt_jit_source {
	uint32_t id;
	uint32_t pid;
	uint16_t kind;	/* enum jt_jit_kind */
	uint16_t found; /* enum jt_jit_found */
	int32_t status;
	uint64_t found_ns; /* when the recorder opened it */
	const char *path;
	uint64_t next_offset;
	uint64_t gaps; /* pieces missing: the parser was restarted */
	uint64_t ino;
	size_t write_next; /* perf-map: into jt_stream.writes */
	size_t write_end;
	uint64_t timed_lines; /* perf-map lines timed by their write(2) */
	struct jt_jitdump dump;
	struct jt_perfmap map;
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
	size_t meta_cap;
	uint64_t sample_type;
	struct jt_lost_rec lost; /* the last one in the file */
	struct jt_finish_rec finish;
	int finished;	    /* a FINISH record was read */
	uint64_t untimed;   /* perf records with no time: left out */
	uint64_t perf_lost; /* PERF_RECORD_LOST counts in the stream */
	uint64_t unknown_recs;
	struct jt_jit_item *jit; /* what JT_IT_JIT items point at */
	size_t njit;
	size_t jit_cap;
	struct jt_jit_source *sources;
	size_t nsources;
	size_t sources_cap;
	struct jt_strtab strs;
	const void *kallsyms; /* the JT_REC_KALLSYMS payload, if any */
	size_t kallsyms_len;
	struct jt_mapwrite *writes; /* JT_EV_MAPWRITE by pid, inode, time */
	size_t nwrites;
	size_t writes_cap;
	const struct jt_buildid_rec **buildids;
	size_t nbuildids;
	size_t buildids_cap;
	struct jt_tsc tsc;		/* valid when tsc.mult */
	uint64_t arch_time_unconverted; /* read time used instead */
};

/* The build-id recorded for a file, or NULL. */
const struct jt_buildid_rec *jt_stream_buildid(const struct jt_stream *s,
					       uint64_t dev, uint64_t ino);

struct jt_mapwrite {
	uint32_t pid;
	uint64_t ino;
	uint64_t end;
	uint64_t time;
	uint64_t seq;
};

const char *jt_source_name(uint16_t source);

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
