/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Interned strings: paths repeat across thousands of regions and events. */
#ifndef JT_STRTAB_H
#define JT_STRTAB_H

#include <stddef.h>
#include "lib/hash.h"

struct jt_strtab {
	struct jt_hash h;
};

const char *jt_intern(struct jt_strtab *t, const char *s, size_t len);
void jt_strtab_free(struct jt_strtab *t);

#endif
