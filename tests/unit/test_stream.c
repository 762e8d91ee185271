// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The stream: the reorder window with and without the recorder's ROUND
 * marks, late events counted, perf-map lines timed by a write(2) that
 * reached the file after them, refused files' writes counted.
 */
#include <stdarg.h>
#include <stdbool.h>
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
#include "lib/perf_rec.h"
#include "model/stream.h"

#define S 1000000000ULL

static char path[] = "/tmp/jt_test_stream_XXXXXX";

static void add_exit(struct jt_writer *w, uint32_t pid, uint64_t time)
{
	struct jt_exit_event ev = { .h = { .type = JT_EV_EXIT,
					   .size = sizeof(ev),
					   .pid = pid,
					   .time = time } };

	jt_writer_add(w, JT_REC_BPF, &ev, sizeof(ev), NULL, 0);
}

static void add_round(struct jt_writer *w, uint64_t time)
{
	struct jt_round_rec r = { time };

	jt_writer_add(w, JT_REC_ROUND, &r, sizeof(r), NULL, 0);
}

/* The pids of the stream's items in the order they come out. */
static int drain(struct jt_stream *s, uint32_t *pids, int max)
{
	struct jt_item *it;
	int n = 0;

	while ((it = jt_stream_next(s))) {
		if (n < max)
			pids[n] =
				it->kind == JT_IT_BPF ?
					((const struct jt_hdr *)it->data)->pid :
					((const struct jt_jit_item *)it->data)
						->pid;
		n++;
		free(it);
	}
	return n;
}

static void open_stream(struct jt_stream *s)
{
	char msg[256];

	assert_int_equal(jt_stream_open(s, path, msg, sizeof(msg)), 0);
}

/* Without marks, the latest time read stands in: 3 s late is late. */
static void test_late_event_is_counted(void **state)
{
	struct jt_writer w;
	struct jt_stream s;
	uint32_t pids[8], want[] = { 1, 2, 4, 3 };

	assert_int_equal(jt_writer_open(&w, path), 0);
	add_exit(&w, 1, 10 * S);
	add_exit(&w, 2, 11 * S);
	add_exit(&w, 3, 12 * S);
	add_exit(&w, 4, 9 * S);
	jt_writer_close(&w);
	open_stream(&s);
	assert_int_equal(drain(&s, pids, 8), 4);
	assert_memory_equal(pids, want, sizeof(want));
	assert_int_equal(s.ord.late, 1);
	jt_stream_free(&s);
}

/*
 * A recorder stalled for seconds writes one ring's backlog after
 * another's: with ROUND marks nothing is late, and all comes out in
 * time order.
 */
static void test_rounds_order_a_stalled_recorder(void **state)
{
	struct jt_writer w;
	struct jt_stream s;
	uint32_t pids[8], want[] = { 4, 1, 2, 3, 5 };

	assert_int_equal(jt_writer_open(&w, path), 0);
	jt_writer_add(&w, JT_REC_META, "rounds=1\n", 9, NULL, 0);
	add_round(&w, 1 * S);
	add_exit(&w, 1, 10 * S);
	add_exit(&w, 2, 11 * S);
	add_exit(&w, 3, 12 * S);
	add_exit(&w, 4, 9 * S);
	add_round(&w, 12 * S + 1);
	add_exit(&w, 5, 13 * S);
	jt_writer_close(&w);
	open_stream(&s);
	assert_int_equal(drain(&s, pids, 8), 5);
	assert_memory_equal(pids, want, sizeof(want));
	assert_int_equal(s.ord.late, 0);
	assert_true(s.ord.peak >= 4);
	jt_stream_free(&s);
}

static void add_perfmap(struct jt_writer *w, uint32_t id, uint32_t pid,
			int32_t status, uint64_t ino)
{
	static const char name[] = "/tmp/perf-7.map";
	struct jt_jitfile_rec f = { .time = 1 * S,
				    .pid = pid,
				    .file_id = id,
				    .kind = JT_JIT_PERFMAP,
				    .status = status,
				    .ino = ino };

	jt_writer_add(w, JT_REC_JITFILE, &f, sizeof(f), name, sizeof(name));
}

