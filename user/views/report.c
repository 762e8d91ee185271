// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* jittrace report: samples per command, process, object and symbol. */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "jittrace.h"
#include "lib/cli.h"
#include "lib/fmt.h"
#include "lib/json.h"
#include "lib/perf_rec.h"
#include "lib/hash.h"
#include "model/datasym.h"
#include "model/pipeline.h"
#include "views/print_blocks.h"
#include "views/report_groups.h"
#include "views/report_rows.h"
#include "views/view.h"

/* --sort's keys: the bit of each is 1 << its index (enum key). */
static const char *const sort_keys[] = { "comm", "pid",	 "dso",
					 "sym",	 "dsym", NULL };

/* -g's orders, as perf report's --call-graph names them. */
static const char *const graph_orders[] = { "callee", "caller", NULL };

enum graph_order { ORDER_CALLEE, ORDER_CALLER };

static const struct jt_opt report_opts[] = {
	{ 'i', 0, "input", "FILE", "recording (default jittrace.data)",
	  JT_ARG_FILE },
	{ 's', 0, "sort", "KEYS",
	  "group by these, comma-separated, from comm,pid,dso,sym (default: "
	  "all four), and show only their columns; with --data also dsym, the "
	  "data symbol (default: all)",
	  JT_ARG_WORDS, sort_keys },
	{ 0, 'p', "pid", "PID", "only this process" },
	{ 0, 'c', "comm", "NAME", "only processes with this command name" },
	{ 0, 'd', "data", NULL,
	  "data addresses (record -d) by process, region, data symbol and "
	  "sharing class instead of code" },
	{ 'g', 0, "children", NULL,
	  "with call chains (record -g): Children, the samples with the "
	  "symbol anywhere on the stack, sorted by it, and under each symbol "
	  "the call paths that led to its own samples, as perf report -g. "
	  "As in perf, -g may be followed by an order: -g caller" },
	{ 0, 'o', "call-graph", "ORDER",
	  "the order of each path under -g: callee (the default: the "
	  "symbol's caller first, \"b <- c <- main\") or caller (the "
	  "outermost caller first, \"main -> c -> b\")",
	  JT_ARG_WORD, graph_orders },
	{ 'G', 0, "inverted", NULL,
	  "the same as -g caller, as in perf report" },
	{ 0, 'j', "json", NULL, "a JSON array, one object per row" },
	{ 0 },
};

const struct jt_cmd jt_cmd_report = {
	.name = "report",
	.summary = "samples by command, process, object and symbol",
	.synopsis = "[-i FILE] [--sort KEYS] [--pid PID] [--comm NAME] "
		    "[-g [caller|callee]] [--json]\n--data [-i FILE] [--sort "
		    "KEYS] [--json]",
	.opts = report_opts,
	.run = cmd_report,
};

enum key { K_COMM = 1, K_PID = 2, K_DSO = 4, K_SYM = 8, K_DSYM = 16 };

/* A path of callers, interned: "b <- c <- main". */
struct path {
	const char *s;
	uint64_t samples;
};

#define CALLER_DEPTH 12
#define CALLERS_SHOWN 5

/* The columns of the last count printed, and the count. */
struct count_cache {
	uint64_t v;
	bool valid;
	char s[48];
};

/* The columns between the counts and the symbol, for the row they were. */
struct place_cache {
	const char *comm, *dso;
	uint32_t pid, nspid;
	uint8_t source;
	char *s; /* NULL: none yet */
};

/* Where rows are printed, with what was formatted last there. */
struct printer {
	const struct report *r;
	FILE *f;
	struct count_cache cc_samples, cc_children;
	struct place_cache place;
};

/*
 * Rows come from slabs, listed slab by slab. As 200K mallocs they
 * were sorted in the table's order, a cache miss each, and freed one by
 * one, which had glibc consolidate its bins: 8% of report's time.
 */
#define SLAB_ROWS 1024

struct row_slab {
	struct row_slab *next;
	size_t n;
	struct row rows[SLAB_ROWS];
};

