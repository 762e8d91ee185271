/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * A pprof profile (google/pprof profile.proto, gzipped) built sample by
 * sample: the one encoder `jittrace export` and the agent share. Frames
 * come as jittrace named them at each sample's own time, so an address
 * that held two JIT functions in turn gives two locations. Samples with
 * the same stack and labels are summed.
 */
#ifndef JT_PPROF_H
#define JT_PPROF_H

#include <stddef.h>
#include <stdint.h>

struct jt_pprof;

/* One frame, and the mapping it lies in: a requested region. */
struct jt_pprof_frame {
	uint64_t addr;
	const char *name;   /* the function, as jittrace names it */
	const char *file;   /* the mapping's file or pseudo name */
	uint64_t map_start; /* 0 with map_limit 0: no mapping */
	uint64_t map_limit;
	uint64_t map_offset;  /* file offset of map_start */
	const char *build_id; /* hex, or NULL */
};

struct jt_pprof_sample {
	const struct jt_pprof_frame *frames; /* leaf first */
	size_t nframes;
	uint32_t pid;
	const char *comm;
	const char *source; /* jitdump, perfmap, elf, kallsyms, anon, ... */
	int64_t count;
	int64_t nanos;
};

/* time_ns: start, CLOCK_REALTIME; period_ns: CPU time one sample stands for. */
struct jt_pprof *jt_pprof_new(int64_t time_ns, int64_t period_ns);
int jt_pprof_add(struct jt_pprof *p, const struct jt_pprof_sample *s);
void jt_pprof_set_duration(struct jt_pprof *p, int64_t duration_ns);
void jt_pprof_set_time(struct jt_pprof *p, int64_t time_ns);
void jt_pprof_set_period(struct jt_pprof *p, int64_t period_ns);
/* The gzipped profile in *buf (the caller frees it); 0 or -errno. */
int jt_pprof_encode(struct jt_pprof *p, void **buf, size_t *len);
/*
 * Kernel addresses (the upper half) written as 0, names kept: for a
 * reader who may not see them (kptr_restrict), as KASLR needs.
 */
void jt_pprof_hide_kernel(struct jt_pprof *p);

/* The labels each sample carries; all three unless set. */
enum {
	JT_PPROF_LABEL_PID = 1,
	JT_PPROF_LABEL_COMM = 2,
	JT_PPROF_LABEL_SOURCE = 4,
	JT_PPROF_LABELS_ALL = 7,
};
/*
 * Before the first sample. A label left out merges the samples it told
 * apart: a backend makes a series of every label set (Pyroscope, 5000 a
 * tenant), and a pid on every sample makes one per process.
 */
void jt_pprof_set_labels(struct jt_pprof *p, unsigned int labels);
void jt_pprof_free(struct jt_pprof *p);

#endif
