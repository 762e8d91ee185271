// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "jt_abi.h"
#include "lib/hash.h"
#include "lib/json.h"
#include "lib/perf_rec.h"
#include "lib/strtab.h"
#include "model/aspace.h"
#include "model/jitsyms.h"
#include "views/html_data.h"

/* A process as last drawn: its space and JIT tables before the event. */
struct hproc {
	uint32_t pid;
	char comm[16];
	struct jt_aspace *prev;
	struct jt_jittab pj[2]; /* jitdump, perfmap */
	uint64_t ticks;		/* samples seen */
	uint64_t drawn;		/* ticks written */
	uint64_t stride;	/* one tick per stride samples */
	uint64_t regions;
	uint64_t jit;
};

/* Since when a region has had its present shape (split, protected). */
struct shape {
	uint32_t pid;
	uint64_t start;
	uint64_t end;
	uint64_t since;
};

/* What a process had beyond JT_HTML_BOXES, drawn as one box. */
struct agg {
	uint32_t pid;
	uint32_t what; /* 0: regions; 1, 2: JIT code from jitdump, perf-map */
	uint64_t key;  /* the kernel VMA's start, or the code's region's */
	uint64_t lo, hi, from, to, n;
};

struct fnode {
	uint32_t parent;
	uint32_t source;
	const char *name;
	uint64_t total;
	uint64_t self;
	uint64_t retro;
};

struct fkey {
	uint32_t parent;
	uint32_t source;
	const char *name;
};

struct html_data {
	struct jt_hash procs;
	struct jt_hash shapes;
	struct jt_hash fidx; /* (parent, name, source) -> node index + 1 */
	struct jt_hash aggs;
	struct jt_strtab strs;
	struct fnode *nodes;
	size_t nnodes, cap;
	uint64_t flame_cut; /* samples stopped short: the tree was full */
	FILE *f[3];	    /* regions, JIT tenancies, ticks: JSON arrays */
	struct jt_json j[3];
	uint64_t nticks, ndrawn;
	const struct jt_stream
		*s; /* its sample_type, once the header is read */
	uint32_t only_pid;
	uint64_t t0, t1;
	int err;
};

enum { F_REGIONS, F_JIT, F_TICKS };

static bool proc_eq(const void *val, const void *key)
{
	return ((const struct hproc *)val)->pid == *(const uint32_t *)key;
}

static bool shape_eq(const void *val, const void *key)
{
	const struct shape *a = val, *b = key;

	return a->pid == b->pid && a->start == b->start;
}

static uint64_t shape_hash(uint32_t pid, uint64_t start)
{
	return jt_hash_u64(start * 31 + pid);
}

static bool agg_eq(const void *val, const void *key)
{
	const struct agg *a = val, *b = key;

	return a->pid == b->pid && a->what == b->what && a->key == b->key;
}

/* One more thing in its box: k, whose n is ignored. */
static void aggregate(struct html_data *d, const struct agg *k)
{
	uint64_t h = jt_hash_u64(k->key * 7 + k->pid * 3 + k->what);
	struct agg *a = jt_hash_find(&d->aggs, h, agg_eq, k);

	if (!a) {
		a = malloc(sizeof(*a));
		if (!a || jt_hash_add(&d->aggs, h, a)) {
			free(a);
			d->err = -ENOMEM;
			return;
		}
		*a = *k;
		a->n = 0;
	}
	a->lo = k->lo < a->lo ? k->lo : a->lo;
	a->hi = k->hi > a->hi ? k->hi : a->hi;
	a->from = k->from < a->from ? k->from : a->from;
	a->to = k->to > a->to ? k->to : a->to;
	a->n++;
}

static bool fkey_eq(const void *val, const void *key)
{
	const struct fnode *n = val;
	const struct fkey *k = key;

	return n->parent == k->parent && n->source == k->source &&
	       n->name == k->name;
}

struct html_data *html_data_new(const struct jt_stream *s, uint32_t only_pid)
{
	struct html_data *d = calloc(1, sizeof(*d));
	int i;

	if (!d)
		return NULL;
	d->s = s;
	d->only_pid = only_pid;
	for (i = 0; i < 3; i++) {
		d->f[i] = tmpfile();
		if (!d->f[i]) {
			html_data_free(d);
			return NULL;
		}
		jt_json_init(&d->j[i], d->f[i]);
		jt_json_array(&d->j[i]);
	}
	/* node 0: the root every stack hangs from */
	d->nodes = calloc(1024, sizeof(*d->nodes));
	d->cap = d->nodes ? 1024 : 0;
	d->nnodes = d->nodes ? 1 : 0;
	if (d->nodes)
		d->nodes[0].name = "all";
	return d;
}

