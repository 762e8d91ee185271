// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <inttypes.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>
#include "agent/metrics.h"

static void head(FILE *f, const char *name, const char *type, const char *help)
{
	fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static void one(FILE *f, const char *name, const char *type, const char *help,
		uint64_t v)
{
	head(f, name, type, help);
	fprintf(f, "%s %" PRIu64 "\n", name, v);
}

static void labelled(FILE *f, const char *name, const char *label,
		     const char *value, uint64_t v)
{
	fprintf(f, "%s{%s=\"%s\"} %" PRIu64 "\n", name, label, value, v);
}

uint64_t jt_agent_rss(void)
{
	unsigned long size = 0, rss = 0;
	FILE *f = fopen("/proc/self/statm", "re");

	if (f && fscanf(f, "%lu %lu", &size, &rss) != 2)
		rss = 0;
	if (f)
		fclose(f);
	return (uint64_t)rss * sysconf(_SC_PAGESIZE);
}

static void self(FILE *f)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	head(f, "jittrace_agent_cpu_seconds_total", "counter",
	     "CPU time the agent itself used.");
	fprintf(f,
		"jittrace_agent_cpu_seconds_total{mode=\"user\"} %ld.%06ld\n",
		(long)ru.ru_utime.tv_sec, (long)ru.ru_utime.tv_usec);
	fprintf(f,
		"jittrace_agent_cpu_seconds_total{mode=\"system\"} %ld.%06ld\n",
		(long)ru.ru_stime.tv_sec, (long)ru.ru_stime.tv_usec);
	one(f, "jittrace_agent_rss_bytes", "gauge",
	    "Resident memory of the agent.", jt_agent_rss());
	one(f, "jittrace_agent_peak_rss_bytes", "gauge",
	    "The agent's largest resident memory so far.",
	    (uint64_t)ru.ru_maxrss * 1024);
}

static void capture(FILE *f, const struct jt_agent_metrics *m)
{
	static const char *const kinds[] = { "bpf", "perf", "jit" };
	static const char *const srcs[] = { "unknown", "jitdump",  "perfmap",
					    "elf",     "kallsyms", "anon" };
	int i;

	head(f, "jittrace_events_total", "counter",
	     "Capture items read, by kind: BPF events, perf records, JIT "
	     "records.");
	for (i = 0; i < 3; i++)
		labelled(f, "jittrace_events_total", "kind", kinds[i],
			 m->items[i]);
	head(f, "jittrace_lost_total", "counter",
	     "Events and records lost, by cause.");
	labelled(f, "jittrace_lost_total", "cause", "bpf_ring_full",
		 m->lost.bpf_events);
	labelled(f, "jittrace_lost_total", "cause", "perf_ring",
		 m->perf_lost_records);
	labelled(f, "jittrace_lost_total", "cause", "write",
		 m->lost.bpf_errors);
	labelled(f, "jittrace_lost_total", "cause", "late_sample",
		 m->late_samples);
	labelled(f, "jittrace_lost_total", "cause", "jit_evicted",
		 m->jit_evicted_syms);
	labelled(f, "jittrace_lost_total", "cause", "perfmap_unread",
		 m->perfmap_unread_writes);
	/* Bytes apart from events: one sum of the two means nothing. */
	head(f, "jittrace_lost_bytes_total", "counter",
	     "Bytes of JIT files not read, by cause.");
	labelled(f, "jittrace_lost_bytes_total", "cause", "jit_bytes_cut",
		 m->jit_truncated_bytes);
	one(f, "jittrace_jit_evicted_processes_total", "counter",
	    "Processes whose JIT tables were freed for --max-memory.",
	    m->jit_evicted_procs);
	head(f, "jittrace_samples_total", "counter",
	     "Samples, by where their name came from.");
	for (i = 0; i <= JT_SRC_ANON; i++)
		labelled(f, "jittrace_samples_total", "source", srcs[i],
			 m->by_source[i]);
	labelled(f, "jittrace_samples_total", "source", "kernel",
		 m->kernel_samples);
	one(f, "jittrace_retro_samples_total", "counter",
	    "Samples named by a code-load record written after them.",
	    m->retro);
	one(f, "jittrace_retro_forced_total", "counter",
	    "Samples that stopped waiting for a code-load record.",
	    m->retro_forced);
}

static void alive(FILE *f, const struct jt_agent_metrics *m)
{
	one(f, "jittrace_processes", "gauge", "Processes in the model.",
	    m->procs);
	one(f, "jittrace_regions", "gauge",
	    "Requested regions of live processes.", m->regions);
	one(f, "jittrace_jit_symbols", "gauge",
	    "JIT functions known in live processes.", m->jit_syms);
	one(f, "jittrace_jit_names", "gauge",
	    "Distinct JIT function names held; a name goes once no table of "
	    "a live process holds it and its samples are out.",
	    m->jit_names);
	head(f, "jittrace_audit_findings", "gauge",
	     "audit's findings for live processes, by kind, as of the last "
	     "window: coalesced kernel VMAs, private (copied) pages.");
	labelled(f, "jittrace_audit_findings", "kind", "coalesced",
		 m->coalesced);
	labelled(f, "jittrace_audit_findings", "kind", "cow_page",
		 m->cow_pages);
}

static void outputs(FILE *f, const struct jt_agent_metrics *m)
{
	one(f, "jittrace_windows_total", "counter", "Profile windows cut.",
	    m->windows);
	one(f, "jittrace_window_bytes", "gauge",
	    "Size of the last window's profile.", m->window_bytes);
	head(f, "jittrace_spool_files_total", "counter",
	     "Spool files, by what happened to them.");
	labelled(f, "jittrace_spool_files_total", "event", "written",
		 m->spool_written);
	labelled(f, "jittrace_spool_files_total", "event", "deleted",
		 m->spool_deleted);
	labelled(f, "jittrace_spool_files_total", "event", "error",
		 m->spool_errors);
	one(f, "jittrace_spool_bytes", "gauge", "Bytes in the spool.",
	    m->spool_bytes);
	head(f, "jittrace_push_total", "counter",
	     "Pushes to the backend, by result.");
	labelled(f, "jittrace_push_total", "result", "ok", m->push_ok);
	labelled(f, "jittrace_push_total", "result", "failed", m->push_failed);
	labelled(f, "jittrace_push_total", "result", "dropped",
		 m->push_dropped);
	labelled(f, "jittrace_push_total", "result", "rejected",
		 m->push_rejected);
	one(f, "jittrace_push_queue", "gauge", "Windows waiting to be pushed.",
	    m->push_queued);
	one(f, "jittrace_http_requests_total", "counter",
	    "HTTP requests answered.", m->http_requests);
	one(f, "jittrace_http_rejected_total", "counter",
	    "HTTP requests refused (4xx, 503).", m->http_rejected);
}

void jt_metrics_write(struct jt_agent *a, FILE *f)
{
	struct jt_agent_metrics m;

	pthread_mutex_lock(&a->lock);
	m = a->met;
	pthread_mutex_unlock(&a->lock);
	capture(f, &m);
	alive(f, &m);
	outputs(f, &m);
	self(f);
}
