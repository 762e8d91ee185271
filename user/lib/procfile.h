/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
#ifndef JT_LIB_PROCFILE_H
#define JT_LIB_PROCFILE_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

struct stat;

/*
 * Opening a file that another user's process names: the one place that
 * decides how. Nothing is opened for reading until it is known to be a
 * regular file (a FIFO cannot block us, a device node is never opened),
 * every open is non-blocking, and a path is resolved inside the root the
 * process sees, so no symlink in it leads out. Each returns a read-only
 * descriptor or -errno.
 */

/* The file mapped at [start, end) of pid, through map_files: no path. */
int jt_proc_open_mapped(pid_t pid, uint64_t start, uint64_t end);

/*
 * path as process pid sees it, under /proc/PID/root; pid 0: under our
 * own root, for a process that shared it and is gone. A symlink as the
 * last component is refused (-ELOOP).
 */
int jt_proc_open_in_root(pid_t pid, const char *path);

/*
 * The directory path as process pid sees it, as an O_PATH descriptor:
 * nothing is opened, and a symlink as the last component is refused.
 */
int jt_proc_dir_in_root(pid_t pid, const char *path);

/*
 * name in the directory dir (an O_PATH descriptor): never through a
 * symlink, never out of dir, never onto another mount, so the file is on
 * dir's filesystem. Where that filesystem cannot hang (a local disk), the
 * open cannot either, and needs no worker thread.
 */
int jt_proc_open_beneath(int dir, const char *name);
/* The same name's stat, with nothing opened (a symlink's own). */
int jt_proc_stat_beneath(int dir, const char *name, struct stat *st);

/*
 * Like perf's check of a JIT file, stricter: owned by euid, the
 * process's effective uid as this namespace sees it (so a container's
 * user is mapped through its user namespace). A root-owned file is
 * accepted for a root process only. -EPERM otherwise.
 */
int jt_proc_file_owned(int fd, uid_t euid);
/* The same of a stat the caller has (one it took where it could hang). */
int jt_proc_stat_owned(const struct stat *st, uid_t euid);

/*
 * The file is the one an event named: the kernel's s_dev (major << 20 |
 * minor) and inode. 0 for either: not known, not compared.
 */
int jt_proc_file_is(int fd, uint64_t kdev, uint64_t ino);

/* The process's effective uid and its pid in its own namespace. */
int jt_proc_status(pid_t pid, uid_t *euid, uint32_t *nspid);
/*
 * Whether /proc/PID is owned by euid: the kernel gives it the task's
 * euid, or its namespace's root while the task is not dumpable.
 */
bool jt_proc_still_euid(pid_t pid, uid_t euid);
/* pid in its innermost PID namespace (NSpid), or 0 when unknown. */
uint32_t jt_proc_nspid(pid_t pid);

#endif