/* The process as drawn, made at first sight; NULL: not drawn (--pid). */
static struct hproc *hproc_of(struct html_data *d, struct jt_model *m,
			      uint32_t pid)
{
	uint64_t h = jt_hash_u64(pid);
	struct hproc *p = jt_hash_find(&d->procs, h, proc_eq, &pid);
	struct jt_proc *mp;

	if (p || (d->only_pid && pid != d->only_pid))
		return p;
	p = calloc(1, sizeof(*p));
	if (!p || jt_hash_add(&d->procs, h, p)) {
		free(p);
		d->err = -ENOMEM;
		return NULL;
	}
	p->pid = pid;
	p->stride = 1;
	mp = jt_model_find(m, pid);
	if (mp && mp->as)
		p->prev = jt_aspace_clone(mp->as);
	if (mp) {
		jt_jittab_copy(&p->pj[0], &mp->jitdump);
		jt_jittab_copy(&p->pj[1], &mp->perfmap);
	}
	return p;
}

static void keep_comm(struct hproc *hp, const struct jt_proc *p)
{
	if (p && p->comm[0])
		snprintf(hp->comm, sizeof(hp->comm), "%s", p->comm);
}

static bool same_region(const struct jt_region *a, const struct jt_region *b)
{
	return b && a->start == b->start && a->end == b->end &&
	       a->prot == b->prot && a->born_ns == b->born_ns &&
	       a->path == b->path && a->kind == b->kind;
}

static uint64_t shape_since(struct html_data *d, uint32_t pid,
			    const struct jt_region *r)
{
	struct shape k = { pid, r->start, 0, 0 };
	struct shape *s = jt_hash_del(&d->shapes, shape_hash(pid, r->start),
				      shape_eq, &k);
	uint64_t since = r->born_ns;

	if (s && s->end == r->end && s->since > since)
		since = s->since;
	free(s);
	return since;
}

static void note_shape(struct html_data *d, uint32_t pid,
		       const struct jt_region *r, uint64_t t)
{
	struct shape k = { pid, r->start, r->end, t };
	uint64_t h = shape_hash(pid, r->start);
	struct shape *s = jt_hash_find(&d->shapes, h, shape_eq, &k);

	if (!s) {
		s = malloc(sizeof(*s));
		if (!s || jt_hash_add(&d->shapes, h, s)) {
			free(s);
			return; /* drawn from its birth instead */
		}
	}
	*s = k;
}

/*
 * last: it lasted until the process's end (its exit, or the recording's
 * end while it still ran: alive), where maps shows it.
 */
static void region_out(struct html_data *d, struct hproc *hp,
		       const struct jt_aspace *as, const struct jt_region *r,
		       uint64_t died, bool last, bool alive)
{
	struct jt_kvma v = jt_aspace_kvma(as, r);
	struct jt_json *j = &d->j[F_REGIONS];
	uint64_t from = shape_since(d, hp->pid, r);
	char prot[4] = { r->prot & 1 ? 'r' : '-', r->prot & 2 ? 'w' : '-',
			 r->prot & 4 ? 'x' : '-', 0 };

	if (hp->regions++ >= JT_HTML_BOXES) {
		struct agg k = { hp->pid,  0,	   v.end ? v.start : r->start,
				 r->start, r->end, from,
				 died,	   0 };

		aggregate(d, &k);
		return;
	}
	jt_json_object(j);
	jt_json_u64_field(j, "pid", hp->pid);
	jt_json_hex_field(j, "start", r->start);
	jt_json_hex_field(j, "end", r->end);
	jt_json_str_field(j, "prot", prot);
	jt_json_str_field(j, "name", jt_region_name(r));
	jt_json_u64_field(j, "from", from);
	jt_json_u64_field(j, "to", died);
	jt_json_bool_field(j, "last", last);
	jt_json_bool_field(j, "alive", alive);
	if (v.end) {
		jt_json_hex_field(j, "vma_start", v.start);
		jt_json_hex_field(j, "vma_end", v.end);
		jt_json_u64_field(j, "vma_regions",
				  jt_aspace_vma_members(as, r));
	}
	jt_json_end(j);
}