struct report {
	unsigned int keys;
	uint32_t pid;
	const char *comm;
	int json;
	int data;  /* rows are data regions; source holds enum jt_sharing */
	int graph; /* -g */
	enum graph_order order;
	uint64_t stamp;
	struct jt_stream *s;
	struct jt_syms *syms; /* the pipeline's: its ELF files */
	struct jt_strtab strs;
	const char *comm_last;	 /* the last sample's comm, interned */
	struct jt_groups counts; /* without -g: the counts by group */
	bool nomem;		 /* a sample went uncounted */
	struct jt_hash groups;	 /* -g: of struct row */
	struct row_slab *slabs;	 /* the newest, with room or full */
	struct printer out;	 /* stdout */
	struct row **rows;	 /* the groups, most samples first */
	size_t n;
	uint64_t total;
};

static int parse_keys(const char *arg, unsigned int *keys)
{
	char *copy = strdup(arg), *tok, *save;

	*keys = 0;
	for (tok = strtok_r(copy, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save)) {
		int i = jt_word_index(sort_keys, tok);

		if (i < 0) {
			free(copy);
			return -1;
		}
		*keys |= 1u << i;
	}
	free(copy);
	return *keys ? 0 : -1;
}

static int parse(int argc, char **argv, struct report *r, const char **in)
{
	char *end;
	int c;

	*in = "jittrace.data";
	r->keys = 0;
	while ((c = jt_getopt(argc, argv, &jt_cmd_report)) != -1) {
		switch (c) {
		case 'i':
			*in = optarg;
			break;
		case 's':
			if (parse_keys(optarg, &r->keys))
				return jt_cmd_error(&jt_cmd_report,
						    "bad --sort keys");
			break;
		case 'p':
			r->pid = strtoul(optarg, &end, 10);
			if (*end || !r->pid)
				return jt_cmd_error(&jt_cmd_report,
						    "bad --pid");
			break;
		case 'c':
			r->comm = optarg;
			break;
		case 'j':
			r->json = 1;
			break;
		case 'd':
			r->data = 1;
			break;
		case 'g':
			r->graph = 1;
			/* perf's -g takes its order as the next word. */
			if (optind < argc &&
			    jt_word_index(graph_orders, argv[optind]) >= 0)
				r->order = jt_word_index(graph_orders,
							 argv[optind++]);
			break;
		case 'o':
			r->graph = 1;
			r->order = jt_word_index(graph_orders, optarg);
			if ((int)r->order < 0)
				return jt_cmd_error(
					&jt_cmd_report,
					"--call-graph: caller or callee");
			break;
		case 'G':
			r->graph = 1;
			r->order = ORDER_CALLER;
			break;
		case 'h':
			jt_cmd_usage(stdout, &jt_cmd_report);
			exit(0);
		default:
			return jt_cmd_error(&jt_cmd_report, NULL);
		}
	}
	if (optind < argc)
		return jt_cmd_error(&jt_cmd_report, "unexpected argument");
	if (r->graph && r->data)
		return jt_cmd_error(&jt_cmd_report, "-g and --data do not mix");
	if ((r->keys & K_DSYM) && !r->data)
		return jt_cmd_error(&jt_cmd_report, "--sort dsym needs --data");
	if (!r->keys)
		r->keys =
			K_COMM | K_PID | K_DSO | K_SYM | (r->data ? K_DSYM : 0);
	return 0;
}

/*
 * -g: every string in a row is interned, so rows are equal when their
 * pointers are: aggregate in a hash as samples come, one row per group.
 * Without -g, samples are counted in jt_groups (report_groups.c).
 */
static uint64_t row_hash(const struct row *k)
{
	uint64_t h = (uintptr_t)k->comm * 0x9e3779b97f4a7c15ULL;

	h ^= ((uintptr_t)k->dso + k->pid) * 0xc2b2ae3d27d4eb4fULL;
	h ^= (uintptr_t)k->sym * 0x165667b19e3779f9ULL;
	h ^= ((uintptr_t)k->dsym + k->source) * 0x27d4eb2f165667c5ULL;
	return jt_hash_u64(h);
}

