/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Building mmap-family events, shared by the tracepoint tier (maps.bpf.c)
 * and the kernel tier (kmaps.bpf.c): the syscalls they know by number,
 * and the kernel VMAs around a call's result.
 */
#ifndef JT_MAP_EVENT_BPF_H
#define JT_MAP_EVENT_BPF_H

#include "common.bpf.h"

#define IS_ERR_RET(r) ((__u64)(r) >= (__u64)-4095)

/* The byte range of the result whose kernel VMAs we report. */
static __always_inline bool result_range(__u32 type, const __u64 *args, __s64 r,
					 __u64 *first, __u64 *last)
{
	if (IS_ERR_RET(r))
		return false;
	switch (type) {
	case JT_EV_MMAP:
		*first = r;
		*last = r + JT_PAGE_ALIGN(args[1]) - 1;
		return args[1] != 0;
	case JT_EV_MPROTECT:
		*first = args[0];
		*last = args[0] + JT_PAGE_ALIGN(args[1]) - 1;
		return args[1] != 0;
	case JT_EV_MREMAP:
		*first = r;
		*last = r + JT_PAGE_ALIGN(args[2]) - 1;
		return args[2] != 0;
	case JT_EV_BRK:
		*first = *last = r - 1;
		return (__u64)r > args[1];
	case JT_EV_SHMAT:
		*first = *last = r;
		return true;
	}
	return false;
}

/*
 * The kernel VMAs holding the first and the last byte of the result;
 * the flags say which could not be read. first->file is the mapping's.
 */
static __always_inline __u32 result_vmas(__u32 type, const __u64 *args, __s64 r,
					 struct vma_ctx *first,
					 struct jt_vma *last)
{
	struct vma_ctx c = {};
	__u32 flags = 0;
	__u64 lo, hi;

	if (!result_range(type, args, r, &lo, &hi))
		return 0;
	/* The last byte's lookup would be as busy: exit_group reads lo's. */
	if (!find_vma(lo, first))
		return JT_MF_VMA_BUSY;
	if (hi < first->vma.end) {
		*last = first->vma;
		return flags;
	}
	if (!find_vma(hi, &c))
		flags |= JT_MF_VMA_BUSY;
	*last = c.vma;
	return flags;
}

static __always_inline void find_vmas(struct jt_scratch *s,
				      struct jt_map_event *ev)
{
	struct vma_ctx c = {};

	ev->flags |= result_vmas(ev->h.type, ev->args, ev->result, &c,
				 &ev->vma_last);
	ev->vma = c.vma;
	ev->path_len = 0;
	if (c.file && ev->h.type != JT_EV_BRK)
		ev->path_len = jt_fill_file(s, ev, c.file);
}

#endif
