// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "lib/heap.h"
#include "views/view.h"

/*
 * Address space for the heap of a view, in huge pages: twice what report
 * takes to name 200K JIT functions and 1M samples (113 MB).
 */
#define VIEW_HEAP_RESERVE (256UL << 20)
/* What glibc adds to a heap in 4K pages beyond the block it grew for. */
#define VIEW_HEAP_PAD (4UL << 20)

int jt_view_open(struct jt_stream *s, const char *path)
{
	char msg[512];

	/* Advice: without it the view runs as before, faulting 4K pages. */
	if (jt_heap_hugepages(VIEW_HEAP_RESERVE) == JT_HEAP_4K)
		jt_heap_prefault(VIEW_HEAP_PAD);

	if (jt_stream_open(s, path, msg, sizeof(msg))) {
		fprintf(stderr, "jittrace: %s\n", msg);
		return 1;
	}
	return 0;
}

int jt_view_run(struct jt_pipe *p, struct jt_stream *s, const char *path,
		const struct jt_pipe_ops *ops)
{
	int err = jt_pipe_run(p, s, ops);

	jt_stream_warn(s, path);
	if (err && err != -ENOMEM)
		fprintf(stderr, "jittrace: %s: %s\n", path, strerror(-err));
	return err ? 1 : 0;
}

const char *jt_event_name(uint16_t type)
{
	static const char *const names[JT_EV_MAX] = {
		[JT_EV_MMAP] = "mmap",	   [JT_EV_MPROTECT] = "mprotect",
		[JT_EV_MUNMAP] = "munmap", [JT_EV_MREMAP] = "mremap",
		[JT_EV_BRK] = "brk",	   [JT_EV_FORK] = "fork",
		[JT_EV_EXEC] = "exec",	   [JT_EV_VMA] = "vma",
		[JT_EV_EXIT] = "exit",	   [JT_EV_MAPWRITE] = "perfmap_write",
		[JT_EV_COW] = "cow",	   [JT_EV_SHMAT] = "shmat",
		[JT_EV_SHMDT] = "shmdt",
	};

	return type < JT_EV_MAX && names[type] ? names[type] : "unknown";
}

const char *jt_cow_kind_name(uint32_t kind)
{
	static const char *const kinds[] = { "?", "file-first-write",
					     "file-write-protect",
					     "anon-write-protect", "raw" };

	return kinds[kind < 5 ? kind : 0];
}

const char *jt_origin_name(uint16_t origin)
{
	return origin == JT_EV_VMA ? "exec" : jt_event_name(origin);
}

void jt_print_probes(FILE *f, const struct jt_stream *s)
{
	static const char *const hooks[] = { "mmap",   "mprotect", "munmap",
					     "mremap", "brk",	   "fork",
					     "exec",   "exit",	   "cow" };
	const char *kernel = jt_stream_meta(s, "kernel");
	const char *snap = jt_stream_meta(s, "exec_snapshot");
	char key[32];
	size_t i;

	fprintf(f, "# probes (kernel %s):", kernel ? kernel : "?");
	for (i = 0; i < sizeof(hooks) / sizeof(hooks[0]); i++) {
		const char *t;

		snprintf(key, sizeof(key), "tier.%s", hooks[i]);
		t = jt_stream_meta(s, key);
		if (t)
			fprintf(f, " %s=%s", hooks[i], t);
	}
	if (snap)
		fprintf(f, " exec-snapshot=%s", snap);
	fprintf(f, "\n");
}

/* --call-graph dwarf: how the unwinding of each sample ended. */
static void print_stacks(FILE *f, const struct jt_stream *s,
			 const struct jt_chain_stats *st)
{
	int e;

	if (!st->unwound)
		return;
	fprintf(f, "# stacks: %llu unwound", (unsigned long long)st->unwound);
	for (e = 0; e <= JT_UW_END_MAX; e++)
		if (st->end[e])
			fprintf(f, ", %llu %s", (unsigned long long)st->end[e],
				jt_uw_end_name(e));
	/* Deeper than the copy: a larger --call-graph dwarf,SIZE. */
	if (st->end[JT_UW_END_TRUNCATED])
		fprintf(f, " (record with a larger --call-graph dwarf,SIZE)");
	if (st->end[JT_UW_END_ARCH])
		fprintf(f, " (recorded on %s: unwind with a build for it)",
			jt_stream_meta(s, "machine"));
	fputc('\n', f);
}