static void add_write(struct jt_writer *w, uint32_t pid, uint64_t ino,
		      uint64_t end, uint64_t time)
{
	struct jt_write_event ev = { .h = { .type = JT_EV_MAPWRITE,
					    .size = sizeof(ev),
					    .pid = pid,
					    .time = time },
				     .end = end,
				     .len = 1,
				     .ino = ino };

	jt_writer_add(w, JT_REC_BPF, &ev, sizeof(ev), NULL, 0);
}

/* The piece reaches the file before the BPF event of its write. */
static void test_perfmap_line_timed_by_later_write(void **state)
{
	static const char line[] = "1000 10 foo\n";
	struct jt_jit_rec piece = { .time = 5 * S, .offset = 0, .file_id = 3 };
	struct jt_writer w;
	struct jt_stream s;
	struct jt_item *it;
	int jits = 0;

	assert_int_equal(jt_writer_open(&w, path), 0);
	add_perfmap(&w, 3, 7, 0, 99);
	jt_writer_add(&w, JT_REC_JIT, &piece, sizeof(piece), line,
		      sizeof(line) - 1);
	add_write(&w, 7, 99, 5, 3 * S);
	add_write(&w, 7, 99, sizeof(line) - 1, 4 * S);
	add_exit(&w, 8, 6 * S);
	jt_writer_close(&w);
	open_stream(&s);
	while ((it = jt_stream_next(&s))) {
		if (it->kind == JT_IT_JIT) {
			const struct jt_jit_item *j = it->data;

			assert_int_equal(j->time, 4 * S);
			assert_int_equal(j->addr, 0x1000);
			assert_string_equal(j->name, "foo");
			assert_false(it->late);
			jits++;
		}
		free(it);
	}
	assert_int_equal(jits, 1);
	assert_int_equal(s.sources[0]->timed_lines, 1);
	assert_int_equal(s.ord.late, 0);
	jt_stream_free(&s);
}

/*
 * Lines one write made go out as one item of that write's time, in file
 * order, each with its own name; a line of a later write is an item of
 * its own. 200 lines of one write make items of at most 64.
 */
static void test_perfmap_lines_of_one_write_are_one_item(void **state)
{
	char text[200 * 32];
	struct jt_jit_rec piece = { .time = 9 * S, .offset = 0, .file_id = 3 };
	struct jt_writer w;
	struct jt_stream s;
	struct jt_item *it;
	size_t len = 0, first;
	uint32_t i, lines = 0, items = 0;

	for (i = 0; i < 3; i++)
		len += sprintf(text + len, "%x 10 fn_%u\n", 0x1000 + i * 16, i);
	first = len;
	len += sprintf(text + len, "2000 10 late_one\n");
	assert_int_equal(jt_writer_open(&w, path), 0);
	add_perfmap(&w, 3, 7, 0, 99);
	jt_writer_add(&w, JT_REC_JIT, &piece, sizeof(piece), text, len);
	add_write(&w, 7, 99, first, 3 * S);
	add_write(&w, 7, 99, len, 4 * S);
	jt_writer_close(&w);
	open_stream(&s);
	while ((it = jt_stream_next(&s))) {
		if (it->kind == JT_IT_JIT) {
			const struct jt_jit_item *j = jt_jit_rec(it, 0);

			if (!items) {
				assert_int_equal(jt_jit_count(it), 3);
				for (i = 0; i < 3; i++) {
					char want[16];

					j = jt_jit_rec(it, i);
					snprintf(want, sizeof(want), "fn_%u",
						 i);
					assert_int_equal(j->time, 3 * S);
					assert_int_equal(j->addr,
							 0x1000 + i * 16);
					assert_string_equal(j->name, want);
					assert_int_equal(j->name_len,
							 strlen(want));
				}
			} else {
				assert_int_equal(jt_jit_count(it), 1);
				assert_int_equal(j->time, 4 * S);
				assert_string_equal(j->name, "late_one");
			}
			assert_int_equal(it->time, j->time);
			items++;
		}
		free(it);
	}
	assert_int_equal(items, 2);
	jt_stream_free(&s);

	/* One write of 200 lines: 64 + 64 + 64 + 8, every line once. */
	for (i = 0, len = 0; i < 200; i++)
		len += sprintf(text + len, "%x 10 f%u\n", 0x1000 + i * 16, i);
	assert_int_equal(jt_writer_open(&w, path), 0);
	add_perfmap(&w, 3, 7, 0, 99);
	jt_writer_add(&w, JT_REC_JIT, &piece, sizeof(piece), text, len);
	add_write(&w, 7, 99, len, 3 * S);
	jt_writer_close(&w);
	open_stream(&s);
	items = 0;
	while ((it = jt_stream_next(&s))) {
		if (it->kind == JT_IT_JIT) {
			assert_true(jt_jit_count(it) <= 64);
			for (i = 0; i < jt_jit_count(it); i++)
				assert_int_equal(jt_jit_rec(it, i)->addr,
						 0x1000 + (lines + i) * 16);
			lines += jt_jit_count(it);
			items++;
		}
		free(it);
	}
	assert_int_equal(lines, 200);
	assert_int_equal(items, 4);
	jt_stream_free(&s);
}