static bool row_eq(const void *val, const void *key)
{
	const struct row *a = val, *b = key;

	return a->comm == b->comm && a->pid == b->pid && a->dso == b->dso &&
	       a->sym == b->sym && a->dsym == b->dsym && a->source == b->source;
}

/*
 * A name to group by pointer. The pipeline's names are one pointer per
 * string already (jt_syms.strs): only a name made here, for code no
 * symbol names, is interned, in the same table.
 */
static const char *sym_key(struct report *r, const struct jt_symres *y,
			   char *buf, size_t len)
{
	const char *s = jt_symres_name(y, buf, len);

	return s == buf ? jt_intern(r->syms->strs, s, strlen(s)) : s;
}

/* One process's samples tend to come together: compare before hashing. */
static const char *comm_key(struct report *r, const char *comm)
{
	if (!r->comm_last || strcmp(r->comm_last, comm))
		r->comm_last = jt_intern(&r->strs, comm, strlen(comm));
	return r->comm_last;
}

/* Keys left out of --sort do not split groups. */
static void mask_keys(const struct report *r, struct row *k)
{
	if (!(r->keys & K_COMM))
		k->comm = "-";
	if (!(r->keys & K_PID))
		k->pid = k->nspid = 0;
	if (!(r->keys & K_DSO))
		k->dso = "-";
	if (!(r->keys & K_SYM))
		k->sym = "-";
	if (!(r->keys & K_DSYM))
		k->dsym = "-";
}

static struct row *row_alloc(struct report *r)
{
	struct row_slab *sl = r->slabs;

	if (!sl || sl->n == SLAB_ROWS) {
		if (!(sl = malloc(sizeof(*sl))))
			return NULL;
		sl->next = r->slabs;
		sl->n = 0;
		r->slabs = sl;
	}
	return &sl->rows[sl->n++];
}

/* The row of k's group, made when new; NULL without memory. */
static struct row *row_find_add(struct report *r, const struct row *k,
				uint64_t h)
{
	struct row *w = jt_hash_find(&r->groups, h, row_eq, k);

	if (w)
		return w;
	if (!(w = row_alloc(r)))
		return NULL;
	if (jt_hash_add(&r->groups, h, w)) {
		r->slabs->n--; /* the row just taken */
		return NULL;
	}
	*w = *k;
	w->samples = w->retro = w->children = w->stamp = 0;
	w->callers = NULL;
	return w;
}

static struct row *row_of(struct report *r, struct row *k)
{
	mask_keys(r, k);
	return row_find_add(r, k, row_hash(k));
}

static void count(struct row *w, const struct row *k)
{
	w->samples++;
	w->retro += k->retro;
}

/* A sample of k's group; -g counts at once, for its stack's rows. */
static void add(struct report *r, struct row *k)
{
	struct row *w;

	if (r->graph) {
		w = row_of(r, k);
		if (w)
			count(w, k);
		return;
	}
	mask_keys(r, k);
	if (jt_groups_add(&r->counts, k))
		r->nomem = true;
}

static bool path_eq(const void *val, const void *key)
{
	return ((const struct path *)val)->s == key;
}

/*
 * The callers of leaf row w in this sample, as one interned path: up to
 * CALLER_DEPTH of them, the nearest first (callee order) or the
 * outermost first (caller order).
 */
