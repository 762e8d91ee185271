/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Interned names that are freed when nothing holds them: JIT function
 * names, which an always-on agent sees without end (lambdas, generated
 * classes, each process's own). A table entry holds a reference; a name
 * whose count reaches zero waits in a graveyard until the caller says
 * nothing named before then is still in flight (jt_names_sweep), and a
 * name interned again before that lives on. One pointer per string
 * while it lives, as jt_intern gives.
 */
#ifndef JT_NAMETAB_H
#define JT_NAMETAB_H

#include <stddef.h>
#include <stdint.h>
#include "lib/hash.h"

struct jt_name;

struct jt_nametab {
	struct jt_hash h;
	struct jt_name *grave;	    /* oldest death first */
	struct jt_name *grave_last; /* where the next death goes */
	uint64_t now;		    /* the caller's clock, stamped on deaths */
};

/* s (len bytes), with one more reference; NULL without memory. */
const char *jt_name_get(struct jt_nametab *t, const char *s, size_t len);
/* Warm the slot where jt_name_get(t, s, len) will look, for soon. */
void jt_name_prefetch(const struct jt_nametab *t, const char *s, size_t len);
/* One more reference to a name jt_name_get gave. */
void jt_name_ref(const char *name);
/* One less; at zero it waits for jt_names_sweep. NULL is ignored. */
void jt_name_put(const char *name);
/* Free the names that died before now `before`; how many. */
size_t jt_names_sweep(struct jt_nametab *t, uint64_t before);
void jt_nametab_free(struct jt_nametab *t);

#endif
