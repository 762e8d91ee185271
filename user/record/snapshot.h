/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Processes already running at attach (-p, -a): their state written as
 * an attach EXEC followed by VMA events, the same ABI the BPF exec
 * snapshot uses, so the model needs no second path.
 */
#ifndef JT_SNAPSHOT_H
#define JT_SNAPSHOT_H

#include <stdint.h>
#include <sys/types.h>

typedef int (*jt_emit_fn)(void *ctx, const void *ev, size_t size);

int jt_snapshot_pid(pid_t pid, uint64_t now, jt_emit_fn emit, void *ctx);
/*
 * pid's VMAs as they are now, as JT_MF_VMA_REREAD VMA events: after a
 * BPF lookup found mmap_lock busy, the VMAs it could not read.
 */
int jt_snapshot_vmas(pid_t pid, uint64_t now, jt_emit_fn emit, void *ctx);
/* Every process but self; returns how many were snapshotted. */
int jt_snapshot_all(pid_t self, uint64_t now, jt_emit_fn emit, void *ctx);
uint64_t jt_now_ns(void);
/* The process's effective uid and its pid in its own namespace. */
int jt_proc_status(pid_t pid, uid_t *euid, uint32_t *nspid);
/* pid in its innermost PID namespace (NSpid), or 0 when unknown. */
uint32_t jt_proc_nspid(pid_t pid);

#endif
