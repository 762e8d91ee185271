// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Holds pages of every sharing class, for audit -p: a library page it
 * wrote (private) and one it only read (shared-file), a MAP_SHARED file
 * page, a System V shm page, an anon page shared with a forked child and
 * one written after the fork. Writes a perf-map with a reused address and
 * an entry where no code is, and a jitdump (announced by its marker
 * mapping) with a function where nothing is mapped. Prints "NAME ADDR"
 * lines, then "ready", and waits to be killed.
 * usage: cowhold LIBRARY FILE JITDUMP_DIR
 */
#include <dlfcn.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/ipc.h>
#include <sys/mman.h>
#include <sys/shm.h>
#include <unistd.h>

#include "jitcode.h"

static void jitdump(const char *dir)
{
	struct {
		uint32_t magic, version, size, mach, pad, pid;
		uint64_t time, flags;
	} h = { 0x4A695444, 1, 40, JIT_ELF_MACH, 0, getpid(), 1, 0 };
	struct {
		uint32_t id, size;
		uint64_t time;
		uint32_t pid, tid;
		uint64_t vma, addr, code_size, index;
		char name[16];
		unsigned char code[16];
	} r = { 0,    sizeof(r), 2, getpid(),	    getpid(), 0x30,
		0x30, 16,	 1, "dump_nowhere", { 0xc3 } };
	char path[256];
	int fd;

	snprintf(path, sizeof(path), "%s/jit-%d.dump", dir, getpid());
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
	if (fd < 0 || write(fd, &h, sizeof(h)) != sizeof(h) ||
	    write(fd, &r, sizeof(r)) != sizeof(r) ||
	    mmap(NULL, 4096, PROT_READ | PROT_EXEC, MAP_PRIVATE, fd, 0) ==
		    MAP_FAILED)
		_exit(1);
}

int main(int argc, char **argv)
{
	void *lib = dlopen(argv[1], RTLD_NOW);
	volatile char *g = lib ? dlsym(lib, "jt_cow_global") : NULL;
	int fd = open(argv[2], O_RDWR | O_CREAT | O_TRUNC, 0600);
	int id = shmget(IPC_PRIVATE, 4096, IPC_CREAT | 0600);
	volatile char *f, *s, *a;
	char path[64], c;
	pid_t child;
	FILE *map;

	if (!g || fd < 0 || ftruncate(fd, 4096) || id < 0 || argc < 4)
		return 1;
	jitdump(argv[3]);
	f = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	s = shmat(id, NULL, 0);
	shmctl(id, IPC_RMID, NULL);
	a = mmap(NULL, 2 * 4096, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	c = g[2 * 4096];
	f[0] = s[0] = a[0] = a[4096] = 1;
	if ((child = fork()) == 0) {
		/* Not the test's pipe: if we die first, it must see its end. */
		close(STDOUT_FILENO);
		pause();
		_exit(0);
	}
	/* After the fork: copies of our own, the child keeps the old pages. */
	g[4096] = 1;
	a[4096] = 2;
	snprintf(path, sizeof(path), "/tmp/perf-%d.map", getpid());
	map = fopen(path, "w");
	if (!map) {
		perror(path);
		kill(child, SIGKILL);
		return 1;
	}
	fprintf(map, "%lx 10 first\n%lx 10 second\n10 10 nowhere\n",
		(unsigned long)main, (unsigned long)main);
	fclose(map);
	printf("lib_written %lx\nlib_read %lx\nshared_file %lx\nshm %lx\n"
	       "fork_shared %lx\nfork_copied %lx\nready %d\n",
	       (unsigned long)g + 4096, (unsigned long)g + 2 * 4096,
	       (unsigned long)f, (unsigned long)s, (unsigned long)a,
	       (unsigned long)a + 4096, c);
	fflush(stdout);
	pause();
	return 0;
}