static void add_callers(struct report *r, struct row *w,
			const struct jt_symres *y, uint32_t leaf)
{
	bool outer_first = r->order == ORDER_CALLER;
	const char *sep = outer_first ? " -> " : " <- ";
	uint32_t i, top = y->nframes;
	char buf[2048], name[256];
	size_t n = 0;
	struct path *p;
	const char *s;
	uint64_t h;

	if (top > leaf + 1 + CALLER_DEPTH)
		top = leaf + 1 + CALLER_DEPTH;
	/* snprintf says what it would have written: stop once full. */
	for (i = leaf + 1; i < top && n < sizeof(buf) - 1; i++) {
		uint32_t f = outer_first ? top - (i - leaf) : i;

		n += snprintf(
			buf + n, sizeof(buf) - n, "%s%s", n ? sep : "",
			jt_symres_name(&y->frames[f], name, sizeof(name)));
	}
	if (n >= sizeof(buf))
		n = sizeof(buf) - 1;
	s = jt_intern(&r->strs, n ? buf : "[no callers]", n ? n : 12);
	if (!w->callers && !(w->callers = calloc(1, sizeof(*w->callers))))
		return;
	h = jt_hash_u64((uintptr_t)s);
	p = jt_hash_find(w->callers, h, path_eq, s);
	if (!p) {
		p = calloc(1, sizeof(*p));
		if (!p || jt_hash_add(w->callers, h, p)) {
			free(p);
			return;
		}
		p->s = s;
	}
	p->samples++;
}

/*
 * -g: each symbol on the stack counts the sample once in its Children;
 * the leaf's own row learns which path called it.
 */
static void add_stack(struct report *r, const struct row *base,
		      const struct jt_symres *y)
{
	char name[256];
	uint32_t i;

	r->stamp++;
	for (i = 0; i < y->nframes; i++) {
		const struct jt_symres *f = &y->frames[i];
		struct row k = *base, *w;

		k.dso = f->dso ? f->dso : "[unknown]";
		k.sym = sym_key(r, f, name, sizeof(name));
		k.source = f->source;
		k.retro = 0;
		w = row_of(r, &k);
		if (!w)
			return;
		if (w->stamp != r->stamp) {
			w->stamp = r->stamp;
			w->children++;
		}
		if (i == 0)
			add_callers(r, w, y, 0);
	}
}

/* A data address: the region that held it, and whose page it was. */
static void data_row(struct report *r, struct jt_model *m, struct jt_proc *p,
		     const struct jt_sample *smp, struct row *k)
{
	const struct jt_region *g =
		p && p->as ? jt_aspace_find(p->as, smp->addr) : NULL;
	struct jt_datasym d;
	char range[64], name[512];

	if (!(r->s->sample_type & PERF_SAMPLE_ADDR))
		return;
	k->dso = g ? jt_region_name(g) : "[unmapped]";
	k->dso = jt_intern(&r->strs, k->dso, strlen(k->dso));
	snprintf(range, sizeof(range), "%" PRIx64 "-%" PRIx64, g ? g->start : 0,
		 g ? g->end : 0);
	k->sym = jt_intern(&r->strs, range, strlen(range));
	k->dsym = "-";
	/* perf mem's symbol_daddr: the object and the offset into it. */
	if (g && jt_datasym_at(r->syms, g, smp->addr, &d)) {
		jt_datasym_name(&d, name, sizeof(name));
		k->dsym = jt_intern(&r->strs, name, strlen(name));
	}
	k->source = p && p->as ? jt_aspace_sharing(p->as, smp->addr) :
				 JT_SHARE_NONE;
	k->samples = 1;
	r->total++;
	add(r, k);
}

static void on_item(void *ctx, struct jt_model *m, const struct jt_item *it,
		    const struct jt_symres *y)
{
	struct report *r = ctx;
	struct jt_sample smp;
	struct jt_proc *p;
	char name[256];
	struct row k = {};

	/* Named: parsed already, and its pid is the one it was named in. */
	if (!y || !y->is_sample)
		return;
	p = jt_model_find(m, y->pid);
	k.comm = comm_key(r, jt_proc_comm(p, y->pid));
	if ((r->pid && y->pid != r->pid) ||
	    (r->comm && strcmp(r->comm, k.comm)))
		return;
	k.pid = y->pid;
	if (p && p->nspid && p->nspid != p->pid)
		k.nspid = p->nspid;
	if (r->data) {
		if (!jt_perf_sample(it->data, it->len, r->s->sample_type, &smp))
			data_row(r, m, p, &smp, &k);
		return;
	}
	k.dso = y->dso ? y->dso : "[unknown]";
	k.sym = sym_key(r, y, name, sizeof(name));
	k.source = y->source;
	k.samples = 1;
	k.retro = y->retro;
	r->total++;
	add(r, &k);
	if (r->graph && y->nframes)
		add_stack(r, &k, y);
}

