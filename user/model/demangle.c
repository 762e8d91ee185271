// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <stdlib.h>
#include <string.h>
#include "model/demangle.h"

/* The Itanium C++ ABI's, in libstdc++ (cxxabi.h, extern "C"). */
char *__cxa_demangle(const char *mangled, char *buf, size_t *len, int *status);

struct pair {
	const char *from;
	const char *to;
};

static bool from_eq(const void *val, const void *key)
{
	return ((const struct pair *)val)->from == key;
}

const char *jt_demangle(struct jt_demangler *d, const char *name)
{
	uint64_t h = jt_hash_u64((uintptr_t)name);
	struct pair *p;
	char *out;
	int status = -1;

	if (!name || name[0] != '_' || name[1] != 'Z')
		return name;
	p = jt_hash_find(&d->done, h, from_eq, name);
	if (p)
		return p->to;
	out = __cxa_demangle(name, NULL, NULL, &status);
	p = malloc(sizeof(*p));
	if (!p) {
		free(out);
		return name;
	}
	p->from = name;
	p->to = status || !out ? name : jt_intern(d->strs, out, strlen(out));
	if (!p->to)
		p->to = name;
	free(out);
	name = p->to;
	if (jt_hash_add(&d->done, h, p))
		free(p);
	return name;
}

void jt_demangler_free(struct jt_demangler *d)
{
	size_t i;

	jt_hash_for_each (&d->done, i)
		free(d->done.e[i].val);
	jt_hash_free(&d->done);
}
