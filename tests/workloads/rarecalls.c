// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The mapping calls a loop rarely makes, once each: pkey_mprotect with no
 * key, mremap moved, a System V segment attached, brk up. Prints what
 * each returned ("pkey ADDR", "mremap OLD NEW", "shm ADDR", "brk OLD
 * NEW") and the regions it expects ("want START END PROT"). With
 * "gated", it then waits for a line on stdin before it exits.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/ipc.h>
#include <sys/mman.h>
#include <sys/shm.h>
#include <sys/syscall.h>
#include <unistd.h>

#define PG 4096UL

static void want(void *s, size_t pages, const char *prot)
{
	printf("want %lx %lx %s\n", (unsigned long)s,
	       (unsigned long)s + pages * PG, prot);
}

/* Without protection keys (arm64 6.1) there is no such call: say so. */
static int pkey(char *a)
{
	long r = syscall(SYS_pkey_mprotect, a, PG, PROT_READ, -1);

	if (r && errno == ENOSYS) {
		printf("nopkey\n");
		return 0;
	}
	if (r)
		return 1;
	printf("pkey %lx\n", (unsigned long)a);
	want(a, 1, "r--p");
	return 0;
}

static int shm(void)
{
	int id = shmget(IPC_PRIVATE, 2 * PG, IPC_CREAT | 0600);
	char *s = id < 0 ? (char *)-1 : shmat(id, NULL, 0);

	/* Removed now, the segment goes when the process does. */
	if (id >= 0)
		shmctl(id, IPC_RMID, NULL);
	if (s == (char *)-1)
		return 1;
	printf("shm %lx\n", (unsigned long)s);
	want(s, 2, "rw-s");
	return 0;
}

int main(int argc, char **argv)
{
	const int anon = MAP_PRIVATE | MAP_ANONYMOUS;
	char *a, *b, *m, *brk0, line[16];

	printf("start %d\n", getpid()); /* stdio allocates its buffer now */
	a = mmap(NULL, 2 * PG, PROT_READ | PROT_WRITE, anon, -1, 0);
	b = mmap(NULL, 2 * PG, PROT_READ, anon, -1, 0);
	if (a == MAP_FAILED || b == MAP_FAILED || pkey(a))
		return 1;
	want(a + PG, 1, "rw-p");
	/* Grown where it cannot grow in place: its guard page is above it. */
	if (mprotect(b + PG, PG, PROT_NONE))
		return 2;
	want(b + PG, 1, "---p");
	m = mremap(b, PG, 3 * PG, MREMAP_MAYMOVE);
	if (m == MAP_FAILED || m == b)
		return 2;
	printf("mremap %lx %lx\n", (unsigned long)b, (unsigned long)m);
	want(m, 3, "r--p");
	if (shm())
		return 3;
	brk0 = sbrk(0);
	if (sbrk(0x10000) == (void *)-1)
		return 4;
	printf("brk %lx %lx\n", (unsigned long)brk0, (unsigned long)sbrk(0));
	if (argc > 1 && !strcmp(argv[1], "gated")) {
		printf("ready\n");
		fflush(stdout);
		if (!fgets(line, sizeof(line), stdin))
			return 5;
	}
	return 0;
}
