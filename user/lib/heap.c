// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * report on the naming bench (200K JIT functions, 1M samples) fills a
 * heap of 100 MB page by page: 26K page faults at 2 us each on this
 * machine, a tenth of its time, and every row, item and name read at
 * random a TLB miss. glibc puts its heap in huge pages only when told
 * from the environment (GLIBC_TUNABLES=glibc.malloc.hugetlb=1), read
 * before main. So a reader does what that tunable does, once, itself:
 * grow the heap by a reserve of address space, advise it into huge pages
 * and keep it. The reserve costs no memory until it is touched.
 */
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <limits.h>
#include <malloc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include "lib/cpus.h"
#include "lib/heap.h"

/* glibc's largest M_MMAP_THRESHOLD on 64-bit */
#define HEAP_BLOCK_MAX (32UL << 20)
#define TOP_PAD_DEFAULT (128UL << 10)

/* The huge page size THP uses, or 0 without THP. */
static size_t thp_size(void)
{
	FILE *f = fopen("/sys/kernel/mm/transparent_hugepage/hpage_pmd_size",
			"re");
	unsigned long n = 0;

	if (f) {
		if (fscanf(f, "%lu", &n) != 1)
			n = 0;
		fclose(f);
	}
	return n & (n - 1) ? 0 : n;
}

/*
 * A virtio balloon with free page reporting (feature bit 5, the sixth
 * character of "features") hands free memory back to the host, huge
 * blocks first: a huge page there is mostly memory the host must fault
 * in again. On this machine, a Firecracker guest that reports, zeroing
 * the view's huge pages swung from 0.02 to 0.3 s of sys time from run to
 * run, and report was no faster at the median than with 4K pages.
 */
static bool host_takes_free_pages(const char *balloons)
{
	char path[PATH_MAX], f[8] = "";
	bool yes = false;
	struct dirent *d;
	DIR *dir = opendir(balloons);
	FILE *fp;

	while (dir && !yes && (d = readdir(dir))) {
		if (strncmp(d->d_name, "virtio", 6) ||
		    snprintf(path, sizeof(path), "%s/%s/features", balloons,
			     d->d_name) >= (int)sizeof(path) ||
		    !(fp = fopen(path, "re")))
			continue;
		yes = fgets(f, sizeof(f), fp) && strlen(f) > 5 && f[5] == '1';
		fclose(fp);
	}
	if (dir)
		closedir(dir);
	return yes;
}

static bool glibc_told(void)
{
	const char *t = getenv("GLIBC_TUNABLES");

	return t && strstr(t, "glibc.malloc.hugetlb");
}

/*
 * Grow the heap's top chunk: a block larger than the top makes glibc
 * call sbrk, padded by M_TOP_PAD. The top is then [*top, sbrk(0)), and
 * spans the old break, unless sbrk was refused and glibc mapped elsewhere.
 */
static int grow_top(char **top, char **end)
{
	char *before = sbrk(0);
	void *p = malloc(mallinfo2().keepcost + 4096);

	if (!p)
		return -ENOMEM;
	free(p);
	*end = sbrk(0);
	*top = *end - mallinfo2().keepcost;
	return *end > before && *top <= before ? 0 : -ENOMEM;
}

/*
 * Every block up to glibc's largest threshold from the heap, which grows
 * by pad past what each sbrk needs, and is trimmed only past trim (never
 * at TRIM_NEVER). The callers keep both within an int, as mallopt takes.
 */
#define TRIM_NEVER (-1) /* mallopt(3) */

static bool blocks_from_heap(int trim, int pad)
{
	return mallopt(M_MMAP_THRESHOLD, HEAP_BLOCK_MAX) &&
	       mallopt(M_TRIM_THRESHOLD, trim) && mallopt(M_TOP_PAD, pad);
}

int jt_heap_hugepages(size_t reserve)
{
	return jt_heap_hugepages_at(reserve,
				    "/sys/bus/virtio/drivers/virtio_balloon");
}