static int take_group(void *ctx, const struct row *g)
{
	struct row *w = row_alloc(ctx);

	if (!w)
		return -ENOMEM;
	*w = *g;
	return 0;
}

/* The groups, most samples first. */
static int group(struct report *r)
{
	struct row_slab *sl;
	size_t i, n = 0;

	if (!r->graph && jt_groups_drain(&r->counts, take_group, r))
		return -1;
	for (sl = r->slabs; sl; sl = sl->next)
		n += sl->n;
	r->rows = malloc((n ? n : 1) * sizeof(*r->rows));
	if (!r->rows)
		return -1;
	/* Slab by slab, newest first: the sort reads them one by one. */
	for (sl = r->slabs; sl; sl = sl->next)
		for (i = 0; i < sl->n; i++)
			r->rows[r->n++] = &sl->rows[i];
	/* The rows are listed: the table's memory goes to the sort's keys. */
	jt_hash_free(&r->groups);
	return jt_rows_order(r->rows, r->n, r->graph);
}

static int cmp_path(const void *a, const void *b)
{
	const struct path *x = *(struct path *const *)a,
			  *y = *(struct path *const *)b;

	if (x->samples != y->samples)
		return x->samples > y->samples ? -1 : 1;
	return strcmp(x->s, y->s);
}

/* w's caller paths, most samples first: up to max, into v. */
static size_t top_callers(const struct row *w, const struct path **v,
			  size_t max)
{
	const struct path **all;
	size_t i, n = 0;

	if (!w->callers || !w->callers->n)
		return 0;
	all = malloc(w->callers->n * sizeof(*all));
	if (!all)
		return 0;
	jt_hash_for_each (w->callers, i)
		all[n++] = w->callers->e[i].val;
	qsort(all, n, sizeof(*all), cmp_path);
	if (n > max)
		n = max;
	memcpy(v, all, n * sizeof(*v));
	free(all);
	return n;
}

static void json_callers(struct jt_json *j, const struct row *w)
{
	const struct path *v[CALLERS_SHOWN];
	size_t i, n = top_callers(w, v, CALLERS_SHOWN);

	jt_json_name(j, "callers");
	jt_json_array(j);
	for (i = 0; i < n; i++) {
		jt_json_object(j);
		jt_json_str_field(j, "path", v[i]->s);
		jt_json_u64_field(j, "samples", v[i]->samples);
		jt_json_end(j);
	}
	jt_json_end(j);
}

/* perf report -g's graph, flattened: each path with its share. */
static void print_callers(const struct row *w)
{
	const struct path *v[CALLERS_SHOWN];
	size_t i, n = top_callers(w, v, CALLERS_SHOWN);

	for (i = 0; i < n; i++)
		printf("            |--%6.2f%%-- %s\n",
		       100.0 * v[i]->samples / w->samples, jt_tx(v[i]->s));
	if (n)
		printf("\n");
}

