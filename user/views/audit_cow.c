// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include "jt_abi.h"
#include "lib/fmt.h"
#include "lib/hash.h"
#include "lib/reserve.h"
#include "model/datasym.h"
#include "views/audit_cow.h"
#include "views/view.h"

#define MAX_PIDS 16
#define MAX_DATASYMS 32
#define LINE_SIZE 64ULL

/* Who made a page private, named when the fault came, as things were. */
struct writer {
	uint32_t tid;
	uint64_t page;
	uint64_t time;
	const char *sym; /* NULL: no symbol */
	const char *dso;
	uint8_t source;
};

/* One private page of one process, for the table by file and page. */
struct page_row {
	const char *backing; /* interned in the symbolizer */
	uint64_t key;	     /* file offset; the address for anon memory */
	uint32_t pid;
	bool own; /* its own copy, not one shared with a fork relative */
	struct jt_cowpage c;
	const struct writer *w;
	char *data; /* the data objects on the page, for people */
};

/* One cache line of one file or shm segment, as data samples hit it. */
struct line {
	uint64_t dev;
	uint64_t ino;
	uint64_t offset;
	const char *path;
	const char *dsym; /* the data object on it; NULL: none */
	struct {
		uint32_t pid;
		uint8_t classes; /* 1 << enum jt_sharing, per sample */
		uint64_t samples;
	} who[MAX_PIDS];
	int n;
	uint64_t samples;
	uint8_t classes;
};

struct audit_cow {
	struct jt_syms *y;
	audit_add_fn add;
	void *ctx;
	struct jt_hash writers; /* (tid, page, time) -> struct writer */
	struct jt_hash lines;	/* (dev, ino, offset) -> struct line */
	struct page_row *rows;
	size_t nrows;
	size_t cap;
};

struct audit_cow *audit_cow_new(struct jt_syms *y, audit_add_fn add, void *ctx)
{
	struct audit_cow *c = calloc(1, sizeof(*c));

	if (c) {
		c->y = y;
		c->add = add;
		c->ctx = ctx;
	}
	return c;
}

static uint64_t writer_hash(uint32_t tid, uint64_t page, uint64_t time)
{
	return jt_hash_u64(page ^ jt_hash_u64(time ^ jt_hash_u64(tid)));
}

static bool writer_eq(const void *val, const void *key)
{
	const struct writer *a = val, *b = key;

	return a->tid == b->tid && a->page == b->page && a->time == b->time;
}

static const struct writer *writer_of(const struct audit_cow *c,
				      const struct jt_cowpage *cp)
{
	struct writer k = { .tid = cp->tid,
			    .page = cp->page,
			    .time = cp->time };

	return jt_hash_find(&c->writers, writer_hash(k.tid, k.page, k.time),
			    writer_eq, &k);
}

void audit_cow_fault(struct audit_cow *c, struct jt_model *m,
		     const struct jt_cow_event *ev)
{
	struct jt_proc *p = jt_model_find(m, ev->h.pid);
	const struct jt_cowpage *cp =
		p && p->as ? jt_aspace_cowpage(p->as, ev->page) : NULL;
	struct jt_symres r;
	struct writer *w;

	/* Only what the model took: not execve's, not outside any region. */
	if (!cp || cp->time != ev->h.time || cp->tid != ev->h.tid || !cp->ip ||
	    writer_of(c, cp))
		return;
	jt_syms_resolve(c->y, m, ev->h.pid, cp->ip, false, &r);
	w = malloc(sizeof(*w));
	if (!w || jt_hash_add(&c->writers,
			      writer_hash(cp->tid, cp->page, cp->time), w)) {
		free(w);
		return;
	}
	*w = (struct writer){ cp->tid, cp->page, cp->time,
			      r.sym,   r.dso,	 r.source };
}

/* The data objects on a page: JSON into w, text into a new string. */
static char *data_syms(struct audit_cow *c, const struct jt_region *r,
		       uint64_t page, struct jt_json *w)
{
	struct jt_datasym d[MAX_DATASYMS];
	size_t n = jt_datasym_page(c->y, r, page, d, MAX_DATASYMS);
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	if (w)
		jt_datasym_json(w, d, n < MAX_DATASYMS ? n : MAX_DATASYMS, n);
	if (f)
		jt_datasym_print(f, d, n < MAX_DATASYMS ? n : MAX_DATASYMS);
	if (f && n > MAX_DATASYMS)
		fprintf(f, " and %zu more", n - MAX_DATASYMS);
	if (f)
		fclose(f);
	return text;
}

