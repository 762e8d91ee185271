// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The kernel calls perf_event_mmap() with the VMA an mmap, mprotect or
 * shmat leaves: the VMA the BPF event read at the call's exit. ELF
 * segments and the vdso come from execve, whose VMAs the exec snapshot
 * holds. Asking the kernel for these records as well cost every mmap
 * and mprotect of a traced process a record built and filtered in
 * perf_event_mmap(), executable or not: a third of jittrace's overhead
 * on an mmap loop.
 *
 * What this leaves out is data memory (perf -d) or passes within one
 * call: the heap's VMA made by brk and the stack's grown by a fault
 * (no BPF event has them), a special mapping other than the vdso (named
 * "//anon"), and what perf sees part way through a call. execve's first
 * whole-file mapping of each ELF before its segments replace it, and
 * each step of an mprotect over several VMAs, come out as the call left
 * them: the segments, and the first and last VMA merged.
 */
#include <string.h>
#include <sys/mman.h>
#include "model/perf_view.h"

#define VM_EXEC 0x4ULL
#define VM_SHARED 0x8ULL
#define VM_LOCKED 0x2000ULL
#define VM_HUGETLB 0x400000ULL
#define IS_ERR_RET(r) ((uint64_t)(r) >= (uint64_t)-4095)

/* The anonymous names perf_event_mmap_event() gives, as far as known. */
static const char *anon_name(const struct jt_map_event *ev,
			     const struct jt_vma *v)
{
	const __u64 *a = ev->args;

	if (ev->h.type != JT_EV_VMA)
		return "//anon";
	/* The exec snapshot's args: start_brk, brk, start_stack, vdso. */
	if (a[3] && v->start == a[3])
		return "[vdso]";
	if (v->start < a[1] && v->end > a[0])
		return "[heap]";
	if (v->start <= a[2] && v->end >= a[2])
		return "[stack]";
	return "//anon";
}

/* v's record; file: the event's file is v's. False: perf writes none. */
static bool one(const struct jt_map_event *ev, const struct jt_vma *v,
		bool file, bool data, struct jt_perf_view *o)
{
	struct jt_mmap2 *m = &o->m;

	if (v->end <= v->start || (!(v->flags & VM_EXEC) && !data))
		return false;
	memset(o, 0, sizeof(*o));
	m->pid = ev->h.pid;
	m->tid = ev->h.tid;
	m->start = v->start;
	m->len = v->end - v->start;
	m->prot = v->flags & (PROT_READ | PROT_WRITE | PROT_EXEC);
	m->flags = v->flags & VM_SHARED ? MAP_SHARED : MAP_PRIVATE;
	m->flags |= v->flags & VM_LOCKED ? MAP_LOCKED : 0;
	m->flags |= v->flags & VM_HUGETLB ? MAP_HUGETLB : 0;
	/* Of anonymous memory too: its vm_pgoff is its start's page. */
	m->pgoff = v->pgoff * JT_PAGE_SIZE;
	o->misc = PERF_RECORD_MISC_USER |
		  (v->flags & VM_EXEC ? 0 : PERF_RECORD_MISC_MMAP_DATA);
	if (file) {
		m->maj = ev->dev >> 20;
		m->min = ev->dev & 0xfffff;
		m->ino = ev->ino;
		m->filename = ev->path;
		m->filename_len = strnlen(ev->path, ev->path_len);
	} else {
		m->filename = anon_name(ev, v);
		m->filename_len = strlen(m->filename);
	}
	return true;
}

/* Calls that reach perf_event_mmap(), and snapshots of what execve did. */
static bool reported(const struct jt_map_event *ev)
{
	const uint32_t skip = JT_MF_VMA_BUSY | JT_MF_EXEC_LOAD |
			      JT_MF_SNAP_PROC | JT_MF_VMA_REREAD;

	if (ev->flags & skip)
		return false;
	switch (ev->h.type) {
	case JT_EV_VMA:
		return true;
	case JT_EV_MMAP:
	case JT_EV_MPROTECT:
	case JT_EV_SHMAT:
		return !IS_ERR_RET(ev->result);
	}
	return false;
}

int jt_perf_view(const struct jt_hdr *h, size_t len, bool data,
		 struct jt_perf_view out[2])
{
	const struct jt_map_event *ev = (const void *)h;
	const struct jt_vma *first = &ev->vma, *last = &ev->vma_last;
	bool file, same_file;
	int n = 0;

	if (len < sizeof(*ev) || ev->path_len > len - sizeof(*ev) ||
	    !reported(ev))
		return 0;
	file = ev->path_len > 1;
	n += one(ev, first, file, data, &out[n]);
	if (ev->h.type == JT_EV_VMA || last->start <= first->start)
		return n;
	/* The last VMA maps the same file if its offset follows on. */
	same_file = file &&
		    last->pgoff == first->pgoff + (last->start - first->start) /
							  JT_PAGE_SIZE;
	n += one(ev, last, same_file, data, &out[n]);
	return n;
}