static void json_row(struct jt_json *j, const struct report *r,
		     const struct row *w)
{
	double pct = r->total ? 100.0 * w->samples / r->total : 0;

	jt_json_object(j);
	jt_json_str_field(j, "comm", r->keys & K_COMM ? w->comm : NULL);
	jt_json_name(j, "pid");
	if (r->keys & K_PID)
		jt_json_u64(j, w->pid);
	else
		jt_json_null(j);
	if (w->nspid)
		jt_json_u64_field(j, "nspid", w->nspid);
	jt_json_str_field(j, r->data ? "backing" : "dso",
			  r->keys & K_DSO ? w->dso : NULL);
	jt_json_str_field(j, r->data ? "region" : "sym",
			  r->keys & K_SYM ? w->sym : NULL);
	if (r->data) {
		jt_json_str_field(j, "dsym",
				  r->keys & K_DSYM && strcmp(w->dsym, "-") ?
					  w->dsym :
					  NULL);
		jt_json_str_field(j, "sharing", jt_sharing_name(w->source));
	} else {
		jt_json_str_field(j, "source", jt_source_name(w->source));
	}
	jt_json_u64_field(j, "samples", w->samples);
	if (!r->data)
		jt_json_u64_field(j, "retro", w->retro);
	if (r->graph) {
		jt_json_u64_field(j, "children", w->children);
		json_callers(j, w);
	}
	jt_json_name(j, "percent");
	jt_json_f2(j, pct);
	jt_json_end(j);
}

static void print_json(const struct report *r)
{
	struct jt_json j;
	size_t i;

	jt_json_init(&j, stdout);
	jt_json_array(&j);
	for (i = 0; i < r->n; i++)
		json_row(&j, r, r->rows[i]);
	jt_json_end(&j);
}

/* As perf report: the columns it sorts by, and only those. */
static void print_head(const struct report *r)
{
	if (r->graph)
		printf("# %8s %8s", "Children", "Self");
	else
		printf("# %8s", "Overhead");
	printf(" %9s", "Samples");
	if (r->keys & K_COMM)
		printf("  %-16s", "Command");
	if (r->keys & K_PID)
		printf(" %7s", "Pid");
	if (r->keys & K_DSO)
		printf("  %-24s", r->data ? "Backing" : "Shared Object");
	printf("  %-8s", r->data ? "Sharing" : "Source");
	if (r->keys & K_SYM)
		printf(" %s", r->data ? "Region" : "Symbol");
	if (r->data && (r->keys & K_DSYM))
		printf("  Data Symbol");
	putchar('\n');
}

/*
 * A count's columns, formatted once for every row that has it: rows come
 * sorted by it, and 200K rows of a few counts each spent a tenth of the
 * report in printf.
 */
static const char *count_cols(const struct report *r, uint64_t v, bool share,
			      struct count_cache *c)
{
	if (!c->valid || c->v != v) {
		if (share)
			snprintf(c->s, sizeof(c->s), "  %7.2f%%",
				 r->total ? 100.0 * v / r->total : 0);
		else
			snprintf(c->s, sizeof(c->s), "  %7.2f%% %9" PRIu64,
				 r->total ? 100.0 * v / r->total : 0, v);
		c->v = v;
		c->valid = true;
	}
	return c->s;
}

static void place_print(const struct report *r, const struct row *w, FILE *f)
{
	if (r->keys & K_COMM)
		fprintf(f, "  %-16s", jt_tx(w->comm));
	/* 4438:1 for pid 4438, pid 1 in its PID namespace. */
	if (r->keys & K_PID) {
		char pid[24];

		if (w->nspid)
			snprintf(pid, sizeof(pid), "%u:%u", w->pid, w->nspid);
		else
			snprintf(pid, sizeof(pid), "%u", w->pid);
		fprintf(f, " %7s", pid);
	}
	if (r->keys & K_DSO)
		fprintf(f, "  %-24s", jt_tx(w->dso));
	fprintf(f, "  %-8s",
		r->data ? jt_sharing_name(w->source) :
			  jt_source_name(w->source));
}

/*
 * Command, pid, object and source, formatted once for every row of the
 * same place: a process's 200K JIT functions share them, and padding
 * each by hand was most of what printing a row cost.
 */
static const char *place_cols(const struct report *r, const struct row *w,
			      struct place_cache *c)
{
	size_t len;
	FILE *f;

