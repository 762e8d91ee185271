// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The recording format: round trip, truncation at every byte,
 * corruption, and the read-ahead thread against reading in place.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>
#include "jt_abi.h"
#include <pthread.h>
#include "lib/chan.h"
#include "lib/jt_file.h"
#include "model/stream.h"

static char path[] = "/tmp/jt_test_file_XXXXXX";

static void *slurp(const char *p, size_t *len)
{
	FILE *f = fopen(p, "rb");
	char *buf;

	assert_non_null(f);
	fseek(f, 0, SEEK_END);
	*len = ftell(f);
	rewind(f);
	buf = malloc(*len);
	assert_int_equal(fread(buf, 1, *len, f), *len);
	fclose(f);
	return buf;
}

/* Three records; returns the offset where the last one starts. */
static size_t write_sample_file(void)
{
	struct jt_writer w;
	struct jt_exit_event ev = { .h = { .type = JT_EV_EXIT,
					   .size = sizeof(ev),
					   .pid = 7,
					   .time = 5 } };
	size_t last;

	assert_int_equal(jt_writer_open(&w, path), 0);
	jt_writer_add(&w, JT_REC_META, "a=1\nb=2\n", 8, NULL, 0);
	jt_writer_add(&w, JT_REC_BPF, &ev, sizeof(ev), NULL, 0);
	last = w.bytes + w.len;
	jt_writer_add(&w, JT_REC_BPF, &ev, 10, (char *)&ev + 10,
		      sizeof(ev) - 10);
	assert_int_equal(jt_writer_close(&w), 0);
	return last;
}

static int count(struct jt_reader *r)
{
	struct jt_rec rec;
	int n = 0;

	while (jt_reader_next(r, &rec) == 1)
		n++;
	return n;
}

static void test_round_trip(void **state)
{
	struct jt_reader r;
	struct jt_rec rec;
	const struct jt_exit_event *ev;

	write_sample_file();
	assert_int_equal(jt_reader_open(&r, path), 0);
	assert_int_equal(jt_reader_next(&r, &rec), 1);
	assert_int_equal(rec.type, JT_REC_META);
	assert_memory_equal(rec.data, "a=1\nb=2\n", 8);
	assert_int_equal(jt_reader_next(&r, &rec), 1);
	assert_int_equal(jt_reader_next(&r, &rec), 1);
	ev = rec.data;
	assert_int_equal(rec.len, sizeof(*ev));
	assert_int_equal(ev->h.pid, 7);
	assert_int_equal(jt_reader_next(&r, &rec), 0);
	assert_false(r.truncated);
	jt_reader_close(&r);
}

/* A recorder killed mid-write leaves any prefix: every one must read. */
static void test_cut_at_every_byte_of_last_record(void **state)
{
	size_t last = write_sample_file(), len, cut;
	char *buf = slurp(path, &len);

	for (cut = last; cut < len; cut++) {
		struct jt_reader r;

		assert_int_equal(jt_reader_open_mem(&r, buf, cut), 0);
		assert_int_equal(count(&r), 2);
		assert_int_equal(r.truncated, cut != last);
		assert_int_equal(r.cut_at_end, cut != last);
		if (cut != last)
			assert_int_equal(r.stop_offset, last);
	}
	free(buf);
}

/* Records are padded to 8 bytes; losing only padding loses nothing. */
static void test_cut_in_padding_is_whole(void **state)
{
	struct jt_writer w;
	struct jt_reader r;
	struct jt_rec rec;
	size_t len, cut;
	char *buf;

	assert_int_equal(jt_writer_open(&w, path), 0);
	jt_writer_add(&w, JT_REC_META, "odd=13bytes\n", 13, NULL, 0);
	jt_writer_close(&w);
	buf = slurp(path, &len);
	assert_int_equal(len, 16 + 24); /* preamble, 8 + 13 padded to 24 */
	for (cut = 16 + 8 + 13; cut <= len; cut++) {
		assert_int_equal(jt_reader_open_mem(&r, buf, cut), 0);
		assert_int_equal(jt_reader_next(&r, &rec), 1);
		assert_int_equal(rec.len, 13);
		assert_int_equal(jt_reader_next(&r, &rec), 0);
		assert_false(r.truncated);
	}
	assert_int_equal(jt_reader_open_mem(&r, buf, 16 + 8 + 12), 0);
	assert_int_equal(jt_reader_next(&r, &rec), 0);
	assert_true(r.truncated);
	free(buf);
}