static const char *why_name(const struct jt_cowpage *cp)
{
	if (cp->exec_load)
		return "execve-zeroed";
	return cp->fork_shared ? "fork-shared-written" : "file-page-written";
}

static void page_json(struct jt_json *w, const struct jt_region *r,
		      const struct jt_cowpage *cp, const struct writer *wr,
		      bool own)
{
	jt_json_hex_field(w, "addr", cp->page);
	if (r->kind == JT_RK_FILE)
		jt_json_hex_field(w, "file_offset",
				  r->pgoff + (cp->page - r->start));
	jt_json_u64_field(w, "time_ns", cp->time);
	jt_json_str_field(w, "kind", jt_cow_kind_name(cp->kind));
	jt_json_str_field(w, "why", why_name(cp));
	/* After a fork the copy is shared with the other side until written. */
	jt_json_str_field(w, "sharing", own ? "private" : "shared-anon");
	jt_json_u64_field(w, "tid", cp->tid);
	jt_json_name(w, "ip");
	if (cp->ip)
		jt_json_hex(w, cp->ip);
	else
		jt_json_null(w); /* execve's loader, or a version 3 recording */
	jt_json_str_field(w, "sym", wr ? wr->sym : NULL);
	jt_json_str_field(w, "dso", wr ? wr->dso : NULL);
	jt_json_str_field(w, "source", wr ? jt_source_name(wr->source) : NULL);
}

static void add_row(struct audit_cow *c, const struct jt_proc *p,
		    const struct jt_region *r, const struct jt_cowpage *cp,
		    bool own, char *data)
{
	const char *name = jt_region_name(r);
	struct page_row *row;

	if (jt_reserve(&c->rows, &c->cap, c->nrows + 1, sizeof(*c->rows))) {
		free(data);
		return;
	}
	row = &c->rows[c->nrows++];
	*row = (struct page_row){
		.backing = jt_intern(c->y->strs, name, strlen(name)),
		.key = r->kind == JT_RK_FILE ?
			       r->pgoff + (cp->page - r->start) :
			       cp->page,
		.pid = p->pid,
		.own = own,
		.c = *cp,
		.w = writer_of(c, cp),
		.data = data,
	};
}

/* One mapping's private pages, each with its writer and its data. */
static void cow_region(struct audit_cow *c, const struct jt_proc *p,
		       const struct jt_region *r, const struct jt_cowpage *cp)
{
	const struct jt_aspace *as = p->as;
	uint64_t fork_ns = jt_aspace_fork_ns(as, r), n = 0, first = 0;
	struct jt_json_mem d;
	struct jt_json *w = jt_json_mem_open(&d);
	char text[512];

	if (w) {
		jt_json_object(w);
		jt_json_str_field(w, "backing", jt_region_name(r));
		jt_json_name(w, "pages");
		jt_json_array(w);
	}
	for (; cp && cp->page < r->end;
	     cp = jt_aspace_cow_from(as, cp->page + 1)) {
		bool own = cp->time > fork_ns;

		if (!n++ || cp->time < first)
			first = cp->time;
		if (w) {
			jt_json_object(w);
			page_json(w, r, cp, writer_of(c, cp), own);
		}
		add_row(c, p, r, cp, own,
			r->kind == JT_RK_FILE ? data_syms(c, r, cp->page, w) :
						NULL);
		if (w)
			jt_json_end(w);
	}
	if (w) {
		jt_json_end(w);
		jt_json_u64_field(w, "count", n);
		jt_json_u64_field(w, "first_ns", first);
		jt_json_end(w);
	}
	snprintf(text, sizeof(text), "%" PRIu64 " pages of %s private", n,
		 jt_region_name(r));
	c->add(c->ctx, "cow", p->pid, r->start, r->end, text, w ? &d : NULL);
}

