/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * A recording as one time-ordered stream, read front to back. The BPF
 * ring and each CPU's perf ring are each in time order but interleave in
 * the file; they are merged through a bounded reorder window, so nothing
 * sorts or holds the whole file.
 */
#ifndef JT_STREAM_H
#define JT_STREAM_H

#include <stdint.h>
#include "lib/hash.h"
#include "lib/jt_file.h"
#include "lib/stackdelta.h"
#include "lib/strtab.h"
#include "model/jitdump.h"
#include "model/cfistore.h"
#include "model/ordered.h"

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
	/*
	 * LOAD: name_len bytes and a NUL, last in the item: not interned.
	 * Most lines are never looked up (a short-lived process writes its
	 * perf-map and exits), so the model interns a name only as it
	 * enters a table.
	 */
	const char *name;
	uint32_t name_len;
	/* LOAD: unwind_len bytes of CFI follow the item (jt_jit_unwind) */
	uint32_t unwind_len;
	uint32_t unwind_hdr_len;
	/* LOAD: then inl_len bytes of inlining entries (jt_jit_inlines) */
	uint32_t inl_len;
	uint32_t inl_count;
};

static inline const unsigned char *jt_jit_unwind(const struct jt_jit_item *j)
{
	return j->unwind_len ? (const unsigned char *)(j + 1) : NULL;
}

/* LOAD: the inlining entries after the CFI (include/jt_jitdump.h). */
static inline const unsigned char *jt_jit_inlines(const struct jt_jit_item *j)
{
	return j->inl_len ? (const unsigned char *)(j + 1) + j->unwind_len :
			    NULL;
}

struct jt_write_queue;
struct exited;

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
	struct jt_write_queue *writes; /* perf-map: its write(2)s, in order */
	uint64_t ignored_writes;       /* refused: writes made to it */
	uint64_t timed_lines; /* perf-map lines timed by their write(2) */
	uint64_t truncated;   /* bytes the recorder did not copy (its cap) */
	struct jt_jitdump dump;
	struct jt_perfmap map;
};

/* One event in time order; it owns its data, which follows it. */
struct jt_item {
	uint64_t time;
	uint64_t key; /* what orders it: time, or when a late one came */
	uint64_t seq; /* file order: ties keep it (exec before its VMAs) */
	const void *data;
	uint32_t len;
	uint16_t kind;
	uint16_t cpu;
	uint8_t late;	 /* came after later items were out: not in its place */
	uint8_t pooled;	 /* a JT_ITEM_POOL_SIZE block jt_stream_put keeps */
	uint8_t derived; /* made from a BPF event: in the BPF ring's order */
	/* JIT: records in it, of one time (a write's perf-map lines); 0: 1 */
	uint16_t nrec;
};

/* A JIT item's records: jt_jit_item[n], the first with its trailers. */
static inline uint32_t jt_jit_count(const struct jt_item *it)
{
	return it->nrec ? it->nrec : 1;
}

static inline const struct jt_jit_item *jt_jit_rec(const struct jt_item *it,
						   uint32_t i)
{
	return (const struct jt_jit_item *)it->data + i;
}

/*
 * The LOAD records of a TEXT record's lines, in order, each with its
 * time, pid and source; returns the lines that were not symbols, or
 * -ENOMEM.
 */
int jt_jit_text_each(const struct jt_jit_item *text,
		     void (*fn)(void *ctx, const struct jt_jit_item *load),
		     void *ctx);

/*
 * Items this small (header included) are blocks of this size that the
 * stream reuses: a perf-map line's with a name of up to 47 bytes. No
 * bigger: the reorder window can hold a burst of a hundred thousand.
 */
#define JT_ITEM_POOL_SIZE                                                      \
	(sizeof(struct jt_item) + sizeof(struct jt_jit_item) + 48)

/* Of the perf-maps written and never read, the pids report names. */
#define JT_UNREAD_SHOWN 8

struct jt_meta {
	char *key;
	char *value;
};

/*
 * The recorder drains every ring once per round and then writes a ROUND
 * mark: events stamped before the round began are all in the file by
 * then. JIT file pieces are parsed once the rounds pass the time they
 * were read (their perf-map lines need the write(2)s that made them), and
 * items go out JT_REORDER_NS behind that, for the JIT records a piece
 * carries that were written before it was read.
 */
#define JT_REORDER_NS 500000000ULL