/* Records larger than the writer's buffer (kallsyms, JIT file pieces). */
static void test_large_records(void **state)
{
	size_t big = 900 * 1024, i;
	char *data = malloc(big);
	struct jt_writer w;
	struct jt_reader r;
	struct jt_rec rec;

	for (i = 0; i < big; i++)
		data[i] = i * 7;
	assert_int_equal(jt_writer_open(&w, path), 0);
	assert_int_equal(jt_writer_add(&w, JT_REC_META, "a", 1, NULL, 0), 0);
	assert_int_equal(
		jt_writer_add(&w, JT_REC_JIT, data, 8, data + 8, big - 8), 0);
	assert_true(w.cap > big);
	assert_int_equal(
		jt_writer_add(&w, JT_REC_JIT, data, JT_REC_MAX, NULL, 0),
		-E2BIG);
	/* Grown for one record, the buffer does not stay grown. */
	assert_int_equal(jt_writer_flush(&w), 0);
	assert_int_equal(w.cap, 256 * 1024);
	assert_int_equal(jt_writer_close(&w), 0);
	assert_int_equal(jt_reader_open(&r, path), 0);
	assert_int_equal(jt_reader_next(&r, &rec), 1);
	assert_int_equal(jt_reader_next(&r, &rec), 1);
	assert_int_equal(rec.len, big);
	assert_memory_equal(rec.data, data, big);
	assert_int_equal(jt_reader_next(&r, &rec), 0);
	jt_reader_close(&r);
	free(data);
}

static void test_corrupt_sizes(void **state)
{
	size_t last = write_sample_file(), len;
	char *buf = slurp(path, &len);
	struct jt_reader r;
	uint32_t bad[] = { 0, 7, JT_REC_MAX + 1, 0xffffffff };
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		memcpy(buf + last + 4, &bad[i], 4);
		assert_int_equal(jt_reader_open_mem(&r, buf, len), 0);
		assert_int_equal(count(&r), 2);
		assert_true(r.truncated);
		/* Bytes follow it: damage, not a writer that stopped. */
		assert_false(r.cut_at_end);
		assert_int_equal(r.stop_offset, last);
	}
	free(buf);
}

static void test_bad_preamble(void **state)
{
	size_t len;
	char *buf;
	struct jt_reader r;

	write_sample_file();
	buf = slurp(path, &len);
	assert_int_equal(jt_reader_open_mem(&r, buf, 10), -EINVAL);
	buf[0] = 'X';
	assert_int_equal(jt_reader_open_mem(&r, buf, len), -EINVAL);
	buf[0] = 'J';
	buf[8] = 99; /* version */
	assert_int_equal(jt_reader_open_mem(&r, buf, len), -EPROTO);
	free(buf);
}

static void add_exit(struct jt_writer *w, uint32_t pid, uint64_t time)
{
	struct jt_exit_event ev = { .h = { .type = JT_EV_EXIT,
					   .size = sizeof(ev),
					   .pid = pid,
					   .time = time } };

	jt_writer_add(w, JT_REC_BPF, &ev, sizeof(ev), NULL, 0);
}

/* Out-of-order input comes out in time order; ties keep file order. */
static void test_stream_orders_by_time(void **state)
{
	struct jt_writer w;
	struct jt_stream s;
	char msg[256];
	uint32_t want[] = { 2, 3, 4, 1 };
	size_t i;

	assert_int_equal(jt_writer_open(&w, path), 0);
	add_exit(&w, 1, 300);
	add_exit(&w, 2, 100);
	add_exit(&w, 3, 200);
	add_exit(&w, 4, 200);
	jt_writer_close(&w);
	assert_int_equal(jt_stream_open(&s, path, msg, sizeof(msg)), 0);
	for (i = 0; i < 4; i++) {
		struct jt_item *it = jt_stream_next(&s);

		assert_non_null(it);
		assert_int_equal(((const struct jt_hdr *)it->data)->pid,
				 want[i]);
		free(it);
	}
	assert_null(jt_stream_next(&s));
	assert_false(s.finished);
	jt_stream_free(&s);
}

