/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * C++ names as people read them (JavaCalls::call_helper(...)), through
 * libstdc++'s __cxa_demangle, once per interned name.
 */
#ifndef JT_DEMANGLE_H
#define JT_DEMANGLE_H

#include "lib/hash.h"
#include "lib/strtab.h"

struct jt_demangler {
	struct jt_hash done; /* interned mangled name -> interned result */
	struct jt_strtab *strs;
};

/* name itself when it is no mangled C++ name, or on any failure. */
const char *jt_demangle(struct jt_demangler *d, const char *name);
void jt_demangler_free(struct jt_demangler *d);

#endif
