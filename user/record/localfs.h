/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Which files the recorder may open and read on its own thread: those
 * on a filesystem no user can mount or make hang. Asked on the opener's
 * worker (opener.c): the asking itself can hang anywhere else.
 */
#ifndef JT_LOCALFS_H
#define JT_LOCALFS_H

#include <stdbool.h>
#include <sys/types.h>

/*
 * fd is on a local disk (ext4, xfs, btrfs, ...), or on an overlayfs root
 * made of such layers; ns_pid: the process in whose mount namespace fd
 * was opened (0: ours), or -1 to take no overlayfs.
 */
bool jt_localfs(int fd, pid_t ns_pid);

/*
 * Each layer an overlayfs's super options (mountinfo's last field) name,
 * unescaped, to each(path, arg) until it returns false: the count, or -1
 * where each said false or the options are malformed.
 */
int jt_localfs_layers(const char *opts, bool (*each)(const char *, void *),
		      void *arg);

#endif
