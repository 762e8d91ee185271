// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* jittrace maps: each process's requested regions and their kernel VMAs. */
#include <limits.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include "jittrace.h"
#include "lib/cli.h"
#include "lib/fmt.h"
#include "lib/json.h"
#include "lib/perf_rec.h"
#include "lib/hash.h"
#include "lib/reserve.h"
#include "views/view.h"

static const struct jt_opt maps_opts[] = {
	{ 'i', 0, "input", "FILE", "recording (default jittrace.data)",
	  JT_ARG_FILE },
	{ 0, 'p', "pid", "PID", "only this process" },
	{ 0, 't', "at", "NS",
	  "the maps at CLOCK_MONOTONIC time NS (default: each process's last "
	  "moment alive)" },
	{ 0, 'j', "json", NULL, "a JSON array, one object per region" },
	{ 0, 'P', "perf", NULL,
	  "also list perf's MMAP2 records for the process" },
	{ 0 },
};

const struct jt_cmd jt_cmd_maps = {
	.name = "maps",
	.summary = "each process's rebuilt map, one row per requested region",
	.synopsis = "[-i FILE] [--pid PID] [--at NS] [--json] [--perf]",
	.opts = maps_opts,
	.run = cmd_maps,
};

struct maps_opts {
	const char *input;
	uint32_t pid;
	uint64_t at;
	int json;
	int perf;
};

/* A process's part of the output, made when it exits or at the end. */
struct block {
	uint64_t ordinal;
	uint32_t pid;
	char *text; /* text, or JSON lines: one region object each */
	size_t len;
};

/* perf's MMAP2 lines for a pid, for --perf. */
struct perf_lines {
	uint32_t pid;
	FILE *f;
	char *buf;
	size_t len;
};

struct maps_ctx {
	struct maps_opts *o;
	const struct jt_stream *s;
	struct jt_json j;
	struct block *blocks;
	size_t nblocks;
	size_t blocks_cap;
	struct jt_hash perf; /* pid -> struct perf_lines */
	int err;
};

static int parse(int argc, char **argv, struct maps_opts *o)
{
	char *end;
	int c;

	o->input = "jittrace.data";
	while ((c = jt_getopt(argc, argv, &jt_cmd_maps)) != -1) {
		switch (c) {
		case 'i':
			o->input = optarg;
			break;
		case 'p':
			o->pid = strtoul(optarg, &end, 10);
			if (*end || !o->pid)
				return jt_cmd_error(&jt_cmd_maps, "bad --pid");
			break;
		case 't':
			o->at = strtoull(optarg, &end, 10);
			if (*end || !o->at)
				return jt_cmd_error(&jt_cmd_maps, "bad --at");
			break;
		case 'j':
			o->json = 1;
			break;
		case 'P':
			o->perf = 1;
			break;
		case 'h':
			jt_cmd_usage(stdout, &jt_cmd_maps);
			exit(0);
		default:
			return jt_cmd_error(&jt_cmd_maps, NULL);
		}
	}
	if (optind < argc)
		return jt_cmd_error(&jt_cmd_maps, "unexpected argument");
	return 0;
}

static void json_kvma(struct jt_json *j, const struct jt_kvma *v)
{
	jt_json_name(j, "kernel_vma");
	if (!v->end) {
		jt_json_null(j);
		return;
	}
	jt_json_object(j);
	jt_json_hex_field(j, "start", v->start);
	jt_json_hex_field(j, "end", v->end);
	jt_json_end(j);
}

static void json_region(struct jt_json *j, const struct jt_proc *p,
			const struct jt_region *r, size_t members)
{
	struct jt_kvma v = jt_aspace_kvma(p->as, r);
	char prot[5];

	jt_json_object(j);
	jt_json_u64_field(j, "pid", p->pid);
	jt_json_str_field(j, "comm", p->comm);
	jt_json_hex_field(j, "start", r->start);
	jt_json_hex_field(j, "end", r->end);
	jt_json_str_field(j, "prot",
			  jt_prot_str(r->prot, jt_region_shared(r), prot));
	jt_json_str_field(j, "path", r->kind == JT_RK_FILE ? r->path : NULL);
	jt_json_str_field(j, "name", jt_region_name(r));
	jt_json_hex_field(j, "offset", r->kind == JT_RK_FILE ? r->pgoff : 0);
	jt_json_u64_field(j, "dev", r->dev);
	jt_json_u64_field(j, "ino", r->ino);
	json_kvma(j, &v);
	jt_json_bool_field(j, "coalesced", members > 1);
	jt_json_u64_field(j, "vma_regions", members);
	jt_json_u64_field(j, "born_ns", r->born_ns);
	jt_json_str_field(j, "origin", jt_origin_name(r->origin));
	jt_json_end(j);
}