void audit_cow_proc(struct audit_cow *c, const struct jt_proc *p)
{
	const struct jt_aspace *as = p->as;
	const struct jt_region *r;

	for (r = as ? jt_aspace_first(as) : NULL; r;
	     r = jt_aspace_next(as, r)) {
		const struct jt_cowpage *cp = jt_aspace_cow_from(as, r->start);

		if (cp && cp->page < r->end)
			cow_region(c, p, r, cp);
	}
}

static int cmp_row(const void *x, const void *y)
{
	const struct page_row *a = x, *b = y;
	int k = strcmp(a->backing, b->backing);

	if (k)
		return k;
	if (a->key != b->key)
		return a->key < b->key ? -1 : 1;
	if (a->pid != b->pid)
		return a->pid < b->pid ? -1 : 1;
	return a->c.page < b->c.page ? -1 : a->c.page > b->c.page;
}

static void print_row(FILE *f, const struct page_row *r)
{
	char when[32], who[320];

	if (r->w)
		snprintf(who, sizeof(who), "%s (%s)",
			 r->w->sym ? r->w->sym : "[unknown]",
			 r->w->dso ? r->w->dso : "?");
	else
		snprintf(who, sizeof(who), "%s",
			 r->c.exec_load ? "(execve: the ELF loader's padzero)" :
			 r->c.ip	? "[unknown]" :
					  "(writer not recorded)");
	fprintf(f,
		"      pid %-7u %012" PRIx64 "  %-19s %s  %-11s tid %-7u %s\n",
		r->pid, r->c.page, why_name(&r->c),
		jt_time_str(r->c.time, when),
		r->own ? "own copy" : "fork-shared", r->c.tid, jt_tx(who));
}

void audit_cow_print(struct audit_cow *c, FILE *f)
{
	const char *backing = NULL;
	bool have_key = false;
	uint64_t key = 0;
	size_t i;

	if (c->nrows)
		qsort(c->rows, c->nrows, sizeof(*c->rows), cmp_row);
	for (i = 0; i < c->nrows; i++) {
		const struct page_row *r = &c->rows[i];

		if (!backing || strcmp(backing, r->backing)) {
			backing = r->backing;
			have_key = false;
			fprintf(f, "  %s\n", jt_tx(backing));
		}
		if (!have_key || key != r->key) {
			key = r->key;
			have_key = true;
			fprintf(f, "    %s%#" PRIx64 "%s%s\n",
				r->backing[0] == '/' ? "+" : "", key,
				r->data && *r->data ? "  data: " : "",
				r->data ? jt_tx(r->data) : "");
		}
		print_row(f, r);
	}
}

static bool line_eq(const void *val, const void *key)
{
	const struct line *a = val, *b = key;

	return a->dev == b->dev && a->ino == b->ino && a->offset == b->offset;
}

static struct line *line_of(struct audit_cow *c, const struct jt_region *g,
			    uint64_t addr)
{
	struct line k = { .dev = g->dev,
			  .ino = g->ino,
			  .offset = (g->pgoff + addr - g->start) &
				    ~(LINE_SIZE - 1) };
	uint64_t h =
		jt_hash_u64(k.dev ^ jt_hash_u64(k.ino ^ jt_hash_u64(k.offset)));
	struct line *l = jt_hash_find(&c->lines, h, line_eq, &k);
	const char *name = jt_region_name(g);
	struct jt_datasym d;
	char buf[512];

	if (l)
		return l;
	k.path = jt_intern(c->y->strs, name, strlen(name));
	if (g->kind == JT_RK_FILE &&
	    jt_datasym_at(c->y, g, addr & ~(LINE_SIZE - 1), &d)) {
		jt_datasym_name(&d, buf, sizeof(buf));
		k.dsym = jt_intern(c->y->strs, buf, strlen(buf));
	}
	l = malloc(sizeof(*l));
	if (!l || !k.path || jt_hash_add(&c->lines, h, l)) {
		free(l);
		return NULL;
	}
	*l = k;
	return l;
}

/* Memory other processes can map too: a file, or a shm segment's inode. */
static bool keyed_by_file(const struct jt_region *g)
{
	return g->ino &&
	       (g->kind == JT_RK_FILE || g->kind == JT_RK_SHARED_ANON ||
		g->origin == JT_EV_SHMAT);
}

