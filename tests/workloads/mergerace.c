// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * "mergerace ROUNDS": in each round a thread maps 5 pages over the start
 * of a 7-page reservation (its last page stays PROT_NONE, so no round
 * merges with the next), and once that mapping is in /proc/self/maps
 * (its call is done, though its exit may still be running) the main
 * thread maps the 6th page next to it, which the kernel merges into one
 * VMA. Run under JT_TEST_STALL_LEN=20480 the thread's call is held up in
 * BPF after its VMA lookup, so the merge comes between its lookup and
 * its record. Prints "round START END" per round, then its maps.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include "selfmaps.h"

#define PAGE 4096
#define FIRST (5 * PAGE)

static int in_maps(char *start)
{
	char want[64], buf[1 << 16];
	int fd = open("/proc/self/maps", O_RDONLY), n = 0, r;

	snprintf(want, sizeof(want), "%lx-%lx rw-p", (unsigned long)start,
		 (unsigned long)start + FIRST);
	while (fd >= 0 && (r = read(fd, buf + n, sizeof(buf) - 1 - n)) > 0)
		n += r;
	if (fd >= 0)
		close(fd);
	buf[n] = 0;
	return strstr(buf, want) != NULL;
}

static void *map_first(void *start)
{
	if (mmap(start, FIRST, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) == MAP_FAILED)
		perror("mmap");
	return NULL;
}

int main(int argc, char **argv)
{
	int rounds = argc > 1 ? atoi(argv[1]) : 3, i;

	printf("start %d\n", getpid());
	for (i = 0; i < rounds; i++) {
		char *r = mmap(NULL, FIRST + 2 * PAGE, PROT_NONE,
			       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		pthread_t t;

		if (r == MAP_FAILED || pthread_create(&t, NULL, map_first, r))
			return 1;
		while (!in_maps(r))
			;
		if (mmap(r + FIRST, PAGE, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1,
			 0) == MAP_FAILED)
			return 1;
		pthread_join(t, NULL);
		printf("round %lx %lx\n", (unsigned long)r,
		       (unsigned long)r + FIRST + PAGE);
	}
	fflush(stdout);
	print_selfmaps();
	return 0;
}
