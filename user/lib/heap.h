/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* The heap of a one-shot reader, in huge pages. */
#ifndef JT_HEAP_H
#define JT_HEAP_H

#include <stddef.h>

/*
 * Grow glibc's heap by reserve bytes of address space, advised into
 * transparent huge pages, and have every block up to 32 MiB come from
 * it and stay there when freed. For processes that read a recording once
 * and exit; not for the agent, whose memory must follow its live state.
 * 0 when done (or done before), 1 when left alone: no THP, glibc told
 * from the environment (glibc.malloc.hugetlb), or a host that takes free
 * memory back (a virtio balloon that reports free pages); -errno on
 * failure.
 */
int jt_heap_hugepages(size_t reserve);
/* The same, with the balloon driver's sysfs directory named: for tests. */
int jt_heap_hugepages_at(size_t reserve, const char *balloons);

#endif
