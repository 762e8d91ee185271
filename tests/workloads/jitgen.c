// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * A JIT that writes what real ones write: a jitdump (-j DIR, mapped as
 * perf's marker) and/or /tmp/perf-PID.map (-m), in the ways that break
 * time-blind tools:
 *   adjacent  N functions on adjacent pages (the kernel merges them)
 *   reuse     N functions one after another at the same address
 *   memfd     N functions written through an RW view of a memfd and run
 *             from an RX view (W^X double mapping), re-mprotected
 *   shanon    N functions in shared anonymous memory, W^X by mprotect
 *   late      each function runs before its load record is written
 *   move      each function runs, is moved to another page, runs again
 *   many      N functions 16 bytes apart, all loaded, then run in turn
 *   rewrite   one function renamed N times by rewriting the perf-map
 *             from its start (-m), as jcmd Compiler.perfmap does: every
 *             other time truncated first, else written over in place
 * usage: jitgen MODE N SECONDS [-j DIR | -t DIR] [-m] [-w K] [-s SIZE]
 * -t writes the jitdump without the marker mmap: ground truth that no
 * profiler sees. -w K (adjacent, reuse, move): after the K-th function
 * has run, print "waiting" and go on at a line on stdin, so a test can
 * attach a profiler in the middle. -s SIZE: the perf-map declares SIZE
 * bytes for each function, as a broken or hostile runtime may.
 * Ground truth on stdout: "load NAME ADDR SIZE NS" for every record
 * written, "move NAME OLD NEW NS", and "run NAME ADDR FROM_NS TO_NS" for
 * every stretch of time a function ran.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "jitcode.h"

#define PAGE 4096
#define CODE_SIZE JIT_CODE_MAX

static FILE *dump, *pmap;
static uint64_t code_index;

