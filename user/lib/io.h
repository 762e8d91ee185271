/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Writing a whole buffer, through short writes and signals. */
#ifndef JT_IO_H
#define JT_IO_H

#include <stddef.h>

/* 0, or -errno. */
int jt_write_all(int fd, const void *buf, size_t len);

#endif
