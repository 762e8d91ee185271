/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Many rows printed in order, formatted on two threads. */
#ifndef JT_PRINT_BLOCKS_H
#define JT_PRINT_BLOCKS_H

#include <stddef.h>
#include <stdio.h>

#define JT_PRINT_BLOCK 4096
#define JT_PRINT_SPLIT_MIN (4 * JT_PRINT_BLOCK)

/* Rows [from, to) formatted into f, with what ctx kept of the last. */
typedef void (*jt_print_fn)(void *ctx, FILE *f, size_t from, size_t to);

/*
 * Rows [0, n) into f, in order. From JT_PRINT_SPLIT_MIN rows on, every
 * other block of JT_PRINT_BLOCK is formatted on a second thread, with
 * ctx there, into memory; the rest here, with ctx here. fn may run on
 * both threads at once, each with its own ctx.
 */
void jt_print_blocks(FILE *f, size_t n, jt_print_fn fn, void *here,
		     void *there);

#endif
