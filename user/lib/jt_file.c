// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "lib/chan.h"
#include "lib/cpus.h"
#include "lib/jt_file.h"
#include "lib/reserve.h"

#define WRITER_BUF (256 * 1024)

static int writer_start(struct jt_writer *w, int fd, struct jt_chan *c)
{
	struct jt_preamble p = { .version = JT_FILE_VERSION,
				 .size = sizeof(p) };

	memset(w, 0, sizeof(*w));
	w->fd = fd;
	w->chan = c;
	w->cap = WRITER_BUF;
	w->buf = malloc(w->cap);
	if (!w->buf)
		return -ENOMEM;
	memcpy(p.magic, JT_FILE_MAGIC, sizeof(p.magic));
	memcpy(w->buf, &p, sizeof(p));
	w->len = sizeof(p);
	return jt_writer_flush(w);
}

int jt_writer_open_fd(struct jt_writer *w, int fd)
{
	return writer_start(w, fd, NULL);
}

int jt_writer_open_chan(struct jt_writer *w, struct jt_chan *c)
{
	return writer_start(w, -1, c);
}

int jt_writer_open(struct jt_writer *w, const char *path)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	int err;

	if (fd < 0)
		return -errno;
	err = jt_writer_open_fd(w, fd);
	if (err == -ENOMEM)
		close(fd);
	return err;
}

/*
 * A failed write (a full disk) loses the whole buffer: cut what part of
 * it reached the file, so the file ends at a whole record and every
 * record not in it is counted in dropped.
 */
static void write_failed(struct jt_writer *w, int err)
{
	w->err = err;
	w->dropped += w->recs;
	if (ftruncate(w->fd, w->bytes) == 0)
		lseek(w->fd, w->bytes, SEEK_SET);
}

/* The buffer goes to the reader whole; a new one takes its place. */
static int flush_chan(struct jt_writer *w)
{
	int err = w->len ? jt_chan_put(w->chan, w->buf, w->len, w->cap) : 0;

	if (w->len) {
		w->buf = jt_chan_buffer(w->chan, WRITER_BUF);
		w->cap = WRITER_BUF;
	}
	if (!w->buf && !err)
		err = -ENOMEM;
	if (err) {
		w->err = -err;
		w->dropped += w->recs;
	} else {
		w->bytes += w->len;
	}
	w->len = 0;
	w->recs = 0;
	return err;
}

