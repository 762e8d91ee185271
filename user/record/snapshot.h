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
#include "lib/procfile.h"

typedef int (*jt_emit_fn)(void *ctx, const void *ev, size_t size);

int jt_snapshot_pid(pid_t pid, uint64_t now, jt_emit_fn emit, void *ctx);
/*
 * pid's VMAs as they are now, as JT_MF_VMA_REREAD VMA events: after a
 * BPF lookup found mmap_lock busy, the VMAs it could not read.
 */
int jt_snapshot_vmas(pid_t pid, uint64_t now, jt_emit_fn emit, void *ctx);
/*
 * Every process, the recorder's own too: BPF never traces it (its own
 * mmaps would feed back), but perf samples it, and this names its
 * samples. Returns how many were snapshotted.
 */
int jt_snapshot_all(uint64_t now, jt_emit_fn emit, void *ctx);

#endif
