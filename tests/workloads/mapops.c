// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Every address-space operation the model must follow: MAP_FIXED over
 * part of a mapping, a partial munmap, mremap grown in place and moved,
 * brk up and down. Prints each region it expects as a separate row
 * ("want START END PROT"), then its /proc/self/maps.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>
#include "selfmaps.h"

#define PG 4096UL

static char *map(void *at, size_t pages, int prot, int flags, int fd)
{
	char *p = mmap(at, pages * PG, prot, flags, fd, 0);

	if (p == MAP_FAILED) {
		perror("mmap");
		exit(1);
	}
	return p;
}

static void want(void *s, size_t pages, const char *prot)
{
	printf("want %lx %lx %s\n", (unsigned long)s,
	       (unsigned long)s + pages * PG, prot);
}

int main(void)
{
	const int anon = MAP_PRIVATE | MAP_ANONYMOUS;
	char *a, *b, *c, *d, *e, *brk0;
	int fd = open("/proc/self/exe", O_RDONLY);

	printf("start %d\n", getpid()); /* stdio allocates its buffer now */
	/* MAP_FIXED over the middle of an 8-page mapping, then a hole. */
	a = map(NULL, 8, PROT_READ | PROT_WRITE, anon, -1);
	map(a + 2 * PG, 2, PROT_READ, anon | MAP_FIXED, -1);
	munmap(a + 5 * PG, PG);
	want(a, 2, "rw-p");
	want(a + 2 * PG, 2, "r--p");
	want(a + 4 * PG, 1, "rw-p");
	want(a + 6 * PG, 2, "rw-p");
	/* mremap grown in place: free the pages above it first. */
	b = map(NULL, 6, PROT_READ, anon, -1);
	munmap(b + 2 * PG, 4 * PG);
	if (mremap(b, 2 * PG, 4 * PG, 0) != b)
		return 2;
	want(b, 4, "r--p");
	/* A file mapping moved to a place of our choosing. */
	c = map(NULL, 3, PROT_READ, MAP_PRIVATE, fd);
	d = map(NULL, 16, PROT_NONE, anon, -1);
	if (mremap(c, 3 * PG, 3 * PG, MREMAP_MAYMOVE | MREMAP_FIXED,
		   d + 4 * PG) != d + 4 * PG)
		return 3;
	want(d, 4, "---p");
	want(d + 4 * PG, 3, "r--p");
	want(d + 7 * PG, 9, "---p");
	/*
	 * mprotect splits, then one call over five VMAs that the kernel
	 * merges piece by piece into one ("merged"), then one that changes
	 * nothing.
	 */
	e = map(NULL, 6, PROT_READ | PROT_WRITE, anon, -1);
	if (mprotect(e + PG, PG, PROT_READ) ||
	    mprotect(e + 3 * PG, PG, PROT_READ) ||
	    mprotect(e, 6 * PG, PROT_READ) || mprotect(e, 2 * PG, PROT_READ))
		return 4;
	/* Regions as requested, split where each call split them. */
	want(e, 1, "r--p");
	want(e + PG, 1, "r--p");
	want(e + 2 * PG, 1, "r--p");
	want(e + 3 * PG, 1, "r--p");
	want(e + 4 * PG, 2, "r--p");
	printf("merged %lx %lx\n", (unsigned long)e, (unsigned long)e + 6 * PG);
	/* brk up, down. */
	brk0 = sbrk(0);
	sbrk(0x40000);
	sbrk(-0x20000);
	printf("heap %lx %lx\n", (unsigned long)brk0, (unsigned long)sbrk(0));
	print_selfmaps();
	return 0;
}
