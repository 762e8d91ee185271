// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Several threads map regions at once, each with its own prot; adjacent
 * ones may coalesce in the kernel. Prints "want START END PROT" per
 * region and the final /proc/self/maps.
 */
#include <pthread.h>
#include <stdio.h>
#include <sys/mman.h>
#include "selfmaps.h"

#define NTHREADS 4
#define PER_THREAD 3

static char *made[NTHREADS][PER_THREAD];
static const int prots[PER_THREAD] = { PROT_READ | PROT_WRITE, PROT_READ,
				       PROT_READ | PROT_EXEC };
static const char *const names[PER_THREAD] = { "rw-p", "r--p", "r-xp" };
static pthread_barrier_t go;

static void *worker(void *arg)
{
	long t = (long)arg;
	int i;

	pthread_barrier_wait(&go);
	for (i = 0; i < PER_THREAD; i++)
		made[t][i] = mmap(NULL, (t + 1) * 4096, prots[i],
				  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	return NULL;
}

int main(void)
{
	pthread_t th[NTHREADS];
	long t;
	int i;

	printf("start %d\n", getpid());
	pthread_barrier_init(&go, NULL, NTHREADS);
	for (t = 0; t < NTHREADS; t++)
		pthread_create(&th[t], NULL, worker, (void *)t);
	for (t = 0; t < NTHREADS; t++)
		pthread_join(th[t], NULL);
	for (t = 0; t < NTHREADS; t++)
		for (i = 0; i < PER_THREAD; i++)
			printf("want %lx %lx %s\n", (unsigned long)made[t][i],
			       (unsigned long)made[t][i] + (t + 1) * 4096,
			       names[i]);
	print_selfmaps();
	return 0;
}