/* Writes before and after the refusal: all counted, none kept. */
struct loads {
	char names[8][16];
	uint64_t addr[8];
	uint64_t time[8];
	int n;
};

static void collect(void *ctx, const struct jt_jit_item *load)
{
	struct loads *l = ctx;

	assert_true(l->n < 8);
	assert_int_equal(load->op, JT_JIT_LOAD);
	assert_int_equal(load->pid, 7);
	snprintf(l->names[l->n], sizeof(l->names[0]), "%.*s",
		 (int)load->name_len, load->name);
	l->addr[l->n] = load->addr;
	l->time[l->n++] = load->time;
}

/*
 * For the agent, a write's lines go out unparsed: one TEXT record per
 * write, the lines as they were, its size counting those not empty;
 * parsed later into the LOADs the lines would have made, each with its
 * write's time. A line of 4.5 KB is a line like any other.
 */
static void test_perfmap_text_is_one_record_per_write(void **state)
{
	static char text[8192];
	static const char first[] = "1000 10 fn_0\n\n1010 10 fn_1\n"
				    "zz 10 not_hex\n1020 10 fn_2\n";
	struct jt_jit_rec piece = { .time = 9 * S, .offset = 0, .file_id = 3 };
	struct jt_writer w;
	struct jt_stream s;
	struct jt_item *it;
	struct loads l = {};
	size_t len, end1, end2;
	uint32_t items = 0;

	len = sprintf(text, "1000 10 fn_0\n\n1010 10 fn_1\nzz 10 not_hex\n"
			    "1020 10 fn_2\n");
	end1 = len;
	len += sprintf(text + len, "2000 10 late_one\n");
	end2 = len;
	len += sprintf(text + len, "3000 10 %04500d\n", 0);
	assert_int_equal(jt_writer_open(&w, path), 0);
	add_perfmap(&w, 3, 7, 0, 99);
	jt_writer_add(&w, JT_REC_JIT, &piece, sizeof(piece), text, len);
	add_write(&w, 7, 99, end1, 3 * S);
	add_write(&w, 7, 99, end2, 4 * S);
	add_write(&w, 7, 99, len, 5 * S);
	jt_writer_close(&w);
	open_stream(&s);
	s.perfmap_text = true;
	while ((it = jt_stream_next(&s))) {
		const struct jt_jit_item *j = jt_jit_rec(it, 0);

		if (it->kind != JT_IT_JIT) {
			free(it);
			continue;
		}
		assert_int_equal(jt_jit_count(it), 1);
		assert_int_equal(j->op, JT_JIT_TEXT);
		assert_int_equal(j->source, JT_SRC_PERFMAP);
		assert_int_equal(it->time, j->time);
		if (items == 0) {
			assert_int_equal(j->time, 3 * S);
			assert_int_equal(j->size, 4);
			assert_int_equal(j->name_len, strlen(first));
			assert_string_equal(j->name, first);
			assert_int_equal(jt_jit_text_each(j, collect, &l), 2);
			assert_int_equal(l.n, 3);
			assert_string_equal(l.names[2], "fn_2");
			assert_int_equal(l.addr[2], 0x1020);
			assert_int_equal(l.time[2], 3 * S);
		} else if (items == 1) {
			assert_int_equal(j->time, 4 * S);
			assert_int_equal(j->size, 1);
			assert_string_equal(j->name, "2000 10 late_one\n");
		} else {
			assert_int_equal(j->time, 5 * S);
			assert_int_equal(j->size, 1);
			assert_int_equal(j->name_len, 8 + 4500 + 1);
			assert_int_equal(jt_jit_text_each(j, collect, &l), 0);
			assert_int_equal(l.addr[3], 0x3000);
		}
		items++;
		free(it);
	}
	assert_int_equal(items, 3);
	jt_stream_free(&s);
}

