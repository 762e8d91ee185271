// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <stdlib.h>
#include <string.h>
#include <zlib.h>
#include "lib/reserve.h"
#include "model/kallsyms.h"

#define KALLSYMS_MAX (256u << 20)

/* An end (no name) before a symbol at its address: the next program. */
static int cmp(const void *a, const void *b)
{
	const struct jt_ksym *x = a, *y = b;

	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	return !!*x->name - !!*y->name;
}

static int add(struct jt_kallsyms *k, size_t *cap, uint64_t addr, char *name)
{
	if (jt_reserve(&k->syms, cap, k->n + 1, sizeof(*k->syms)))
		return -1;
	k->syms[k->n++] = (struct jt_ksym){ addr, name };
	return 0;
}

/*
 * "\t[bpf]\tLEN" after a name: a program the recorder loaded, with the
 * length /proc/kallsyms does not give. 0 when there is none.
 */
static uint64_t bpf_len(const char *rest, const char *nl)
{
	static const char tag[] = "[bpf]\t";

	rest += strspn(rest, " \t");
	if ((size_t)(nl - rest) <= sizeof(tag) - 1 ||
	    memcmp(rest, tag, sizeof(tag) - 1))
		return 0;
	return strtoull(rest + sizeof(tag) - 1, NULL, 10);
}

/*
 * An address: the hex digits the line starts with (of more than 16, the
 * last 16 count). strtoull, with its locale, signs and prefixes, was a
 * quarter of loading 120K lines.
 */
static uint64_t hex(char *p, const char *end, char **after)
{
	uint64_t v = 0;
	int d;

	for (; p < end; p++) {
		d = *p >= '0' && *p <= '9' ? *p - '0' :
		    *p >= 'a' && *p <= 'f' ? *p - 'a' + 10 :
		    *p >= 'A' && *p <= 'F' ? *p - 'A' + 10 :
					     -1;
		if (d < 0)
			break;
		v = v << 4 | d;
	}
	*after = p;
	return v;
}

/*
 * /proc/kallsyms is in address order but for the programs loaded last:
 * only what follows the sorted start is sorted, then merged into it from
 * the back, the start's first on a tie. Sorting all of it was another
 * quarter.
 */
static void sort(struct jt_kallsyms *k)
{
	struct jt_ksym *a = k->syms, *tail;
	size_t i = 1, m, t;

	while (i < k->n && cmp(&a[i - 1], &a[i]) <= 0)
		i++;
	if (i >= k->n)
		return;
	m = k->n - i;
	tail = malloc(m * sizeof(*tail));
	if (!tail) {
		qsort(a, k->n, sizeof(*a), cmp);
		return;
	}
	memcpy(tail, a + i, m * sizeof(*tail));
	qsort(tail, m, sizeof(*tail), cmp);
	for (t = k->n; m; t--)
		a[t - 1] = i && cmp(&a[i - 1], &tail[m - 1]) > 0 ? a[--i] :
								   tail[--m];
	free(tail);
}

/* A program the recorder loaded, as its own line gives it. */
struct span {
	uint64_t start, end;
};

static int span_cmp(const void *a, const void *b)
{
	const struct span *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

/*
 * A symbol inside one of the recorder's programs is stale: /proc/kallsyms
 * was read while programs came and went (libbpf's feature probes, another
 * tracer's exit), and the memory went to ours. Kept, it would cut our
 * program's span short and name its tail.
 */
static void drop_stale(struct jt_kallsyms *k, struct span *sp, size_t n)
{
	size_t i, o = 0, r = 0;

	if (!n)
		return;
	qsort(sp, n, sizeof(*sp), span_cmp);
	for (i = 0; i < k->n; i++) {
		uint64_t a = k->syms[i].addr;

		while (r < n && sp[r].end <= a)
			r++;
		if (r < n && sp[r].start < a && *k->syms[i].name) {
			k->stale++;
			continue;
		}
		k->syms[o++] = k->syms[i];
	}
	k->n = o;
}

static void parse(struct jt_kallsyms *k, size_t len)
{
	char *p = k->names, *end = p + len;
	static char no_name[] = "";
	struct span *sp = NULL;
	size_t cap = 0, nsp = 0, sp_cap = 0;

	while (p < end) {
		char *nl = memchr(p, '\n', end - p), *name;
		uint64_t addr = hex(p, nl ? nl : end, &name), size;

		if (!nl)
			break;
		*nl = 0;
		/* "ADDR t name [module]": the name is the third field. */
		if (name + 3 < nl && name[0] == ' ' && name[2] == ' ') {
			size_t l;

			name += 3;
			l = strcspn(name, " \t");
			size = name + l < nl ? bpf_len(name + l, nl) : 0;
			name[l] = 0;
			if (add(k, &cap, addr, name))
				break;
			if (addr && size && addr + size > addr) {
				if (add(k, &cap, addr + size, no_name) ||
				    jt_reserve(&sp, &sp_cap, nsp + 1,
					       sizeof(*sp)))
					break;
				sp[nsp++] = (struct span){ addr, addr + size };
			}
		}
		p = nl + 1;
	}
	sort(k);
	drop_stale(k, sp, nsp);
	free(sp);
	/* kptr_restrict showed every address as 0: no names to give. */
	k->hidden = k->n && !k->syms[k->n - 1].addr;
}

/*
 * Names alone are half the text, and the array was grown by doubling:
 * the agent holds this for its whole run.
 */
static void pack(struct jt_kallsyms *k)
{
	size_t i, len = 0;
	char *names, *p;
	void *syms;

	for (i = 0; i < k->n; i++)
		len += strlen(k->syms[i].name) + 1;
	names = malloc(len ? len : 1);
	if (!names)
		return;
	for (i = 0, p = names; i < k->n; i++) {
		size_t l = strlen(k->syms[i].name) + 1;

		memcpy(p, k->syms[i].name, l);
		k->syms[i].name = p;
		p += l;
	}
	free(k->names);
	k->names = names;
	syms = k->n ? realloc(k->syms, k->n * sizeof(*k->syms)) : NULL;
	if (syms)
		k->syms = syms;
}

int jt_kallsyms_load(struct jt_kallsyms *k, const void *data, size_t len)
{
	uint64_t raw;
	uLongf out;

	memset(k, 0, sizeof(*k));
	if (len < sizeof(raw))
		return -1;
	memcpy(&raw, data, sizeof(raw));
	if (!raw || raw > KALLSYMS_MAX || !(k->names = malloc(raw)))
		return -1;
	out = raw;
	if (uncompress((Bytef *)k->names, &out,
		       (const Bytef *)data + sizeof(raw),
		       len - sizeof(raw)) != Z_OK) {
		jt_kallsyms_free(k);
		return -1;
	}
	parse(k, out);
	pack(k);
	return 0;
}

long jt_kallsyms_index(const struct jt_kallsyms *k, uint64_t addr)
{
	size_t lo = 0, hi = k->n;

	if (k->hidden)
		return -1;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (k->syms[mid].addr <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	/* Past a program's end, in no symbol. */
	return lo && *k->syms[lo - 1].name ? (long)lo - 1 : -1;
}

const char *jt_kallsyms_find(const struct jt_kallsyms *k, uint64_t addr)
{
	long i = jt_kallsyms_index(k, addr);

	return i < 0 ? NULL : k->syms[i].name;
}

void jt_kallsyms_free(struct jt_kallsyms *k)
{
	free(k->syms);
	free(k->names);
	memset(k, 0, sizeof(*k));
}
