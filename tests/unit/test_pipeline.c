// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The pipeline keeps what is alive: a process is seen once more as it
 * exits, then freed, so a long churn of short-lived processes holds as
 * few as run at once.
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

static void test_exited_processes_are_freed(void **state)
{
	struct seen seen = {};
	struct jt_pipe_ops ops = {
		.item = on_item, .exited = on_exit_, .ctx = &seen, .named = true
	};
	struct jt_stream s;
	struct jt_pipe p;
	char msg[256];

	write_churn();
	assert_int_equal(jt_stream_open(&s, path, msg, sizeof(msg)), 0);
	assert_int_equal(jt_pipe_run(&p, &s, &ops), 0);
	assert_int_equal(seen.items, 2 * KIDS);
	assert_int_equal(seen.exited, KIDS);
	/* The parent, 3 live children, 10 dead for under JT_REAP_NS. */
	assert_true(seen.most_held <= 1 + 3 + 11);
	assert_true(p.m.nprocs <= 1 + 11);
	assert_true(p.ahead.nprocs <= 1 + 11);
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
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