static int unread_cmp(const void *a, const void *b)
{
	const struct jt_unread_map *x = a, *y = b;

	return (x->pid > y->pid) - (x->pid < y->pid);
}

/* perf-maps written and never read: the names in them are lost. */
static void print_unread(FILE *f, const struct jt_stream *s)
{
	struct jt_unread_map shown[JT_UNREAD_SHOWN];
	size_t n = s->unread_maps < JT_UNREAD_SHOWN ? s->unread_maps :
						      JT_UNREAD_SHOWN;
	size_t i;

	if (!s->unread_maps)
		return;
	memcpy(shown, s->unread, n * sizeof(*shown));
	qsort(shown, n, sizeof(*shown), unread_cmp);
	fprintf(f,
		"# perf-maps written but never read (gone before the recorder "
		"opened them, or not in the /tmp perf reads): %llu file%s, "
		"%llu writes,",
		(unsigned long long)s->unread_maps,
		s->unread_maps == 1 ? "" : "s",
		(unsigned long long)s->unread_writes);
	for (i = 0; i < n; i++)
		fprintf(f, " pid %u (%llu writes),", shown[i].pid,
			(unsigned long long)shown[i].writes);
	fprintf(f, "%s their names are lost\n",
		s->unread_maps > n ? " ...;" : "");
}

void jt_print_loss_footer(FILE *f, const struct jt_stream *s,
			  const struct jt_pipe *p)
{
	/* The naming model applied every event the views' model did. */
	const struct jt_model *m = p->m.procs_only ? &p->ahead : &p->m;
	unsigned long long lost =
		s->lost.bpf_events + s->lost.perf_records + s->lost.bpf_errors;

	if (lost)
		fprintf(f,
			"# lost: %llu events (%llu BPF ring full, %llu perf, "
			"%llu write)\n",
			lost, (unsigned long long)s->lost.bpf_events,
			(unsigned long long)s->lost.perf_records,
			(unsigned long long)s->lost.bpf_errors);
	if (m->stats.vma_busy)
		fprintf(f,
			"# events whose kernel VMA BPF could not read "
			"(mmap_lock busy): %llu, %llu taken from perf MMAP2\n",
			(unsigned long long)m->stats.vma_busy,
			(unsigned long long)m->stats.vma_from_perf);
	if (m->stats.cow_raw)
		fprintf(f,
			"# COW faults whose VMA BPF could not read, classified "
			"from the model: %llu\n",
			(unsigned long long)m->stats.cow_raw);
	if (m->stats.cow_unmapped || m->stats.cow_no_proc)
		fprintf(f,
			"# COW faults the model has no region for: %llu, and "
			"of processes it never met: %llu\n",
			(unsigned long long)m->stats.cow_unmapped,
			(unsigned long long)m->stats.cow_no_proc);
	if (m->stats.exec_cow_lost)
		fprintf(f,
			"# pages execve wrote that no region of its snapshot "
			"holds: %llu\n",
			(unsigned long long)m->stats.exec_cow_lost);
	if (s->ord.late)
		fprintf(f,
			"# events later than the reorder window (%llu ms) "
			"allows: %llu, applied when they came\n",
			(unsigned long long)(JT_REORDER_NS / 1000000),
			(unsigned long long)s->ord.late);
	if (p->retro_forced)
		fprintf(f,
			"# samples that stopped waiting for a late code-load "
			"record (after %llu s or %u events): %llu\n",
			(unsigned long long)(JT_RETRO_NS / 1000000000),
			JT_RETRO_MAX, (unsigned long long)p->retro_forced);
	if (m->stats.nomem)
		fprintf(f, "# events dropped for lack of memory: %llu\n",
			(unsigned long long)m->stats.nomem);
	if (m->stats.malformed)
		fprintf(f, "# malformed events skipped: %llu\n",
			(unsigned long long)m->stats.malformed);
	if (s->stack_unknown)
		fprintf(f,
			"# samples left out: a stack copy stored as a delta "
			"with nothing to apply it to: %llu\n",
			(unsigned long long)s->stack_unknown);
	if (s->cfis.bad)
		fprintf(f,
			"# CFI pieces that did not fit (their objects unwind "
			"from the files, if still there): %llu\n",
			(unsigned long long)s->cfis.bad);
	print_unread(f, s);
	print_stacks(f, s, &p->syms.chains.st);
}