int jt_heap_hugepages_at(size_t reserve, const char *balloons)
{
	static int done;
	size_t huge = thp_size();
	char *top, *end, *from;
	int err;

	if (done)
		return 0;
	if (glibc_told())
		return JT_HEAP_TOLD;
	if (!huge || host_takes_free_pages(balloons))
		return JT_HEAP_4K;
	if (reserve > INT_MAX / 2)
		return -EINVAL;
	/*
	 * Blocks up to the largest threshold come from the heap, and the
	 * top is trimmed only past twice the reserve: at the reserve, the
	 * first free into the top gave the reserve back.
	 */
	if (!blocks_from_heap((int)(2 * reserve), (int)reserve))
		return -EINVAL;
	err = grow_top(&top, &end);
	mallopt(M_TOP_PAD, TOP_PAD_DEFAULT);
	if (err)
		return err;
	from = (char *)(((uintptr_t)top + huge - 1) & ~(uintptr_t)(huge - 1));
	if (end > from && madvise(from, end - from, MADV_HUGEPAGE))
		return -errno;
	done = 1;
	return 0;
}

/*
 * Where the heap stays in 4K pages, the reader faults each in at its
 * first write: on this machine 27K faults of 2.6 us, 12% of report's
 * time on the naming bench. A thread populates the heap as glibc grows
 * it, off the reader's core: glibc grows it by the pad ahead of need,
 * and the thread looks again soon after it grew. The reader then finds
 * most pages there; one it reaches first it faults in as before.
 *
 * Populated is not yet cheap to use where the hypervisor shadows the
 * guest's page tables: here the first access from user mode to each
 * populated page still cost 2 ms a MiB (32 MiB populated in 10 ms, then
 * written in 60 ms; written again, 2 ms). That first access may come
 * from any thread, and a read will do: the thread reads a byte of each
 * page it populated, and the reader's writes then cost 2 to 6 ms for the
 * 32 MiB. A read never changes what the reader wrote there, and the
 * heap is never trimmed (jt_heap_prefault), so no page it reads is
 * unmapped under it.
 */
#define PREFAULT_STEP (1UL << 20) /* mmap_lock is held for no more */
#define NAP_MIN_NS 50000L
#define NAP_MAX_NS 1000000L

static char *current_break(void)
{
	/* glibc's sbrk reads a variable the reader's thread writes. */
	return (char *)syscall(SYS_brk, 0);
}

static void nap(long ns)
{
	struct timespec ts = { 0, ns };

	nanosleep(&ts, NULL);
}

static void touch(const char *p, size_t len)
{
	size_t page = getpagesize(), i;

	for (i = 0; i < len; i += page)
		(void)__atomic_load_n(p + i, __ATOMIC_RELAXED);
}

static void *prefault(void *from)
{
	char *done = from, *brk;
	long ns = NAP_MIN_NS;

	for (;; nap(ns)) {
		brk = current_break();
		/* Only malloc_trim could: what is past the break is gone. */
		if (brk < done)
			done = brk;
		ns = brk == done ? (ns < NAP_MAX_NS / 2 ? 2 * ns : NAP_MAX_NS) :
				   NAP_MIN_NS;
		while (done < brk) {
			size_t n = (size_t)(brk - done);

			if (n > PREFAULT_STEP)
				n = PREFAULT_STEP;
			/* Before Linux 5.14: the faults stay the reader's. */
			if (madvise(done, n, MADV_POPULATE_WRITE) &&
			    errno == EINVAL)
				return NULL;
			touch(done, n);
			done += n;
		}
	}
	return NULL;
}

int jt_heap_prefault(size_t pad)
{
	static int done;
	sigset_t all, old;
	pthread_t t;
	char *from;
	int err;

	if (done)
		return 0;
	if (pad > INT_MAX / 4)
		return -EINVAL;
	/* On one CPU the thread would only take the reader's turns. */
	if (!jt_cpus_two())
		return 1;
	/*
	 * Blocks up to 32 MiB from the heap, so the thread sees them too;
	 * never trimmed, as the thread reads pages below the break.
	 */
	if (!blocks_from_heap(TRIM_NEVER, (int)pad))
		return -EINVAL;
	/* The top glibc has not handed out yet is untouched too. */
	from = current_break() - mallinfo2().keepcost;
	from = (char *)((uintptr_t)from & ~(uintptr_t)(getpagesize() - 1));
	/* Signals are the reader's to take. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	err = pthread_create(&t, NULL, prefault, from);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (err)
		return -err;
	pthread_detach(t);
	done = 1;
	return 0;
}