/*
 * Items put back are kept for reuse as long as the pool holds no more
 * than are still out, or fewer than 4096: memory stays within twice
 * what is live, and a window that swings by thousands is not malloc's.
 */
static size_t pool_after(size_t n)
{
	struct jt_item **out = calloc(n, sizeof(*out));
	struct jt_writer w;
	struct jt_stream s;
	char msg[256];
	size_t i, kept;

	assert_int_equal(jt_writer_open(&w, path), 0);
	for (i = 0; i < n; i++)
		add_exit(&w, i + 1, 100 + i);
	jt_writer_close(&w);
	assert_int_equal(jt_stream_open(&s, path, msg, sizeof(msg)), 0);
	for (i = 0; i < n; i++)
		assert_non_null(out[i] = jt_stream_next(&s));
	assert_null(jt_stream_next(&s));
	assert_int_equal(s.nout, n);
	for (i = 0; i < n; i++)
		jt_stream_put(&s, out[i]);
	assert_int_equal(s.nout, 0);
	kept = s.npool;
	jt_stream_free(&s);
	free(out);
	return kept;
}

static void test_stream_pool_follows_items_out(void **state)
{
	assert_int_equal(pool_after(3000), 3000);
	assert_int_equal(pool_after(6000), 4096);
	/* Each put back keeps it while the pool is under what is still out. */
	assert_int_equal(pool_after(20000), 10000);
}

static void test_stream_rejects_non_recording(void **state)
{
	struct jt_stream s;
	char msg[256];
	FILE *f = fopen(path, "w");

	fputs("this is not a recording at all", f);
	fclose(f);
	assert_int_equal(jt_stream_open(&s, path, msg, sizeof(msg)), -EINVAL);
	assert_non_null(strstr(msg, "not a jittrace recording"));
}

#define CHAN_RECS 20000

/* Record i: i's bytes, 1 to 2000 of them, and now and then 300 KB. */
static size_t chan_rec_len(uint32_t i)
{
	return i % 5000 == 4999 ? 300000 : 1 + (i * 7919) % 2000;
}

static void *chan_writer(void *arg)
{
	static unsigned char buf[300000];
	struct jt_writer w;
	uint32_t i;

	assert_int_equal(jt_writer_open_chan(&w, arg), 0);
	for (i = 0; i < CHAN_RECS; i++) {
		memset(buf, i & 0xff, chan_rec_len(i));
		assert_int_equal(jt_writer_add(&w, 9, &i, sizeof(i), buf,
					       chan_rec_len(i)),
				 0);
		if (i % 1000 == 0)
			jt_writer_flush(&w);
	}
	assert_int_equal(jt_writer_close(&w), 0);
	return NULL;
}

/* A writer thread on a channel of max bytes, and its reader. */
static void chan_start(struct jt_chan *c, size_t max, void *(*writer)(void *),
		       pthread_t *t, struct jt_reader *r)
{
	assert_int_equal(jt_chan_init(c, max), 0);
	assert_int_equal(pthread_create(t, NULL, writer, c), 0);
	assert_int_equal(jt_reader_open_chan(r, c), 0);
}

/*
 * The agent's capture to its reader, through a channel of 64 KiB: every
 * record whole and in order, big ones too, while the writer waits on a
 * reader that falls behind.
 */
static void test_channel_round_trip(void **state)
{
	struct jt_chan c;
	struct jt_reader r;
	struct jt_rec rec;
	pthread_t t;
	uint32_t i = 0, id;

	chan_start(&c, 64 * 1024, chan_writer, &t, &r);
	while (jt_reader_next(&r, &rec) == 1) {
		const unsigned char *p = rec.data;

		assert_int_equal(rec.type, 9);
		memcpy(&id, p, sizeof(id));
		assert_int_equal(id, i);
		assert_int_equal(rec.len, sizeof(id) + chan_rec_len(i));
		assert_int_equal(p[sizeof(id)], i & 0xff);
		assert_int_equal(p[rec.len - 1], i & 0xff);
		if (i % 3000 == 0)
			usleep(1000);
		i++;
	}
	assert_int_equal(i, CHAN_RECS);
	assert_false(r.truncated);
	jt_reader_close(&r);
	pthread_join(t, NULL);
	jt_chan_free(&c);
}