static void jit_out(struct html_data *d, struct hproc *hp,
		    const struct jt_jitsym *s, int source, uint64_t to,
		    bool last)
{
	struct jt_json *j = &d->j[F_JIT];

	if (hp->jit++ >= JT_HTML_BOXES) {
		const struct jt_region *r =
			hp->prev ? jt_aspace_find(hp->prev, s->start) : NULL;
		struct agg k = { hp->pid,
				 1 + source,
				 r ? r->start : s->start & ~0xfffffULL,
				 s->start,
				 s->end,
				 s->loaded_ns,
				 to,
				 0 };

		aggregate(d, &k);
		return;
	}
	jt_json_object(j);
	jt_json_u64_field(j, "pid", hp->pid);
	jt_json_hex_field(j, "start", s->start);
	jt_json_hex_field(j, "end", s->end);
	jt_json_str_field(j, "name", s->name);
	jt_json_str_field(j, "source", source ? "perfmap" : "jitdump");
	jt_json_u64_field(j, "from", s->loaded_ns);
	jt_json_u64_field(j, "to", to);
	jt_json_bool_field(j, "last", last);
	jt_json_end(j);
}

/* Regions of prev in [lo, hi) that cur no longer has end at t. */
static void diff_regions(struct html_data *d, struct hproc *hp,
			 const struct jt_aspace *cur, uint64_t lo, uint64_t hi,
			 uint64_t t)
{
	const struct jt_region *r, *c;

	for (r = hp->prev ? jt_aspace_from(hp->prev, lo) : NULL;
	     r && r->start < hi; r = jt_aspace_next(hp->prev, r))
		if (!same_region(r, cur ? jt_aspace_find(cur, r->start) : NULL))
			region_out(d, hp, hp->prev, r, t, false, false);
	/* What took a new shape there is drawn from now. */
	for (c = cur ? jt_aspace_from(cur, lo) : NULL; c && c->start < hi;
	     c = jt_aspace_next(cur, c))
		if (c->born_ns < t &&
		    !same_region(c, hp->prev ?
					    jt_aspace_find(hp->prev, c->start) :
					    NULL))
			note_shape(d, hp->pid, c, t);
}

static void diff_jit(struct html_data *d, struct hproc *hp,
		     const struct jt_proc *p, uint64_t lo, uint64_t hi,
		     uint64_t t)
{
	const struct jt_jittab *cur[2] = { p ? &p->jitdump : NULL,
					   p ? &p->perfmap : NULL };
	const struct jt_jitsym *s, *c;
	int k;

	for (k = 0; k < 2; k++)
		for (s = jt_jittab_first_in(&hp->pj[k], lo, hi);
		     s && s->start < hi; s = jt_jittab_next(&hp->pj[k], s)) {
			c = cur[k] ? jt_jittab_find(cur[k], s->start) : NULL;
			if (!c || c->start != s->start || c->end != s->end ||
			    c->name != s->name || c->loaded_ns != s->loaded_ns)
				jit_out(d, hp, s, k, t, false);
		}
}

/* The state after the event becomes the one the next is compared to. */
static void keep_state(struct hproc *hp, const struct jt_proc *p)
{
	jt_aspace_put(hp->prev);
	hp->prev = p && p->as ? jt_aspace_clone(p->as) : NULL;
	jt_jittab_free(&hp->pj[0]);
	jt_jittab_free(&hp->pj[1]);
	if (p) {
		jt_jittab_copy(&hp->pj[0], &p->jitdump);
		jt_jittab_copy(&hp->pj[1], &p->perfmap);
	}
}

static void changed(struct html_data *d, struct jt_model *m, uint32_t pid,
		    const uint64_t (*range)[2], int n, uint64_t t)
{
	struct hproc *hp = hproc_of(d, m, pid);
	struct jt_proc *p = jt_model_find(m, pid);
	int i;

	if (!hp)
		return;
	keep_comm(hp, p);
	for (i = 0; i < n; i++) {
		if (range[i][0] >= range[i][1])
			continue;
		diff_regions(d, hp, p ? p->as : NULL, range[i][0], range[i][1],
			     t);
		diff_jit(d, hp, p, range[i][0], range[i][1], t);
	}
	keep_state(hp, p);
}

