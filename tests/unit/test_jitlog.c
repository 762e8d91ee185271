// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * A lazy model (JIT records logged until a lookup needs them) names every
 * address as an eager one does, through loads, moves, unloads, the cuts
 * of mmap and munmap, and forks; and builds no table no lookup needed.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <sys/mman.h>
#include "model/model.h"

#define P(n) (0x7f0000000000ULL + (n)*4096ULL)
#define PAGES 64

static uint64_t clock_ns = 1000;
static const char *const names[] = { "a", "b", "c", "d", "e", "f", "g" };

static void hdr(struct jt_hdr *h, uint16_t type, uint32_t size, uint32_t pid)
{
	h->type = type;
	h->size = size;
	h->pid = pid;
	h->tid = pid;
	h->time = clock_ns;
}

static void map_ev(struct jt_model *m, uint16_t type, uint32_t pid, int page,
		   int pages)
{
	struct jt_map_event ev = {};

	ev.args[0] = P(page);
	ev.args[1] = pages * 4096;
	ev.args[2] = PROT_READ | PROT_EXEC;
	ev.args[3] = MAP_PRIVATE | MAP_ANONYMOUS;
	ev.result = type == JT_EV_MMAP ? (int64_t)P(page) : 0;
	ev.vma = (struct jt_vma){ P(page), P(page + pages), 0x5, 0 };
	ev.vma_last = ev.vma;
	hdr(&ev.h, type, sizeof(ev), pid);
	jt_model_apply(m, &ev.h, sizeof(ev));
}

static void fork_ev(struct jt_model *m, uint32_t parent, uint32_t child)
{
	struct jt_fork_event ev = { .child_pid = child, .child_tid = child };

	hdr(&ev.h, JT_EV_FORK, sizeof(ev), parent);
	jt_model_apply(m, &ev.h, sizeof(ev));
}

static void exit_ev(struct jt_model *m, uint32_t pid)
{
	struct jt_exit_event ev = { .group_dead = 1 };

	hdr(&ev.h, JT_EV_EXIT, sizeof(ev), pid);
	jt_model_apply(m, &ev.h, sizeof(ev));
}

/*
 * As the stream gives it: the name is the item's own bytes, gone once the
 * item is out, so a model that kept the pointer would name garbage.
 */
static void jit(struct jt_model *m, uint32_t pid, uint16_t op, uint16_t source,
		uint64_t addr, uint64_t old, uint64_t size, const char *name)
{
	char copy[32];
	struct jt_jit_item j = { .time = clock_ns,
				 .pid = pid,
				 .op = op,
				 .source = source,
				 .addr = addr,
				 .old_addr = old,
				 .size = size };

	if (name) {
		j.name_len = strlen(name);
		j.name = memcpy(copy, name, j.name_len + 1);
	}
	jt_model_apply_jit(m, &j);
	memset(copy, '?', sizeof(copy));
}

/* The pipeline's one table for every JIT name it hands out. */
static struct jt_nametab jitnames;

/* Both models, the same event. */
static struct jt_model eager, lazy;
static unsigned long named; /* lookups that found a function */

static void both_map(uint16_t type, uint32_t pid, int page, int pages)
{
	map_ev(&eager, type, pid, page, pages);
	map_ev(&lazy, type, pid, page, pages);
}

static void both_jit(uint32_t pid, uint16_t op, uint16_t source, uint64_t addr,
		     uint64_t old, uint64_t size, const char *name)
{
	jit(&eager, pid, op, source, addr, old, size, name);
	jit(&lazy, pid, op, source, addr, old, size, name);
}

static const struct jt_jitsym *find(struct jt_proc *p, uint64_t addr)
{
	const struct jt_jitsym *j = jt_jittab_find(&p->jitdump, addr);

	return j ? j : jt_jittab_find(&p->perfmap, addr);
}

static void same_at(uint32_t pid, uint64_t addr)
{
	struct jt_proc *e = jt_model_find(&eager, pid);
	struct jt_proc *l = jt_model_find(&lazy, pid);
	const struct jt_jitsym *a, *b;

	assert_non_null(e);
	assert_non_null(l);
	jt_model_jit_warm(&lazy, l, addr);
	a = find(e, addr);
	b = find(l, addr);
	assert_int_equal(!a, !b);
	if (!a)
		return;
	named++;
	assert_int_equal(a->start, b->start);
	assert_int_equal(a->end, b->end);
	assert_ptr_equal(a->name, b->name);
}

static uint64_t any_addr(void)
{
	return P(rand() % PAGES) + (rand() % 64) * 64;
}

static void both_fork(uint32_t pid, uint32_t *pids, int *npids)
{
	uint32_t child = 1000 + *npids;

	fork_ev(&eager, pid, child);
	fork_ev(&lazy, pid, child);
	pids[(*npids)++] = child;
}

/*
 * perf-map lines as the agent's stream gives them: the eager model gets
 * each as a LOAD, the lazy one all of them as one TEXT record, a line
 * that is no symbol among them.
 */