static void *chan_flooder(void *arg)
{
	struct jt_writer w;
	uint64_t x = 0;

	assert_int_equal(jt_writer_open_chan(&w, arg), 0);
	while (!jt_writer_add(&w, 9, &x, sizeof(x), NULL, 0))
		x++;
	assert_int_equal(w.err, EPIPE);
	jt_writer_close(&w);
	return NULL;
}

/* A reader that goes away ends the writer's wait: -EPIPE, not a hang. */
static void test_channel_reader_gone(void **state)
{
	struct jt_chan c;
	struct jt_reader r;
	struct jt_rec rec;
	pthread_t t;

	chan_start(&c, 4096, chan_flooder, &t, &r);
	assert_int_equal(jt_reader_next(&r, &rec), 1);
	jt_reader_close(&r);
	pthread_join(t, NULL);
	jt_chan_free(&c);
}

static size_t chan_buffers(const struct jt_chan *c)
{
	const struct jt_chan_buf *b;
	size_t n = 0;

	for (b = c->head; b; b = b->next)
		n++;
	return n;
}

/*
 * A pass's end hands the agent's reader a buffer once a tick, not once
 * a pass (each one wakes it), and one that fills goes at once; a file
 * gets every pass's records.
 */
static void test_pass_hands_a_buffer_a_tick(void **state)
{
	const uint64_t t0 = 5000000000ull, ms = 1000000;
	static char big[64 * 1024];
	struct jt_writer w, f;
	struct jt_chan c;
	uint64_t x = 1, bytes;
	size_t n;

	assert_int_equal(jt_chan_init(&c, 1 << 30), 0);
	assert_int_equal(jt_writer_open_chan(&w, &c), 0);
	n = chan_buffers(&c); /* the preamble */
	jt_writer_add(&w, 9, &x, sizeof(x), NULL, 0);
	assert_int_equal(jt_writer_pass_done(&w, t0), 0);
	assert_int_equal(chan_buffers(&c), n + 1);
	jt_writer_add(&w, 9, &x, sizeof(x), NULL, 0);
	assert_int_equal(jt_writer_pass_done(&w, t0 + 40 * ms), 0);
	jt_writer_add(&w, 9, &x, sizeof(x), NULL, 0);
	assert_int_equal(jt_writer_pass_done(&w, t0 + 99 * ms), 0);
	assert_int_equal(chan_buffers(&c), n + 1);
	assert_int_equal(jt_writer_pass_done(&w, t0 + 100 * ms), 0);
	assert_int_equal(chan_buffers(&c), n + 2);
	bytes = w.bytes;
	while (w.bytes == bytes)
		assert_int_equal(
			jt_writer_add(&w, 9, big, sizeof(big), NULL, 0), 0);
	assert_int_equal(chan_buffers(&c), n + 3);
	jt_chan_reader_done(&c);
	jt_writer_close(&w);
	jt_chan_free(&c);

	assert_int_equal(jt_writer_open(&f, path), 0);
	bytes = f.bytes;
	jt_writer_add(&f, 9, &x, sizeof(x), NULL, 0);
	assert_int_equal(jt_writer_pass_done(&f, t0), 0);
	jt_writer_add(&f, 9, &x, sizeof(x), NULL, 0);
	assert_int_equal(jt_writer_pass_done(&f, t0 + ms), 0);
	assert_int_equal(f.bytes, bytes + 2 * JT_REC_ALIGN(8 + sizeof(x)));
	assert_int_equal(jt_writer_close(&f), 0);
}

/*
 * A file past READ_AHEAD_MIN: records of 8 to 300 bytes, every 700th
 * one of 100K to 600K and every 1,500th of up to JT_REC_MAX, so records
 * straddle the thread's buffers, and outgrow them, at many points. Returns the
 * offset of the record that starts at or after mid.
 */
#define AHEAD_FILE (12u << 20)