/* The address ranges a BPF event may have changed. */
static int bpf_ranges(const struct jt_hdr *h, uint32_t len,
		      const struct hproc *hp, uint64_t (*r)[2])
{
	const struct jt_map_event *e = (const void *)h;
	const struct jt_region *heap;

	if (len < sizeof(*e))
		return 0;
	switch (h->type) {
	case JT_EV_MMAP:
	case JT_EV_SHMAT:
		r[0][0] = e->result;
		r[0][1] = e->result + JT_PAGE_ALIGN(e->args[1]);
		if (h->type == JT_EV_SHMAT)
			r[0][1] = e->vma.end > e->vma.start ? e->vma.end :
							      r[0][1];
		return 1;
	case JT_EV_MPROTECT:
	case JT_EV_MUNMAP:
		r[0][0] = e->args[0];
		r[0][1] = e->args[0] + JT_PAGE_ALIGN(e->args[1]);
		return 1;
	case JT_EV_SHMDT:
		r[0][0] = e->args[0];
		r[0][1] = e->args[0] + 1;
		return 1;
	case JT_EV_MREMAP:
		r[0][0] = e->args[0];
		r[0][1] = e->args[0] + JT_PAGE_ALIGN(e->args[1]);
		r[1][0] = e->result;
		r[1][1] = e->result + JT_PAGE_ALIGN(e->args[2]);
		return 2;
	case JT_EV_BRK:
		heap = hp && hp->prev ? jt_aspace_find(hp->prev, e->args[1]) :
					NULL;
		r[0][0] = e->args[1];
		r[0][1] = heap && heap->end > (uint64_t)e->result ?
				  heap->end :
				  (uint64_t)e->result;
		return 1;
	case JT_EV_VMA:
		r[0][0] = e->vma.start;
		r[0][1] = e->vma.end;
		return 1;
	default:
		return 0;
	}
}

/* Everything a process had ends at t: its exit, or an exec's new image. */
static void all_end(struct html_data *d, struct hproc *hp, uint64_t t,
		    bool last, bool alive)
{
	const struct jt_region *r;
	const struct jt_jitsym *s;
	int k;

	for (r = hp->prev ? jt_aspace_first(hp->prev) : NULL; r;
	     r = jt_aspace_next(hp->prev, r))
		region_out(d, hp, hp->prev, r, t, last, alive);
	for (k = 0; k < 2; k++)
		for (s = jt_jittab_first_in(&hp->pj[k], 0, UINT64_MAX); s;
		     s = jt_jittab_next(&hp->pj[k], s))
			jit_out(d, hp, s, k, t, last);
}

static void bpf_item(struct html_data *d, struct jt_model *m,
		     const struct jt_item *it)
{
	const struct jt_hdr *h = it->data;
	struct hproc *hp;
	uint64_t r[2][2];
	int n;

	if (it->len < sizeof(*h))
		return;
	if (h->type == JT_EV_EXEC) {
		hp = hproc_of(d, m, h->pid);
		if (!hp)
			return;
		all_end(d, hp, it->time, false, false);
		keep_comm(hp, jt_model_find(m, h->pid));
		keep_state(hp, jt_model_find(m, h->pid));
		return;
	}
	if (h->type == JT_EV_FORK) {
		const struct jt_fork_event *f = it->data;

		if (it->len >= sizeof(*f) && !(f->flags & JT_FORK_THREAD))
			hproc_of(d, m, f->child_pid);
		return;
	}
	hp = hproc_of(d, m, h->pid);
	n = bpf_ranges(h, it->len, hp, r);
	if (n)
		changed(d, m, h->pid, (const uint64_t(*)[2])r, n, it->time);
}

static void jit_item(struct html_data *d, struct jt_model *m,
		     const struct jt_jit_item *j)
{
	uint64_t r[2][2] = { { j->addr, j->addr + (j->size ? j->size : 1) },
			     { j->old_addr,
			       j->old_addr + (j->size ? j->size : 1) } };

	if (j->op == JT_JIT_CLOSE)
		return;
	changed(d, m, j->pid, (const uint64_t(*)[2])r,
		j->op == JT_JIT_MOVE ? 2 : 1, j->time);
}

