/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Which open JIT files changed since the last look: an inotify watch
 * (IN_MODIFY) on each, by its descriptor. A write, pwrite, writev or
 * truncate of the file is seen whatever path or namespace it came
 * through; a write through a mapping is not. The instance is read at
 * each pass and never polled: a process writing its perf-map a line at
 * a time must not wake the recorder per line, and a file's changes
 * between two reads queue as one event.
 */
#ifndef JT_RECORD_FILEWATCH_H
#define JT_RECORD_FILEWATCH_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>
#include "lib/hash.h"

struct jt_filewatch {
	int fd;		    /* the inotify instance, or -1: nothing watched */
	struct jt_hash wds; /* a watch -> the pid whose file it is */
};

int jt_filewatch_init(struct jt_filewatch *w);
/*
 * Watch the file open as fd, pid's: its watch, or -errno (-EEXIST: the
 * inode is another watched file's, whose watch it would share).
 */
int jt_filewatch_add(struct jt_filewatch *w, int fd, pid_t pid);
void jt_filewatch_del(struct jt_filewatch *w, int wd);
/*
 * changed(ctx, pid) for each watched file changed since the last call.
 * false: the queue overflowed and changes were dropped, so any file may
 * have changed. wd_gone(ctx, pid, wd) for a watch the kernel removed.
 */
bool jt_filewatch_drain(struct jt_filewatch *w,
			void (*changed)(void *ctx, pid_t pid),
			void (*wd_gone)(void *ctx, pid_t pid, int wd),
			void *ctx);
void jt_filewatch_free(struct jt_filewatch *w);

#endif