int jt_writer_flush(struct jt_writer *w)
{
	size_t off = 0;

	if (w->chan)
		return w->err ? -w->err : flush_chan(w);

	while (off < w->len && !w->err) {
		ssize_t n = write(w->fd, w->buf + off, w->len - off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			write_failed(w, errno);
		else
			off += n;
	}
	if (!w->err)
		w->bytes += off;
	w->len = 0;
	w->recs = 0;
	/* A big record (kallsyms) grew it once: the agent writes for days. */
	if (w->cap > WRITER_BUF) {
		char *buf = realloc(w->buf, WRITER_BUF);

		if (buf) {
			w->buf = buf;
			w->cap = WRITER_BUF;
		}
	}
	return -w->err;
}

/*
 * Each buffer handed over wakes the agent's reader: under process churn
 * every perf-map write makes a pass, and a buffer a pass cost the reader
 * 55 wake-ups a second. Within a tick nothing waits for them (the
 * reader's windows are seconds long); a buffer that fills sooner goes
 * at once (jt_writer_add).
 */
#define JT_CHAN_TICK_NS 100000000ull

int jt_writer_pass_done(struct jt_writer *w, uint64_t now_ns)
{
	if (w->chan && !w->err && now_ns - w->handed_ns < JT_CHAN_TICK_NS)
		return 0;
	w->handed_ns = now_ns;
	return jt_writer_flush(w);
}

/* One record from two pieces, so callers need not assemble a copy. */
int jt_writer_add(struct jt_writer *w, uint32_t type, const void *a,
		  size_t alen, const void *b, size_t blen)
{
	struct jt_rec_hdr h = { .type = type };
	size_t total = sizeof(h) + alen + blen, padded = JT_REC_ALIGN(total);

	if (total > JT_REC_MAX)
		return -E2BIG;
	if (w->err || (w->len + padded > w->cap && jt_writer_flush(w))) {
		w->dropped++;
		return -w->err;
	}
	if (padded > w->cap) {
		char *buf = realloc(w->buf, padded);

		if (!buf)
			return -ENOMEM;
		w->buf = buf;
		w->cap = padded;
	}
	h.size = total;
	memcpy(w->buf + w->len, &h, sizeof(h));
	memcpy(w->buf + w->len + sizeof(h), a, alen);
	if (blen)
		memcpy(w->buf + w->len + sizeof(h) + alen, b, blen);
	memset(w->buf + w->len + total, 0, padded - total);
	w->len += padded;
	w->recs++;
	return 0;
}

int jt_writer_close(struct jt_writer *w)
{
	int err = jt_writer_flush(w);

	if (w->chan)
		jt_chan_writer_done(w->chan);
	else if (close(w->fd) && !err)
		err = -errno;
	free(w->buf);
	w->buf = NULL;
	return err;
}

#define READ_CHUNK (256 * 1024)

static int stop(struct jt_reader *r, const char *why)
{
	r->truncated = 1;
	r->stop_offset = r->base + r->pos;
	snprintf(r->why, sizeof(r->why), "%s", why);
	return 0;
}

/*
 * A file of more than READ_AHEAD_MIN bytes is read on a thread of its
 * own, where the process may run on two CPUs: it hands the reader
 * buffers cut at record boundaries through a channel, as the agent's
 * capture does, and the reader reads them in place. Read on the
 * reader's thread, the file's 87 MB were copied by read(2) a window at a
 * time: 3% of report's time on the naming bench, and its page cache
 * misses the reader's.
 */
#define READ_AHEAD_MIN (8u << 20)
#define READ_AHEAD_BUF JT_REC_MAX /* holds any record whole */
#define READ_AHEAD_MAX READ_AHEAD_BUF

struct jt_readahead {
	struct jt_chan chan;
	pthread_t thread;
	int fd;
	int err; /* the read(2) error that ended it; read after the end */
};

/*
 * The end of the last whole record in buf[0, len), where records start
 * at *at (the first past the preamble, then 0); len where the sizes stop
 * making sense, and from then on.
 */
static size_t whole_records(const unsigned char *buf, size_t len, size_t *at,
			    bool *aligned)
{
	struct jt_rec_hdr h;
	size_t pos = *at;

	while (*aligned && pos + sizeof(h) <= len) {
		memcpy(&h, buf + pos, sizeof(h));
		if (h.size < sizeof(h) || h.size > JT_REC_MAX) {
			*aligned = false;
			break;
		}
		if (pos + JT_REC_ALIGN(h.size) > len)
			break;
		pos += JT_REC_ALIGN(h.size);
	}
	if (!*aligned || pos > len)
		return len;
	*at = 0;
	return pos;
}

/* The preamble's size: where the first record starts; 0 if unsure. */
static size_t preamble_size(const unsigned char *buf, size_t len)
{
	struct jt_preamble p;

	if (len < sizeof(p))
		return 0;
	memcpy(&p, buf, sizeof(p));
	if (memcmp(p.magic, JT_FILE_MAGIC, sizeof(p.magic)) ||
	    p.size < sizeof(p) || p.size % 8 || p.size > JT_REC_MAX)
		return 0;
	return p.size;
}

static ssize_t read_full(int fd, unsigned char *buf, size_t len)
{
	size_t have = 0;
	ssize_t got;

	while (have < len) {
		got = read(fd, buf + have, len - have);
		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0)
			return -errno;
		if (!got)
			break;
		have += got;
	}
	return have;
}

/*
 * Buffers of whole records, each record's bytes read once; what follows
 * the last whole one starts the next buffer, which holds it whole, as it
 * holds any record. At the end, or at an error (kept for the reader),
 * the rest goes as it is.
 */