struct named_load {
	uint64_t addr, size, time;
	char name[24];
};

struct load_list {
	struct named_load *v;
	size_t n;
};

static void list_add(void *ctx, const struct jt_jit_item *j)
{
	struct load_list *l = ctx;

	assert_int_equal(j->op, JT_JIT_LOAD);
	assert_true(j->name_len < sizeof(l->v[0].name));
	l->v = realloc(l->v, (l->n + 1) * sizeof(*l->v));
	l->v[l->n] = (struct named_load){ j->addr, j->size, j->time };
	memcpy(l->v[l->n++].name, j->name, j->name_len);
}

/* Every LOAD the stream gives, TEXT records parsed as naming would. */
static uint64_t stream_loads(bool text, struct load_list *l)
{
	struct jt_stream s;
	struct jt_item *it;
	uint64_t lines = 0;
	uint32_t i;

	open_stream(&s);
	s.perfmap_text = text;
	while ((it = jt_stream_next(&s))) {
		for (i = 0; it->kind == JT_IT_JIT && i < jt_jit_count(it);
		     i++) {
			const struct jt_jit_item *j = jt_jit_rec(it, i);

			assert_int_equal(it->time, j->time);
			assert_int_equal(j->op,
					 text ? JT_JIT_TEXT : JT_JIT_LOAD);
			if (text) {
				lines += j->size;
				assert_true(jt_jit_text_each(j, list_add, l) >=
					    0);
			} else {
				list_add(l, j);
			}
		}
		free(it);
	}
	jt_stream_free(&s);
	return lines;
}

/* A random perf-map line: mostly symbols, some empty, some not hex. */
static size_t random_line(char *p, unsigned int *seed, uint32_t i)
{
	switch (rand_r(seed) % 20) {
	case 0:
		return sprintf(p, "\n");
	case 1:
		return sprintf(p, "zz %x not_hex\n", i);
	default:
		return sprintf(p, "%x %x fn_%u\n", 0x1000 + i * 0x40,
			       1 + rand_r(seed) % 0x40, i);
	}
}

/*
 * The agent's TEXT records, parsed, give the LOADs parsed lines give,
 * each with the time of the first write(2) that ended at or past its
 * line, for writes and reads cut anywhere (mid-line too), lines that
 * span reads, one too long to be a symbol, and lines no write reached.
 * Their sizes count the lines that are not empty.
 */
