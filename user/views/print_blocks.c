// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Formatting report's 200K rows was 6% of its reading thread, and they
 * print in order. So the odd blocks are formatted on a second thread
 * into memory, at most two ahead, while this one prints the even
 * blocks and copies the odd ones out in their turn. A block the other
 * thread could not format (no memory) is formatted here.
 */
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <sys/param.h>
#include "views/print_blocks.h"

struct job {
	size_t n;
	jt_print_fn fn;
	void *there;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	size_t made, taken; /* odd blocks formatted, and printed */
	char *buf[2];	    /* by (block / 2) % 2; NULL: format it here */
	size_t len[2];
};

static size_t block_end(size_t n, size_t b)
{
	return MIN((b + 1) * JT_PRINT_BLOCK, n);
}

static void *format_odd(void *arg)
{
	struct job *j = arg;
	size_t b, at, nb = (j->n + JT_PRINT_BLOCK - 1) / JT_PRINT_BLOCK;
	FILE *f;

	for (b = 1; b < nb; b += 2) {
		pthread_mutex_lock(&j->lock);
		while (j->made - j->taken == 2)
			pthread_cond_wait(&j->cond, &j->lock);
		pthread_mutex_unlock(&j->lock);
		at = b / 2 % 2;
		f = open_memstream(&j->buf[at], &j->len[at]);
		if (f) {
			j->fn(j->there, f, b * JT_PRINT_BLOCK,
			      block_end(j->n, b));
			if (fclose(f)) {
				free(j->buf[at]);
				j->buf[at] = NULL;
			}
		}
		pthread_mutex_lock(&j->lock);
		j->made++;
		pthread_cond_signal(&j->cond);
		pthread_mutex_unlock(&j->lock);
	}
	return NULL;
}

static void print_odd(struct job *j, FILE *f, size_t b, void *here)
{
	size_t at = b / 2 % 2;

	pthread_mutex_lock(&j->lock);
	while (j->made <= b / 2)
		pthread_cond_wait(&j->cond, &j->lock);
	pthread_mutex_unlock(&j->lock);
	if (j->buf[at])
		fwrite_unlocked(j->buf[at], 1, j->len[at], f);
	else
		j->fn(here, f, b * JT_PRINT_BLOCK, block_end(j->n, b));
	free(j->buf[at]);
	j->buf[at] = NULL;
	pthread_mutex_lock(&j->lock);
	j->taken++;
	pthread_cond_signal(&j->cond);
	pthread_mutex_unlock(&j->lock);
}

void jt_print_blocks(FILE *f, size_t n, jt_print_fn fn, void *here, void *there)
{
	struct job j = { .n = n,
			 .fn = fn,
			 .there = there,
			 .lock = PTHREAD_MUTEX_INITIALIZER,
			 .cond = PTHREAD_COND_INITIALIZER };
	size_t b, nb = (n + JT_PRINT_BLOCK - 1) / JT_PRINT_BLOCK;
	pthread_t t;

	if (n < JT_PRINT_SPLIT_MIN ||
	    pthread_create(&t, NULL, format_odd, &j)) {
		fn(here, f, 0, n);
		return;
	}
	for (b = 0; b < nb; b++) {
		if (b % 2)
			print_odd(&j, f, b, here);
		else
			fn(here, f, b * JT_PRINT_BLOCK, block_end(n, b));
	}
	pthread_join(t, NULL);
}
