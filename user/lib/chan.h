/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Buffers handed from one writer thread to one reader thread of the same
 * process: the agent's capture gives its reader each flushed buffer of
 * whole records, where a pipe copied them into the kernel and out again
 * (a tenth of the agent's time under process churn). Bounded as the pipe
 * was: a writer more than max bytes ahead waits, so a reader that falls
 * behind stops the capture, whose BPF ring then counts what it loses.
 */
#ifndef JT_CHAN_H
#define JT_CHAN_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>

struct jt_chan_buf {
	struct jt_chan_buf *next;
	void *data;
	size_t len;
	size_t cap;
};

struct jt_chan {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct jt_chan_buf *head, *tail;
	struct jt_chan_buf *spare; /* emptied by the reader, for the writer */
	size_t queued;		   /* bytes */
	size_t max;
	bool writer_done;
	bool reader_done;
};

int jt_chan_init(struct jt_chan *c, size_t max);
/*
 * The writer gives data (len bytes of cap, from malloc), waiting while
 * the reader is max bytes behind. The channel owns data from here: it
 * is freed at -EPIPE (the reader has gone) or -ENOMEM.
 */
int jt_chan_put(struct jt_chan *c, void *data, size_t len, size_t cap);
/* A buffer of cap bytes for the writer: the reader's spare, or new. */
void *jt_chan_buffer(struct jt_chan *c, size_t cap);
/*
 * The next buffer, waiting for one; *data NULL at the end. The
 * reader owns it until it gives it back with jt_chan_recycle.
 */
void jt_chan_take(struct jt_chan *c, void **data, size_t *len, size_t *cap);
void jt_chan_recycle(struct jt_chan *c, void *data, size_t cap);
/* Either side is done: the other sees the end, or -EPIPE. */
void jt_chan_writer_done(struct jt_chan *c);
void jt_chan_reader_done(struct jt_chan *c);
/* After both sides are done. */
void jt_chan_free(struct jt_chan *c);

#endif
