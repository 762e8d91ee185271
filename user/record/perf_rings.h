/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Sampling events and perf's own side-band, one ring per CPU. */
#ifndef JT_PERF_RINGS_H
#define JT_PERF_RINGS_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <linux/perf_event.h>
#include "lib/jt_file.h"
#include "lib/stackdelta.h"

struct jt_perf_opts {
	const char *event; /* NULL: cycles, or cpu-clock without a PMU */
	uint64_t freq;
	uint64_t period; /* overrides freq */
	bool callchain;
	/* JT_CG_DWARF: user registers and stack_size bytes of user stack */
	uint8_t callgraph;
	uint32_t stack_size;
	bool data_addr;
	unsigned int pages; /* data pages per CPU ring, a power of two */
};

struct jt_ring {
	int fd;
	void *base;
	size_t mmap_size;
	uint32_t cpu;
};

struct jt_perf {
	struct perf_event_attr attr;
	unsigned int pages;
	const char *event; /* the event actually sampled */
	struct jt_ring *rings;
	int nrings;
	size_t rings_cap;
	int *fds; /* every fd, ring owners and redirected ones */
	int nfds;
	size_t fds_cap;
	char *tmp;   /* a record that wraps around the ring end */
	char *delta; /* a sample's stack stored as a delta */
	struct jt_stackdelta deltas;
	uint64_t records;
	uint64_t lost_records; /* summed from PERF_RECORD_LOST */
};

/*
 * pids: the tasks to follow (inherit covers their future children), or
 * NULL with npids 0 for every task on every CPU.
 */
int jt_perf_open(struct jt_perf *p, const struct jt_perf_opts *o,
		 const pid_t *pids, int npids, bool enable_on_exec);
int jt_perf_enable(struct jt_perf *p);
void jt_perf_drain(struct jt_perf *p, struct jt_writer *w);
void jt_perf_close(struct jt_perf *p);
/* Samples and side-band records the rings could not take. */
uint64_t jt_perf_lost(const struct jt_perf *p);
int jt_perf_event_attr(const char *name, struct perf_event_attr *attr);
/* "tsc.*" META lines for arch-timestamp jitdumps; 0 bytes when the
 * kernel gives no TSC conversion (cap_user_time_zero). */
int jt_perf_tsc_meta(const struct jt_perf *p, char *buf, size_t len);

#endif