static void both_text(uint32_t pid, int lines)
{
	char text[64 * 8], copy[sizeof(text)];
	struct jt_jit_item j = { .time = clock_ns,
				 .pid = pid,
				 .op = JT_JIT_TEXT,
				 .source = JT_SRC_PERFMAP,
				 .size = lines };
	size_t len = 0;
	int k;

	for (k = 0; k < lines; k++) {
		uint64_t addr = any_addr(), size = 64 * (1 + rand() % 32);
		const char *name = names[rand() % 7];

		if (rand() % 8 == 0) {
			len += sprintf(text + len, "zz 40 not_a_symbol\n");
			continue;
		}
		len += sprintf(text + len, "%llx %llx %s\n",
			       (unsigned long long)addr,
			       (unsigned long long)size, name);
		jit(&eager, pid, JT_JIT_LOAD, JT_SRC_PERFMAP, addr, 0, size,
		    name);
	}
	j.name = memcpy(copy, text, len + 1);
	j.name_len = len;
	jt_model_apply_jit(&lazy, &j);
	memset(copy, '?', sizeof(copy));
}

static void one_step(uint32_t *pids, int *npids)
{
	uint32_t pid = pids[rand() % *npids];
	int r = rand() % 100, page = rand() % PAGES;
	uint16_t src = rand() % 2 ? JT_SRC_JITDUMP : JT_SRC_PERFMAP;

	clock_ns++;
	if (r < 20 && src == JT_SRC_PERFMAP)
		both_text(pid, 1 + rand() % 8);
	else if (r < 45)
		both_jit(pid, JT_JIT_LOAD, src, any_addr(), 0,
			 64 * (1 + rand() % 32), names[rand() % 7]);
	else if (r < 52)
		both_jit(pid, JT_JIT_MOVE, JT_SRC_JITDUMP, any_addr(),
			 any_addr(), 64 * (1 + rand() % 8), NULL);
	else if (r < 58)
		both_jit(pid, JT_JIT_UNLOAD, JT_SRC_JITDUMP, any_addr(), 0, 0,
			 NULL);
	else if (r < 63)
		both_map(JT_EV_MMAP, pid, page, 1 + rand() % 4);
	else if (r < 68)
		both_map(JT_EV_MUNMAP, pid, page, 1 + rand() % 4);
	else if (r < 70 && *npids < 8)
		both_fork(pid, pids, npids);
	else if (r < 80)
		same_at(pid, any_addr());
}

static void test_lazy_names_as_eager(void **state)
{
	uint32_t pids[8] = { 100 };
	int npids, round, i, k;

	for (round = 0; round < 40; round++) {
		srand(round + 1);
		jt_model_init(&eager);
		jt_model_init(&lazy);
		eager.names = lazy.names = &jitnames;
		lazy.lazy_jit = true;
		npids = 1;
		both_map(JT_EV_MMAP, 100, 0, PAGES);
		for (i = 0; i < 2000; i++)
			one_step(pids, &npids);
		/* Then every address of every process. */
		for (k = 0; k < npids; k++)
			for (i = 0; i < PAGES * 64; i++)
				same_at(pids[k], P(0) + i * 64);
		jt_model_free(&eager);
		jt_model_free(&lazy);
		/* Every reference a table took, it gave back. */
		jt_names_sweep(&jitnames, UINT64_MAX);
		assert_int_equal(jitnames.h.n, 0);
	}
	/* The comparisons were of functions, not only of empty tables. */
	assert_true(named > 40 * 1000);
	jt_nametab_free(&jitnames);
}

/* A lazy model with process pid and its code region mapped. */
static void lazy_model(struct jt_model *m, uint32_t pid)
{
	jt_model_init(m);
	m->lazy_jit = true;
	map_ev(m, JT_EV_MMAP, pid, 0, PAGES);
}

static void test_tables_wait_for_a_lookup(void **state)
{
	struct jt_model m;
	struct jt_proc *p;
	char name[16];
	int i;

	lazy_model(&m, 7);
	m.names = &jitnames;
	for (i = 0; i < 100; i++) {
		snprintf(name, sizeof(name), "f%d", i);
		jit(&m, 7, JT_JIT_LOAD, JT_SRC_PERFMAP, P(8) + i * 64, 0, 64,
		    name);
	}
	p = jt_model_find(&m, 7);
	assert_int_equal(jt_jittab_count(&p->perfmap), 0);
	assert_int_equal(p->jitlog.n, 100);
	assert_int_equal(jt_proc_jit_count(p), 100);
	/* Logged names are the log's: the run's table has none yet. */
	assert_int_equal(jitnames.h.n, 0);
	/* Outside what the log touches: nothing is built. */
	jt_model_jit_warm(&m, p, P(1));
	assert_int_equal(jt_jittab_count(&p->perfmap), 0);
	jt_model_jit_warm(&m, p, P(8) + 5 * 64);
	assert_int_equal(jt_jittab_count(&p->perfmap), 100);
	assert_int_equal(p->jitlog.n, 0);
	assert_int_equal(jitnames.h.n, 100);
	assert_string_equal(jt_jittab_find(&p->perfmap, P(8) + 99 * 64)->name,
			    "f99");
	/* A cut with nothing logged goes to the tables at once. */
	map_ev(&m, JT_EV_MUNMAP, 7, 8, 1);
	assert_int_equal(p->jitlog.n, 0);
	assert_int_equal(jt_jittab_count(&p->perfmap), 36);
	jt_model_free(&m);
	jt_nametab_free(&jitnames);
}

