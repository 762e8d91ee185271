/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * jittrace.data: a 16-byte preamble, then framed records appended as they
 * come. Nothing is ever rewritten in place, so a recorder killed at any
 * moment leaves a file that reads up to its last whole record.
 */
#ifndef JT_FILE_H
#define JT_FILE_H

#include <stddef.h>
#include <stdint.h>

#define JT_FILE_MAGIC "JITTRACE"
#define JT_FILE_VERSION 5
/*
 * Version 3 lacks only the COW event's ip: still read, as ip 0. Before 5,
 * FORK and EXEC carry no euid; nothing that reads a file needs it.
 */
#define JT_FILE_VERSION_MIN 3
#define JT_REC_MAX (1u << 20)

enum jt_rec_type {
	JT_REC_META = 1,    /* "key=value\n" lines */
	JT_REC_BPF = 2,	    /* one BPF event (include/jt_abi.h), verbatim */
	JT_REC_PERF = 3,    /* struct jt_perf_rec + one raw perf record */
	JT_REC_LOST = 4,    /* struct jt_lost_rec */
	JT_REC_FINISH = 5,  /* struct jt_finish_rec */
	JT_REC_JITFILE = 6, /* struct jt_jitfile_rec + path: a JIT file found */
	JT_REC_JIT = 7,	    /* struct jt_jit_rec + bytes read from that file */
	JT_REC_KALLSYMS = 8, /* u64 length, then zlib-compressed text lines */
	JT_REC_BUILDID = 9,  /* struct jt_buildid_rec + path */
	JT_REC_ROUND = 10,   /* struct jt_round_rec: every ring drained */
	JT_REC_JITCAP = 11,  /* struct jt_jitcap_rec: a JIT file hit the cap */
	JT_REC_PROCCAP = 12, /* struct jt_proccap_rec: a process's cut */
	JT_REC_CFI = 13,     /* struct jt_cfi_rec + a piece of a section */
	/* struct jt_perf_rec, struct jt_delta_hdr (lib/stackdelta.h), then
	 * a sample whose stack copy holds what changed since its thread's
	 * last one */
	JT_REC_PERF_DELTA = 14,
};

/*
 * A piece of a CFI section (.eh_frame, .eh_frame_hdr, .debug_frame) of
 * the object with this build-id, so that a recording unwinds where the
 * files are not. Sections larger than a record come in pieces.
 */
struct jt_cfi_rec {
	uint8_t build_id[20];
	uint8_t build_id_len;
	uint8_t kind; /* enum jt_cfi_kind (unwind/cfi.h) */
	uint16_t pad;
	uint32_t pad2;
	uint64_t addr;	 /* of the section in the object */
	uint64_t total;	 /* the section's length */
	uint64_t offset; /* of this piece in it */
			 /* the piece's bytes follow */
};
#define JT_CFI_PIECE (768u << 10)
#define JT_CFI_SECTION_MAX (256u << 20)

/* Every event stamped before time is in the file ahead of this record. */
struct jt_round_rec {
	uint64_t time;
};

/* The recorder stopped copying a JIT file at --max-jit-bytes. */
struct jt_jitcap_rec {
	uint64_t time;
	uint64_t cap;	  /* bytes copied */
	uint64_t skipped; /* bytes the file had beyond them, when last seen */
	uint32_t file_id;
	uint32_t pad;
};

/*
 * What one process made the recorder drop past its budget: perf-map write
 * events (--max-process-writes), counted, not recorded. Written once, when
 * it exits or the recording ends.
 */
struct jt_proccap_rec {
	uint64_t time;
	uint32_t pid;
	uint32_t pad;
	uint64_t writes_cut;
	uint64_t writes_budget;
};

/* The build-id of a file mapped executable, read while it was mapped. */
struct jt_buildid_rec {
	uint64_t dev; /* the kernel's encoding, as BPF reports it */
	uint64_t ino;
	uint8_t len; /* 0: the file has none */
	uint8_t pad[7];
	uint8_t id[20];
	uint8_t pad2[4];
	/* NUL-terminated path follows */
};

enum jt_jit_kind {
	JT_JIT_JITDUMP = 1,
	JT_JIT_PERFMAP = 2,
};

struct jt_preamble {
	char magic[8];
	uint32_t version;
	uint32_t size; /* of the preamble, for later growth */
};

/*
 * Every record starts 8-byte aligned, so payloads (BPF structs, perf
 * records) can be read in place; size is exact and the padding after it
 * is not counted.
 */
#define JT_REC_ALIGN(n) (((n) + 7) & ~(size_t)7)

struct jt_rec_hdr {
	uint32_t type;
	uint32_t size; /* header included, padding not */
};

