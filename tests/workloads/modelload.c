// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Inputs for the model's scale benchmark (tests/bench/bench_model.py):
 *   modelload keep N       N adjacent one-page r-x mappings, kept: one
 *                          merged kernel VMA, like a JIT's code heap
 *   modelload churn N      N mmap/munmap pairs over 64 live pages: the
 *                          live state stays the same however long it runs
 *   modelload perfmap N K  N bytes of perf-map written one byte per
 *                          write(2), while K short-lived children come
 *                          and go; the file stays for the recorder
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef MAP_FIXED_NOREPLACE
#define MAP_FIXED_NOREPLACE 0x100000
#endif

static int keep(long n)
{
	char *base = mmap(NULL, n * 4096, PROT_NONE,
			  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	long i;

	if (base == MAP_FAILED || munmap(base, n * 4096))
		return 1;
	for (i = 0; i < n; i++)
		if (mmap(base + i * 4096, 4096, PROT_READ | PROT_EXEC,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1,
			 0) == MAP_FAILED)
			return 1;
	printf("kept %ld pages at %p\n", n, (void *)base);
	return 0;
}

static int churn(long n)
{
	char *live[64] = {};
	long i;

	for (i = 0; i < n; i++) {
		char **slot = &live[i % 64];

		if (*slot)
			munmap(*slot, 4096);
		*slot = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
			     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (*slot == MAP_FAILED)
			return 1;
	}
	printf("churned %ld\n", n);
	return 0;
}

static int perfmap(long n, long kids)
{
	char path[64], line[64];
	long written = 0, every = kids ? n / kids + 1 : n + 1, k = 0;
	int fd, len, i;

	snprintf(path, sizeof(path), "/tmp/perf-%d.map", getpid());
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0)
		return 1;
	while (written < n) {
		len = snprintf(line, sizeof(line), "%lx 10 fn_%ld\n",
			       0x7f0000000000L + k * 16, k);
		for (i = 0; i < len && written < n; i++, written++) {
			if (write(fd, line + i, 1) != 1)
				return 1;
			if (written % every == 0 && fork() == 0)
				_exit(0);
		}
		k++;
		while (waitpid(-1, NULL, WNOHANG) > 0)
			;
	}
	while (wait(NULL) > 0)
		;
	close(fd);
	printf("wrote %ld bytes, %ld lines\n", written, k);
	return 0;
}

int main(int argc, char **argv)
{
	long n = argc > 2 ? atol(argv[2]) : 10000;

	if (argc > 1 && !strcmp(argv[1], "keep"))
		return keep(n);
	if (argc > 1 && !strcmp(argv[1], "churn"))
		return churn(n);
	if (argc > 1 && !strcmp(argv[1], "perfmap"))
		return perfmap(n, argc > 3 ? atol(argv[3]) : 0);
	fprintf(stderr, "usage: modelload keep|churn|perfmap N [KIDS]\n");
	return 2;
}
