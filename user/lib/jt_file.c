// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include "lib/jt_file.h"
#include "lib/reserve.h"

#define WRITER_BUF (256 * 1024)

int jt_writer_open_fd(struct jt_writer *w, int fd)
{
	struct jt_preamble p = { .version = JT_FILE_VERSION,
				 .size = sizeof(p) };

	memset(w, 0, sizeof(*w));
	w->fd = fd;
	w->cap = WRITER_BUF;
	w->buf = malloc(w->cap);
	if (!w->buf)
		return -ENOMEM;
	memcpy(p.magic, JT_FILE_MAGIC, sizeof(p.magic));
	memcpy(w->buf, &p, sizeof(p));
	w->len = sizeof(p);
	return jt_writer_flush(w);
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

int jt_writer_flush(struct jt_writer *w)
{
	size_t off = 0;

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
	return -w->err;
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

	if (close(w->fd) && !err)
		err = -errno;
	free(w->buf);
	w->buf = NULL;
	return err;
}

static int stop(struct jt_reader *r, const char *why)
{
	r->truncated = 1;
	r->stop_offset = r->pos;
	snprintf(r->why, sizeof(r->why), "%s", why);
	return 0;
}

int jt_reader_open_mem(struct jt_reader *r, const void *buf, size_t size)
{
	struct jt_preamble p;

	memset(r, 0, sizeof(*r));
	r->map = buf;
	r->size = size;
	if (size < sizeof(p))
		return -EINVAL;
	memcpy(&p, buf, sizeof(p));
	if (memcmp(p.magic, JT_FILE_MAGIC, sizeof(p.magic)))
		return -EINVAL;
	if (p.version != JT_FILE_VERSION)
		return -EPROTO;
	if (p.size < sizeof(p) || p.size > size || p.size % 8)
		return -EINVAL;
	r->version = p.version;
	r->pos = p.size;
	return 0;
}

/* A pipe or FIFO cannot be mapped: read it whole. */
static int slurp(int fd, unsigned char **out, size_t *size)
{
	unsigned char *buf = NULL;
	size_t cap = 0, len = 0;
	ssize_t got;
	int err = 0;

	if (fcntl(fd, F_SETFL, 0))
		return -errno;
	do {
		err = jt_reserve(&buf, &cap, len + 65536, 1);
		if (err)
			break;
		got = read(fd, buf + len, cap - len);
		if (got < 0 && errno != EINTR)
			err = -errno;
		else if (got > 0)
			len += got;
	} while (!err && got != 0);
	if (!err && !len)
		err = -ENODATA;
	if (err)
		free(buf);
	*out = err ? NULL : buf;
	*size = len;
	return err;
}

static int open_unmappable(struct jt_reader *r, int fd)
{
	unsigned char *buf = NULL;
	size_t size = 0;
	int err = slurp(fd, &buf, &size);

	if (!err)
		err = jt_reader_open_mem(r, buf, size);
	if (err)
		free(buf);
	else
		r->owned = JT_READER_HEAP;
	return err;
}

static int open_mapped(struct jt_reader *r, int fd, size_t size)
{
	void *map;
	int err;

	if (size == 0)
		return -ENODATA;
	map = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
	if (map == MAP_FAILED)
		return -errno;
	err = jt_reader_open_mem(r, map, size);
	if (err)
		munmap(map, size);
	else
		r->owned = JT_READER_MAPPED;
	return err;
}

/*
 * "-" is standard input. O_NONBLOCK: opening a FIFO that has no writer
 * must not hang; reading it then finds no data.
 */
int jt_reader_open(struct jt_reader *r, const char *path)
{
	int fd = strcmp(path, "-") ?
			 open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK) :
			 dup(0);
	struct stat st;
	int err;

	if (fd < 0)
		return -errno;
	if (fstat(fd, &st))
		err = -errno;
	else if (S_ISDIR(st.st_mode))
		err = -EISDIR;
	else if (S_ISREG(st.st_mode))
		err = open_mapped(r, fd, st.st_size);
	else if (S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode))
		err = open_unmappable(r, fd);
	else
		err = -ESPIPE;
	close(fd);
	return err;
}

/* 1: a record; 0: end of the file, or the point where it stops being whole. */
int jt_reader_next(struct jt_reader *r, struct jt_rec *rec)
{
	struct jt_rec_hdr h;

	if (r->truncated || r->pos == r->size)
		return 0;
	if (r->size - r->pos < sizeof(h))
		return stop(r, "partial record header");
	memcpy(&h, r->map + r->pos, sizeof(h));
	if (h.size < sizeof(h) || h.size > JT_REC_MAX)
		return stop(r, "corrupt record size");
	if (h.size > r->size - r->pos)
		return stop(r, "record cut short");
	rec->type = h.type;
	rec->len = h.size - sizeof(h);
	rec->data = r->map + r->pos + sizeof(h);
	rec->offset = r->pos;
	/* A cut that loses only the padding still leaves a whole record. */
	r->pos += JT_REC_ALIGN(h.size) <= r->size - r->pos ?
			  JT_REC_ALIGN(h.size) :
			  r->size - r->pos;
	return 1;
}

void jt_reader_close(struct jt_reader *r)
{
	/* A reader over caller memory (tests, fuzzers) has nothing to free. */
	if (r->owned == JT_READER_MAPPED)
		munmap((void *)r->map, r->size);
	else if (r->owned == JT_READER_HEAP)
		free((void *)r->map);
	r->map = NULL;
}