static void test_perfmap_text_matches_parsed_lines(void **state)
{
	static char text[300 * 40 + 70000];
	unsigned int seed = 3, round;
	size_t all = 0;

	for (round = 0; round < 80; round++) {
		struct load_list parsed = {}, texts = {};
		size_t len = 0, off, cut, i, nlines = 0, n;
		uint64_t t = 10 * S;
		struct jt_writer w;

		n = 1 + rand_r(&seed) % 300;
		for (i = 0; i < n; i++) {
			size_t l = random_line(text + len, &seed, i);

			nlines += l > 1;
			len += l;
			if (round % 8 == 5 && i == n / 2) {
				memset(text + len, 'x', 66000);
				text[len + 66000] = '\n';
				len += 66001;
			}
		}
		if (round % 3 == 1) /* a last line not ended yet */
			len += sprintf(text + len, "9999 10 unended");
		assert_int_equal(jt_writer_open(&w, path), 0);
		add_perfmap(&w, 3, 7, 0, 99);
		for (off = 0; off < len; off = cut) {
			struct jt_jit_rec piece = { .time = 99 * S,
						    .offset = off,
						    .file_id = 3 };

			cut = off + 1 + rand_r(&seed) % 3000;
			cut = cut > len ? len : cut;
			jt_writer_add(&w, JT_REC_JIT, &piece, sizeof(piece),
				      text + off, cut - off);
		}
		/* Writes end anywhere; past the last, read time stands. */
		for (off = 0; off < len; t += S) {
			off += 1 + rand_r(&seed) % 900;
			if (round % 4 == 3 && off >= len * 3 / 4)
				break;
			add_write(&w, 7, 99, off < len ? off : len, t);
		}
		jt_writer_close(&w);
		assert_int_equal(stream_loads(true, &texts), nlines);
		stream_loads(false, &parsed);
		all += parsed.n;
		assert_int_equal(texts.n, parsed.n);
		for (i = 0; i < parsed.n; i++) {
			assert_int_equal(texts.v[i].addr, parsed.v[i].addr);
			assert_int_equal(texts.v[i].size, parsed.v[i].size);
			assert_int_equal(texts.v[i].time, parsed.v[i].time);
			assert_string_equal(texts.v[i].name, parsed.v[i].name);
		}
		free(parsed.v);
		free(texts.v);
	}
	assert_true(all > 80 * 100);
}

