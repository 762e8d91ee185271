// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Behaves like an LLVM-style JIT: maps one page RW, writes a function
 * into it, mprotects it RX, and asks for the next page right below the
 * previous one, so the kernel merges them into one VMA. Then runs every
 * function in a loop so samples land in each page.
 *
 * usage: jitpages [N pages] [seconds]
 * Prints its own view, one line per page: "page ADDR", then the
 * /proc/self/maps line holding the pages.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "jitcode.h"

#define PAGE 4096

static double cpu_time(void)
{
	struct timespec ts;

	/* CPU time: samples per page do not depend on the machine's load. */
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void print_vma(unsigned long addr)
{
	char line[512];
	FILE *f = fopen("/proc/self/maps", "r");

	while (f && fgets(line, sizeof(line), f)) {
		unsigned long s, e;

		if (sscanf(line, "%lx-%lx", &s, &e) == 2 && s <= addr &&
		    addr < e)
			printf("vma %lx %lx\n", s, e);
	}
	if (f)
		fclose(f);
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 8, i;
	double secs = argc > 2 ? atof(argv[2]) : 1.0, end;
	void (**fn)(void) = calloc(n, sizeof(*fn));
	char *hint = NULL;

	for (i = 0; i < n; i++) {
		char *p = mmap(hint, PAGE, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

		if (p == MAP_FAILED)
			return 1;
		/* long enough to sample */
		jit_flush(p, jit_emit_loop((unsigned char *)p, 20000));
		if (mprotect(p, PAGE, PROT_READ | PROT_EXEC))
			return 1;
		fn[i] = (void (*)(void))p;
		printf("page %lx\n", (unsigned long)p);
		hint = p - PAGE;
	}
	print_vma((unsigned long)fn[0]);
	fflush(stdout);
	end = cpu_time() + secs;
	while (cpu_time() < end)
		for (i = 0; i < n; i++)
			fn[i]();
	return 0;
}
