/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Incremental readers of the two JIT symbol sources: jitdump files
 * (tools/perf/Documentation/jitdump-specification.txt) and perf-map files
 * (/tmp/perf-PID.map). Both take a file in arbitrary pieces as it grows,
 * keep a partial record or line for the next piece, and treat their input
 * as hostile: a record that does not add up is skipped and counted, and
 * one whose size cannot be trusted stops the file with an error.
 */
#ifndef JT_JITDUMP_H
#define JT_JITDUMP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum jt_jit_op {
	JT_JIT_LOAD,
	JT_JIT_MOVE,
	JT_JIT_CLOSE,
	JT_JIT_UNLOAD, /* jittrace's JVMTI agent: the code at addr was freed */
	/*
	 * perf-map lines, not parsed yet (jt_perfmap.text): name holds
	 * them, each ending in '\n'; in the stream's items, size says how
	 * many are not empty. Parsed by jt_perfmap_text_each once something
	 * needs them.
	 */
	JT_JIT_TEXT,
};

struct jt_jit_event {
	enum jt_jit_op op;
	uint64_t time;	    /* 0: the record carries no usable time */
	uint64_t arch_time; /* the raw TSC value, with arch_time files */
	uint32_t pid;
	uint32_t tid;
	uint64_t addr;	   /* LOAD: code_addr; MOVE: new_code_addr */
	uint64_t old_addr; /* MOVE */
	uint64_t size;
	uint64_t code_index;
	const char *name; /* LOAD only; not NUL-terminated */
	size_t name_len;
	/*
	 * LOAD: the UNWINDING_INFO record that came just before it, whose
	 * .eh_frame (then .eh_frame_hdr) follows the code, 8-byte aligned,
	 * as perf's genelf places them.
	 */
	const unsigned char *unwind;
	uint32_t unwind_len;
	uint32_t unwind_hdr_len;
	/* LOAD: jittrace's JVMTI agent's inlining record before it (the
	 * entries of include/jt_jitdump.h's jr_code_inline) */
	const unsigned char *inl;
	uint32_t inl_len;
	uint32_t inl_count;
	uint64_t file_end; /* perf-map: file offset just past the line */
};

typedef void (*jt_jit_fn)(void *ctx, const struct jt_jit_event *ev);

struct jt_jit_stats {
	uint64_t records; /* well-formed records of any type */
	uint64_t skipped; /* malformed records passed over */
	uint64_t lines;	  /* perf-map lines read */
};

struct jt_jitdump {
	unsigned char *buf; /* bytes not yet parsed */
	size_t len;
	size_t cap;
	bool have_header;
	bool swap;	/* written on a host of the other byte order */
	bool arch_time; /* JITDUMP_FLAGS_ARCH_TIMESTAMP: not CLOCK_MONOTONIC */
	bool failed;	/* stopped for good; err says why */
	uint32_t pid;
	struct jt_jit_stats stats;
	unsigned char *unwind; /* pending UNWINDING_INFO, for the next LOAD */
	uint32_t unwind_len;
	uint32_t unwind_hdr_len;
	unsigned char *inl; /* pending inlining record, for the next LOAD */
	uint32_t inl_len;
	uint32_t inl_count;
	char err[128];
};

/*
 * perf's TSC conversion (perf_event_mmap_page time_zero/mult/shift) and
 * the offset from perf's clock to CLOCK_MONOTONIC measured at record
 * start: what turns JITDUMP_FLAGS_ARCH_TIMESTAMP times into ours.
 */
struct jt_tsc {
	uint64_t zero;
	uint32_t mult;
	uint16_t shift;
	int64_t mono_offset;
};

uint64_t jt_tsc_to_mono(const struct jt_tsc *c, uint64_t tsc);
void jt_jitdump_init(struct jt_jitdump *d);
/* 0, or -1 once the file cannot be read further (see d->err). */
int jt_jitdump_feed(struct jt_jitdump *d, const void *data, size_t len,
		    jt_jit_fn fn, void *ctx);
/* Bytes held back: a record the file has not finished writing. */
size_t jt_jitdump_pending(const struct jt_jitdump *d);
void jt_jitdump_free(struct jt_jitdump *d);

struct jt_perfmap {
	char *buf; /* a line not yet ended */
	size_t len;
	size_t cap;
	uint64_t offset; /* of the next byte fed */
	struct jt_jit_stats stats;
	/*
	 * Whole lines go out as TEXT, not parsed: as many as a piece holds
	 * in one event, each with its '\n', not counted (size 0; stats
	 * count only lines too long). Most are never looked up (a
	 * short-lived process writes its perf-map and exits unsampled).
	 */
	bool text;
};

void jt_perfmap_init(struct jt_perfmap *m);
/* Every whole line becomes a LOAD stamped with time (or TEXT, above). */
int jt_perfmap_feed(struct jt_perfmap *m, const void *data, size_t len,
		    uint64_t time, uint32_t pid, jt_jit_fn fn, void *ctx);
void jt_perfmap_free(struct jt_perfmap *m);
/* Lines not empty in len bytes of whole lines. */
uint64_t jt_perfmap_lines(const char *s, size_t len);
/*
 * The LOADs of len bytes of lines (a TEXT record's), a last line without
 * its '\n' included; returns how many lines were not symbols, or -ENOMEM.
 */
int jt_perfmap_text_each(const char *text, size_t len, uint64_t time,
			 uint32_t pid, jt_jit_fn fn, void *ctx);

#endif