static uint32_t flame_child(struct html_data *d, uint32_t parent,
			    const char *name, int source)
{
	struct fkey k = { parent, source, name };
	uint64_t h = jt_hash_u64((uintptr_t)name ^ ((uint64_t)parent << 24) ^
				 source);
	struct fnode *n = jt_hash_find(&d->fidx, h, fkey_eq, &k), *nodes;

	if (n)
		return n - d->nodes;
	if (d->nnodes >= JT_HTML_FLAME_NODES)
		return UINT32_MAX;
	if (d->nnodes == d->cap) {
		/* The index points into the array: rebuild it after a move. */
		size_t i;

		nodes = realloc(d->nodes, 2 * d->cap * sizeof(*nodes));
		if (!nodes)
			return UINT32_MAX;
		d->nodes = nodes;
		d->cap *= 2;
		jt_hash_free(&d->fidx);
		memset(&d->fidx, 0, sizeof(d->fidx));
		for (i = 1; i < d->nnodes; i++)
			jt_hash_add(&d->fidx,
				    jt_hash_u64((uintptr_t)d->nodes[i].name ^
						((uint64_t)d->nodes[i].parent
						 << 24) ^
						d->nodes[i].source),
				    &d->nodes[i]);
	}
	n = &d->nodes[d->nnodes];
	*n = (struct fnode){ parent, source, name, 0, 0, 0 };
	if (jt_hash_add(&d->fidx, h, n))
		return UINT32_MAX;
	return d->nnodes++;
}

static void flame_add(struct html_data *d, const char *comm,
		      const struct jt_symres *y)
{
	uint32_t node, next;
	char buf[256];
	int i;

	d->nodes[0].total++;
	node = flame_child(d, 0, jt_intern(&d->strs, comm, strlen(comm)),
			   JT_SRC_UNKNOWN);
	if (node == UINT32_MAX) {
		d->flame_cut++;
		return;
	}
	d->nodes[node].total++;
	/* Outermost frame first; without a chain, the leaf alone. */
	for (i = y->nframes ? (int)y->nframes - 1 : 0; i >= 0; i--) {
		const struct jt_symres *f = y->nframes ? &y->frames[i] : y;
		const char *name = jt_symres_name(f, buf, sizeof(buf));

		next = flame_child(d, node,
				   jt_intern(&d->strs, name, strlen(name)),
				   f->source);
		if (next == UINT32_MAX) {
			d->flame_cut++;
			break;
		}
		node = next;
		d->nodes[node].total++;
		if (f->retro)
			d->nodes[node].retro++;
	}
	d->nodes[node].self++;
}

static void sample_item(struct html_data *d, struct jt_model *m,
			const struct jt_item *it, const struct jt_symres *y)
{
	struct jt_json *j = &d->j[F_TICKS];
	struct jt_sample smp;
	struct jt_proc *p;
	struct hproc *hp;
	char buf[256];

	if (jt_perf_sample(it->data, it->len, d->s->sample_type, &smp))
		return;
	p = jt_model_find(m, smp.pid);
	hp = hproc_of(d, m, smp.pid);
	if (!hp)
		return;
	keep_comm(hp, p);
	d->nticks++;
	flame_add(d, jt_proc_comm(p, smp.pid), y);
	/* Every sample until 5000 are drawn, then every other, ... */
	if (hp->ticks++ % hp->stride)
		return;
	if (++hp->drawn % JT_HTML_TICKS_STEP == 0)
		hp->stride *= 2;
	d->ndrawn++;
	jt_json_object(j);
	jt_json_u64_field(j, "pid", smp.pid);
	jt_json_u64_field(j, "t", it->time);
	jt_json_hex_field(j, "ip", y->ip);
	jt_json_str_field(j, "name", jt_symres_name(y, buf, sizeof(buf)));
	jt_json_str_field(j, "source", jt_source_name(y->source));
	jt_json_bool_field(j, "retro", y->retro);
	jt_json_end(j);
}

void html_data_item(void *ctx, struct jt_model *m, const struct jt_item *it,
		    const struct jt_symres *y)
{
	struct html_data *d = ctx;

	if (!d->t0 || it->time < d->t0)
		d->t0 = it->time;
	if (it->time > d->t1)
		d->t1 = it->time;
	if (it->kind == JT_IT_BPF)
		bpf_item(d, m, it);
	else if (it->kind == JT_IT_JIT)
		jit_item(d, m, it->data);
	else if (y && y->is_sample)
		sample_item(d, m, it, y);
}

void html_data_exited(void *ctx, struct jt_model *m, struct jt_proc *p)
{
	struct html_data *d = ctx;
	struct hproc *hp = hproc_of(d, m, p->pid);

	if (!hp)
		return;
	keep_comm(hp, p);
	keep_state(hp, p);
	all_end(d, hp, p->dead_ns, true, false);
	keep_state(hp, NULL);
}

