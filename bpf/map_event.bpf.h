/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Building mmap-family events, shared by the tracepoint tier (maps.bpf.c)
 * and the kernel tier (kmaps.bpf.c): where the tracepoint tier's syscall
 * state lives, and the kernel VMAs around a call's result.
 */
#ifndef JT_MAP_EVENT_BPF_H
#define JT_MAP_EVENT_BPF_H

#include "common.bpf.h"

#define IS_ERR_RET(r) ((__u64)(r) >= (__u64)-4095)

struct pending_call {
	__u64 args[6];
	__u32 type; /* 0: no call in flight */
};

/*
 * Per-thread storage: no shared hash on the syscall path, and freed with
 * the thread, so one killed inside a syscall leaves nothing behind.
 */
struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct pending_call);
} pending SEC(".maps") __weak;

/* The byte range of the result whose kernel VMAs we report. */
static __always_inline bool result_range(struct jt_map_event *ev, __u64 *first,
					 __u64 *last)
{
	__s64 r = ev->result;

	if (IS_ERR_RET(r))
		return false;
	switch (ev->h.type) {
	case JT_EV_MMAP:
		*first = r;
		*last = r + JT_PAGE_ALIGN(ev->args[1]) - 1;
		return ev->args[1] != 0;
	case JT_EV_MPROTECT:
		*first = ev->args[0];
		*last = ev->args[0] + JT_PAGE_ALIGN(ev->args[1]) - 1;
		return ev->args[1] != 0;
	case JT_EV_MREMAP:
		*first = r;
		*last = r + JT_PAGE_ALIGN(ev->args[2]) - 1;
		return ev->args[2] != 0;
	case JT_EV_BRK:
		*first = *last = r - 1;
		return (__u64)r > ev->args[1];
	case JT_EV_SHMAT:
		*first = *last = r;
		return true;
	}
	return false;
}

static __always_inline void find_vmas(struct jt_scratch *s,
				      struct jt_map_event *ev)
{
	struct vma_ctx c = {};
	__u64 first, last;
	__u32 n = 0;

	if (!result_range(ev, &first, &last))
		goto out;
	if (!find_vma(first, &c))
		ev->flags |= JT_MF_VMA_BUSY;
	ev->vma = c.vma;
	if (c.file && ev->h.type != JT_EV_BRK)
		n = jt_fill_file(s, ev, c.file);
	if (last < c.vma.end) {
		ev->vma_last = c.vma;
	} else {
		c.vma = (struct jt_vma){};
		if (!find_vma(last, &c))
			ev->flags |= JT_MF_VMA_BUSY;
		ev->vma_last = c.vma;
	}
out:
	ev->path_len = n;
}

#endif
