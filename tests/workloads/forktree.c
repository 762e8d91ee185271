// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * A parent maps a region and forks twice: the first child maps its own
 * region and prints its maps; the second execs this program again in
 * "dump" mode. Each process prints "region PID START END" for what it
 * made and its /proc/self/maps; the parent waits for each child before
 * going on, so nothing interleaves.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>
#include "selfmaps.h"

static void make(size_t pages, int prot)
{
	char *p = mmap(NULL, pages * 4096, prot, MAP_PRIVATE | MAP_ANONYMOUS,
		       -1, 0);

	printf("region %d %lx %lx\n", getpid(), (unsigned long)p,
	       (unsigned long)p + pages * 4096);
}

int main(int argc, char **argv)
{
	pid_t pid;

	printf("start %d\n", getpid());
	if (argc > 1 && !strcmp(argv[1], "dump")) {
		make(3, PROT_READ);
		print_selfmaps();
		return 0;
	}
	make(4, PROT_READ | PROT_WRITE);
	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		make(2, PROT_READ | PROT_EXEC);
		print_selfmaps();
		_exit(0);
	}
	waitpid(pid, NULL, 0);
	pid = fork();
	if (pid == 0) {
		execl("/proc/self/exe", argv[0], "dump", (char *)NULL);
		_exit(127);
	}
	waitpid(pid, NULL, 0);
	print_selfmaps();
	return 0;
}