void audit_cow_sample(struct audit_cow *c, struct jt_model *m,
		      const struct jt_sample *smp)
{
	struct jt_proc *p = jt_model_find(m, smp->pid);
	const struct jt_region *g =
		p && p->as ? jt_aspace_find(p->as, smp->addr) : NULL;
	uint8_t cls;
	struct line *l;
	int i;

	if (!g || !keyed_by_file(g) || !(l = line_of(c, g, smp->addr)))
		return;
	cls = 1u << jt_aspace_sharing(p->as, smp->addr);
	l->samples++;
	l->classes |= cls;
	for (i = 0; i < l->n && l->who[i].pid != smp->pid; i++)
		;
	if (i == l->n) {
		if (l->n == MAX_PIDS)
			return; /* counted in the line's samples still */
		l->n++;
		l->who[i].pid = smp->pid;
	}
	l->who[i].classes |= cls;
	l->who[i].samples++;
}

static void classes_json(struct jt_json *w, uint8_t classes)
{
	int s;

	jt_json_array(w);
	for (s = JT_SHARE_PRIVATE; s <= JT_SHARE_ANON; s++)
		if (classes & (1u << s))
			jt_json_str(w, jt_sharing_name(s));
	jt_json_end(w);
}

/*
 * Only processes that reach one physical page can share its line: each
 * on its own copy, the "sharing" a file-keyed tool reports is false.
 */
static const char *verdict(uint8_t classes, const char **why)
{
	if (classes == 1u << JT_SHARE_PRIVATE) {
		*why = "each on a private copy of its own: not shared";
		return "private-copies";
	}
	if (!(classes & (1u << JT_SHARE_PRIVATE))) {
		*why = "one physical page: can be true sharing";
		return classes == 1u << JT_SHARE_ANON ? "shared-anon" :
							"shared-file";
	}
	*why = "some processes on the shared page, some on private copies";
	return "mixed";
}

static void line_finding(struct audit_cow *c, const struct line *l)
{
	const char *why, *v = verdict(l->classes, &why);
	struct jt_json_mem d;
	struct jt_json *w = jt_json_mem_open(&d);
	char text[1024];
	int i;

	snprintf(text, sizeof(text), "%s+%#" PRIx64 "%s%s%s: %d processes, %s",
		 l->path, l->offset, l->dsym ? " (" : "",
		 l->dsym ? l->dsym : "", l->dsym ? ")" : "", l->n, why);
	if (w) {
		jt_json_object(w);
		jt_json_str_field(w, "path", l->path);
		jt_json_hex_field(w, "offset", l->offset);
		jt_json_u64_field(w, "line_size", LINE_SIZE);
		jt_json_str_field(w, "data_sym", l->dsym);
		jt_json_str_field(w, "sharing", v);
		jt_json_name(w, "pids");
		jt_json_array(w);
		for (i = 0; i < l->n; i++)
			jt_json_u64(w, l->who[i].pid);
		jt_json_end(w);
		jt_json_name(w, "processes");
		jt_json_array(w);
		for (i = 0; i < l->n; i++) {
			jt_json_object(w);
			jt_json_u64_field(w, "pid", l->who[i].pid);
			jt_json_name(w, "sharing");
			classes_json(w, l->who[i].classes);
			jt_json_u64_field(w, "samples", l->who[i].samples);
			jt_json_end(w);
		}
		jt_json_end(w);
		jt_json_u64_field(w, "samples", l->samples);
		jt_json_end(w);
	}
	c->add(c->ctx, "false-sharing-suspect", l->who[0].pid, l->offset,
	       l->offset + LINE_SIZE, text, w ? &d : NULL);
}

void audit_cow_lines(struct audit_cow *c)
{
	size_t i;

	jt_hash_for_each (&c->lines, i) {
		const struct line *l = c->lines.e[i].val;

		if (l->n >= 2)
			line_finding(c, l);
	}
}

void audit_cow_free(struct audit_cow *c)
{
	size_t i;

	if (!c)
		return;
	for (i = 0; i < c->nrows; i++)
		free(c->rows[i].data);
	free(c->rows);
	jt_hash_for_each (&c->writers, i)
		free(c->writers.e[i].val);
	jt_hash_free(&c->writers);
	jt_hash_for_each (&c->lines, i)
		free(c->lines.e[i].val);
	jt_hash_free(&c->lines);
	free(c);
}
