// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include "lib/perf_rec.h"
#include "lib/reserve.h"
#include "lib/treap.h"
#include "model/symbolize.h"
#include "unwind/cfi.h"

/* A process's addresses where samples wait for a code-load record. */
struct waiting_proc {
	uint32_t pid;
	struct jt_treap addrs;
};

struct waiting_addr {
	struct jt_tnode t;
	struct jt_wait *head;
};

static void free_waiting(struct jt_tnode *t)
{
	free(jt_tnode_entry(t, struct waiting_addr, t));
}

/* Never shared: nothing forks the naming side's bookkeeping. */
static const struct jt_treap_ops waiting_ops = { NULL, free_waiting };

static const char *intern(struct jt_syms *y, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static const char *intern(struct jt_syms *y, const char *fmt, ...)
{
	char buf[512];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	return jt_intern(y->strs, buf,
			 n < (int)sizeof(buf) ? (size_t)n : sizeof(buf) - 1);
}

void jt_syms_init(struct jt_syms *y, struct jt_stream *s)
{
	memset(y, 0, sizeof(*y));
	y->s = s;
	y->strs = &s->strs;
	y->elf.strs = y->strs;
	y->dem.strs = y->strs;
	y->inl.strs = y->strs;
	y->inl.dem = &y->dem;
}

static const char *basename_of(const char *path)
{
	const char *b = strrchr(path, '/');

	return b ? b + 1 : path;
}

/* A JIT sample's dso: formatted and interned once per run of one pid. */
static const char *jit_dso(struct jt_syms *y, uint32_t pid, bool dump)
{
	if (y->jit_dso_pid != pid) {
		y->jit_dso_pid = pid;
		y->jit_dso[0] = y->jit_dso[1] = NULL;
	}
	if (!y->jit_dso[dump])
		y->jit_dso[dump] =
			intern(y, dump ? "jit-%u.dump" : "perf-%u.map", pid);
	return y->jit_dso[dump];
}

static bool jit_symbol(struct jt_syms *y, struct jt_proc *p, uint64_t ip,
		       struct jt_symres *r)
{
	struct jt_jitname j;

	if (jt_jittab_name(&p->jitdump, ip, &j)) {
		r->source = JT_SRC_JITDUMP;
		r->dso = jit_dso(y, p->pid, true);
	} else if (jt_jittab_name(&p->perfmap, ip, &j)) {
		r->source = JT_SRC_PERFMAP;
		r->dso = jit_dso(y, p->pid, false);
	} else {
		return false;
	}
	r->sym = j.name;
	r->sym_start = j.start;
	r->sym_end = j.end;
	return true;
}

/*
 * The file on disk is not the one that was mapped when its build-id
 * differs from the one read while recording: its symbols would lie.
 */
static bool changed(struct jt_syms *y, const struct jt_elffile *f,
		    const struct jt_region *g)
{
	const struct jt_buildid_rec *b =
		jt_stream_buildid(y->s, g->dev, g->ino);
	size_t i;

	if (!b || !b->len ||
	    (b->len == f->build_id_len && !memcmp(b->id, f->build_id, b->len)))
		return false;
	for (i = 0; i < y->nchanged; i++)
		if (y->changed[i] == f->path)
			return true;
	if (!jt_reserve(&y->changed, &y->changed_cap, y->nchanged + 1,
			sizeof(*y->changed)))
		y->changed[y->nchanged++] = f->path;
	return true;
}

/* The ELF file behind g, when it is still the one that was mapped. */
static struct jt_elffile *elf_of(struct jt_syms *y, const struct jt_region *g,
				 const char *path, bool *stale)
{
	struct jt_elffile *f = jt_elf_get(&y->elf, path);

	*stale = f && f->ok && changed(y, f, g);
	return f && f->ok && !*stale ? f : NULL;
}

/* What names g's file: its path interned, build-id and symbols. */
static bool region_file(struct jt_syms *y, const struct jt_region *g)
{
	struct jt_file_named *l = &y->elf_last;

	/* Its path's text as well: a model's table could free and reuse. */
	if (l->path && l->src == g->path && l->dev == g->dev &&
	    l->ino == g->ino && !strcmp(l->path, g->path))
		return true;
	l->path = jt_intern(y->strs, g->path, strlen(g->path));
	if (!l->path) {
		y->err = -ENOMEM;
		return false;
	}
	l->src = g->path;
	l->dev = g->dev;
	l->ino = g->ino;
	l->build_id = jt_stream_buildid(y->s, g->dev, g->ino);
	l->f = elf_of(y, g, l->path, &l->stale);
	return true;
}

static void region_symbol(struct jt_syms *y, const struct jt_region *g,
			  uint64_t ip, struct jt_symres *r)
{
	const struct jt_file_named *l = &y->elf_last;

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
	/* The model frees regions of exited processes; names outlive them. */
	if (!region_file(y, g))
		return;
	r->path = l->path;
	r->offset = g->pgoff + (ip - g->start);
	r->dso = basename_of(r->path);
	r->build_id = l->build_id;
	if (l->stale)
		y->st.buildid_mismatch++;
	if (l->f) {
		r->source = JT_SRC_ELF;
		r->sym = jt_demangle(&y->dem, jt_elf_symbol(l->f, r->offset));
	}
}

struct jt_elffile *jt_syms_elf(struct jt_syms *y, const struct jt_region *g,
			       const char **path)
{
	bool stale;

	*path = NULL;
	if (g->kind != JT_RK_FILE || !g->path)
		return NULL;
	*path = jt_intern(y->strs, g->path, strlen(g->path));
	if (!*path) {
		y->err = -ENOMEM;
		return NULL;
	}
	return elf_of(y, g, *path, &stale);
}

/*
 * A kernel address's name, kept in a slot by the address: a profile's
 * kernel samples come from few addresses (the naming bench's 96K from
 * 2,823; 80% found here in 1,024 slots), each a search of 120K symbols
 * otherwise, 2% of report's time.
 */
#define KIPS 1024 /* a power of two */

struct jt_kip {
	uint64_t ip;
	const char *name;
};

static bool have_ksyms(struct jt_syms *y)
{
	if (!y->ksyms_state && y->s->kallsyms)
		y->ksyms_state = jt_kallsyms_load(&y->ksyms, y->s->kallsyms,
						  y->s->kallsyms_len) ?
					 -1 :
					 1;
	if (y->ksyms_state == 1 && !y->knames &&
	    (!(y->knames = calloc(y->ksyms.n ?: 1, sizeof(*y->knames))) ||
	     !(y->kips = calloc(KIPS, sizeof(*y->kips)))))
		y->ksyms_state = -1;
	return y->ksyms_state == 1;
}

/* A kernel symbol's name, interned at its first sample, not at each. */
static const char *kernel_sym(struct jt_syms *y, uint64_t ip)
{
	struct jt_kip *k = &y->kips[(ip >> 2) & (KIPS - 1)];
	long i;
	const char *s;

	if (k->ip == ip && ip)
		return k->name;
	i = jt_kallsyms_index(&y->ksyms, ip);
	if (i >= 0 && !y->knames[i]) {
		s = y->ksyms.syms[i].name;
		y->knames[i] = jt_intern(y->strs, s, strlen(s));
	}
	s = i < 0 ? NULL : y->knames[i];
	/* Not a name that failed to intern: that one is tried again. */
	if (i < 0 || s)
		*k = (struct jt_kip){ ip, s };
	return s;
}

/* What held ip in process pid at the moment the stream has reached. */
void jt_syms_resolve(struct jt_syms *y, struct jt_model *m, uint32_t pid,
		     uint64_t ip, bool kernel, struct jt_symres *r)
{
	struct jt_proc *p;
	const struct jt_region *g;

	memset(r, 0, sizeof(*r));
	r->ip = ip;
	r->pid = pid;
	if (kernel) {
		r->kernel = 1;
		r->dso = "[kernel.kallsyms]";
		if (have_ksyms(y) && (r->sym = kernel_sym(y, ip)))
			r->source = JT_SRC_KALLSYMS;
		return;
	}
	p = jt_model_find(m, pid);
	jt_model_jit_warm(m, p, ip);
	if (p && jit_symbol(y, p, ip, r)) {
		g = p->as ? jt_aspace_find(p->as, ip) : NULL;
		if (g) {
			r->region_start = g->start;
			r->region_end = g->end;
		}
		return;
	}
	g = p && p->as ? jt_aspace_find(p->as, ip) : NULL;
	if (g)
		region_symbol(y, g, ip, r);
	else
		r->dso = "[unknown]";
}

static uint64_t pid_hash(uint32_t pid)
{
	return jt_hash_u64(pid);
}

static bool wpid_eq(const void *val, const void *key)
{
	return ((const struct waiting_proc *)val)->pid ==
	       *(const uint32_t *)key;
}

static struct waiting_proc *waiting_of(struct jt_syms *y, uint32_t pid,
				       bool make)
{
	struct waiting_proc *w =
		jt_hash_find(&y->waiting, pid_hash(pid), wpid_eq, &pid);

	if (w || !make)
		return w;
	w = calloc(1, sizeof(*w));
	if (!w || jt_hash_add(&y->waiting, pid_hash(pid), w)) {
		free(w);
		return NULL;
	}
	w->pid = pid;
	w->addrs.ops = &waiting_ops;
	return w;
}

/* Wait for a code-load record at wt's address; false: cannot. */
static bool wait_for_load(struct jt_syms *y, struct jt_named *n,
			  struct jt_wait *wt)
{
	struct waiting_proc *w = waiting_of(y, n->pid, true);
	struct jt_tnode *t;
	struct waiting_addr *a;

	if (!w)
		return false;
	t = jt_treap_ge(&w->addrs, wt->addr);
	if (t && t->key == wt->addr) {
		a = jt_tnode_entry(t, struct waiting_addr, t);
	} else {
		a = calloc(1, sizeof(*a));
		if (!a)
			return false;
		a->t.key = wt->addr;
		jt_treap_insert(&w->addrs, &a->t);
	}
	wt->next = a->head;
	if (a->head)
		a->head->prev = wt;
	a->head = wt;
	wt->slot = a;
	n->npending++;
	n->pending = true;
	y->npending++;
	return true;
}

/* Resolve one frame: return addresses by their call (ip - 1). */
static void resolve_frame(struct jt_syms *y, struct jt_model *m, uint32_t pid,
			  uint64_t ip, bool kernel, bool leaf,
			  struct jt_symres *r)
{
	jt_syms_resolve(y, m, pid, leaf || !ip ? ip : ip - 1, kernel, r);
	r->ip = ip;
	r->call = !leaf && ip;
}

/* The frames of one sample, as they are found. */
struct framevec {
	struct jt_symres *v;
	size_t n;
	size_t cap;
};

static struct jt_symres *new_frame(struct framevec *fv)
{
	if (jt_reserve(&fv->v, &fv->cap, fv->n + 1, sizeof(*fv->v)))
		return NULL;
	memset(&fv->v[fv->n], 0, sizeof(*fv->v));
	return &fv->v[fv->n++];
}

/*
 * A user frame in an ELF function, and before it the functions the
 * compiler inlined at that place (its DWARF, when there is some), as
 * perf shows them: the same address, the innermost first.
 */
static int user_frame(struct jt_syms *y, struct jt_model *m, uint32_t pid,
		      uint64_t ip, bool leaf, struct framevec *fv)
{
	const char *inl[JT_INLINE_MAX];
	struct jt_symres f, *r;
	struct jt_elffile *e;
	uint64_t vaddr;
	int n = 0, i;

	resolve_frame(y, m, pid, ip, false, leaf, &f);
	if (f.source == JT_SRC_ELF && f.path &&
	    (e = jt_elf_get(&y->elf, f.path)) && e->ok &&
	    !jt_elf_off_vaddr(e, f.offset, &vaddr))
		n = jt_inlines_at(&y->inl, e, vaddr, inl, JT_INLINE_MAX);
	else if (f.source == JT_SRC_JITDUMP)
		n = jt_chain_inlined(&y->chains, m, pid, ip, f.call, inl,
				     JT_INLINE_MAX);
	for (i = 0; i < n; i++) {
		if (!(r = new_frame(fv)))
			return -ENOMEM;
		*r = f;
		r->sym = inl[i];
		r->inlined = 1;
	}
	if (!(r = new_frame(fv)))
		return -ENOMEM;
	*r = f;
	return 0;
}

static int add_frames(struct jt_syms *y, struct jt_model *m,
		      const struct jt_sample *smp, struct jt_symres *r)
{
	struct jt_uw_frame uf[JT_CHAIN_MAX];
	bool kernel = jt_perf_kernel_ip(smp->misc), first_user = true;
	enum jt_uw_end end = JT_UW_END_NOREGS;
	struct framevec fv = {};
	struct jt_symres *f;
	int nu = 0, i, err = 0;
	uint64_t k;

	if (y->s->sample_type & PERF_SAMPLE_REGS_USER) {
		nu = jt_chain_unwind(y, m, smp, uf, JT_CHAIN_MAX, &end);
		r->chain_end = end + 1;
	}
	for (k = 0; k < smp->nr_chain && !err; k++) {
		uint64_t ip = smp->chain[k];

		if (ip >= PERF_CONTEXT_MAX) {
			kernel = ip == PERF_CONTEXT_KERNEL;
			continue;
		}
		if (!kernel) {
			err = user_frame(y, m, smp->pid, ip, first_user, &fv);
			first_user = false;
		} else if ((f = new_frame(&fv))) {
			resolve_frame(y, m, smp->pid, ip, true, k == 1, f);
		} else {
			err = -ENOMEM;
		}
	}
	for (i = 0; i < nu && !err; i++)
		err = user_frame(y, m, smp->pid, uf[i].pc, i == 0, &fv);
	/* Never NULL: a sample with a chain has frames, even none. */
	r->frames = fv.v ? fv.v : calloc(1, sizeof(*r->frames));
	r->nframes = fv.n;
	return err ? err : r->frames ? 0 : -ENOMEM;
}

/*
 * Code a code-load record may still name: anonymous memory, or a file
 * with no symbols (a memfd, a double-mapped heap) in a process that has
 * named JIT code before. No runtime writes records for the vdso, and a
 * program run from a sealed memfd is no JIT.
 */
static bool may_be_jit(const struct jt_proc *p, const struct jt_region *g)
{
	if (g->kind == JT_RK_VDSO || g->kind == JT_RK_VVAR)
		return false;
	if (g->kind != JT_RK_FILE)
		return true;
	return p && jt_proc_jit_count(p);
}

/* Wait for a late code record where r is executable code no one named. */
static void maybe_wait(struct jt_syms *y, struct jt_model *m,
		       struct jt_named *n, struct jt_symres *r, uint64_t addr)
{
	const struct jt_region *g;
	struct jt_wait *wt;

	if (r->sym || r->kernel || r->source == JT_SRC_ELF)
		return;
	g = jt_model_lookup(m, n->pid, addr);
	if (!g || !(g->prot & PROT_EXEC) ||
	    !may_be_jit(jt_model_find(m, n->pid), g))
		return;
	/* Most samples wait for nothing: their array comes with the first. */
	if (!n->waits &&
	    !(n->waits = calloc(n->res.nframes + 1, sizeof(*n->waits)))) {
		y->err = -ENOMEM;
		return;
	}
	wt = &n->waits[n->nwaits++];
	*wt = (struct jt_wait){ .n = n,
				.r = r,
				.addr = addr,
				.region_start = g->start,
				.region_born = g->born_ns };
	if (!wait_for_load(y, n, wt))
		y->st.retro_expired++; /* no memory to wait */
}

/* The leaf and every frame of n, each where it may be named late. */
static void wait_all(struct jt_syms *y, struct jt_model *m, struct jt_named *n,
		     uint64_t ip)
{
	uint32_t i;

	maybe_wait(y, m, n, &n->res, ip);
	for (i = 0; i < n->res.nframes; i++) {
		struct jt_symres *f = &n->res.frames[i];

		maybe_wait(y, m, n, f, f->call ? f->ip - 1 : f->ip);
	}
}

/*
 * One struct per sample: a calloc and a free each were 7% of report's
 * instructions on a million samples. The pool is bounded, as the
 * stream's item pool is; past it they are freed.
 */
#define NAMED_POOL_MAX 4096

static struct jt_named *named_alloc(struct jt_syms *y)
{
	struct jt_named *n = y->pool;

	if (!n)
		return calloc(1, sizeof(*n));
	y->pool = n->next_free;
	y->npool--;
	memset(n, 0, sizeof(*n));
	return n;
}

void jt_named_put(struct jt_syms *y, struct jt_named *n)
{
	if (!n)
		return;
	free(n->res.frames);
	free(n->waits);
	if (y->npool >= NAMED_POOL_MAX) {
		free(n);
		return;
	}
	n->next_free = y->pool;
	y->pool = n;
	y->npool++;
}

static void prefetch_one(struct jt_syms *y, struct jt_model *m,
			 const struct jt_item *it, bool functions)
{
	const struct perf_event_header *h;
	struct jt_proc *p;
	uint64_t ip;
	uint32_t pid;

	if (!it || it->kind != JT_IT_PERF)
		return;
	h = it->data;
	if (h->type != PERF_RECORD_SAMPLE || jt_perf_kernel_ip(h->misc) ||
	    jt_perf_sample_ip(it->data, it->len, y->s->sample_type, &ip, &pid))
		return;
	p = jt_model_find(m, pid);
	if (p) {
		jt_jittab_prefetch(&p->jitdump, ip, functions);
		jt_jittab_prefetch(&p->perfmap, ip, functions);
	}
}

void jt_syms_prefetch(struct jt_syms *y, struct jt_model *m,
		      const struct jt_item *next, const struct jt_item *later)
{
	prefetch_one(y, m, later, false);
	prefetch_one(y, m, next, true);
}

struct jt_named *jt_syms_sample(struct jt_syms *y, struct jt_model *m,
				const struct jt_item *it)
{
	const struct perf_event_header *h = it->data;
	struct jt_named *n;
	struct jt_sample smp;

	if (it->kind != JT_IT_PERF || h->type != PERF_RECORD_SAMPLE ||
	    jt_perf_sample(it->data, it->len, y->s->sample_type, &smp))
		return NULL;
	n = named_alloc(y);
	if (!n) {
		y->err = -ENOMEM;
		return NULL;
	}
	n->pid = smp.pid;
	n->it = it;
	jt_syms_resolve(y, m, smp.pid, smp.ip, jt_perf_kernel_ip(smp.misc),
			&n->res);
	n->res.is_sample = 1;
	y->st.samples++;
	if ((smp.nr_chain || (y->s->sample_type & PERF_SAMPLE_REGS_USER)) &&
	    !y->err)
		y->err = add_frames(y, m, &smp, &n->res);
	wait_all(y, m, n, smp.ip);
	return n;
}

static void unlink_wait(struct jt_syms *y, struct jt_wait *wt)
{
	struct waiting_addr *a = wt->slot;

	if (wt->prev)
		wt->prev->next = wt->next;
	else
		a->head = wt->next;
	if (wt->next)
		wt->next->prev = wt->prev;
	wt->prev = wt->next = NULL;
	wt->slot = NULL;
	y->npending--;
	if (!--wt->n->npending)
		wt->n->pending = false;
	if (!a->head) {
		struct waiting_proc *w = waiting_of(y, wt->n->pid, false);

		jt_treap_remove(&w->addrs, a->t.key);
	}
}

void jt_syms_settle(struct jt_syms *y, struct jt_named *n)
{
	uint32_t i;

	if (!n || !n->pending)
		return;
	for (i = 0; i < n->nwaits; i++)
		if (n->waits[i].slot)
			unlink_wait(y, &n->waits[i]);
}

/*
 * A code-load record names the samples that ran at its address before it
 * was written, as long as the region they ran in is still the same one:
 * the first load after a sample is the code that ran, since any earlier
 * one would have named the sample on the spot. Frames of call chains
 * wait the same way, by their call sites.
 */
/*
 * The item's own name, interned where the tables' are: it outlives the
 * item. No table holds it for the sample: it waits to be freed until the
 * sample is out (jt_names_sweep).
 */
static const char *retro_name(struct jt_syms *y, const struct jt_jit_item *j)
{
	const char *s;

	if (!j->name)
		return NULL;
	s = jt_name_get(y->jitnames, j->name, j->name_len);
	jt_name_put(s);
	return s;
}

/* The frame an unfinished unwinding stopped at is now known code. */
static void queue_redo(struct jt_syms *y, struct jt_named *n,
		       const struct jt_symres *r)
{
	const struct jt_symres *last =
		n->res.nframes ? &n->res.frames[n->res.nframes - 1] : NULL;

	if (r != last || n->redo || !n->res.chain_end ||
	    n->res.chain_end - 1 == JT_UW_END_COMPLETE ||
	    jt_reserve(&y->redo, &y->redo_cap, y->nredo + 1, sizeof(*y->redo)))
		return;
	n->redo = true;
	y->redo[y->nredo++] = n;
}

/* Unwind n again in m, which now knows the code it stopped in. */
static void redo_frames(struct jt_syms *y, struct jt_model *m,
			struct jt_named *n)
{
	struct jt_sample smp;

	jt_syms_settle(y, n);
	if (jt_perf_sample(n->it->data, n->it->len, y->s->sample_type, &smp))
		return;
	free(n->res.frames);
	n->res.frames = NULL;
	n->res.nframes = 0;
	y->err = add_frames(y, m, &smp, &n->res);
	free(n->waits);
	n->waits = NULL;
	n->nwaits = 0;
	wait_all(y, m, n, smp.ip);
}

/* Each of n's waits into old frames, moved to v: k went in at index at. */
static void move_waits(struct jt_named *n, const struct jt_symres *old,
		       struct jt_symres *v, uint32_t at, uint32_t k)
{
	uint32_t i;

	for (i = 0; i < n->nwaits; i++) {
		struct jt_wait *wt = &n->waits[i];
		size_t idx;

		if (wt->r == &n->res)
			continue;
		idx = wt->r - old;
		wt->r = &v[idx >= at ? idx + k : idx];
	}
}

/*
 * A chain frame named late gets the methods its code inlined at that pc
 * before it, as user_frame gives one named on time: the record that
 * says them came with the code's load.
 */
static void inline_late(struct jt_syms *y, struct jt_model *m,
			struct jt_named *n, const struct jt_symres *r)
{
	const char *inl[JT_INLINE_MAX];
	struct jt_symres *v, *old = n->res.frames;
	uint32_t at = r - old, nf = n->res.nframes, k, i;

	k = jt_chain_inlined(&y->chains, m, n->pid, r->ip, r->call, inl,
			     JT_INLINE_MAX);
	if (!k)
		return;
	v = malloc((nf + k) * sizeof(*v));
	if (!v) {
		y->err = -ENOMEM;
		return;
	}
	memcpy(v, old, at * sizeof(*v));
	for (i = 0; i < k; i++) {
		v[at + i] = *r;
		v[at + i].sym = inl[i];
		v[at + i].inlined = 1;
	}
	memcpy(&v[at + k], r, (nf - at) * sizeof(*v));
	move_waits(n, old, v, at, k);
	free(old);
	n->res.frames = v;
	n->res.nframes = nf + k;
}

static void name_late(struct jt_syms *y, struct jt_model *m,
		      const struct jt_jit_item *j, const struct jt_tnode *t)
{
	const struct waiting_addr *a =
		jt_tnode_entry(t, const struct waiting_addr, t);
	struct jt_wait *wt = a->head, *next;

	for (; wt; wt = next) {
		struct jt_named *n = wt->n;
		const struct jt_region *g =
			jt_model_lookup(m, n->pid, wt->addr);
		struct jt_symres *r = wt->r;

		next = wt->next;
		wt->prev = wt->next = NULL;
		wt->slot = NULL;
		y->npending--;
		if (!--n->npending)
			n->pending = false;
		if (!g || g->start != wt->region_start ||
		    g->born_ns != wt->region_born)
			continue;
		r->sym = retro_name(y, j);
		r->sym_start = j->addr;
		r->sym_end = j->addr + j->size;
		r->source = j->source;
		r->dso = intern(y,
				j->source == JT_SRC_JITDUMP ? "jit-%u.dump" :
							      "perf-%u.map",
				j->pid);
		r->retro = 1;
		if (r == &n->res)
			y->st.retro++;
		queue_redo(y, n, r);
		/* A redo unwinds again, inlined frames and all. */
		if (r != &n->res && !n->redo && j->source == JT_SRC_JITDUMP)
			inline_late(y, m, n, r);
	}
}

struct late_ctx {
	struct jt_syms *y;
	struct jt_model *m;
	const struct jt_jit_item *j;
};

static void late_one(const struct jt_tnode *t, void *ctx)
{
	struct late_ctx *c = ctx;

	name_late(c->y, c->m, c->j, t);
}

/* Samples of w that waited in j's code are named by it. */
static void late_load(struct jt_syms *y, struct jt_model *m,
		      struct waiting_proc *w, const struct jt_jit_item *j)
{
	struct late_ctx c = { y, m, j };
	struct jt_tnode *sub;

	sub = jt_treap_take(&w->addrs, j->addr, j->addr + j->size);
	jt_treap_walk(sub, late_one, &c);
	jt_treap_drop(&w->addrs, sub);
	while (y->nredo) {
		struct jt_named *n = y->redo[--y->nredo];

		redo_frames(y, m, n);
	}
}

struct text_late {
	struct jt_syms *y;
	struct jt_model *m;
	uint32_t pid;
};

static void text_late_one(void *ctx, const struct jt_jit_item *load)
{
	struct text_late *c = ctx;
	struct waiting_proc *w = waiting_of(c->y, c->pid, false);

	/* Each load may name the last waiting sample: look again. */
	if (c->y->npending && w)
		late_load(c->y, c->m, w, load);
}

void jt_syms_jit(struct jt_syms *y, struct jt_model *m,
		 const struct jt_jit_item *j)
{
	struct waiting_proc *w;

	jt_chain_jit(&y->chains, j, y->strs);
	if (!y->npending || !(w = waiting_of(y, j->pid, false)))
		return;
	if (j->op == JT_JIT_LOAD) {
		late_load(y, m, w, j);
	} else if (j->op == JT_JIT_TEXT) {
		/* Parsed here only when a sample of its process waits. */
		struct text_late c = { y, m, j->pid };

		if (jt_jit_text_each(j, text_late_one, &c) < 0)
			y->err = -ENOMEM;
	}
}

static void settle_all(const struct jt_tnode *t, void *ctx)
{
	struct jt_syms *y = ctx;
	const struct waiting_addr *a =
		jt_tnode_entry(t, const struct waiting_addr, t);
	struct jt_wait *wt = a->head, *next;

	for (; wt; wt = next) {
		next = wt->next;
		wt->prev = wt->next = NULL;
		wt->slot = NULL;
		y->npending--;
		if (!--wt->n->npending)
			wt->n->pending = false;
	}
}

void jt_syms_exited(struct jt_syms *y, uint32_t pid)
{
	struct waiting_proc *w =
		jt_hash_del(&y->waiting, pid_hash(pid), wpid_eq, &pid);

	jt_chain_exited(&y->chains, pid);
	if (!w)
		return;
	jt_treap_walk(w->addrs.root, settle_all, y);
	jt_treap_clear(&w->addrs);
	free(w);
}

void jt_syms_count(struct jt_syms *y, const struct jt_named *n)
{
	/* Here, not at each unwinding: a late JIT record unwinds again. */
	if (n->res.chain_end) {
		y->chains.st.unwound++;
		y->chains.st.end[n->res.chain_end - 1]++;
	}
	y->st.by_source[n->res.source]++;
	if (!n->res.sym && n->res.source != JT_SRC_ANON)
		y->st.unknown++;
}

static int hex_id(const char *s, unsigned char id[20])
{
	int n = 0;

	while (n < 20 && isxdigit((unsigned char)s[0]) &&
	       isxdigit((unsigned char)s[1])) {
		sscanf(s, "%2hhx", &id[n++]);
		s += 2;
	}
	return *s ? 0 : n;
}

struct jt_cfi *jt_syms_vdso_cfi(struct jt_syms *y)
{
	const char *hex;
	unsigned char id[20];
	int n;

	if (!y->vdso_state) {
		hex = jt_stream_meta(y->s, "vdso.build_id");
		n = hex ? hex_id(hex, id) : 0;
		y->vdso_cfi = n ? jt_stream_cfi(y->s, id, n) : NULL;
		y->vdso_state = y->vdso_cfi ? 1 : -1;
	}
	return y->vdso_cfi;
}

const char *jt_symres_name(const struct jt_symres *r, char *buf, size_t len)
{
	const char *dso = r->dso ? r->dso : "[unknown]";
	int n;

	if (r->sym)
		return r->sym;
	n = strlen(dso);
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

void jt_syms_free(struct jt_syms *y)
{
	size_t i;

	jt_hash_for_each (&y->waiting, i) {
		struct waiting_proc *w = y->waiting.e[i].val;

		jt_treap_clear(&w->addrs);
		free(w);
	}
	jt_hash_free(&y->waiting);
	jt_chains_free(&y->chains);
	jt_inlines_free(&y->inl);
	jt_demangler_free(&y->dem);
	free(y->redo);
	jt_cfi_free(y->vdso_cfi);
	jt_elfcache_free(&y->elf);
	if (y->ksyms_state == 1)
		jt_kallsyms_free(&y->ksyms);
	free(y->knames);
	free(y->kips);
	free(y->changed);
	while (y->pool) {
		struct jt_named *n = y->pool;

		y->pool = n->next_free;
		free(n);
	}
	memset(y, 0, sizeof(*y));
}