/*
 * A TEXT record is logged as it came: its lines are counted, and parsed
 * only when a lookup anywhere in the process needs the tables (its
 * addresses are not known before). Past the log's bytes, the tables are
 * built at once.
 */
static void test_text_waits_for_a_lookup(void **state)
{
	static char text[JT_JITLOG_BYTES + 64];
	struct jt_jit_item j = { .pid = 7,
				 .op = JT_JIT_TEXT,
				 .source = JT_SRC_PERFMAP };
	struct jt_model m;
	struct jt_proc *p;
	size_t len = 0;
	int i;

	lazy_model(&m, 7);
	for (i = 0; i < 100; i++)
		len += sprintf(text + len, "%llx 40 f%d\n",
			       (unsigned long long)(P(8) + i * 64), i);
	/* An empty line is no symbol; address 0 is one. */
	len += sprintf(text + len, "\n0 40 at_zero\n");
	j.time = ++clock_ns;
	j.name = text;
	j.name_len = len;
	j.size = 102;
	jt_model_apply_jit(&m, &j);
	p = jt_model_find(&m, 7);
	assert_int_equal(p->jitlog.n, 1);
	assert_int_equal(jt_proc_jit_count(p), 102);
	assert_int_equal(jt_jittab_count(&p->perfmap), 0);
	jt_model_jit_warm(&m, p, P(1));
	assert_int_equal(p->jitlog.n, 0);
	assert_int_equal(jt_jittab_count(&p->perfmap), 101);
	assert_string_equal(jt_jittab_find(&p->perfmap, P(8) + 99 * 64)->name,
			    "f99");
	assert_string_equal(jt_jittab_find(&p->perfmap, 0x3f)->name, "at_zero");
	assert_int_equal(m.stats.jit_text_skipped, 1);
	jt_model_free(&m);

	/* One big write: more bytes than a log keeps. */
	lazy_model(&m, 7);
	for (len = 0, i = 0; len < JT_JITLOG_BYTES; i++)
		len += sprintf(text + len, "%llx 40 g%d\n",
			       (unsigned long long)(P(8) + (i % 4096) * 64), i);
	len += sprintf(text + len, "nothex 40 h\n");
	j.name_len = len;
	j.size = i + 1;
	jt_model_apply_jit(&m, &j);
	p = jt_model_find(&m, 7);
	assert_int_equal(p->jitlog.n, 0);
	assert_int_equal(jt_jittab_count(&p->perfmap), 4096);
	assert_int_equal(m.stats.jit_text_skipped, 1);
	jt_model_free(&m);
}

/* A fork's log is its own: the parent's going takes none of its names. */
static void test_a_forked_log_keeps_its_names(void **state)
{
	struct jt_model m;
	struct jt_proc *c;
	char name[16];
	int i;

	lazy_model(&m, 7);
	m.free_dead = true;
	for (i = 0; i < 300; i++) {
		snprintf(name, sizeof(name), "function_%d", i);
		jit(&m, 7, JT_JIT_LOAD, JT_SRC_JITDUMP, P(8) + i * 64, 0, 64,
		    name);
	}
	fork_ev(&m, 7, 8);
	exit_ev(&m, 7);
	jt_model_reap(&m, UINT64_MAX);
	assert_null(jt_model_find(&m, 7));
	c = jt_model_find(&m, 8);
	assert_int_equal(c->jitlog.n, 300);
	for (i = 0; i < 300; i++) {
		snprintf(name, sizeof(name), "function_%d", i);
		jt_model_jit_warm(&m, c, P(8) + i * 64);
		assert_string_equal(
			jt_jittab_find(&c->jitdump, P(8) + i * 64)->name, name);
	}
	jt_model_free(&m);
}

static void test_log_is_bounded(void **state)
{
	struct jt_model m;
	struct jt_proc *p;
	int i;

	lazy_model(&m, 7);
	/* One address rewritten: the table keeps one, a log would all. */
	for (i = 0; i < 3 * JT_JITLOG_MAX; i++)
		jit(&m, 7, JT_JIT_LOAD, JT_SRC_PERFMAP, P(8), 0, 64, "f");
	p = jt_model_find(&m, 7);
	assert_true(p->jitlog.n < JT_JITLOG_MAX);
	assert_int_equal(jt_jittab_count(&p->perfmap), 1);
	jt_model_free(&m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_lazy_names_as_eager),
		cmocka_unit_test(test_tables_wait_for_a_lookup),
		cmocka_unit_test(test_text_waits_for_a_lookup),
		cmocka_unit_test(test_a_forked_log_keeps_its_names),
		cmocka_unit_test(test_log_is_bounded),
	};

	return cmocka_run_group_tests_name("jitlog", tests, NULL, NULL);
}
