/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* The heap of a one-shot reader: in huge pages, or faulted in ahead. */
#ifndef JT_HEAP_H
#define JT_HEAP_H

#include <stddef.h>

/*
 * Grow glibc's heap by reserve bytes of address space, advised into
 * transparent huge pages, and have every block up to 32 MiB come from
 * it and stay there when freed. For processes that read a recording once
 * and exit; not for the agent, whose memory must follow its live state.
 * 0 when done (or done before); JT_HEAP_TOLD when glibc was told from
 * the environment (glibc.malloc.hugetlb); JT_HEAP_4K when the heap had
 * better stay in 4K pages: no THP, or a host that takes free memory back
 * (a virtio balloon that reports free pages); -errno on failure.
 */
#define JT_HEAP_TOLD 1
#define JT_HEAP_4K 2
int jt_heap_hugepages(size_t reserve);
/* The same, with the balloon driver's sysfs directory named: for tests. */
int jt_heap_hugepages_at(size_t reserve, const char *balloons);
/*
 * For a heap in 4K pages: a thread faults in what glibc adds to it, as
 * it adds it, and reads each page once, and glibc adds pad bytes more
 * than it needs each time. Blocks up to 32 MiB come from the heap, which
 * is never trimmed: for one-shot readers, as jt_heap_hugepages. 0 when
 * started (or started before), 1 when left alone as the process may run
 * on one CPU only, -errno on failure.
 */
int jt_heap_prefault(size_t pad);

#endif
