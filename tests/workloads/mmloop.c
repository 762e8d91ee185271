// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Benchmark loops, timed from inside so tracer start-up is not counted.
 *   mmloop calls N   mmap + mprotect + munmap, N times
 *   mmloop callsfor SECONDS   the same for SECONDS of CPU time: a test
 *                             that needs samples, not a count of calls
 *   mmloop touch N   map N fresh pages, write one byte in each, unmap
 *                    (and its fastest block of 1,000 pages)
 *   mmloop filetouch N   the same on a private mapping of a file: each
 *                        write copies a page (copy-on-write)
 *   mmloop faults N   mmap, a write (one page fault), mprotect, munmap, N
 *                     times; prints the distinct pages it used ("pages") first
 *   mmloop getppid N   N cheap syscalls: what any task pays while
 *                      syscall tracepoints are attached (a bystander)
 *   mmloop now   prints "now_ns T", CLOCK_MONOTONIC, and exits: start-up
 *                and teardown of a tracer are timed around it
 *   mmloop tmplog SECONDS RATE   appends RATE lines a second to a log in
 *                                /tmp for SECONDS (a busy /tmp)
 * Prints "ns_per_op X"; calls also prints "ns_per_op_best X", its fastest
 * block of 1,000 calls: what a call costs with the least interference
 * from a noisy machine (a tracer's cost in the call is in every block).
 * "mmloop gated MODE N" prints "ready", waits for a
 * line on stdin, runs, prints its result and waits for a second line: a
 * test can stop the tracer's reader around exactly the loop.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static double now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static void wait_line(void)
{
	char buf[16];

	fflush(stdout);
	if (!fgets(buf, sizeof(buf), stdin))
		exit(1);
}

static double cpu_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* One mmap, mprotect and munmap; with touch, a write (a fault) between. */
static char *map_once(int touch)
{
	char *p = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		return NULL;
	if (touch)
		*(volatile char *)p = 1;
	mprotect(p, 4096, PROT_READ);
	munmap(p, 4096);
	return p;
}

static int call_once(void)
{
	return !map_once(0);
}

/* The loop with a page fault in each, and the pages it used (up to 16). */
static int faults(long n, double t0, int gated)
{
	char *pages[16], *p;
	int np = 0, j;
	long i;

	for (i = 0; i < n; i++) {
		if (!(p = map_once(1)))
			return 1;
		for (j = 0; j < np && pages[j] != p; j++)
			;
		if (j == np && np < 16)
			pages[np++] = p;
	}
	t0 = (now_ns() - t0) / n;
	printf("pages");
	for (j = 0; j < np; j++)
		printf(" %p", (void *)pages[j]);
	printf("\nns_per_op %.1f\n", t0);
	if (gated)
		wait_line();
	return 0;
}

#define BLOCK 1000

/* After op i: at the end of a block of BLOCK, keep the fastest block. */
static void block_end(long i, double *b0, double *best)
{
	double t;

	if ((i + 1) % BLOCK)
		return;
	t = now_ns();
	if (!*best || t - *b0 < *best)
		*best = t - *b0;
	*b0 = t;
}

static int calls(long n, double t0, int gated)
{
	double best = 0, b0 = t0;
	long i;

	for (i = 0; i < n; i++) {
		if (call_once())
			return 1;
		block_end(i, &b0, &best);
	}
	printf("ns_per_op %.1f\n", (now_ns() - t0) / n);
	if (best)
		printf("ns_per_op_best %.1f\n", best / BLOCK);
	if (gated)
		wait_line();
	return 0;
}

/*
 * One byte written in each of n pages; returns the fastest block of
 * BLOCK pages, per page: under qemu TCG the other vCPU's work (the
 * tracer's) stops this one, and a hook's cost is in every block.
 */
static double touch_pages(char *p, long n)
{
	double best = 0, b0 = now_ns();
	long i;

	for (i = 0; i < n; i++) {
		p[i * 4096] = 1;
		block_end(i, &b0, &best);
	}
	return best / BLOCK;
}

/* Calls until secs of CPU time are spent; prints how many. */
static int calls_for(double secs)
{
	double end = cpu_s() + secs;
	long n = 0;

	while (cpu_s() < end) {
		if (call_once())
			return 1;
		n++;
	}
	printf("calls %ld\n", n);
	return 0;
}

/* One line every 1/rate s, paced by the clock, not by sleeping each. */
static int tmplog(double secs, double rate)
{
	char path[64];
	double t0 = now_ns(), next = t0;
	long i = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/tmp/jt-bench-log-%d", getpid());
	f = fopen(path, "w");
	if (!f)
		return 1;
	unlink(path);
	setvbuf(f, NULL, _IONBF, 0); /* one write(2) a line, as a logger */
	while (now_ns() - t0 < secs * 1e9) {
		fprintf(f, "line %ld\n", i++);
		next += 1e9 / rate;
		while (now_ns() < next)
			;
	}
	printf("lines %ld\n", i);
	return 0;
}

int main(int argc, char **argv)
{
	int gated = argc > 1 && !strcmp(argv[1], "gated");
	long n, i;
	int touch, filetouch;
	double t0, best = 0;
	char *p;

	argc -= gated;
	argv += gated;
	if (argc > 1 && !strcmp(argv[1], "now")) {
		printf("now_ns %.0f\n", now_ns());
		return 0;
	}
	if (argc > 3 && !strcmp(argv[1], "tmplog"))
		return tmplog(atof(argv[2]), atof(argv[3]));
	if (argc > 2 && !strcmp(argv[1], "callsfor"))
		return calls_for(atof(argv[2]));
	n = argc > 2 ? atol(argv[2]) : 100000;
	touch = argc > 1 && !strcmp(argv[1], "touch");
	filetouch = argc > 1 && !strcmp(argv[1], "filetouch");
	if (gated) {
		printf("ready\n");
		wait_line();
	}
	t0 = now_ns();

	if (filetouch) {
		char path[] = "/tmp/jt-mmloop-XXXXXX";
		int fd = mkstemp(path);

		if (fd < 0 || unlink(path) || ftruncate(fd, n * 4096))
			return 1;
		p = mmap(NULL, n * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE,
			 fd, 0);
		if (p == MAP_FAILED)
			return 1;
		best = touch_pages(p, n);
		munmap(p, n * 4096);
	} else if (argc > 1 && !strcmp(argv[1], "getppid")) {
		/*
		 * The fastest block as well, as the other loops report: on
		 * the VM bench's one vCPU a recorder's start-up and teardown
		 * share the CPU with the loop.
		 */
		double b0 = t0;

		for (i = 0; i < n; i++) {
			syscall(SYS_getppid);
			block_end(i, &b0, &best);
		}
		best /= BLOCK;
	} else if (touch) {
		p = mmap(NULL, n * 4096, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (p == MAP_FAILED)
			return 1;
		/*
		 * A fault per page, as the row says: with THP "always" (the
		 * Debian guests), 20,000 pages took 605 faults.
		 */
		madvise(p, n * 4096, MADV_NOHUGEPAGE);
		best = touch_pages(p, n);
		munmap(p, n * 4096);
	} else if (argc > 1 && !strcmp(argv[1], "faults")) {
		return faults(n, t0, gated);
	} else {
		return calls(n, t0, gated);
	}
	printf("ns_per_op %.1f\n", (now_ns() - t0) / n);
	if (best)
		printf("ns_per_op_best %.1f\n", best);
	if (gated)
		wait_line();
	return 0;
}