static void text_region(FILE *f, const struct jt_aspace *as,
			const struct jt_region *r, size_t members)
{
	struct jt_kvma v = jt_aspace_kvma(as, r);
	char prot[5], t[32], kv[48] = "?";

	if (v.end)
		snprintf(kv, sizeof(kv), "%" PRIx64 "-%" PRIx64, v.start,
			 v.end);
	fprintf(f,
		"%012" PRIx64 "-%012" PRIx64 " %s %08" PRIx64
		" %-8s %20s %-27s %-11s %s\n",
		r->start, r->end,
		jt_prot_str(r->prot, jt_region_shared(r), prot),
		r->kind == JT_RK_FILE ? r->pgoff : 0, jt_origin_name(r->origin),
		jt_time_str(r->born_ns, t), kv, members > 1 ? "coalesced" : "",
		jt_tx(jt_region_name(r)));
}

static bool lines_eq(const void *val, const void *key)
{
	return ((const struct perf_lines *)val)->pid == *(const uint32_t *)key;
}

static struct perf_lines *perf_lines(struct maps_ctx *c, uint32_t pid,
				     bool make)
{
	uint64_t h = jt_hash_u64(pid);
	struct perf_lines *l = jt_hash_find(&c->perf, h, lines_eq, &pid);

	if (l || !make)
		return l;
	l = calloc(1, sizeof(*l));
	if (!l || !(l->f = open_memstream(&l->buf, &l->len)) ||
	    jt_hash_add(&c->perf, h, l)) {
		if (l && l->f)
			fclose(l->f);
		free(l ? l->buf : NULL);
		free(l);
		c->err = 1;
		return NULL;
	}
	l->pid = pid;
	return l;
}

/* perf's MMAP2 records, kept per pid for --perf: the kernel's view. */
static void perf_mmap2(struct maps_ctx *c, const struct jt_item *it)
{
	struct perf_lines *l;
	struct jt_mmap2 m;
	char t[32], name[PATH_MAX];

	if (it->kind != JT_IT_PERF || jt_perf_mmap2(it->data, it->len, &m) ||
	    (c->o->pid && m.pid != c->o->pid) ||
	    !(l = perf_lines(c, m.pid, true)))
		return;
	snprintf(name, sizeof(name), "%.*s", (int)m.filename_len, m.filename);
	fprintf(l->f,
		"#   %s [0x%" PRIx64 "(0x%" PRIx64 ") @ 0x%" PRIx64
		" %c%c%c] %s\n",
		jt_time_str(it->time, t), m.start, m.len, m.pgoff,
		m.prot & 1 ? 'r' : '-', m.prot & 2 ? 'w' : '-',
		m.prot & 4 ? 'x' : '-', jt_tx(name));
}

static void on_item(void *ctx, struct jt_model *m, const struct jt_item *it,
		    const struct jt_symres *res)
{
	struct maps_ctx *c = ctx;

	if (c->o->perf && !c->o->json)
		perf_mmap2(c, it);
}

static void render(struct maps_ctx *c, const struct jt_proc *p, FILE *f)
{
	const struct jt_aspace *as = p->as;
	const struct jt_region *r;
	struct jt_json j;
	char t[32];

	jt_json_init(&j, f);
	if (!c->o->json) {
		fprintf(f, "pid %u (%s) %s", p->pid,
			p->comm[0] ? jt_tx(p->comm) : "?",
			p->exe ? jt_tx(p->exe) : "");
		if (p->dead_ns)
			fprintf(f, " [exited %s]", jt_time_str(p->dead_ns, t));
		fprintf(f, "\n%-25s %-4s %-8s %-8s %20s %-27s %-11s %s\n",
			"START-END", "PROT", "OFFSET", "MADE BY", "BORN",
			"KERNEL VMA", "", "BACKING");
	}
	for (r = as ? jt_aspace_first(as) : NULL; r;
	     r = jt_aspace_next(as, r)) {
		size_t members = jt_aspace_vma_members(as, r);

		if (c->o->json)
			json_region(&j, p, r, members);
		else
			text_region(f, as, r, members);
	}
}