	if (c->s && c->comm == w->comm && c->pid == w->pid &&
	    c->nspid == w->nspid && c->dso == w->dso && c->source == w->source)
		return c->s;
	free(c->s);
	c->s = NULL;
	f = open_memstream(&c->s, &len);
	if (!f)
		return "[no memory]";
	place_print(r, w, f);
	if (fclose(f)) {
		free(c->s);
		c->s = NULL;
		return "[no memory]";
	}
	c->comm = w->comm;
	c->dso = w->dso;
	c->pid = w->pid;
	c->nspid = w->nspid;
	c->source = w->source;
	return c->s;
}

static void print_row(struct printer *p, const struct row *w)
{
	const struct report *r = p->r;
	FILE *f = p->f;

	if (r->graph)
		fputs_unlocked(
			count_cols(r, w->children, true, &p->cc_children), f);
	fputs_unlocked(count_cols(r, w->samples, false, &p->cc_samples), f);
	fputs_unlocked(place_cols(r, w, &p->place), f);
	if (r->keys & K_SYM) {
		putc_unlocked(' ', f);
		fputs_unlocked(jt_tx(w->sym), f);
	}
	if (w->retro)
		fputs_unlocked(" (retro)", f);
	if (r->data && (r->keys & K_DSYM)) {
		fputs_unlocked("  ", f);
		fputs_unlocked(jt_tx(w->dsym), f);
	}
	putc_unlocked('\n', f);
}

#define PRINT_AHEAD 8

/* A block of rows, with this thread's printer (print_blocks.c). */
static void print_block(void *ctx, FILE *f, size_t from, size_t to)
{
	struct printer *p = ctx;
	struct row *const *rows = p->r->rows;
	size_t i;

	p->f = f;
	for (i = from; i < to; i++) {
		/* Rows print in count order, scattered over the heap. */
		if (i + 2 * PRINT_AHEAD < to)
			__builtin_prefetch(rows[i + 2 * PRINT_AHEAD]);
		if (i + PRINT_AHEAD < to)
			__builtin_prefetch(rows[i + PRINT_AHEAD]->sym);
		print_row(p, rows[i]);
	}
}

static void print_table(struct report *r, const struct jt_stream *s,
			const struct jt_syms *y)
{
	size_t i;

	jt_print_probes(stdout, s);
	printf("# Samples: %" PRIu64 " of event '%s'\n", r->total,
	       jt_stream_meta(s, "perf.event") ?: "?");
	print_head(r);
	if (r->graph) {
		for (i = 0; i < r->n; i++) {
			print_row(&r->out, r->rows[i]);
			print_callers(r->rows[i]);
		}
	} else {
		struct printer there = { .r = r };

		jt_print_blocks(stdout, r->n, print_block, &r->out, &there);
		free(there.place.s);
	}
	printf("#\n# total %" PRIu64 " samples, %" PRIu64 " [unknown], %" PRIu64
	       " retro (named by a code-load record written after them)\n",
	       y->st.samples, y->st.unknown, y->st.retro);
}

static const char *found_how(const struct jt_jit_source *j)
{
	if (j->found == JT_FOUND_ATTACH)
		return j->kind == JT_JIT_JITDUMP ? "mapped before attach" :
						   "there before attach";
	return j->kind == JT_JIT_JITDUMP ? "found at its marker mmap" :
					   "found while recording";
}

/*
 * JIT files found while recording: how they were found, and what was
 * read, refused or broken.
 */
