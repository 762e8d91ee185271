/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Kernel text symbols from the copy of /proc/kallsyms in a recording. */
#ifndef JT_KALLSYMS_H
#define JT_KALLSYMS_H

#include <stddef.h>
#include <stdint.h>

struct jt_ksym {
	uint64_t addr;
	const char *name; /* into names; "" ends a program of known length */
};

struct jt_kallsyms {
	struct jt_ksym *syms; /* sorted by address */
	size_t n;
	char *names;  /* the names, one after another */
	int hidden;   /* every address was 0: kptr_restrict at record time */
	size_t stale; /* lines inside a program the recorder loaded: left out */
};

/* data: a JT_REC_KALLSYMS payload. 0, or -1 when it does not inflate. */
int jt_kallsyms_load(struct jt_kallsyms *k, const void *data, size_t len);
const char *jt_kallsyms_find(const struct jt_kallsyms *k, uint64_t addr);
/* The index in syms of the symbol holding addr, or -1. */
long jt_kallsyms_index(const struct jt_kallsyms *k, uint64_t addr);
void jt_kallsyms_free(struct jt_kallsyms *k);

#endif