static void *read_ahead(void *arg)
{
	struct jt_readahead *ra = arg;
	unsigned char *buf = NULL, *next;
	size_t carry = 0, at = 0, len, cut;
	bool aligned = true, first = true, end = false;
	ssize_t got;
	int err;

	while (!end) {
		if (!buf &&
		    !(buf = jt_chan_buffer(&ra->chan, READ_AHEAD_BUF))) {
			ra->err = -ENOMEM;
			break;
		}
		got = read_full(ra->fd, buf + carry, READ_AHEAD_BUF - carry);
		if (got < 0)
			ra->err = (int)got;
		len = carry + (got > 0 ? got : 0);
		if (first)
			aligned = (at = preamble_size(buf, len)) != 0;
		first = false;
		end = got <= 0;
		cut = end ? len : whole_records(buf, len, &at, &aligned);
		carry = len - cut;
		next = carry ? jt_chan_buffer(&ra->chan, READ_AHEAD_BUF) : NULL;
		if (next) {
			memcpy(next, buf + cut, carry);
		} else if (carry) {
			ra->err = -ENOMEM;
			end = true;
		}
		/* The channel frees what it cannot take. */
		if (cut &&
		    (err = jt_chan_put(&ra->chan, buf, cut, READ_AHEAD_BUF))) {
			ra->err = err;
			end = true;
		} else if (!cut) {
			free(buf); /* all of it is in next */
		}
		buf = next;
	}
	free(buf);
	jt_chan_writer_done(&ra->chan);
	return NULL;
}

/* 0: the reader reads from here on through chan; else it reads fd. */
static int readahead_start(struct jt_reader *r)
{
	struct jt_readahead *ra;
	sigset_t all, old;
	int err;

	if (r->size < READ_AHEAD_MIN || !jt_cpus_two() ||
	    !(ra = calloc(1, sizeof(*ra))))
		return -1;
	if (jt_chan_init(&ra->chan, READ_AHEAD_MAX)) {
		free(ra);
		return -1;
	}
	ra->fd = r->fd;
	/* Signals are the reader's to take. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	err = pthread_create(&ra->thread, NULL, read_ahead, ra);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (err) {
		jt_chan_free(&ra->chan);
		free(ra);
		return -1;
	}
	r->ra = ra;
	r->chan = &ra->chan;
	return 0;
}

static void readahead_stop(struct jt_readahead *ra)
{
	jt_chan_reader_done(&ra->chan);
	pthread_join(ra->thread, NULL);
	jt_chan_free(&ra->chan);
	free(ra);
}

/*
 * The writer's buffers hold whole records: a read window becomes the
 * next buffer, with no copy. Two are joined only if a record spans them.
 */
static int fill_chan(struct jt_reader *r, size_t need)
{
	size_t len, cap;
	void *data;

	while (r->have - r->pos < need && !r->eof) {
		jt_chan_take(r->chan, &data, &len, &cap);
		if (!data) {
			r->eof = 1;
			break;
		}
		if (r->pos == r->have) {
			jt_chan_recycle(r->chan, r->buf, r->cap);
			r->base += r->have;
			r->buf = data;
			r->cap = cap;
			r->have = len;
			r->pos = 0;
		} else {
			memmove(r->buf, r->buf + r->pos, r->have - r->pos);
			r->base += r->pos;
			r->have -= r->pos;
			r->pos = 0;
			if (jt_reserve(&r->buf, &r->cap, r->have + len, 1)) {
				free(data);
				return -ENOMEM;
			}
			memcpy(r->buf + r->have, data, len);
			r->have += len;
			free(data);
		}
		if (r->base + r->have > r->size)
			r->size = r->base + r->have;
	}
	return r->eof && r->ra ? r->ra->err : 0;
}

/* At least need bytes from pos on in the window, unless the input ends. */
static int fill(struct jt_reader *r, size_t need)
{
	ssize_t got;

	if (r->mem || r->have - r->pos >= need)
		return 0;
	if (r->chan)
		return fill_chan(r, need);
	if (r->pos) {
		memmove(r->buf, r->buf + r->pos, r->have - r->pos);
		r->base += r->pos;
		r->have -= r->pos;
		r->pos = 0;
	}
	if (jt_reserve(&r->buf, &r->cap, need + READ_CHUNK, 1))
		return -ENOMEM;
	while (!r->eof && r->have < need) {
		got = read(r->fd, r->buf + r->have, r->cap - r->have);
		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0)
			return -errno;
		if (!got)
			r->eof = 1;
		r->have += got;
		if (r->base + r->have > r->size)
			r->size = r->base + r->have;
	}
	return 0;
}

