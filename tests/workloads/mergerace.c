// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * "mergerace RACES": in each round a thread maps 5 pages over the start
 * of a 7-page reservation (its last page stays PROT_NONE, so no round
 * merges with the next), and the main thread then maps the 6th page
 * next to it, which the kernel merges into one VMA.
 *
 * Run under JT_TEST_STALL_LEN=20480 the thread's call is held up in BPF
 * after its VMA lookup until the process maps more, and BPF sends it
 * SIGUSR1 (which both threads block) as it stalls: the main thread waits
 * for that signal, so its merge comes after the lookup, and, where the
 * thread's call has not returned by then, before its record. Rounds go
 * on until RACES of them began while the call was held, or MAX_ROUNDS.
 * Where no signal comes in 2 s (no stall: a lookup made under mmap_lock,
 * as the kprobe tier's, cannot be raced), the main thread waits for the
 * mapping in /proc/self/maps instead, and RACES rounds are run.
 *
 * Prints "round START END SIGNALLED HELD" per round (HELD: the merge
 * began before the thread's call returned), then its maps.
 */
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>
#include "selfmaps.h"

#define PAGE 4096
#define FIRST (5 * PAGE)
#define MAX_ROUNDS 40

static atomic_int returned;

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
	atomic_store(&returned, 1);
	return NULL;
}

static int no_stall;

/* The stall's signal, or 0 after a while without one. */
static int stalled(const sigset_t *usr1)
{
	struct timespec wait = { .tv_sec = 2 };

	if (no_stall)
		return 0;
	no_stall = sigtimedwait(usr1, NULL, &wait) != SIGUSR1;
	return !no_stall;
}

/* One round: 1 where the merge began while the thread's call was held. */
static int round_once(const sigset_t *usr1)
{
	struct timespec none = { 0 };
	char *r = mmap(NULL, FIRST + 2 * PAGE, PROT_NONE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	int signalled, held;
	pthread_t t;

	atomic_store(&returned, 0);
	if (r == MAP_FAILED || pthread_create(&t, NULL, map_first, r))
		exit(1);
	signalled = stalled(usr1);
	if (!signalled)
		while (!in_maps(r))
			;
	/* Still held as the merge begins: the stall waits for it. */
	held = signalled && !atomic_load(&returned);
	if (mmap(r + FIRST, PAGE, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) == MAP_FAILED)
		exit(1);
	pthread_join(t, NULL);
	/* A signal later than the wait must not answer the next round's. */
	while (sigtimedwait(usr1, NULL, &none) == SIGUSR1)
		;
	printf("round %lx %lx %d %d\n", (unsigned long)r,
	       (unsigned long)r + FIRST + PAGE, signalled, held);
	return held;
}

int main(int argc, char **argv)
{
	int want = argc > 1 ? atoi(argv[1]) : 3, held = 0, i;
	sigset_t usr1;

	sigemptyset(&usr1);
	sigaddset(&usr1, SIGUSR1);
	/* Before the threads: they inherit it, so the signal waits here. */
	pthread_sigmask(SIG_BLOCK, &usr1, NULL);
	printf("start %d\n", getpid());
	for (i = 0; i < MAX_ROUNDS && held < want && !(no_stall && i >= want);
	     i++)
		held += round_once(&usr1);
	fflush(stdout);
	print_selfmaps();
	return 0;
}
