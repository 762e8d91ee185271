/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The one model every view shares: processes and their address spaces,
 * advanced event by event in time order. Views ask it "what held address
 * A of process P" at the moment they reach a sample, which is the
 * sample's own time.
 */
#ifndef JT_MODEL_H
#define JT_MODEL_H

#include <stdbool.h>
#include <stdint.h>
#include "jt_abi.h"
#include "lib/hash.h"
#include "lib/nametab.h"
#include "lib/strtab.h"
#include "model/aspace.h"
#include "model/jitlog.h"
#include "model/jitsyms.h"
#include "model/stream.h"

struct jt_proc {
	struct jt_proc *prev; /* in the model's list, oldest first */
	struct jt_proc *next;
	uint64_t ordinal;	   /* the how-manyth process the model met */
	struct jt_proc *reap_next; /* exited, in order of exit */
	uint32_t pid;
	uint32_t nspid; /* in its own PID namespace; 0: unknown */
	char comm[JT_COMM_LEN];
	const char *exe;
	uint64_t first_ns; /* first event that named this process */
	uint64_t dead_ns;  /* 0 while alive */
	int32_t exit_code;
	struct jt_aspace *as;
	/* JIT functions by source; jitdump wins where both name an address. */
	struct jt_jittab jitdump;
	struct jt_jittab perfmap;
	/* Its JIT tables were given up for memory: its records are dropped. */
	bool jit_evicted;
	/*
	 * Records since the tables were last brought up to date (a lazy
	 * model): the tables hold what came before, the log the rest.
	 */
	struct jt_jitlog jitlog;
	/*
	 * Pages execve wrote in the new image before the EXEC event: held
	 * until the exec snapshot maps the regions they lie in.
	 */
	struct jt_cowpage *exec_cow;
	uint32_t n_exec_cow;
	uint64_t exec_ns; /* the EXEC whose snapshot takes them; 0: none yet */
};

struct jt_model_stats {
	uint64_t malformed; /* events whose size or fields do not add up */
	uint64_t nomem;
	uint64_t vma_busy;	/* events whose kernel VMA BPF could not read */
	uint64_t vma_from_perf; /* of those, recovered from perf's MMAP2 */
	uint64_t jit_move_unknown; /* MOVE of code no LOAD named */
	uint64_t cow_raw; /* COW faults BPF could not classify: decided here */
	uint64_t cow_unmapped;	/* COW faults outside any known region */
	uint64_t cow_no_proc;	/* COW faults of a process with no model */
	uint64_t exec_loads;	/* execve's own mappings (kernel tier) */
	uint64_t exec_cow_lost; /* execve's page writes no snapshot region took
				 */
	uint64_t jit_evicted; /* JIT records of processes evicted for memory */
	uint64_t jit_text_skipped; /* TEXT lines that were no symbol */
};

/* A kernel VMA perf reported (MMAP2), kept for events BPF could not see. */
struct jt_perf_seen {
	uint32_t pid;
	uint32_t tid;
	struct jt_kvma v;
};

#define JT_PERF_SEEN 64

struct jt_model;
typedef void (*jt_exit_fn)(void *ctx, struct jt_model *m, struct jt_proc *p);

struct jt_model {
	struct jt_proc *first; /* processes held, oldest first */
	struct jt_proc *last;
	size_t nprocs;
	uint64_t ordinals;
	struct jt_hash by_pid; /* pid -> newest proc */
	/*
	 * The last one found: samples come in runs of one process, and a
	 * sample asks for its process about four times (5% of report).
	 */
	struct jt_proc *found;
	/*
	 * Set: a process is freed JT_REAP_NS after its last thread exits
	 * (perf's EXIT and stragglers still name it), by jt_model_reap;
	 * memory follows what is alive. Unset (tests), dead processes stay.
	 */
	bool free_dead;
	struct jt_proc *reap_first;
	struct jt_proc *reap_last;
	jt_exit_fn on_exit;
	void *exit_ctx;
	struct jt_strtab strs;
	/*
	 * Where JIT names are interned, counted by the tables that hold them
	 * (the pipeline's); NULL: in strs, for the run.
	 */
	struct jt_nametab *names;
	uint64_t now;
	struct jt_model_stats stats;
	struct jt_perf_seen
		seen[JT_PERF_SEEN]; /* ring, newest at seen_next-1 */
	unsigned int seen_next;
	/* What the last JIT load ended at its start address, for audits. */
	struct jt_jitsym replaced;
	/*
	 * JIT records wait in each process's log until a lookup needs them
	 * (jt_model_jit_warm). Only the naming model: replaced stays unset.
	 */
	bool lazy_jit;
	/*
	 * Processes alone (comm, pids, exit), no address spaces: the model
	 * of a consumer that reads only those, beside a naming model that
	 * keeps the rest. Map, VMA and COW events pass it by.
	 */
	bool procs_only;
};

void jt_model_init(struct jt_model *m);
void jt_model_free(struct jt_model *m);
/* Advance the model by one BPF event of len bytes. */
void jt_model_apply(struct jt_model *m, const struct jt_hdr *h, uint32_t len);
struct jt_proc *jt_model_find(struct jt_model *m, uint32_t pid);
#define JT_REAP_NS 1000000000ULL
/*
 * What perf calls a sample's process: its comm, "swapper" for the idle
 * task (pid 0), which never execs; "?" when the recording never named it.
 */
const char *jt_proc_comm(const struct jt_proc *p, uint32_t pid);
/* Free the processes that exited more than JT_REAP_NS before now. */
void jt_model_reap(struct jt_model *m, uint64_t now);
/* The i-th process held, oldest first: O(n), for tests. */
struct jt_proc *jt_model_nth(struct jt_model *m, size_t i);
struct jt_proc *jt_model_get(struct jt_model *m, uint32_t pid);
const struct jt_region *jt_model_lookup(struct jt_model *m, uint32_t pid,
					uint64_t addr);
void jt_model_set_comm(struct jt_model *m, uint32_t pid, const char *comm);
bool jt_event_valid(const struct jt_hdr *h, uint32_t len);
/* The euid a FORK (the child's) or EXEC record of len bytes carries. */
bool jt_event_euid(const struct jt_hdr *h, size_t len, uint32_t *euid);
/*
 * perf's MMAP2 for [start, end) of pid/tid: the kernel emits it after
 * merging, so it is the VMA the kernel made. Used for the events whose
 * VMA BPF could not read.
 */
/* Advance the JIT tables by one jitdump record or perf-map line. */
void jt_model_apply_jit(struct jt_model *m, const struct jt_jit_item *j);
/*
 * Bring p's JIT tables up to date for a lookup of addr: replay its log
 * when the log touches addr (a lazy model). Call before reading them.
 */
void jt_model_jit_warm(struct jt_model *m, struct jt_proc *p, uint64_t addr);
/* p's JIT functions, counting those still in its log. */
size_t jt_proc_jit_count(const struct jt_proc *p);
/* Free pid's JIT tables and drop its later JIT records (a memory cap). */
void jt_model_evict_jit(struct jt_model *m, uint32_t pid);
void jt_model_perf_vma(struct jt_model *m, uint32_t pid, uint32_t tid,
		       uint64_t start, uint64_t end);

#endif /* JT_MODEL_H */