struct jt_perf_rec {
	uint32_t cpu; /* the ring the record came from */
	uint32_t pad;
	/* struct perf_event_header and the rest follow */
};

/* Cumulative counts at a moment; the last one in the file is the total. */
struct jt_lost_rec {
	uint64_t time;
	uint64_t bpf_events;   /* ring buffer full, summed over CPUs */
	uint64_t perf_records; /* PERF_RECORD_LOST totals */
	uint64_t bpf_errors;   /* records the writer could not take */
};

struct jt_finish_rec {
	uint64_t time;
	int32_t exit_status; /* of the command; -1 in -p/-a modes */
	uint32_t pad;
	uint64_t bpf_records;
	uint64_t perf_records;
};

/* How the recorder came to a JIT file. */
enum jt_jit_found {
	/* jitdump: its marker mmap; perf-map: made or written meanwhile */
	JT_FOUND_LIVE = 0,
	/* already there when jittrace attached (-p, -a): in the process's
	 * mappings (jitdump) or in /tmp (perf-map) */
	JT_FOUND_ATTACH = 1,
};

struct jt_jitfile_rec {
	uint64_t time;
	uint32_t pid;
	uint32_t file_id; /* names the file in the JT_REC_JIT records */
	uint16_t kind;	  /* enum jt_jit_kind */
	uint16_t found;	  /* enum jt_jit_found */
	int32_t status;	  /* 0: being read; else the errno that refused it */
	uint64_t ino;	  /* matches the JT_EV_MAPWRITE events of the file */
			  /* NUL-terminated path follows */
};

/* Bytes [offset, offset + n) of a JIT file, as read at time. */
struct jt_jit_rec {
	uint64_t time;
	uint64_t offset;
	uint32_t file_id;
	uint32_t pad;
	/* the bytes follow */
};

struct jt_chan;

struct jt_writer {
	int fd;
	struct jt_chan *chan; /* flushed buffers go here, not to fd */
	char *buf;
	size_t len;
	size_t cap;
	uint64_t bytes;	    /* in the file, whole records only */
	uint64_t recs;	    /* in buf */
	uint64_t dropped;   /* records a failed write lost */
	int err;	    /* first write errno, sticky */
	uint64_t handed_ns; /* a channel's last buffer handed over */
};

/* Starts the file with the preamble; the writer owns fd from here. */
int jt_writer_open_fd(struct jt_writer *w, int fd);
int jt_writer_open(struct jt_writer *w, const char *path);
/* To a reader in this process (lib/chan.h); closing says the end. */
int jt_writer_open_chan(struct jt_writer *w, struct jt_chan *c);
int jt_writer_add(struct jt_writer *w, uint32_t type, const void *a,
		  size_t alen, const void *b, size_t blen);
int jt_writer_flush(struct jt_writer *w);
/*
 * The end of a pass at now_ns: a file gets what the pass wrote; a
 * channel's reader, a buffer a tick (JT_CHAN_TICK_NS) or when full.
 */
int jt_writer_pass_done(struct jt_writer *w, uint64_t now_ns);
int jt_writer_close(struct jt_writer *w);

struct jt_rec {
	uint32_t type;
	uint32_t len; /* payload bytes */
	const void *data;
	uint64_t offset; /* of the record header in the file */
};

/*
 * Reads a recording front to back through a small window, so memory does
 * not follow the file's length; a record's data stays valid until the
 * next call.
 */
struct jt_readahead;

struct jt_reader {
	const unsigned char *mem; /* caller memory (tests, fuzzers), or NULL */
	unsigned char *buf;
	size_t cap;
	size_t have;   /* valid bytes in the window */
	size_t pos;    /* of the next record in the window */
	uint64_t base; /* file offset of the window's first byte */
	uint64_t size; /* of a regular file; of what was read, otherwise */
	int fd;
	struct jt_chan *chan;	 /* the window is the writer's buffer */
	struct jt_readahead *ra; /* a thread reading the file into chan */
	int eof;
	uint32_t version;
	/* Set when iteration stopped before the end of the file. */
	int truncated;
	/* The input ends inside a record: what a killed writer leaves. */
	int cut_at_end;
	uint64_t stop_offset;
	char why[128];
};

int jt_reader_open_mem(struct jt_reader *r, const void *buf, size_t size);
/* A file, a FIFO or pipe, or "-" for standard input. */
int jt_reader_open(struct jt_reader *r, const char *path);
/* What a jt_writer_open_chan writer gives; closing says we have gone. */
int jt_reader_open_chan(struct jt_reader *r, struct jt_chan *c);
int jt_reader_next(struct jt_reader *r, struct jt_rec *rec);
void jt_reader_close(struct jt_reader *r);

#endif /* JT_FILE_H */
