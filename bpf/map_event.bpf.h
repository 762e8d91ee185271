/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Building mmap-family events, shared by the tracepoint tier (maps.bpf.c)
 * and the kernel tier (kmaps.bpf.c): the syscalls they know by number,
 * and the kernel VMAs around a call's result.
 */
#ifndef JT_MAP_EVENT_BPF_H
#define JT_MAP_EVENT_BPF_H

#include "vma_find.bpf.h"

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
 * Fault injection for tests (JT_TEST_STALL_LEN=N): a call of N bytes
 * stalls after its lookups, as a program an interrupt or the hypervisor
 * held up there would, until another call has looked its VMAs up (its
 * time is taken by then: jt_config.test_looked) or 2^23 steps. The
 * verifier drops it when 0.
 */
const volatile __u64 jt_test_stall_len __weak = 0;

/*
 * A thread that blocks SIGUSR1 is sent it as its call stalls: its process
 * then knows the lookup is done and can race it exactly (mergerace).
 * Sent to no other, whom SIGUSR1 would end.
 */
#define JT_TEST_STALL_SIG 10 /* SIGUSR1 on x86-64 and arm64 */

struct stall_ctx {
	struct jt_config *cfg;
	__u64 looked;
};

static long stall_step(__u64 i, void *ctx)
{
	struct stall_ctx *s = ctx;

	return *(volatile __u64 *)&s->cfg->test_looked != s->looked;
}

static __always_inline void test_stall(__u64 len)
{
#ifndef JT_LEGACY
	__u32 zero = 0;
	struct stall_ctx s;

	/* Tested first, so a run without stalls never looks the config up. */
	if (!jt_test_stall_len)
		return;
	s.cfg = bpf_map_lookup_elem(&jt_cfg, &zero);
	if (!s.cfg)
		return;
	/* The count is jt_config's: no map of its own for a test. */
	s.looked = __sync_fetch_and_add(&s.cfg->test_looked, 1) + 1;
	if (len != jt_test_stall_len)
		return;
	if (BPF_CORE_READ(jt_current(), blocked.sig[0]) &
	    (1ULL << (JT_TEST_STALL_SIG - 1)))
		bpf_send_signal(JT_TEST_STALL_SIG);
	bpf_loop(1 << 23, stall_step, &s, 0);
#endif
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
	} else {
		if (!find_vma(hi, &c))
			flags |= JT_MF_VMA_BUSY;
		*last = c.vma;
	}
	test_stall(hi - lo + 1);
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

/*
 * What one call asked for and what the kernel made of it. Its time is
 * taken before its VMAs are looked up: a call whose lookup missed
 * another thread's merge is then stamped before that thread's call,
 * whose own lookup came later. Stamped after, a lookup that missed the
 * merge could come out last, and its stale VMA stand for the merged one.
 */
struct map_call {
	__u64 args[6];
	struct vma_ctx first;
	struct jt_vma last;
	__u32 flags;
	__u64 id;   /* the caller's bpf_get_current_pid_tgid() */
	__u64 time; /* bpf_ktime_get_ns() before the lookups */
};

/* Every field: ring memory is not zeroed, and memset cost a store a word. */
static __always_inline void map_fill(struct jt_map_event *ev,
				     const struct map_call *c, __u32 type,
				     __s64 ret)
{
	__builtin_memcpy(ev->args, c->args, sizeof(ev->args));
	jt_fill_hdr_at(&ev->h, type, sizeof(*ev), c->id, c->time);
	ev->result = ret;
	ev->vma = c->first.vma;
	ev->vma_last = c->last;
	ev->dev = 0;
	ev->ino = 0;
	ev->flags = c->flags;
	ev->path_len = 0;
}

/* A file's path is walked into the scratch buffer, then copied out. */
static __always_inline int emit_map_file(const struct map_call *c, __u32 type,
					 __s64 ret)
{
	struct jt_scratch *s = jt_scratch();
	struct jt_map_event *ev;

	if (!s) {
		jt_count_lost();
		return 0;
	}
	ev = &s->map;
	map_fill(ev, c, type, ret);
	ev->path_len = jt_fill_file(s, ev, c->first.file);
	ev->h.size = sizeof(*ev) + ev->path_len;
	jt_emit_wake(ev, sizeof(*ev) + (ev->path_len & (JT_PATH_MAX - 1)),
		     c->flags & JT_MF_VMA_BUSY);
	return 0;
}

/*
 * Emit a call whose VMAs are found. One with no file (anonymous memory,
 * munmap) is built in the ring, with no copy.
 */
static __always_inline int emit_map_call(const struct map_call *c, __u32 type,
					 __s64 ret)
{
	struct jt_map_event *ev;

	if (c->first.file && type != JT_EV_BRK)
		return emit_map_file(c, type, ret);
	ev = bpf_ringbuf_reserve(&events, sizeof(*ev), 0);
	if (!ev) {
		jt_count_lost();
		return 0;
	}
	map_fill(ev, c, type, ret);
	/* A busy lookup: the recorder reads the VMAs while they are there. */
	bpf_ringbuf_submit(ev, c->flags & JT_MF_VMA_BUSY ? BPF_RB_FORCE_WAKEUP :
							   jt_wake_flags());
	return 0;
}

#endif
