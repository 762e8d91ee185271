// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Parent writes three anon pages, forks; the child writes page 1, the
 * parent (after the child is gone) page 2. Prints "pages START", and
 * "child PID".
 */
#include <stdio.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

int main(void)
{
	volatile char *p = mmap(NULL, 3 * 4096, PROT_READ | PROT_WRITE,
				MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	pid_t child;
	int i;

	if (p == MAP_FAILED)
		return 1;
	for (i = 0; i < 3; i++)
		p[i * 4096] = 1;
	printf("pages %lx\n", (unsigned long)p);
	fflush(stdout);
	child = fork();
	if (child == 0) {
		p[4096 + 1] = 2;
		_exit(0);
	}
	waitpid(child, NULL, 0);
	p[2 * 4096 + 1] = 3;
	printf("child %d\n", child);
	return 0;
}