static void emit_body(unsigned char *p, uint32_t n)
{
	jit_flush(p, jit_emit_loop(p, n));
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

static void put(const void *p, size_t n)
{
	fwrite(p, 1, n, dump);
}

/* marker: announce the file to profilers; without it, truth for tests. */
static void jitdump_open(const char *dir, int marker)
{
	char path[512];
	struct {
		uint32_t magic, version, total_size, elf_mach, pad1, pid;
		uint64_t timestamp, flags;
	} h = { 0x4A695444, 1, 40, JIT_ELF_MACH, 0, getpid(), now_ns(), 0 };
	int fd;

	snprintf(path, sizeof(path), "%s/jit-%d.dump", dir, getpid());
	fd = open(path, O_CREAT | O_TRUNC | O_RDWR, 0644);
	if (fd < 0 || !(dump = fdopen(fd, "w+"))) {
		perror(path);
		exit(1);
	}
	/* The marker perf (and jittrace) look for. */
	if (marker && mmap(NULL, PAGE, PROT_READ | PROT_EXEC, MAP_PRIVATE, fd,
			   0) == MAP_FAILED) {
		perror("marker mmap");
		exit(1);
	}
	put(&h, sizeof(h));
	fflush(dump);
}

static void write_load(const char *name, void *code, uint64_t t);

static unsigned long long declared_size = CODE_SIZE;

static int wait_after = -1;

/* -w K: hold after the K-th function until the test says go. */
static void checkpoint(int done)
{
	char line[16];

	if (done != wait_after)
		return;
	printf("waiting\n");
	fflush(stdout);
	if (dump)
		fflush(dump);
	if (!fgets(line, sizeof(line), stdin))
		exit(1);
}

static void record_load(const char *name, void *code)
{
	uint64_t t = now_ns();

	printf("load %s %lx %x %llu\n", name, (unsigned long)(uintptr_t)code,
	       CODE_SIZE, (unsigned long long)t);
	write_load(name, code, t);
}

/* Ground truth on stdout is skipped: 200000 lines would swamp the test. */
static void record_load_quiet(const char *name, void *code)
{
	write_load(name, code, now_ns());
}

static void write_load(const char *name, void *code, uint64_t t)
{
	uint64_t addr = (uintptr_t)code;

	if (dump) {
		uint32_t id = 0, size = 16 + 40 + strlen(name) + 1 + CODE_SIZE;
		uint32_t pid = getpid(), tid = gettid();
		uint64_t cs = CODE_SIZE, idx = ++code_index;

		put(&id, 4), put(&size, 4), put(&t, 8);
		put(&pid, 4), put(&tid, 4), put(&addr, 8), put(&addr, 8);
		put(&cs, 8), put(&idx, 8);
		put(name, strlen(name) + 1);
		put(code, CODE_SIZE);
		fflush(dump);
	}
	if (pmap) {
		fprintf(pmap, "%lx %llx %s\n", (unsigned long)addr,
			declared_size, name);
		fflush(pmap);
	}
}

static void record_move(const char *name, void *from, void *to)
{
	uint64_t t = now_ns(), old = (uintptr_t)from, new = (uintptr_t)to;
	uint32_t id = 1, size = 16 + 48, pid = getpid(), tid = gettid();
	uint64_t cs = CODE_SIZE, idx = code_index;

	printf("move %s %lx %lx %llu\n", name, (unsigned long)old,
	       (unsigned long)new, (unsigned long long)t);
	put(&id, 4), put(&size, 4), put(&t, 8);
	put(&pid, 4), put(&tid, 4), put(&new, 8), put(&old, 8), put(&new, 8);
	put(&cs, 8), put(&idx, 8);
	fflush(dump);
}

static uint64_t cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

/*
 * Runs for secs of this thread's CPU time, not wall time: cpu-clock
 * samples count CPU time, so a loaded machine gives the same counts.
 */
static void run(const char *name, void *code, double secs)
{
	uint64_t t0 = now_ns(), end = cpu_ns() + secs * 1e9;

	while (cpu_ns() < end)
		((void (*)(void))code)();
	printf("run %s %lx %llu %llu\n", name, (unsigned long)(uintptr_t)code,
	       (unsigned long long)t0, (unsigned long long)now_ns());
}

static char *new_page(char *hint)
{
	char *p = mmap(hint, PAGE, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		exit(1);
	return p;
}

static void make_exec(char *p)
{
	if (mprotect(p, PAGE, PROT_READ | PROT_EXEC))
		exit(1);
}

static void adjacent(int n, double secs)
{
	char **fn = calloc(n, sizeof(*fn)), name[32], *hint = NULL;
	int i;

	for (i = 0; i < n; i++) {
		fn[i] = new_page(hint);
		emit_body((unsigned char *)fn[i], 20000);
		make_exec(fn[i]);
		snprintf(name, sizeof(name), "adjacent_%d", i);
		record_load(name, fn[i]);
		hint = fn[i] - PAGE;
	}
	for (i = 0; i < n; i++) {
		snprintf(name, sizeof(name), "adjacent_%d", i);
		run(name, fn[i], secs / n);
		checkpoint(i + 1);
	}
}

static void reuse(int n, double secs)
{
	char *p = new_page(NULL), name[32];
	int i;

	for (i = 0; i < n; i++) {
		if (i && mprotect(p, PAGE, PROT_READ | PROT_WRITE))
			exit(1);
		emit_body((unsigned char *)p, 20000 + i);
		make_exec(p);
		snprintf(name, sizeof(name), "reused_%d", i);
		record_load(name, p);
		run(name, p, secs / n);
		checkpoint(i + 1);
	}
}

static void rewrite(int n, double secs)
{
	char *p = new_page(NULL), name[32];
	uint64_t t;
	int i;

	emit_body((unsigned char *)p, 20000);
	make_exec(p);
	for (i = 0; i < n && pmap; i++) {
		snprintf(name, sizeof(name), "rewrite_%02d", i);
		fflush(pmap);
		rewind(pmap);
		if (!(i % 2) && ftruncate(fileno(pmap), 0))
			exit(1);
		t = now_ns();
		printf("load %s %lx %x %llu\n", name,
		       (unsigned long)(uintptr_t)p, CODE_SIZE,
		       (unsigned long long)t);
		fprintf(pmap, "%lx %llx %s\n", (unsigned long)(uintptr_t)p,
			declared_size, name);
		fflush(pmap);
		run(name, p, secs / n);
	}
}

static void memfd(int n, double secs)
{
	int fd = memfd_create("jitgen-code", 0), i;
	char *rw, *rx, name[32];

	if (fd < 0 || ftruncate(fd, n * PAGE))
		exit(1);
	rw = mmap(NULL, n * PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	rx = mmap(NULL, n * PAGE, PROT_READ | PROT_EXEC, MAP_SHARED, fd, 0);
	if (rw == MAP_FAILED || rx == MAP_FAILED)
		exit(1);
	for (i = 0; i < n; i++) {
		emit_body((unsigned char *)rw + i * PAGE, 20000);
		/* Re-protect after the marker, as runtimes toggle W^X. */
		mprotect(rx, n * PAGE, PROT_READ);
		mprotect(rx, n * PAGE, PROT_READ | PROT_EXEC);
		snprintf(name, sizeof(name), "memfd_%d", i);
		record_load(name, rx + i * PAGE);
	}
	for (i = 0; i < n; i++) {
		snprintf(name, sizeof(name), "memfd_%d", i);
		run(name, rx + i * PAGE, secs / n);
	}
}

/* Code in MAP_SHARED|MAP_ANONYMOUS memory, W^X toggled by mprotect. */
static void shanon(int n, double secs)
{
	char *p = mmap(NULL, n * PAGE, PROT_READ | PROT_WRITE,
		       MAP_SHARED | MAP_ANONYMOUS, -1, 0),
	     name[32];
	int i;

	if (p == MAP_FAILED)
		exit(1);
	for (i = 0; i < n; i++) {
		if (mprotect(p, n * PAGE, PROT_READ | PROT_WRITE))
			exit(1);
		emit_body((unsigned char *)p + i * PAGE, 20000);
		if (mprotect(p, n * PAGE, PROT_READ | PROT_EXEC))
			exit(1);
		snprintf(name, sizeof(name), "shanon_%d", i);
		record_load(name, p + i * PAGE);
	}
	for (i = 0; i < n; i++) {
		snprintf(name, sizeof(name), "shanon_%d", i);
		run(name, p + i * PAGE, secs / n);
	}
}

static void late(int n, double secs)
{
	char name[32], *hint = NULL;
	int i;

	for (i = 0; i < n; i++) {
		char *p = new_page(hint);

		emit_body((unsigned char *)p, 20000);
		make_exec(p);
		snprintf(name, sizeof(name), "late_%d", i);
		run(name, p, secs / n / 2);
		record_load(name, p);
		run(name, p, secs / n / 2);
		hint = p - PAGE;
	}
}

static void move(int n, double secs)
{
	char name[32];
	int i;

	for (i = 0; i < n; i++) {
		char *a = new_page(NULL), *b = new_page(NULL);

		emit_body((unsigned char *)a, 20000);
		make_exec(a);
		snprintf(name, sizeof(name), "moved_%d", i);
		record_load(name, a);
		run(name, a, secs / n / 2);
		checkpoint(i + 1);
		memcpy(b, a, CODE_SIZE);
		jit_flush(b, CODE_SIZE);
		make_exec(b);
		record_move(name, a, b);
		munmap(a, PAGE);
		run(name, b, secs / n / 2);
	}
}

/* N small functions packed 16 bytes apart: a JIT at scale. */
static void many(int n, double secs)
{
	size_t bytes = ((size_t)n * CODE_SIZE + PAGE - 1) & ~(size_t)(PAGE - 1);
	unsigned char *code = mmap(NULL, bytes, PROT_READ | PROT_WRITE,
				   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	uint64_t end;
	char name[32];
	int i;

	if (code == MAP_FAILED)
		exit(1);
	for (i = 0; i < n; i++)
		emit_body(code + (size_t)i * CODE_SIZE, 200);
	if (mprotect(code, bytes, PROT_READ | PROT_EXEC))
		exit(1);
	for (i = 0; i < n; i++) {
		snprintf(name, sizeof(name), "many_%d", i);
		record_load_quiet(name, code + (size_t)i * CODE_SIZE);
	}
	end = now_ns() + secs * 1e9;
	while (now_ns() < end)
		for (i = 0; i < n; i++)
			((void (*)(void))(code + (size_t)i * CODE_SIZE))();
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "adjacent";
	int n = argc > 2 ? atoi(argv[2]) : 4, i;
	double secs = argc > 3 ? atof(argv[3]) : 1;
	char path[64];

	for (i = 4; i < argc; i++) {
		if (!strcmp(argv[i], "-j") && i + 1 < argc) {
			jitdump_open(argv[++i], 1);
		} else if (!strcmp(argv[i], "-t") && i + 1 < argc) {
			jitdump_open(argv[++i], 0);
		} else if (!strcmp(argv[i], "-s") && i + 1 < argc) {
			declared_size = strtoull(argv[++i], NULL, 0);
		} else if (!strcmp(argv[i], "-w") && i + 1 < argc) {
			wait_after = atoi(argv[++i]);
		} else if (!strcmp(argv[i], "-m")) {
			snprintf(path, sizeof(path), "/tmp/perf-%d.map",
				 getpid());
			pmap = fopen(path, "w");
		}
	}
	printf("pid %d\n", getpid());
	fflush(stdout); /* tests read it while we run */
	if (!strcmp(mode, "adjacent"))
		adjacent(n, secs);
	else if (!strcmp(mode, "reuse"))
		reuse(n, secs);
	else if (!strcmp(mode, "memfd"))
		memfd(n, secs);
	else if (!strcmp(mode, "shanon"))
		shanon(n, secs);
	else if (!strcmp(mode, "late"))
		late(n, secs);
	else if (!strcmp(mode, "move"))
		move(n, secs);
	else if (!strcmp(mode, "many"))
		many(n, secs);
	else if (!strcmp(mode, "rewrite"))
		rewrite(n, secs);
	else
		return 2;
	return 0;
}
