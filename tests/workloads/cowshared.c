// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Writes to memory that stays shared: a MAP_SHARED file mapping and a
 * System V shm segment. No copy-on-write may be reported.
 * usage: cowshared FILE   (FILE: created, one page)
 */
#include <fcntl.h>
#include <stdio.h>
#include <sys/ipc.h>
#include <sys/mman.h>
#include <sys/shm.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	int fd = open(argc > 1 ? argv[1] : "cowshared.tmp",
		      O_RDWR | O_CREAT | O_TRUNC, 0600);
	int id = shmget(IPC_PRIVATE, 4096, IPC_CREAT | 0600);
	volatile char *f, *s;

	if (fd < 0 || ftruncate(fd, 4096) || id < 0)
		return 1;
	f = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	s = shmat(id, NULL, 0);
	shmctl(id, IPC_RMID, NULL);
	if (f == MAP_FAILED || s == (void *)-1)
		return 1;
	f[10] = 1;
	s[10] = 1;
	printf("file %lx\nshm %lx\n", (unsigned long)f, (unsigned long)s);
	return 0;
}
