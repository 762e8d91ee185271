// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * A reader's heap in huge pages: after jt_heap_hugepages the heap's top
 * is advised MADV_HUGEPAGE ("hg" in smaps) from a huge page on, for at
 * least the reserve; blocks that glibc would have mapped on their own
 * come from it, and a second call changes nothing. A host that takes
 * free pages back (a virtio balloon that reports them), and glibc's own
 * tunable, leave the heap as it was. A heap left in 4K pages is faulted
 * in by a thread as glibc grows it (jt_heap_prefault), and never trimmed,
 * as the thread reads its pages. Each test runs in a child of its own:
 * the setting is once per process.
 */
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <setjmp.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>
#include "lib/heap.h"

#define RESERVE (64UL << 20)

/* A virtio balloon driver's sysfs directory, made up for each test. */
static char balloons[64];

/* One balloon device, its features as sysfs gives them: "0110..." */
static void balloon_with(const char *features)
{
	char path[128];
	FILE *f;

	strcpy(balloons, "/tmp/jt-balloon-XXXXXX");
	assert_non_null(mkdtemp(balloons));
	if (!features)
		return;
	snprintf(path, sizeof(path), "%s/virtio3", balloons);
	assert_int_equal(mkdir(path, 0755), 0);
	strcat(path, "/features");
	assert_non_null(f = fopen(path, "w"));
	fprintf(f, "%s\n", features);
	fclose(f);
}

static void balloon_gone(void)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf %s", balloons);
	assert_int_equal(system(cmd), 0);
}
#define HUGE_PAGE (2UL << 20)

struct vma {
	uintptr_t start, end;
	bool hg; /* advised MADV_HUGEPAGE */
};

/*
 * The advised span ending at addr's mapping: that mapping and those right
 * before it, while they are advised too. In a forked child the heap grows
 * in a mapping of its own (its old one shares anon pages with the
 * parent), so the advice may cover two mappings.
 */
static bool span_of(uintptr_t addr, struct vma *v)
{
	FILE *f = fopen("/proc/self/smaps", "re");
	struct vma cur = {}, run = {};
	char line[512];
	bool found = false;

	assert_non_null(f);
	while (!found && fgets(line, sizeof(line), f)) {
		unsigned long s, e;
		char perm[5];

		if (sscanf(line, "%lx-%lx %4s", &s, &e, perm) == 3) {
			cur = (struct vma){ .start = s, .end = e };
		} else if (!strncmp(line, "VmFlags:", 8)) {
			cur.hg = strstr(line, " hg") != NULL;
			if (cur.hg && run.hg && run.end == cur.start)
				run.end = cur.end;
			else
				run = cur;
			found = addr >= cur.start && addr < cur.end;
		}
	}
	fclose(f);
	*v = run.hg ? run : cur;
	return found;
}

static bool thp_here(void)
{
	return access("/sys/kernel/mm/transparent_hugepage/hpage_pmd_size",
		      R_OK) == 0;
}

/* Run fn in a child; its exit status is the number of failed checks. */
static int in_child(int (*fn)(void))
{
	int st;
	pid_t pid = fork();

	assert_true(pid >= 0);
	if (!pid)
		_exit(fn());
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st));
	return WEXITSTATUS(st);
}

static int check(bool ok, const char *what)
{
	if (!ok)
		fprintf(stderr, "FAIL: %s\n", what);
	return !ok;
}

static int reserve_advised(void)
{
	struct vma top, blk;
	char *end, *p;
	int bad = 0;

	bad += check(jt_heap_hugepages_at(RESERVE, balloons) == 0, "returns 0");
	end = sbrk(0);
	bad += check(span_of((uintptr_t)end - 1, &top), "the top is mapped");
	bad += check(top.hg, "the top is advised into huge pages");
	bad += check(top.start % HUGE_PAGE == 0, "advised from a huge page");
	bad += check(top.end - top.start >= RESERVE - HUGE_PAGE,
		     "the advised top holds the reserve");
	/* 4 MiB: glibc's own threshold would have mapped it apart. */
	p = malloc(4UL << 20);
	bad += check(p && span_of((uintptr_t)p + (2UL << 20), &blk) &&
			     blk.start == top.start && blk.hg,
		     "a 4 MiB block comes from the advised heap");
	memset(p, 1, 4UL << 20);
	free(p);
	bad += check(jt_heap_hugepages_at(RESERVE, balloons) == 0,
		     "a second call is 0");
	bad += check(sbrk(0) == end, "a second call does not grow the heap");
	return bad;
}

static void test_reserve_is_advised_and_takes_big_blocks(void **state)
{
	if (!thp_here()) {
		fprintf(stderr, "SKIP: no transparent huge pages here\n");
		skip();
	}
	/* A balloon that does not report free pages: stats and deflate. */
	balloon_with("0110000000000000000000000000000010000000");
	assert_int_equal(in_child(reserve_advised), 0);
	balloon_gone();
}

static int tunable_left_to_glibc(void)
{
	char *end = sbrk(0);
	int bad = 0;

	setenv("GLIBC_TUNABLES", "glibc.malloc.hugetlb=1", 1);
	bad += check(jt_heap_hugepages_at(RESERVE, balloons) == JT_HEAP_TOLD,
		     "returns JT_HEAP_TOLD");
	bad += check(sbrk(0) == end, "the heap is left as it was");
	return bad;
}

