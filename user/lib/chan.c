// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <errno.h>
#include <stdlib.h>
#include "lib/chan.h"

int jt_chan_init(struct jt_chan *c, size_t max)
{
	*c = (struct jt_chan){ .max = max };
	if (pthread_mutex_init(&c->lock, NULL))
		return -ENOMEM;
	if (pthread_cond_init(&c->cond, NULL)) {
		pthread_mutex_destroy(&c->lock);
		return -ENOMEM;
	}
	return 0;
}

int jt_chan_put(struct jt_chan *c, void *data, size_t len, size_t cap)
{
	struct jt_chan_buf *b = malloc(sizeof(*b));
	int err = 0;

	if (!b) {
		free(data);
		return -ENOMEM;
	}
	*b = (struct jt_chan_buf){ .data = data, .len = len, .cap = cap };
	pthread_mutex_lock(&c->lock);
	while (c->queued && c->queued + len > c->max && !c->reader_done)
		pthread_cond_wait(&c->cond, &c->lock);
	if (c->reader_done) {
		err = -EPIPE;
		free(data);
		free(b);
	} else {
		if (c->tail)
			c->tail->next = b;
		else
			c->head = b;
		c->tail = b;
		c->queued += len;
		pthread_cond_broadcast(&c->cond);
	}
	pthread_mutex_unlock(&c->lock);
	return err;
}

/* A spare of another size (one a big record grew) is not kept. */
void *jt_chan_buffer(struct jt_chan *c, size_t cap)
{
	struct jt_chan_buf *b;
	void *data = NULL;

	pthread_mutex_lock(&c->lock);
	b = c->spare;
	c->spare = NULL;
	pthread_mutex_unlock(&c->lock);
	if (b && b->cap == cap)
		data = b->data;
	else if (b)
		free(b->data);
	free(b);
	return data ? data : malloc(cap);
}

void jt_chan_take(struct jt_chan *c, void **data, size_t *len, size_t *cap)
{
	struct jt_chan_buf *b;

	pthread_mutex_lock(&c->lock);
	while (!c->head && !c->writer_done)
		pthread_cond_wait(&c->cond, &c->lock);
	b = c->head;
	if (b) {
		c->head = b->next;
		if (!c->head)
			c->tail = NULL;
		c->queued -= b->len;
		pthread_cond_broadcast(&c->cond);
	}
	pthread_mutex_unlock(&c->lock);
	*data = b ? b->data : NULL;
	*len = b ? b->len : 0;
	*cap = b ? b->cap : 0;
	free(b);
}

/* One spare is enough: the writer takes it back at its next flush. */
void jt_chan_recycle(struct jt_chan *c, void *data, size_t cap)
{
	struct jt_chan_buf *b = data ? malloc(sizeof(*b)) : NULL;

	if (!b) {
		free(data);
		return;
	}
	*b = (struct jt_chan_buf){ .data = data, .cap = cap };
	pthread_mutex_lock(&c->lock);
	if (c->spare) {
		free(c->spare->data);
		free(c->spare);
	}
	c->spare = b;
	pthread_mutex_unlock(&c->lock);
}

void jt_chan_writer_done(struct jt_chan *c)
{
	pthread_mutex_lock(&c->lock);
	c->writer_done = true;
	pthread_cond_broadcast(&c->cond);
	pthread_mutex_unlock(&c->lock);
}

void jt_chan_reader_done(struct jt_chan *c)
{
	pthread_mutex_lock(&c->lock);
	c->reader_done = true;
	pthread_cond_broadcast(&c->cond);
	pthread_mutex_unlock(&c->lock);
}

static void free_list(struct jt_chan_buf *b)
{
	struct jt_chan_buf *next;

	for (; b; b = next) {
		next = b->next;
		free(b->data);
		free(b);
	}
}

void jt_chan_free(struct jt_chan *c)
{
	free_list(c->head);
	free_list(c->spare);
	pthread_cond_destroy(&c->cond);
	pthread_mutex_destroy(&c->lock);
	*c = (struct jt_chan){};
}
