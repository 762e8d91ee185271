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
 * Whether p resolves paths as the recorder does: the same mount
 * namespace, and the same root mount and directory. A container, a
 * chroot or a bind-mounted root differs in one of them.
 */
static __always_inline void jt_exec_view(struct task_struct *p,
					 struct jt_exec_view *v)
{
	struct vfsmount *mnt = BPF_CORE_READ(p, fs, root.mnt);
	struct mount *m = container_of(mnt, struct mount, mnt);

	v->mntns = BPF_CORE_READ(p, nsproxy, mnt_ns, ns.inum);
	/* Moved by every mount and unmount in it, propagated ones too. */
	v->mnt_event = BPF_CORE_READ(p, nsproxy, mnt_ns, event);
	v->root_mnt = BPF_CORE_READ(m, mnt_id);
	v->root_ino = BPF_CORE_READ(p, fs, root.dentry, d_inode, i_ino);
}

static __always_inline bool jt_sees_our_root(const struct jt_exec_view *v)
{
	__u32 zero = 0;
	struct jt_config *cfg = bpf_map_lookup_elem(&jt_cfg, &zero);

	return cfg && cfg->self_root_ino && v->mntns == cfg->self_mntns &&
	       v->root_mnt == cfg->self_root_mnt &&
	       v->root_ino == cfg->self_root_ino;
}

/*
 * Emits the EXEC record of a traced process; returns its time, for the
 * snapshot that follows, or 0 when there is none to take.
 */
static __always_inline __u64 jt_emit_exec(struct task_struct *p,
					  struct linux_binprm *bprm,
					  pid_t old_pid)
{
	struct jt_scratch *s = jt_scratch();
	struct jt_exec_view view;
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
	ev->flags = JT_EXEC_EUID | JT_EXEC_VIEW;
	jt_exec_view(p, &view);
	if (jt_sees_our_root(&view))
		ev->flags |= JT_EXEC_OUR_ROOT;
	off = ev->path_len & (JT_PATH_MAX - 1);
	euid = BPF_CORE_READ(p, cred, euid.val);
	/* Byte stores: the trailer after the path need not be aligned. */
	ev->path[off] = euid;
	ev->path[off + 1] = euid >> 8;
	ev->path[off + 2] = euid >> 16;
	ev->path[off + 3] = euid >> 24;
	__builtin_memcpy(&ev->path[off + sizeof(euid)], &view, sizeof(view));
	ev->h.size = sizeof(*ev) + ev->path_len + sizeof(euid) + sizeof(view);
	if (jt_emit(ev, sizeof(*ev) + off + sizeof(euid) + sizeof(view)))
		return 0;
	return ev->h.time;
}

#endif
