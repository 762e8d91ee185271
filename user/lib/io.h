/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Writing a whole buffer, through short writes and signals; reading a
 * directory held open. */
#ifndef JT_IO_H
#define JT_IO_H

#include <dirent.h>
#include <stddef.h>

/* 0, or -errno. */
int jt_write_all(int fd, const void *buf, size_t len);

/* A DIR stream over a copy of dirfd, which stays open: NULL, errno set. */
DIR *jt_opendir_dup(int dirfd);

#endif
