// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include "lib/perf_rec.h"
#include "lib/reserve.h"
#include "model/elfsyms.h"
#include "model/kallsyms.h"
#include "model/replay.h"
#include "model/symbolize.h"

/* A sample in executable memory no source named (yet). */
struct pending {
	uint64_t addr;
	uint64_t time;
	uint64_t region_start;
	uint64_t region_born;
	size_t item;
	uint32_t pid;
	bool done;
};

struct symbolizer {
	struct jt_stream *s;
	struct jt_syms *out;
	struct jt_elfcache elf;
	struct jt_kallsyms ksyms;
	bool have_ksyms;
	struct pending *pend;
	size_t npend;
	size_t pend_cap;
	bool sorted;
	int err;
};

static const char *intern(struct symbolizer *z, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static const char *intern(struct symbolizer *z, const char *fmt, ...)
{
	char buf[512];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	return jt_intern(&z->out->strs, buf,
			 n < (int)sizeof(buf) ? (size_t)n : sizeof(buf) - 1);
}

static const char *basename_of(const char *path)
{
	const char *b = strrchr(path, '/');

	return b ? b + 1 : path;
}

static bool jit_symbol(struct symbolizer *z, struct jt_proc *p, uint64_t ip,
		       struct jt_symres *r)
{
	const struct jt_jitsym *j = jt_jittab_find(&p->jitdump, ip);

	if (j) {
		r->source = JT_SRC_JITDUMP;
		r->dso = intern(z, "jit-%u.dump", p->pid);
	} else if ((j = jt_jittab_find(&p->perfmap, ip))) {
		r->source = JT_SRC_PERFMAP;
		r->dso = intern(z, "perf-%u.map", p->pid);
	}
	if (j)
		r->sym = j->name;
	return j;
}

/*
 * The file on disk is not the one that was mapped when its build-id
 * differs from the one read while recording: its symbols would lie.
 */
static bool changed(struct symbolizer *z, const struct jt_elffile *f,
		    const struct jt_region *g)
{
	const struct jt_buildid_rec *b =
		jt_stream_buildid(z->s, g->dev, g->ino);
	struct jt_syms *o = z->out;
	size_t i;

	if (!b || !b->len ||
	    (b->len == f->build_id_len && !memcmp(b->id, f->build_id, b->len)))
		return false;
	for (i = 0; i < o->nchanged; i++)
		if (o->changed[i] == f->path)
			return true;
	if (!jt_reserve(&o->changed, &o->changed_cap, o->nchanged + 1,
			sizeof(*o->changed)))
		o->changed[o->nchanged++] = f->path;
	return true;
}

static void region_symbol(struct symbolizer *z, const struct jt_region *g,
			  uint64_t ip, struct jt_symres *r)
{
	struct jt_elffile *f;

	r->region_start = g->start;
	r->region_end = g->end;
	r->source = JT_SRC_ANON;
	if (g->kind != JT_RK_FILE || !g->path) {
		r->dso = g->kind == JT_RK_VDSO	? "[vdso]" :
			 g->kind == JT_RK_HEAP	? "[heap]" :
			 g->kind == JT_RK_STACK ? "[stack]" :
						  "[anon]";
		return;
	}
	/* The replay's model goes away; results outlive it. */
	r->path = jt_intern(&z->out->strs, g->path, strlen(g->path));
	if (!r->path) {
		z->err = -ENOMEM;
		return;
	}
	r->offset = g->pgoff + (ip - g->start);
	r->dso = basename_of(r->path);
	f = jt_elf_get(&z->elf, r->path);
	if (f && f->ok && changed(z, f, g)) {
		z->out->st.buildid_mismatch++;
		return;
	}
	if (f && f->ok) {
		r->source = JT_SRC_ELF;
		r->sym = jt_elf_symbol(f, r->offset);
	}
}

/* What held ip in process pid at the moment the replay has reached. */
static void resolve(struct symbolizer *z, struct jt_model *m, uint32_t pid,
		    uint64_t ip, bool kernel, struct jt_symres *r)
{
	struct jt_proc *p;
	const struct jt_region *g;

	memset(r, 0, sizeof(*r));
	if (kernel) {
		r->kernel = 1;
		r->dso = "[kernel.kallsyms]";
		if (z->have_ksyms &&
		    (r->sym = jt_kallsyms_find(&z->ksyms, ip))) {
			/* Results outlive the kallsyms copy: keep the name. */
			r->sym = jt_intern(&z->out->strs, r->sym,
					   strlen(r->sym));
			r->source = JT_SRC_KALLSYMS;
		}
		return;
	}
	p = jt_model_find(m, pid);
	if (p && jit_symbol(z, p, ip, r)) {
		g = p->as ? jt_aspace_find(p->as, ip) : NULL;
		if (g) {
			r->region_start = g->start;
			r->region_end = g->end;
		}
		return;
	}
	g = p && p->as ? jt_aspace_find(p->as, ip) : NULL;
	if (g)
		region_symbol(z, g, ip, r);
	else
		r->dso = "[unknown]";
}

static int add_pending(struct symbolizer *z, uint32_t pid, uint64_t ip,
		       uint64_t time, size_t item, const struct jt_region *g)
{
	if (jt_reserve(&z->pend, &z->pend_cap, z->npend + 1, sizeof(*z->pend)))
		return -ENOMEM;
	z->pend[z->npend++] =
		(struct pending){ ip,	time, g->start, g->born_ns,
				  item, pid,  false };
	z->sorted = false;
	return 0;
}

static int cmp_pending(const void *a, const void *b)
{
	const struct pending *x = a, *y = b;

	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

/* Drop what was named, so the list holds only the still-unnamed. */
static void compact(struct symbolizer *z)
{
	size_t i, n = 0;

	for (i = 0; i < z->npend; i++)
		if (!z->pend[i].done)
			z->pend[n++] = z->pend[i];
	z->npend = n;
}

/*
 * A code-load record names the samples that ran at its address before it
 * was written, as long as the region they ran in is still the same one:
 * the first load after a sample is the code that ran, since any earlier
 * one would have named the sample on the spot.
 */
static void retro(struct symbolizer *z, struct jt_model *m,
		  const struct jt_jit_item *j)
{
	struct pending key = { .addr = j->addr, .pid = j->pid };
	size_t lo = 0, hi, i, named = 0;

	if (!z->npend || j->op != JT_JIT_LOAD)
		return;
	if (!z->sorted) {
		qsort(z->pend, z->npend, sizeof(*z->pend), cmp_pending);
		z->sorted = true;
	}
	hi = z->npend;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (cmp_pending(&z->pend[mid], &key) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (i = lo; i < z->npend && z->pend[i].pid == j->pid &&
		     z->pend[i].addr < j->addr + j->size;
	     i++) {
		struct pending *p = &z->pend[i];
		const struct jt_region *g = jt_model_lookup(m, p->pid, p->addr);
		struct jt_symres *r = &z->out->res[p->item];

		p->done = true;
		named++;
		if (!g || g->start != p->region_start ||
		    g->born_ns != p->region_born)
			continue;
		r->sym = j->name;
		r->source = j->source;
		r->dso = intern(z,
				j->source == JT_SRC_JITDUMP ? "jit-%u.dump" :
							      "perf-%u.map",
				j->pid);
		r->retro = 1;
		z->out->st.retro++;
	}
	if (named)
		compact(z);
}

static int add_frames(struct symbolizer *z, struct jt_model *m,
		      const struct jt_sample *smp, struct jt_symres *r)
{
	struct jt_syms *o = z->out;
	bool kernel = jt_perf_kernel_ip(smp->misc);
	uint64_t i;

	r->frame_off = o->nframes;
	for (i = 0; i < smp->nr_chain; i++) {
		uint64_t ip = smp->chain[i];
		struct jt_symres f;
		char buf[256];

		if (ip >= PERF_CONTEXT_MAX) {
			kernel = ip == PERF_CONTEXT_KERNEL;
			continue;
		}
		if (jt_reserve(&o->frames, &o->frames_cap, o->nframes + 1,
			       sizeof(*o->frames)))
			return -ENOMEM;
		resolve(z, m, smp->pid, ip, kernel, &f);
		o->frames[o->nframes++] =
			intern(z, "%s", jt_symres_name(&f, buf, sizeof(buf)));
		r->nframes++;
	}
	return 0;
}

static void on_sample(struct symbolizer *z, struct jt_model *m,
		      const struct jt_item *it)
{
	size_t idx = it - z->s->items;
	struct jt_symres *r = &z->out->res[idx];
	struct jt_sample smp;
	const struct jt_region *g;

	if (jt_perf_sample(it->data, it->len, z->s->sample_type, &smp))
		return;
	resolve(z, m, smp.pid, smp.ip, jt_perf_kernel_ip(smp.misc), r);
	r->is_sample = 1;
	z->out->st.samples++;
	if (smp.nr_chain && !z->err)
		z->err = add_frames(z, m, &smp, r);
	if (r->sym || r->kernel)
		return;
	g = jt_model_lookup(m, smp.pid, smp.ip);
	if (g && (g->prot & PROT_EXEC) && r->source != JT_SRC_ELF && !z->err)
		z->err = add_pending(z, smp.pid, smp.ip, smp.time, idx, g);
}

static void on_item(void *ctx, struct jt_model *m, const struct jt_item *it)
{
	struct symbolizer *z = ctx;
	const struct perf_event_header *h = it->data;

	if (it->kind == JT_IT_JIT)
		retro(z, m, it->data);
	else if (it->kind == JT_IT_PERF && h->type == PERF_RECORD_SAMPLE)
		on_sample(z, m, it);
}

static void count(struct jt_syms *o, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		const struct jt_symres *r = &o->res[i];

		if (!r->is_sample)
			continue;
		o->st.by_source[r->source]++;
		if (!r->sym && r->source != JT_SRC_ANON)
			o->st.unknown++;
	}
}

int jt_symbolize(struct jt_stream *s, struct jt_syms *out)
{
	struct symbolizer z = { .s = s, .out = out };
	struct jt_model m;

	memset(out, 0, sizeof(*out));
	out->res = calloc(s->n ? s->n : 1, sizeof(*out->res));
	if (!out->res)
		return -ENOMEM;
	z.elf.strs = &out->strs;
	z.have_ksyms = s->kallsyms && !jt_kallsyms_load(&z.ksyms, s->kallsyms,
							s->kallsyms_len);
	jt_model_init(&m);
	jt_replay(s, &m, 0, on_item, &z);
	count(out, s->n);
	jt_model_free(&m);
	jt_elfcache_free(&z.elf);
	jt_kallsyms_free(&z.ksyms);
	free(z.pend);
	return z.err;
}

const char *jt_symres_name(const struct jt_symres *r, char *buf, size_t len)
{
	const char *dso = r->dso ? r->dso : "[unknown]";
	int n = strlen(dso);

	if (r->sym)
		return r->sym;
	/* Anon code is named by the region asked for, not the VMA. */
	if (r->region_start && !r->path && dso[0] == '[')
		snprintf(buf, len, "%.*s 0x%llx-0x%llx]", n - 1, dso,
			 (unsigned long long)r->region_start,
			 (unsigned long long)r->region_end);
	else if (r->path)
		snprintf(buf, len, "[%s+0x%llx]", dso,
			 (unsigned long long)r->offset);
	else
		snprintf(buf, len, "%s", dso);
	return buf;
}

void jt_syms_free(struct jt_syms *out)
{
	free(out->res);
	free(out->frames);
	free(out->changed);
	jt_strtab_free(&out->strs);
	memset(out, 0, sizeof(*out));
}