static int preamble(struct jt_reader *r)
{
	struct jt_preamble p;
	int err = fill(r, sizeof(p));

	if (err)
		return err;
	if (!r->have)
		return -ENODATA;
	if (r->have < sizeof(p))
		return -EINVAL;
	memcpy(&p, r->mem ? r->mem : r->buf, sizeof(p));
	if (memcmp(p.magic, JT_FILE_MAGIC, sizeof(p.magic)))
		return -EINVAL;
	if (p.version < JT_FILE_VERSION_MIN || p.version > JT_FILE_VERSION)
		return -EPROTO;
	/* Checked before it is read: a file must not size our buffers. */
	if (p.size < sizeof(p) || p.size % 8 || p.size > JT_REC_MAX ||
	    fill(r, p.size) || p.size > r->have)
		return -EINVAL;
	r->version = p.version;
	r->pos = p.size;
	return 0;
}

int jt_reader_open_mem(struct jt_reader *r, const void *buf, size_t size)
{
	memset(r, 0, sizeof(*r));
	r->fd = -1;
	r->mem = buf;
	r->have = r->size = size;
	r->eof = 1;
	if (size < sizeof(struct jt_preamble))
		return -EINVAL;
	return preamble(r);
}

/*
 * "-" is standard input. O_NONBLOCK: opening a FIFO that has no writer
 * must not hang; reading it then waits for data.
 */
int jt_reader_open(struct jt_reader *r, const char *path)
{
	int fd = strcmp(path, "-") ?
			 open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK) :
			 dup(0);
	struct stat st;
	int err = 0;

	memset(r, 0, sizeof(*r));
	r->fd = -1;
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st))
		err = -errno;
	else if (S_ISDIR(st.st_mode))
		err = -EISDIR;
	else if (!S_ISREG(st.st_mode) && !S_ISFIFO(st.st_mode) &&
		 !S_ISSOCK(st.st_mode))
		err = -ESPIPE;
	else if (fcntl(fd, F_SETFL, 0))
		err = -errno;
	if (err) {
		close(fd);
		return err;
	}
	r->fd = fd;
	if (S_ISREG(st.st_mode)) {
		r->size = st.st_size;
		readahead_start(r);
	}
	err = preamble(r);
	if (err)
		jt_reader_close(r);
	return err;
}

int jt_reader_open_chan(struct jt_reader *r, struct jt_chan *c)
{
	int err;

	memset(r, 0, sizeof(*r));
	r->fd = -1;
	r->chan = c;
	err = preamble(r);
	if (err)
		jt_reader_close(r);
	return err;
}

/* 1: a record; 0: end of the file, or the point where it stops being whole. */
int jt_reader_next(struct jt_reader *r, struct jt_rec *rec)
{
	const unsigned char *win;
	struct jt_rec_hdr h;
	size_t left;

	if (r->truncated)
		return 0;
	if (fill(r, sizeof(h)))
		return stop(r, "read error");
	if (r->pos == r->have)
		return 0;
	win = r->mem ? r->mem : r->buf;
	if (r->have - r->pos < sizeof(h)) {
		r->cut_at_end = 1;
		return stop(r, "partial record header");
	}
	memcpy(&h, win + r->pos, sizeof(h));
	if (h.size < sizeof(h) || h.size > JT_REC_MAX)
		return stop(r, "corrupt record size");
	if (fill(r, JT_REC_ALIGN(h.size)))
		return stop(r, "read error");
	win = r->mem ? r->mem : r->buf;
	left = r->have - r->pos;
	if (h.size > left) {
		r->cut_at_end = 1;
		return stop(r, "record cut short");
	}
	rec->type = h.type;
	rec->len = h.size - sizeof(h);
	rec->data = win + r->pos + sizeof(h);
	rec->offset = r->base + r->pos;
	/* A cut that loses only the padding still leaves a whole record. */
	r->pos += JT_REC_ALIGN(h.size) <= left ? JT_REC_ALIGN(h.size) : left;
	return 1;
}

void jt_reader_close(struct jt_reader *r)
{
	if (r->chan)
		jt_chan_reader_done(r->chan);
	r->chan = NULL;
	/* Before the file is closed: the thread reads it. */
	if (r->ra)
		readahead_stop(r->ra);
	r->ra = NULL;
	if (r->fd >= 0)
		close(r->fd);
	r->fd = -1;
	free(r->buf);
	r->buf = NULL;
}
