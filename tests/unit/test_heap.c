// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * A reader's heap in huge pages: after jt_heap_hugepages the heap's top
 * is advised MADV_HUGEPAGE ("hg" in smaps) from a huge page on, for at
 * least the reserve, blocks that glibc would have mapped on their own come from
 * it, and a second call changes nothing. Each test runs in a child of its own:
 * the setting is once per process.
 */
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>
#include "lib/heap.h"

#define RESERVE (64UL << 20)
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

	bad += check(jt_heap_hugepages(RESERVE) == 0, "returns 0");
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
	bad += check(jt_heap_hugepages(RESERVE) == 0, "a second call is 0");
	bad += check(sbrk(0) == end, "a second call does not grow the heap");
	return bad;
}

static void test_reserve_is_advised_and_takes_big_blocks(void **state)
{
	if (!thp_here()) {
		fprintf(stderr, "SKIP: no transparent huge pages here\n");
		skip();
	}
	assert_int_equal(in_child(reserve_advised), 0);
}

static int tunable_left_to_glibc(void)
{
	char *end = sbrk(0);
	int bad = 0;

	setenv("GLIBC_TUNABLES", "glibc.malloc.hugetlb=1", 1);
	bad += check(jt_heap_hugepages(RESERVE) == 1, "returns 1");
	bad += check(sbrk(0) == end, "the heap is left as it was");
	return bad;
}

static void test_glibc_tunable_is_left_to_glibc(void **state)
{
	assert_int_equal(in_child(tunable_left_to_glibc), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_reserve_is_advised_and_takes_big_blocks),
		cmocka_unit_test(test_glibc_tunable_is_left_to_glibc),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