static void keep(struct maps_ctx *c, const struct jt_proc *p)
{
	struct block *b;
	FILE *f;

	if (jt_reserve(&c->blocks, &c->blocks_cap, c->nblocks + 1,
		       sizeof(*c->blocks))) {
		c->err = 1;
		return;
	}
	b = &c->blocks[c->nblocks];
	*b = (struct block){ .ordinal = p->ordinal, .pid = p->pid };
	f = open_memstream(&b->text, &b->len);
	if (!f) {
		c->err = 1;
		return;
	}
	render(c, p, f);
	fclose(f);
	c->nblocks++;
}

static int shown(const struct maps_opts *o, const struct jt_proc *p)
{
	if (o->pid && p->pid != o->pid)
		return 0;
	if (o->at &&
	    (p->first_ns > o->at || (p->dead_ns && p->dead_ns < o->at)))
		return 0;
	return 1;
}

/* Without --at, each process as it was at its last moment alive. */
static void exited(void *ctx, struct jt_model *m, struct jt_proc *p)
{
	struct maps_ctx *c = ctx;

	if (!c->o->at && shown(c->o, p))
		keep(c, p);
}

static int cmp_block(const void *a, const void *b)
{
	const struct block *x = a, *y = b;

	return x->ordinal < y->ordinal ? -1 : x->ordinal > y->ordinal;
}

static void print_block(struct maps_ctx *c, const struct block *b)
{
	struct perf_lines *l;
	char *line, *save = NULL;

	if (c->o->json) {
		for (line = strtok_r(b->text, "\n", &save); line;
		     line = strtok_r(NULL, "\n", &save))
			jt_json_raw(&c->j, line);
		return;
	}
	fwrite(b->text, 1, b->len, stdout);
	if (c->o->perf) {
		printf("# perf MMAP2 records (the kernel's view):\n");
		l = perf_lines(c, b->pid, false);
		if (l && !fflush(l->f))
			fwrite(l->buf, 1, l->len, stdout);
	}
	printf("\n");
}

static void free_ctx(struct maps_ctx *c)
{
	size_t i;

	for (i = 0; i < c->nblocks; i++)
		free(c->blocks[i].text);
	free(c->blocks);
	jt_hash_for_each (&c->perf, i) {
		struct perf_lines *l = c->perf.e[i].val;

		fclose(l->f);
		free(l->buf);
		free(l);
	}
	jt_hash_free(&c->perf);
}

int cmd_maps(int argc, char **argv)
{
	struct maps_opts o = {};
	struct maps_ctx c = { .o = &o };
	struct jt_pipe_ops ops = { .item = on_item,
				   .exited = exited,
				   .ctx = &c };
	struct jt_stream s;
	struct jt_pipe p;
	struct jt_proc *proc;
	size_t i;
	int err = parse(argc, argv, &o);

	if (err)
		return err;
	if (jt_view_open(&s, o.input))
		return 1;
	c.s = &s;
	ops.until = o.at;
	err = jt_view_run(&p, &s, o.input, &ops);
	/* Without --at, the dead were kept as they exited. */
	for (proc = p.m.first; proc && !err; proc = proc->next)
		if (shown(&o, proc) && (o.at || !proc->dead_ns))
			keep(&c, proc);
	if (c.err && !err) {
		fprintf(stderr, "jittrace: out of memory\n");
		err = 1;
	}
	if (c.nblocks)
		qsort(c.blocks, c.nblocks, sizeof(*c.blocks), cmp_block);
	jt_json_init(&c.j, stdout);
	if (o.json)
		jt_json_array(&c.j);
	for (i = 0; i < c.nblocks && !err; i++)
		print_block(&c, &c.blocks[i]);
	if (o.json)
		jt_json_end(&c.j);
	else if (!err)
		jt_print_loss_footer(stdout, &s, &p);
	if (!c.nblocks && o.pid && !err)
		fprintf(stderr, "jittrace: no process %u in %s\n", o.pid,
			o.input);
	jt_pipe_free(&p);
	jt_stream_free(&s);
	free_ctx(&c);
	return err || (!c.nblocks && o.pid) ? 1 : 0;
}
