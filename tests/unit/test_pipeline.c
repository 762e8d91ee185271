// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The pipeline keeps what is alive: a process is seen once more as it
 * exits, then freed, so a long churn of short-lived processes holds as
 * few as run at once. A consumer of processes alone gets a model of
 * processes alone.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>
#include "jt_abi.h"
#include "lib/jt_file.h"
#include <sys/mman.h>
#include "model/pipeline.h"

#define S 1000000000ULL
#define KIDS 1000

static char path[] = "/tmp/jt_test_pipeline_XXXXXX";

struct seen {
	size_t exited;
	size_t most_held;
	size_t items;
};

static void on_item(void *ctx, struct jt_model *m, const struct jt_item *it,
		    const struct jt_symres *res)
{
	struct seen *s = ctx;

	s->items++;
	if (m->nprocs > s->most_held)
		s->most_held = m->nprocs;
}

static void on_exit_(void *ctx, struct jt_model *m, struct jt_proc *p)
{
	struct seen *s = ctx;

	assert_int_not_equal(p->dead_ns, 0);
	s->exited++;
}

/* One parent forks a child every 100 ms; each lives 250 ms. */
static void write_churn(void)
{
	struct jt_writer w;
	uint64_t t;
	uint32_t k;

	assert_int_equal(jt_writer_open(&w, path), 0);
	for (k = 0; k < KIDS; k++) {
		struct jt_fork_event f = { .h = { .type = JT_EV_FORK,
						  .size = sizeof(f),
						  .pid = 1,
						  .tid = 1 },
					   .child_pid = 100 + k,
					   .child_tid = 100 + k };
		struct jt_exit_event x = { .h = { .type = JT_EV_EXIT,
						  .size = sizeof(x),
						  .tid = 100 + k },
					   .group_dead = 1 };

		t = S + k * (S / 10);
		f.h.time = t;
		jt_writer_add(&w, JT_REC_BPF, &f, sizeof(f), NULL, 0);
		x.h.pid = 100 + k;
		x.h.time = t + S / 4;
		jt_writer_add(&w, JT_REC_BPF, &x, sizeof(x), NULL, 0);
	}
	jt_writer_close(&w);
}

static void run(struct jt_pipe *p, struct jt_stream *s,
		const struct jt_pipe_ops *ops)
{
	char msg[256];

	assert_int_equal(jt_stream_open(s, path, msg, sizeof(msg)), 0);
	assert_int_equal(jt_pipe_run(p, s, ops), 0);
}

static void test_exited_processes_are_freed(void **state)
{
	struct seen seen = {};
	struct jt_pipe_ops ops = {
		.item = on_item, .exited = on_exit_, .ctx = &seen, .named = true
	};
	struct jt_stream s;
	struct jt_pipe p;

	write_churn();
	run(&p, &s, &ops);
	assert_int_equal(seen.items, 2 * KIDS);
	assert_int_equal(seen.exited, KIDS);
	/* The parent, 3 live children, 10 dead for under JT_REAP_NS. */
	assert_true(seen.most_held <= 1 + 3 + 11);
	assert_true(p.m.nprocs <= 1 + 11);
	assert_true(p.ahead.nprocs <= 1 + 11);
	jt_pipe_free(&p);
	jt_stream_free(&s);
}

/* pid 7 execs "prog" (pid 5 in its namespace) and maps two regions. */
static void write_one_process(void)
{
	struct jt_writer w;
	struct {
		struct jt_exec_event ev;
		char path[16];
	} x = { .ev = { .h = { .type = JT_EV_EXEC,
			       .size = sizeof(x),
			       .pid = 7,
			       .tid = 7,
			       .time = S },
			.comm = "prog",
			.nspid = 5,
			.path_len = 10 },
		.path = "/bin/prog" };
	int i;

	assert_int_equal(jt_writer_open(&w, path), 0);
	jt_writer_add(&w, JT_REC_BPF, &x, sizeof(x), NULL, 0);
	for (i = 0; i < 2; i++) {
		uint64_t at = 0x10000 + i * 0x10000;
		struct jt_map_event m = {
			.h = { .type = JT_EV_MMAP,
			       .size = sizeof(m),
			       .pid = 7,
			       .tid = 7,
			       .time = 2 * S + i },
			.args = { 0, 0x1000, PROT_READ,
				  MAP_PRIVATE | MAP_ANONYMOUS },
			.result = at,
			.vma = { at, at + 0x1000 },
			.vma_last = { at, at + 0x1000 },
		};

		jt_writer_add(&w, JT_REC_BPF, &m, sizeof(m), NULL, 0);
	}
	jt_writer_close(&w);
}

static void procs_item(void *ctx, struct jt_model *m, const struct jt_item *it,
		       const struct jt_symres *res)
{
	struct jt_proc *p = jt_model_find(m, 7);

	assert_non_null(p);
	assert_string_equal(jt_proc_comm(p, 7), "prog");
	assert_int_equal(p->nspid, 5);
	*(size_t *)ctx += p->as ? jt_aspace_count(p->as) : 100;
}

/*
 * A consumer that reads only processes (the agent, report) gets them
 * whole from a model that keeps no address space; the naming model has
 * the regions.
 */
static void test_procs_only_model_keeps_processes_not_maps(void **state)
{
	size_t seen = 0;
	struct jt_pipe_ops ops = { .item = procs_item,
				   .ctx = &seen,
				   .named = true,
				   .keep_dead = true };
	struct jt_stream s;
	struct jt_pipe p;

	write_one_process();
	run(&p, &s, &ops);
	/* Each region as it came: 0, 1, 2. */
	assert_int_equal(seen, 0 + 1 + 2);
	assert_int_equal(jt_aspace_count(jt_model_find(&p.m, 7)->as), 2);
	jt_pipe_free(&p);
	jt_stream_free(&s);

	ops.procs_only = true;
	seen = 0;
	run(&p, &s, &ops);
	assert_int_equal(seen, 3 * 100);
	assert_true(p.m.procs_only);
	assert_null(jt_model_find(&p.m, 7)->as);
	assert_int_equal(jt_aspace_count(jt_model_find(&p.ahead, 7)->as), 2);
	jt_pipe_free(&p);
	jt_stream_free(&s);
}

static int setup(void **state)
{
	int fd = mkstemp(path);

	if (fd < 0)
		return -1;
	close(fd);
	return 0;
}

static int teardown(void **state)
{
	unlink(path);
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_exited_processes_are_freed),
		cmocka_unit_test(
			test_procs_only_model_keeps_processes_not_maps),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