struct jt_stream {
	struct jt_reader rd;
	struct jt_ordered ord;
	uint64_t seq;
	uint64_t horizon;  /* every event before this is in */
	uint64_t max_time; /* latest event read */
	int rounds;	   /* the file has ROUND marks */
	int at_end;
	int err;
	uint64_t emitted;
	struct jt_meta *meta;
	size_t nmeta;
	size_t meta_cap;
	uint64_t sample_type;
	uint64_t regs_user; /* perf.sample_regs_user: which registers */
	/* machine= names another architecture than this build's */
	bool foreign_arch;
	/*
	 * perf.mmap=bpf: perf's MMAP2 records are made from the BPF events
	 * (perf_view.c), of data mappings too with PERF_SAMPLE_ADDR (-d).
	 */
	bool perf_view;
	struct jt_lost_rec lost; /* the last one in the file */
	struct jt_finish_rec finish;
	int finished;	    /* a FINISH record was read */
	uint64_t untimed;   /* perf records with no time: left out */
	uint64_t perf_lost; /* PERF_RECORD_LOST counts in the stream */
	uint64_t unknown_recs;
	struct jt_jit_source **sources;
	size_t nsources;
	size_t sources_cap;
	struct jt_hash source_ids;   /* file_id -> accepted source */
	struct jt_hash write_queues; /* (pid, inode) -> jt_write_queue */
	struct jt_hash pid_queues;   /* pid -> its write queues */
	struct exited *exited;	     /* processes whose queues go soon */
	size_t nexited;
	size_t exited_head;
	size_t exited_cap;
	struct jt_parked *parked; /* JIT pieces waiting for their round */
	size_t nparked;
	size_t parked_head;
	size_t parked_cap;
	struct jt_item **pool; /* free small items, a stack */
	size_t npool;
	size_t pool_cap;
	size_t nout; /* small items handed out and not yet put back */
	struct jt_park_chunk *park_head; /* their payloads, in order */
	struct jt_park_chunk *park_tail;
	struct jt_strtab strs;
	void *kallsyms; /* the JT_REC_KALLSYMS payload, if any */
	size_t kallsyms_len;
	struct jt_hash buildids; /* (dev, ino) -> struct jt_buildid_rec */
	struct jt_cfistore cfis;
	struct jt_stackdelta deltas; /* stack copies stored as deltas */
	bool deltas_ready;
	unsigned char *delta_buf;
	uint64_t stack_unknown; /* deltas with no copy to apply them to */
	struct jt_tsc tsc;	/* valid when tsc.mult */
	/*
	 * A live reader (the agent) never lists JIT files at the end: the
	 * sources of processes gone past the grace are freed.
	 */
	bool free_dead_sources;
	/*
	 * perf-map lines go out unparsed, a write's as one TEXT record, for
	 * a model that parses them only if a sample needs them (the agent).
	 */
	bool perfmap_text;
	struct exited *gone; /* processes whose sources go soon */
	size_t ngone;
	size_t gone_head;
	size_t gone_cap;
	uint64_t gone_truncated; /* the freed sources' truncated bytes */
	/* Processes that went past a budget of the recorder's: few. */
	struct jt_proccap_rec *proccaps;
	size_t nproccaps;
	size_t proccaps_cap;
	/* A live reader's clock: called with each ROUND mark's time. */
	void (*on_round)(void *ctx, uint64_t horizon);
	void *round_ctx;
	uint64_t arch_time_unconverted; /* read time used instead */
	/*
	 * perf-maps a process wrote (JT_EV_MAPWRITE) that no source ever
	 * read: gone before the recorder opened them, or never where perf
	 * looks. Their lines' names are lost; counted, the first pids kept.
	 */
	uint64_t unread_maps;
	uint64_t unread_writes;
	struct jt_unread_map {
		uint32_t pid;
		uint64_t writes;
	} unread[JT_UNREAD_SHOWN];
	bool unread_tallied; /* the live queues were counted at the end */
};

/* The build-id recorded for a file, or NULL. */
/* The CFI the recording holds for that build-id; the caller frees it. */
struct jt_cfi *jt_stream_cfi(struct jt_stream *s, const unsigned char *id,
			     size_t id_len);
const struct jt_buildid_rec *jt_stream_buildid(const struct jt_stream *s,
					       uint64_t dev, uint64_t ino);

const char *jt_source_name(uint16_t source);

/*
 * 0, or -errno with msg set to a sentence for the user. Reads the
 * recording's header records; items follow from jt_stream_next.
 */
int jt_stream_open(struct jt_stream *s, const char *path, char *msg,
		   size_t msglen);
int jt_stream_open_mem(struct jt_stream *s, const void *buf, size_t len,
		       char *msg, size_t msglen);
/* A capture in this process (lib/chan.h), as jt_record_live writes. */
int jt_stream_open_chan(struct jt_stream *s, struct jt_chan *c, char *msg,
			size_t msglen);
/* The next item in time order, the caller's until jt_stream_put; NULL at
 * the end. */
struct jt_item *jt_stream_next(struct jt_stream *s);
/*
 * The item jt_stream_next will most likely give next (after: the one
 * after it), already read: a hint to warm the cache with, as an earlier
 * one may still come first. NULL when there is no guess.
 */
const struct jt_item *jt_stream_peek(const struct jt_stream *s, bool after);
/* Done with it. */
void jt_stream_put(struct jt_stream *s, struct jt_item *it);
void jt_stream_free(struct jt_stream *s);
const char *jt_stream_meta(const struct jt_stream *s, const char *key);
/* Print a one-line warning if the file stops before its end or lost data. */
void jt_stream_warn(const struct jt_stream *s, const char *path);

#endif
