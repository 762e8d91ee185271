// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The pipeline keeps what is alive: a process is seen once more as it
 * exits, then freed, so a long churn of short-lived processes holds as
 * few as run at once. A consumer of processes alone gets a model of
 * processes alone. A chain frame named by a late code-load record gets
 * its inlined methods.
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
#include <linux/perf_event.h>
#include "bytes.h"
#include "jt_abi.h"
#include "jt_jitdump.h"
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

/*
 * A chain frame in JIT code whose load record came after the sample is
 * named by that record, and gets the methods the JIT inlined at its call
 * site, exactly as a frame named on time does; frames further out still
 * wait for their own records: the JVM under load writes a method's load
 * record many milliseconds after the method first ran.
 */
#define PID 7
#define OUTER 0x10000ULL /* calls leaf from CALL_SITE; inlined inner there */
#define LEAF 0x10100ULL
#define CALL_SITE 0x10050ULL /* the return address in outer */
#define TOP 0x10200ULL	     /* calls outer */
#define TOP_SITE 0x10240ULL
#define FILE_ID 1

static void jit_load(struct bytes *b, const char *name, uint64_t addr,
		     uint64_t size, uint64_t t)
{
	static const unsigned char code[0x100];
	uint32_t len = 16 + 40 + strlen(name) + 1 + size;

	put_u32(b, JIT_CODE_LOAD), put_u32(b, len), put_u64(b, t);
	put_u32(b, PID), put_u32(b, PID);
	put_u64(b, addr), put_u64(b, addr), put_u64(b, size), put_u64(b, 1);
	put(b, name, strlen(name) + 1);
	put(b, code, size);
}

/* outer inlined inner at the call site: one entry, depth 1. */
static void jit_inline(struct bytes *b, uint64_t t)
{
	static const char inner[] = "inner";
	uint32_t len = 32 + 16 + sizeof(inner);

	put_u32(b, JIT_CODE_INLINE), put_u32(b, len), put_u64(b, t);
	put_u64(b, OUTER), put_u64(b, 1);
	put_u64(b, CALL_SITE), put_u32(b, 1), put_u32(b, 0);
	put(b, inner, sizeof(inner));
}

static void add_jit(struct jt_writer *w, const struct bytes *b, uint64_t off,
		    uint64_t t)
{
	struct jt_jit_rec piece = { .time = t,
				    .offset = off,
				    .file_id = FILE_ID };

	jt_writer_add(w, JT_REC_JIT, &piece, sizeof(piece), b->b, b->n);
}

/* A user sample in leaf, called from outer. */
static void add_sample(struct jt_writer *w, uint64_t t)
{
	struct {
		struct jt_perf_rec r;
		struct perf_event_header h;
		uint64_t ip;
		uint32_t pid, tid;
		uint64_t time;
		uint64_t nr, chain[4];
	} s = { .h = { .type = PERF_RECORD_SAMPLE,
		       .misc = PERF_RECORD_MISC_USER,
		       .size = sizeof(s) - sizeof(s.r) },
		.ip = LEAF + 0x10,
		.pid = PID,
		.tid = PID,
		.time = t,
		.nr = 4,
		.chain = { PERF_CONTEXT_USER, LEAF + 0x10, CALL_SITE,
			   TOP_SITE } };

	jt_writer_add(w, JT_REC_PERF, &s, sizeof(s), NULL, 0);
}

static void add_process(struct jt_writer *w)
{
	static const char dump[] = "/tmp/jit-7.dump";
	struct {
		struct jt_exec_event ev;
		char path[16];
	} x = { .ev = { .h = { .type = JT_EV_EXEC,
			       .size = sizeof(x),
			       .pid = PID,
			       .tid = PID,
			       .time = S },
			.comm = "jit",
			.nspid = PID,
			.path_len = 9 },
		.path = "/bin/jit" };
	struct jt_map_event m = {
		.h = { .type = JT_EV_MMAP,
		       .size = sizeof(m),
		       .pid = PID,
		       .tid = PID,
		       .time = S + 1 },
		.args = { 0, 0x1000, PROT_READ | PROT_EXEC,
			  MAP_PRIVATE | MAP_ANONYMOUS },
		.result = OUTER,
		.vma = { OUTER, OUTER + 0x1000 },
		.vma_last = { OUTER, OUTER + 0x1000 },
	};
	struct jt_jitfile_rec f = { .time = S + 2,
				    .pid = PID,
				    .file_id = FILE_ID,
				    .kind = JT_JIT_JITDUMP };

	jt_writer_add(w, JT_REC_BPF, &x, sizeof(x), NULL, 0);
	jt_writer_add(w, JT_REC_BPF, &m, sizeof(m), NULL, 0);
	jt_writer_add(w, JT_REC_JITFILE, &f, sizeof(f), dump, sizeof(dump));
}