static void test_glibc_tunable_is_left_to_glibc(void **state)
{
	balloon_with(NULL);
	assert_int_equal(in_child(tunable_left_to_glibc), 0);
	balloon_gone();
}

static int heap_left_alone(void)
{
	char *end = sbrk(0);
	int bad = 0;

	bad += check(jt_heap_hugepages_at(RESERVE, balloons) == JT_HEAP_4K,
		     "returns JT_HEAP_4K");
	bad += check(sbrk(0) == end, "the heap is left as it was");
	return bad;
}

/* Feature bit 5: the balloon reports free pages, and the host takes them. */
static void test_host_that_takes_free_pages_back_is_left_alone(void **state)
{
	balloon_with("0110010100000000000000000000000010000000");
	assert_int_equal(in_child(heap_left_alone), 0);
	balloon_gone();
}

#define PAD (8UL << 20)
#define BLOCK (16UL << 20)
#define PAGE 4096UL

/* Pages of [p, p + len) in memory. */
static size_t resident(char *p, size_t len)
{
	static unsigned char vec[BLOCK / PAGE];
	size_t i, n = 0;

	if (mincore(p, len, vec))
		return 0;
	for (i = 0; i < len / PAGE; i++)
		n += vec[i] & 1;
	return n;
}

/*
 * A block this process never writes to is in memory all the same, once
 * the thread has had its time: it was populated, not faulted in. Only
 * its inner pages count, glibc writes chunk headers at either end.
 */
static int block_populated(void)
{
	struct timespec tick = { 0, 1000000 };
	char *before = sbrk(0), *p, *inner;
	size_t len = BLOCK - 2 * PAGE, n = 0;
	int bad = 0, waited;

	bad += check(jt_heap_prefault(PAD) == 0, "returns 0");
	bad += check(jt_heap_prefault(PAD) == 0, "a second call is 0");
	p = malloc(BLOCK);
	/* Mapped apart, it would lie far past the break. */
	bad += check(p + BLOCK > before && p + BLOCK <= (char *)sbrk(0),
		     "a 16 MiB block comes from the heap, which grew for it");
	bad += check((char *)sbrk(0) >= p + BLOCK + PAD - PAGE,
		     "the heap grew by the pad beyond it");
	inner = (char *)(((uintptr_t)p + 2 * PAGE - 1) & ~(PAGE - 1));
	/* However slow the machine: a minute before calling it a failure. */
	for (waited = 0; waited < 60000; waited++) {
		n = resident(inner, len);
		if (n == len / PAGE)
			break;
		nanosleep(&tick, NULL);
	}
	if (n != len / PAGE)
		fprintf(stderr, "%zu of %zu pages in memory\n", n, len / PAGE);
	bad += check(n == len / PAGE, "every page of the block is in memory");
	free(p);
	return bad;
}

static void test_heap_in_4k_pages_is_populated_ahead(void **state)
{
	assert_int_equal(in_child(block_populated), 0);
}

/*
 * The thread reads each page below the break: a trim would unmap pages
 * under it. 32 MiB freed at the top, more than glibc's trim threshold
 * before (four pads), stay in the heap.
 */
static int heap_never_trimmed(void)
{
	char *a, *b, *end;
	int bad = 0;

	bad += check(jt_heap_prefault(PAD) == 0, "returns 0");
	a = malloc(BLOCK);
	b = malloc(BLOCK);
	end = sbrk(0);
	bad += check(a && b && b + BLOCK <= end, "both blocks from the heap");
	free(b);
	free(a);
	bad += check(sbrk(0) == end, "the break stays where it was");
	return bad;
}

static void test_heap_prefaulted_is_never_trimmed(void **state)
{
	assert_int_equal(in_child(heap_never_trimmed), 0);
}

static int one_cpu_left_alone(void)
{
	char *end = sbrk(0), *p;
	cpu_set_t one;
	int bad = 0;

	CPU_ZERO(&one);
	CPU_SET(sched_getcpu(), &one);
	bad += check(!sched_setaffinity(0, sizeof(one), &one), "pinned");
	bad += check(jt_heap_prefault(PAD) == 1, "returns 1 on one CPU");
	bad += check(sbrk(0) == end, "the heap is left as it was");
	/* 4 MiB: glibc's own threshold still maps it apart. */
	p = malloc(4UL << 20);
	bad += check(p && (p + (4UL << 20) <= (char *)end ||
			   p >= (char *)sbrk(0) + (1UL << 20)),
		     "a 4 MiB block is mapped apart, as before");
	free(p);
	return bad;
}

/* Where the process may run on one CPU only, no thread: it would only
 * take the reader's turns. */
static void test_one_cpu_has_no_prefault_thread(void **state)
{
	assert_int_equal(in_child(one_cpu_left_alone), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_reserve_is_advised_and_takes_big_blocks),
		cmocka_unit_test(test_glibc_tunable_is_left_to_glibc),
		cmocka_unit_test(
			test_host_that_takes_free_pages_back_is_left_alone),
		cmocka_unit_test(test_heap_in_4k_pages_is_populated_ahead),
		cmocka_unit_test(test_heap_prefaulted_is_never_trimmed),
		cmocka_unit_test(test_one_cpu_has_no_prefault_thread),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