static size_t write_ahead_file(size_t mid)
{
	static char data[JT_REC_MAX];
	unsigned int seed = 5;
	struct jt_writer w;
	size_t i, n, at_mid = 0;

	for (i = 0; i < sizeof(data); i++)
		data[i] = (char)(i * 13 + i / 251);
	assert_int_equal(jt_writer_open(&w, path), 0);
	for (i = 0; w.bytes + w.len < AHEAD_FILE; i++) {
		n = i % 1500 == 1499 ?
			    JT_REC_MAX - 8 - (size_t)rand_r(&seed) % 4096 :
		    i % 700 == 699 ? 100000 + (size_t)rand_r(&seed) % 500000 :
				     (size_t)rand_r(&seed) % 293;
		if (!at_mid && w.bytes + w.len >= mid)
			at_mid = w.bytes + w.len;
		assert_int_equal(
			jt_writer_add(&w, 1 + i % 7, data + i % 64, n, NULL, 0),
			0);
	}
	assert_int_equal(jt_writer_close(&w), 0);
	return at_mid;
}

/* Both readers give the same records and stop at the same place. */
static void compare_readers(const char *buf, size_t len)
{
	struct jt_reader a, b;
	struct jt_rec x, y;
	int more;

	assert_int_equal(jt_reader_open(&a, path), 0);
	if (!a.ra) {
		jt_reader_close(&a);
		fprintf(stderr, "SKIP: this process may run on one CPU only: "
				"no read-ahead thread\n");
		skip();
	}
	assert_int_equal(jt_reader_open_mem(&b, buf, len), 0);
	do {
		more = jt_reader_next(&a, &x);
		assert_int_equal(jt_reader_next(&b, &y), more);
		if (more) {
			assert_int_equal(x.type, y.type);
			assert_int_equal(x.len, y.len);
			assert_int_equal(x.offset, y.offset);
			assert_memory_equal(x.data, y.data, x.len);
		}
	} while (more);
	assert_int_equal(a.truncated, b.truncated);
	assert_int_equal(a.cut_at_end, b.cut_at_end);
	assert_int_equal(a.stop_offset, b.stop_offset);
	assert_string_equal(a.why, b.why);
	assert_int_equal(a.size, len);
	jt_reader_close(&a);
}

static void test_read_ahead_reads_what_reading_in_place_reads(void **state)
{
	size_t len, mid = write_ahead_file(AHEAD_FILE / 4 * 3);
	char *buf = slurp(path, &len);
	uint32_t bad = 3;

	compare_readers(buf, len);
	/* Cut short inside a record, as a killed recorder leaves it. */
	assert_int_equal(truncate(path, mid + 5), 0);
	compare_readers(buf, mid + 5);
	/* A corrupt size in the middle: both stop there, not at the end. */
	memcpy(buf + mid + 4, &bad, sizeof(bad));
	{
		FILE *f = fopen(path, "wb");

		assert_non_null(f);
		assert_int_equal(fwrite(buf, 1, len, f), len);
		assert_int_equal(fclose(f), 0);
	}
	compare_readers(buf, len);
	free(buf);
}

/* A reader closed midway stops the thread, which may be waiting on it. */
static void test_read_ahead_stops_with_its_reader(void **state)
{
	struct jt_reader r;
	struct jt_rec rec;
	int i;

	write_ahead_file(0);
	assert_int_equal(jt_reader_open(&r, path), 0);
	for (i = 0; i < 10; i++)
		assert_int_equal(jt_reader_next(&r, &rec), 1);
	jt_reader_close(&r);
	assert_null(r.ra);
	assert_int_equal(r.fd, -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_round_trip),
		cmocka_unit_test(test_channel_round_trip),
		cmocka_unit_test(test_channel_reader_gone),
		cmocka_unit_test(test_pass_hands_a_buffer_a_tick),
		cmocka_unit_test(test_cut_at_every_byte_of_last_record),
		cmocka_unit_test(test_cut_in_padding_is_whole),
		cmocka_unit_test(test_large_records),
		cmocka_unit_test(
			test_read_ahead_reads_what_reading_in_place_reads),
		cmocka_unit_test(test_read_ahead_stops_with_its_reader),
		cmocka_unit_test(test_corrupt_sizes),
		cmocka_unit_test(test_bad_preamble),
		cmocka_unit_test(test_stream_orders_by_time),
		cmocka_unit_test(test_stream_pool_follows_items_out),
		cmocka_unit_test(test_stream_rejects_non_recording),
	};
	int fd = mkstemp(path), rc;

	if (fd < 0)
		return 1;
	close(fd);
	rc = cmocka_run_group_tests_name("file", tests, NULL, NULL);
	unlink(path);
	return rc;
}
