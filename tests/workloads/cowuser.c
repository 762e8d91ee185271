// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * dlopens the test library, writes one byte of its global (page 1 of
 * three), reads page 2. Prints "global START" and "wrote PAGE".
 * usage: cowuser LIBRARY
 */
#include <dlfcn.h>
#include <stdio.h>

int main(int argc, char **argv)
{
	void *lib = dlopen(argc > 1 ? argv[1] : "libjtcow.so", RTLD_NOW);
	volatile char *g = lib ? dlsym(lib, "jt_cow_global") : NULL;
	char c;

	if (!g) {
		fprintf(stderr, "cowuser: %s\n", dlerror());
		return 1;
	}
	g[4096 + 100] = 2;
	c = g[2 * 4096 + 7];
	printf("global %lx\nwrote %lx\n", (unsigned long)g,
	       (unsigned long)g + 4096);
	return c == 42;
}
