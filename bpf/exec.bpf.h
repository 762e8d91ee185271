/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The EXEC record, shared by the two exec programs: the one that
 * snapshots the new mm in the kernel (exec_snap.bpf.c, kernels with the
 * open-coded task_vma iterator) and the one that leaves the snapshot to
 * the recorder (proc.bpf.c).
 */
#ifndef JT_EXEC_BPF_H
#define JT_EXEC_BPF_H

#include "common.bpf.h"

/*
 * Emits the EXEC record of a traced process; returns its time, for the
 * snapshot that follows, or 0 when there is none to take.
 */
static __always_inline __u64 jt_emit_exec(struct task_struct *p,
					  struct linux_binprm *bprm,
					  pid_t old_pid)
{
	struct jt_scratch *s = jt_scratch();
	struct jt_exec_event *ev;
	__u32 trunc = 0, off, euid;

	if (!s || !jt_is_traced(BPF_CORE_READ(p, tgid)))
		return 0;
	ev = &s->exec;
	__builtin_memset(ev, 0, sizeof(*ev));
	jt_fill_hdr(&ev->h, JT_EV_EXEC, 0);
	bpf_get_current_comm(ev->comm, sizeof(ev->comm));
	ev->old_tid = old_pid;
	ev->nspid = jt_task_nspid(p);
	/* The file, not the string given to execve: absolute, no symlinks. */
	ev->path_len =
		jt_file_path(s, BPF_CORE_READ(bprm, file), ev->path, &trunc);
	ev->flags = JT_EXEC_EUID;
	off = ev->path_len & (JT_PATH_MAX - 1);
	euid = BPF_CORE_READ(p, cred, euid.val);
	/* Byte stores: the trailer after the path need not be aligned. */
	ev->path[off] = euid;
	ev->path[off + 1] = euid >> 8;
	ev->path[off + 2] = euid >> 16;
	ev->path[off + 3] = euid >> 24;
	ev->h.size = sizeof(*ev) + ev->path_len + sizeof(euid);
	if (jt_emit(ev, sizeof(*ev) + off + sizeof(euid)))
		return 0;
	return ev->h.time;
}

#endif
