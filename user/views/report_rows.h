/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* jittrace report's rows: one per group of samples, and their order. */
#ifndef JT_REPORT_ROWS_H
#define JT_REPORT_ROWS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "lib/hash.h"

struct row {
	const char *comm; /* interned in the stream's string table */
	uint32_t pid;
	uint32_t nspid; /* in its PID namespace, where that differs */
	const char *dso;
	const char *sym;  /* the symbol, or what names the place */
	const char *dsym; /* --data: "object+0x8" of an ELF object; "-" */
	uint8_t source;
	uint64_t samples;
	uint64_t retro;
	uint64_t children;	 /* -g: samples with it on the stack */
	uint64_t stamp;		 /* the last sample that counted it */
	struct jt_hash *callers; /* -g: caller path -> struct path */
};

/*
 * perf report's order: most samples (with -g, most children) first, then
 * by command, pid, object, symbol and data symbol. -ENOMEM, and rows
 * left as they were, without memory.
 */
int jt_rows_order(struct row **rows, size_t n, bool graph);

#endif