void html_data_finish(struct html_data *d, struct jt_model *m)
{
	struct jt_proc *p;

	for (p = m->first; p; p = p->next) {
		struct hproc *hp;

		if (p->dead_ns)
			continue;
		hp = hproc_of(d, m, p->pid);
		if (!hp)
			continue;
		keep_comm(hp, p);
		keep_state(hp, p);
		all_end(d, hp, d->t1, true, true);
		keep_state(hp, NULL);
	}
}

void html_data_release(struct html_data *d)
{
	size_t i;

	if (!d)
		return;
	jt_hash_for_each (&d->procs, i)
		keep_state(d->procs.e[i].val, NULL);
}

static void flame_json(struct html_data *d, struct jt_json *j)
{
	size_t i;

	jt_json_name(j, "flame");
	jt_json_array(j);
	for (i = 0; i < d->nnodes; i++) {
		const struct fnode *n = &d->nodes[i];

		jt_json_array(j);
		jt_json_u64(j, i ? n->parent : 0);
		jt_json_str(j, n->name);
		jt_json_str(j, jt_source_name(n->source));
		jt_json_u64(j, n->total);
		jt_json_u64(j, n->self);
		jt_json_u64(j, n->retro);
		jt_json_end(j);
	}
	jt_json_end(j);
}

static void procs_json(struct html_data *d, struct jt_json *j)
{
	size_t i;

	jt_json_name(j, "procs");
	jt_json_array(j);
	jt_hash_for_each (&d->procs, i) {
		const struct hproc *hp = d->procs.e[i].val;

		jt_json_object(j);
		jt_json_u64_field(j, "pid", hp->pid);
		jt_json_str_field(j, "comm", hp->comm);
		jt_json_u64_field(j, "samples", hp->ticks);
		jt_json_u64_field(j, "ticks", hp->drawn);
		jt_json_u64_field(j, "regions", hp->regions);
		jt_json_u64_field(j, "jit", hp->jit);
		jt_json_end(j);
	}
	jt_json_end(j);
}

/* What was drawn as one box past JT_HTML_BOXES. */
static void boxes_json(struct html_data *d, struct jt_json *j)
{
	size_t i;

	jt_json_name(j, "boxes");
	jt_json_array(j);
	jt_hash_for_each (&d->aggs, i) {
		const struct agg *a = d->aggs.e[i].val;

		jt_json_object(j);
		jt_json_u64_field(j, "pid", a->pid);
		jt_json_str_field(j, "what",
				  a->what == 0 ? "regions" :
				  a->what == 1 ? "jitdump" :
						 "perfmap");
		jt_json_hex_field(j, "start", a->lo);
		jt_json_hex_field(j, "end", a->hi);
		jt_json_u64_field(j, "from", a->from);
		jt_json_u64_field(j, "to", a->to);
		jt_json_u64_field(j, "n", a->n);
		jt_json_end(j);
	}
	jt_json_end(j);
}

int html_data_write(struct html_data *d, struct jt_json *j)
{
	const char *names[3] = { "regions", "jit", "ticks" };
	int k, err = d->err;

	for (k = 0; k < 3; k++) {
		jt_json_end(&d->j[k]);
		fflush(d->f[k]);
	}
	jt_json_object(j);
	jt_json_u64_field(j, "t0", d->t0);
	jt_json_u64_field(j, "t1", d->t1);
	jt_json_u64_field(j, "samples", d->nticks);
	jt_json_u64_field(j, "ticks_drawn", d->ndrawn);
	jt_json_u64_field(j, "flame_cut", d->flame_cut);
	procs_json(d, j);
	flame_json(d, j);
	for (k = 0; k < 3 && !err; k++) {
		jt_json_name(j, names[k]);
		err = jt_json_raw_file(j, d->f[k]) ? -EIO : 0;
	}
	boxes_json(d, j);
	jt_json_end(j);
	return err;
}

void html_data_free(struct html_data *d)
{
	size_t i;
	int k;

	if (!d)
		return;
	jt_hash_for_each (&d->procs, i) {
		struct hproc *hp = d->procs.e[i].val;

		keep_state(hp, NULL);
		free(hp);
	}
	jt_hash_free(&d->procs);
	jt_hash_for_each (&d->shapes, i)
		free(d->shapes.e[i].val);
	jt_hash_free(&d->shapes);
	jt_hash_free(&d->fidx);
	jt_hash_for_each (&d->aggs, i)
		free(d->aggs.e[i].val);
	jt_hash_free(&d->aggs);
	jt_strtab_free(&d->strs);
	free(d->nodes);
	for (k = 0; k < 3; k++)
		if (d->f[k])
			fclose(d->f[k]);
	free(d);
}