/*
 * leaf is loaded on time; a sample at 2 s runs in it, called from
 * outer, called from top. outer's load (with its inlining) is written at
 * 3 s, top's at 3.5 s: the frame that waits for top has moved by then.
 * A second sample at 4 s takes the same path with every record there.
 */
static void write_late_loads(void)
{
	char meta[64];
	struct jt_writer w;
	struct bytes head = {}, late = {}, later = {};
	struct {
		uint32_t magic, version, total_size, elf_mach, pad1, pid;
		uint64_t timestamp, flags;
	} h = { JITHEADER_MAGIC, 1, 40, JT_ELF_MACH, 0, PID, S, 0 };

	snprintf(meta, sizeof(meta), "perf.sample_type=%u\n",
		 PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME |
			 PERF_SAMPLE_CALLCHAIN);
	put(&head, &h, sizeof(h));
	jit_load(&head, "leaf", LEAF, 0x100, S + S / 2);
	jit_inline(&late, 3 * S);
	jit_load(&late, "outer", OUTER, 0x100, 3 * S);
	jit_load(&later, "top", TOP, 0x100, 3 * S + S / 2);

	assert_int_equal(jt_writer_open(&w, path), 0);
	jt_writer_add(&w, JT_REC_META, meta, strlen(meta), NULL, 0);
	add_process(&w);
	add_jit(&w, &head, 0, S + S / 2);
	add_sample(&w, 2 * S);
	add_jit(&w, &late, head.n, 3 * S);
	add_jit(&w, &later, head.n + late.n, 3 * S + S / 2);
	add_sample(&w, 4 * S);
	jt_writer_close(&w);
}

struct late_seen {
	int samples;
	int retro_outer;
};

/* Both samples: leaf, inner (inlined in outer at its pc), outer, top. */
static void late_item(void *ctx, struct jt_model *m, const struct jt_item *it,
		      const struct jt_symres *res)
{
	struct late_seen *s = ctx;
	const struct jt_symres *f;

	if (!res || !res->is_sample)
		return;
	s->samples++;
	assert_string_equal(res->sym, "leaf");
	assert_int_equal(res->nframes, 4);
	f = res->frames;
	assert_string_equal(f[0].sym, "leaf");
	assert_false(f[0].inlined);
	assert_string_equal(f[1].sym, "inner");
	assert_true(f[1].inlined);
	assert_int_equal(f[1].ip, CALL_SITE);
	assert_string_equal(f[2].sym, "outer");
	assert_false(f[2].inlined);
	assert_int_equal(f[2].ip, CALL_SITE);
	assert_int_equal(f[2].sym_start, OUTER);
	assert_string_equal(f[3].sym, "top");
	assert_int_equal(f[3].ip, TOP_SITE);
	assert_int_equal(f[3].retro, f[2].retro);
	/* inner is outer's code: it was named late when outer was. */
	assert_int_equal(f[1].retro, f[2].retro);
	s->retro_outer += f[2].retro;
}

static void test_late_frame_gets_its_inlined_methods(void **state)
{
	struct late_seen seen = {};
	struct jt_pipe_ops ops = { .item = late_item,
				   .ctx = &seen,
				   .named = true };
	struct jt_stream s;
	struct jt_pipe p;

	write_late_loads();
	run(&p, &s, &ops);
	assert_int_equal(seen.samples, 2);
	/* The first sample's outer frame was retro; the second's on time. */
	assert_int_equal(seen.retro_outer, 1);
	assert_int_equal(p.syms.st.retro, 0);
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
		cmocka_unit_test(test_late_frame_gets_its_inlined_methods),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
