/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * jittrace agent: a system-wide recording that never reaches a disk. The
 * capture (record/live.c) writes the recording format into a pipe; the
 * profiles thread (profiles.c) reads it through the same stream and
 * pipeline as `report`, and cuts pprof profiles per window and per HTTP
 * request; http.c serves them, spool.c and push.c hand windows on.
 * What the threads share is here, under one lock.
 */
#ifndef JT_AGENT_H
#define JT_AGENT_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include "lib/chan.h"
#include "lib/hash.h"
#include "model/stream.h"
#include "record/probes.h"

struct jt_agent_opts {
	const char *listen_host;
	uint16_t listen_port;
	uint64_t freq;
	uint64_t window_ns;
	const char *spool_dir;
	uint64_t spool_max; /* bytes */
	const char *push_url;
	const char *push_auth_file;
	const char *auth_token_file;
	gid_t auth_group;    /* members query it as root does; -1: none */
	unsigned int labels; /* JT_PPROF_LABEL_*: on every sample */
	uint64_t max_memory; /* bytes */
	bool cow;
	bool callchain;
	bool jvmti;
	uint8_t callgraph; /* enum jt_callgraph */
	uint32_t stack_size;
	bool verbose;
	enum jt_tier_want tier;
	const char *event;
};

/* One profile being cut: the current window, or an HTTP request's. */
struct jt_profile_req {
	uint64_t start; /* CLOCK_MONOTONIC, as the events are stamped */
	uint64_t end;
	uint32_t pid; /* 0: every process */
	uid_t uid;    /* only this user's processes; -1: every user's */
	struct jt_hash owners; /* pid -> whether uid's, read once */
	struct jt_pprof *pprof;
	uint64_t samples;
	bool done;
	int err;
	void *buf; /* the gzipped profile once done */
	size_t len;
	struct jt_profile_req *next;
};

/* What /metrics says; counted where it happens, read under the lock. */
struct jt_agent_metrics {
	uint64_t items[3]; /* by enum jt_item_kind */
	uint64_t samples;
	uint64_t by_source[JT_SRC_ANON + 1];
	uint64_t kernel_samples;
	uint64_t retro;
	uint64_t retro_forced;
	uint64_t late_samples; /* came after their window was cut */
	struct jt_lost_rec lost;
	uint64_t perf_lost_records;
	uint64_t jit_truncated_bytes;
	uint64_t jit_evicted_procs;
	uint64_t jit_evicted_syms;
	uint64_t perfmap_unread_writes; /* to perf-maps never read */
	uint64_t procs;
	uint64_t regions;
	uint64_t jit_syms;
	uint64_t jit_names; /* distinct JIT names held */
	uint64_t windows;
	uint64_t window_bytes;
	uint64_t spool_written;
	uint64_t spool_deleted;
	uint64_t spool_errors;
	uint64_t spool_bytes;
	uint64_t push_ok;
	uint64_t push_failed; /* attempts that failed, retried or not */
	uint64_t push_dropped;
	uint64_t push_rejected; /* refused by the backend (4xx): not retried */
	uint64_t push_queued;
	uint64_t http_requests;
	uint64_t http_rejected;
	uint64_t cow_pages;
	uint64_t coalesced; /* kernel VMAs holding several regions */
};

#define JT_AGENT_JIT_PIDS 64

struct jt_spool;
struct jt_push;

struct jt_agent {
	struct jt_agent_opts o;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct jt_profile_req *reqs; /* HTTP requests being cut */
	unsigned int nreqs;
	struct jt_agent_metrics met;
	uint64_t horizon;     /* every event before it has been read */
	int64_t mono_to_real; /* CLOCK_REALTIME - CLOCK_MONOTONIC, ns */
	bool capturing;	      /* probes attached, samples flowing */
	bool ended;	      /* the stream ended: no request will be cut */
	uint32_t jit_pids[JT_AGENT_JIT_PIDS]; /* live processes with JIT code */
	unsigned int njit_pids;
	struct jt_spool *spool;
	struct jt_push *push;
	char host[64];
	struct jt_chan chan; /* the capture's buffers, to the reader */
	char *auth_token;    /* what HTTP callers present; NULL: none */
	unsigned int audits; /* /audit requests being answered */
	/* Requests of callers who see only their own processes, by user. */
	struct {
		uid_t uid;
		unsigned int n;
	} asking[16];
};

/* The agent's resident memory, bytes. */
uint64_t jt_agent_rss(void);

#endif
