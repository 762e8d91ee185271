// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The c2c question in small: forked workers of one library's data. The
 * parent writes jt_config, then forks. Each worker has a thread write
 * jt_counters from the library's jt_fill (a private file page written),
 * reads jt_table only, and writes jt_config from set_config (a page it
 * shared with its parent, written). Prints, per worker,
 * "worker PID TID COUNTERS TABLE CONFIG", then "done". With "hold",
 * the workers stay until killed, after "ready".
 * usage: cowdata LIBRARY WORKERS [hold]
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

static void (*fill)(long);
static volatile long *counters, *table, *config;
static pid_t writer_tid;

__attribute__((noinline)) static void set_config(long v)
{
	config[1] = v;
}

static void *writer(void *arg)
{
	writer_tid = gettid();
	fill((long)arg);
	return NULL;
}

static void work(int hold)
{
	pthread_t t;
	long sum;

	if (pthread_create(&t, NULL, writer, (void *)1L) ||
	    pthread_join(t, NULL))
		_exit(1);
	/*
	 * The parent may have left the table mapped: drop it, so the read
	 * faults here, in this process, and is sampled (-e page-faults -d).
	 */
	madvise((void *)table, 4096, MADV_DONTNEED);
	sum = table[0];
	set_config(sum);
	printf("worker %d %d %lx %lx %lx\n", getpid(), writer_tid,
	       (unsigned long)counters, (unsigned long)table,
	       (unsigned long)config);
	fflush(stdout);
	if (hold)
		pause();
	_exit(0);
}

int main(int argc, char **argv)
{
	void *lib = argc > 2 ? dlopen(argv[1], RTLD_NOW) : NULL;
	int n = argc > 2 ? atoi(argv[2]) : 0, hold = argc > 3, i;

	if (!lib || !(fill = (void (*)(long))dlsym(lib, "jt_fill"))) {
		fprintf(stderr, "usage: cowdata LIBRARY WORKERS [hold]\n");
		return 1;
	}
	counters = dlsym(lib, "jt_counters");
	table = dlsym(lib, "jt_table");
	config = dlsym(lib, "jt_config");
	set_config(7);
	for (i = 0; i < n; i++)
		if (fork() == 0)
			work(hold);
	if (hold) {
		printf("ready %d\n", getpid());
		fflush(stdout);
		pause();
	}
	while (wait(NULL) > 0)
		;
	printf("done\n");
	return 0;
}