static void print_sources(const struct jt_stream *s)
{
	size_t i;

	for (i = 0; i < s->nsources; i++) {
		const struct jt_jit_source *j = s->sources[i];
		const struct jt_jit_stats *st = j->kind == JT_JIT_JITDUMP ?
							&j->dump.stats :
							&j->map.stats;

		if (j->status) {
			printf("# %s (pid %u, %s): refused: %s", jt_tx(j->path),
			       j->pid, found_how(j), strerror(-j->status));
			if (j->kind == JT_JIT_PERFMAP && j->ignored_writes)
				printf("; %" PRIu64 " writes to it ignored",
				       j->ignored_writes);
			printf("\n");
			continue;
		}
		printf("# %s (pid %u, %s): %" PRIu64 " records, %" PRIu64
		       " malformed skipped%s%s",
		       jt_tx(j->path), j->pid, found_how(j), st->records,
		       st->skipped, j->dump.failed ? "; stopped: " : "",
		       j->dump.failed ? j->dump.err : "");
		if (j->truncated)
			printf("; cut at its copy budget (--max-jit-bytes, "
			       "--max-process-jit-bytes), %" PRIu64
			       " bytes not read",
			       j->truncated);
		printf("\n");
	}
	for (i = 0; i < s->nproccaps; i++)
		printf("# pid %u: %" PRIu64 " perf-map write events past "
		       "its %" PRIu64 " (--max-process-writes) not recorded; "
		       "its lines are timed when read\n",
		       s->proccaps[i].pid, s->proccaps[i].writes_cut,
		       s->proccaps[i].writes_budget);
}

static void print_changed(const struct jt_stream *s, const struct jt_syms *y)
{
	size_t i;

	if (s->arch_time_unconverted)
		printf("# %llu jitdump records had TSC times this kernel gave "
		       "no conversion for; timed when read instead\n",
		       (unsigned long long)s->arch_time_unconverted);
	for (i = 0; i < y->nchanged; i++)
		printf("# %s: build-id differs from the recorded one; its "
		       "samples are not named\n",
		       jt_tx(y->changed[i]));
}

static void free_rows(struct report *r)
{
	struct row_slab *sl;
	struct row *w;
	size_t i, j;

	while ((sl = r->slabs)) {
		for (j = 0; j < sl->n; j++) {
			if (!(w = &sl->rows[j])->callers)
				continue;
			jt_hash_for_each (w->callers, i)
				free(w->callers->e[i].val);
			jt_hash_free(w->callers);
			free(w->callers);
		}
		r->slabs = sl->next;
		free(sl);
	}
}

/*
 * Report exits once it has printed: its model, names and rows, a million
 * small blocks on the naming bench, go with the process, as a compiler
 * leaves its own (clang's -disable-free). Freeing them one by one took
 * 7% of report's time. Static, so a leak checker finds them reachable;
 * a caller that runs report again in one process (the fuzzer) has the
 * last run's freed first.
 */
static struct report the_report;
static struct jt_stream the_stream;
static struct jt_pipe the_pipe;
static bool the_run_left;

static void free_last_run(void)
{
	struct report *r = &the_report;

	if (the_run_left) {
		jt_hash_free(&r->groups);
		jt_groups_free(&r->counts);
		free_rows(r);
		free(r->rows);
		free(r->out.place.s);
		jt_strtab_free(&r->strs);
		jt_pipe_free(&the_pipe);
		jt_stream_free(&the_stream);
		the_run_left = false;
	}
	memset(r, 0, sizeof(*r));
}

int cmd_report(int argc, char **argv)
{
	struct report *r = &the_report;
	struct jt_pipe_ops ops = { .item = on_item,
				   .ctx = r,
				   .named = true,
				   .jit_naming_only = true };
	struct jt_stream *s = &the_stream;
	struct jt_pipe *p = &the_pipe;
	const char *in;
	int err;

	free_last_run();
	err = parse(argc, argv, r, &in);
	if (err)
		return err;
	if (jt_view_open(s, in))
		return 1;
	the_run_left = true;
	ops.procs_only = !r->data;
	r->s = s;
	r->syms = &p->syms; /* set up by the run, used only during it */
	r->counts.threaded = true;
	err = jt_view_run(p, s, in, &ops);
	if (!err && (r->nomem || group(r))) {
		fprintf(stderr, "jittrace: report: out of memory\n");
		err = 1;
	}
	if (err) {
		/* nothing more to print */
	} else if (r->json) {
		print_json(r);
	} else {
		r->out = (struct printer){ .r = r, .f = stdout };
		print_table(r, s, &p->syms);
		print_sources(s);
		print_changed(s, &p->syms);
		jt_print_loss_footer(stdout, s, p);
	}
	return err;
}