static void test_refused_perfmap_counts_its_writes(void **state)
{
	struct jt_writer w;
	struct jt_stream s;
	uint32_t pids[16];

	assert_int_equal(jt_writer_open(&w, path), 0);
	add_write(&w, 7, 99, 1, 1 * S);
	add_write(&w, 7, 99, 2, 2 * S);
	add_perfmap(&w, 3, 7, -1, 99);
	add_write(&w, 7, 99, 3, 3 * S);
	add_write(&w, 8, 99, 3, 3 * S); /* another process's file */
	jt_writer_close(&w);
	open_stream(&s);
	assert_int_equal(drain(&s, pids, 16), 4);
	assert_int_equal(s.nsources, 1);
	assert_int_equal(s.sources[0]->ignored_writes, 3);
	jt_stream_free(&s);
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/*
 * A pop gives the item peeked at before it, when it gives one; the one
 * peeked at after it is its source's next, never before it.
 */
static struct jt_item *pop_peeked(struct jt_ordered *o, uint64_t upto)
{
	const struct jt_item *next = jt_ordered_peek(o, false),
			     *after = jt_ordered_peek(o, true);
	struct jt_item *it = jt_ordered_pop(o, upto);

	if (it)
		assert_ptr_equal(it, next);
	if (after)
		assert_true(after->time >= next->time);
	return it;
}

/*
 * The window against a sort: sources nearly in order with random
 * inversions, let out in waves behind a moving horizon and then all.
 */
static void test_window_matches_a_sort(void **state)
{
	enum { N = 20000, SOURCES = 5 };
	static uint64_t want[N], got[N];
	struct jt_ordered o = {};
	uint64_t clock[SOURCES] = {}, x = 88172645463325252ULL;
	struct jt_item *it;
	size_t i, n = 0;

	for (i = 0; i < N; i++) {
		size_t src;

		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		src = x % SOURCES;
		clock[src] += 1 + (x >> 8) % 1000;
		it = calloc(1, sizeof(*it));
		assert_non_null(it);
		/* one in eight goes back up to 3000: out of its order */
		it->time = clock[src] - ((x >> 20) % 8 ? 0 : (x >> 24) % 3000);
		it->seq = i;
		want[i] = it->time;
		assert_int_equal(jt_ordered_push(&o, it, src), 0);
		while (i % 100 == 99 && (it = pop_peeked(&o, i * 50))) {
			got[n++] = it->key;
			free(it);
		}
	}
	while ((it = pop_peeked(&o, UINT64_MAX))) {
		got[n++] = it->key;
		free(it);
	}
	assert_null(jt_ordered_peek(&o, false));
	assert_int_equal(n, N);
	for (i = 1; i < N; i++)
		assert_true(got[i - 1] <= got[i]);
	/* The horizon trails every source: nothing is late, and what came
	 * out is exactly the input, sorted. */
	assert_int_equal(o.late, 0);
	qsort(want, N, sizeof(*want), cmp_u64);
	assert_memory_equal(got, want, sizeof(want));
	jt_ordered_free(&o);
}

/*
 * perf.mmap=bpf: an executable mmap's MMAP2 follows its BPF event, in
 * the BPF ring's order; a data mapping's only with PERF_SAMPLE_ADDR.
 * Without the mark (a recording with the kernel's own), none.
 */
static void add_mmap(struct jt_writer *w, uint32_t pid, uint64_t time,
		     uint64_t flags)
{
	struct jt_map_event ev = { .h = { .type = JT_EV_MMAP,
					  .size = sizeof(ev),
					  .pid = pid,
					  .tid = pid,
					  .time = time },
				   .result = 0x10000,
				   .vma = { 0x10000, 0x11000, flags, 0x10 } };

	ev.vma_last = ev.vma;
	jt_writer_add(w, JT_REC_BPF, &ev, sizeof(ev), NULL, 0);
}

static int view_items(const char *meta, uint32_t *pids, uint16_t *kinds)
{
	struct jt_writer w;
	struct jt_stream s;
	struct jt_item *it;
	struct jt_mmap2 m;
	int n = 0;

	assert_int_equal(jt_writer_open(&w, path), 0);
	jt_writer_add(&w, JT_REC_META, meta, strlen(meta), NULL, 0);
	add_mmap(&w, 1, 10 * S, 0x5);
	add_mmap(&w, 2, 11 * S, 0x3);
	add_exit(&w, 3, 12 * S);
	jt_writer_close(&w);
	open_stream(&s);
	while ((it = jt_stream_next(&s))) {
		kinds[n] = it->kind;
		pids[n] = ((const struct jt_hdr *)it->data)->pid;
		if (it->kind == JT_IT_PERF) {
			assert_int_equal(jt_perf_mmap2(it->data, it->len, &m),
					 0);
			pids[n] = m.pid;
			assert_int_equal(m.start, 0x10000);
			assert_int_equal(m.len, 0x1000);
			assert_int_equal(
				jt_perf_time(it->data, it->len, s.sample_type),
				it->time);
		}
		n++;
		free(it);
	}
	jt_stream_free(&s);
	return n;
}

static void test_perf_mmap2_made_from_bpf_events(void **state)
{
	uint32_t pids[8];
	uint16_t kinds[8];

	assert_int_equal(view_items("perf.mmap=bpf\nperf.sample_type=0x187\n",
				    pids, kinds),
			 4);
	assert_int_equal(pids[0], 1);
	assert_int_equal(kinds[0], JT_IT_BPF);
	assert_int_equal(pids[1], 1);
	assert_int_equal(kinds[1], JT_IT_PERF);
	assert_int_equal(pids[2], 2);
	assert_int_equal(kinds[3], JT_IT_BPF);
	/* -d: the data mapping's as well */
	assert_int_equal(view_items("perf.mmap=bpf\nperf.sample_type=0x18f\n",
				    pids, kinds),
			 5);
	assert_int_equal(kinds[3], JT_IT_PERF);
	assert_int_equal(pids[3], 2);
	assert_int_equal(view_items("perf.sample_type=0x18f\n", pids, kinds),
			 3);
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
		cmocka_unit_test(test_late_event_is_counted),
		cmocka_unit_test(test_rounds_order_a_stalled_recorder),
		cmocka_unit_test(test_perfmap_line_timed_by_later_write),
		cmocka_unit_test(test_perfmap_lines_of_one_write_are_one_item),
		cmocka_unit_test(test_perfmap_text_is_one_record_per_write),
		cmocka_unit_test(test_perfmap_text_matches_parsed_lines),
		cmocka_unit_test(test_refused_perfmap_counts_its_writes),
		cmocka_unit_test(test_window_matches_a_sort),
		cmocka_unit_test(test_perf_mmap2_made_from_bpf_events),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
