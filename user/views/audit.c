// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * jittrace audit: where the kernel's view of memory (perf's MMAP2
 * records, merged VMAs, shared file pages) and the userland's view
 * (requested regions, JIT symbols, private copies) disagree.
 */
#include <getopt.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include "jittrace.h"
#include "lib/cli.h"
#include "lib/fmt.h"
#include "lib/json.h"
#include "lib/perf_rec.h"
#include "lib/reserve.h"
#include "lib/hash.h"
#include "model/pipeline.h"
#include "model/symbolize.h"
#include "live/audit_live.h"
#include "views/audit.h"
#include "views/audit_cow.h"
#include "views/view.h"

static const char *const all_kinds[] = {
	"coalesced",  "cow",	       "false-sharing-suspect",
	"jit-orphan", "mmap2-overlap", "perfmap-reuse",
	NULL,
};

static const struct jt_opt audit_opts[] = {
	{ 'i', 0, "input", "FILE", "recording (default jittrace.data)",
	  JT_ARG_FILE },
	{ 'k', 0, "kind", "KINDS",
	  "only these kinds of finding, comma-separated: coalesced, cow, "
	  "false-sharing-suspect, jit-orphan, mmap2-overlap, perfmap-reuse",
	  JT_ARG_WORDS, all_kinds },
	{ 'p', 0, "pid", "PID", "a running process instead of a recording",
	  JT_ARG_PID },
	{ 0, 'a', "addr", "ADDR",
	  "with -p: is this address private or shared, and why (repeatable)" },
	{ 0, 'j', "json", NULL, "a JSON array of findings" },
	{ 0 },
};

const struct jt_cmd jt_cmd_audit = {
	.name = "audit",
	.summary = "where the kernel's and userland's views of memory differ",
	.synopsis = "[-i FILE] [--kind KINDS] [--json]\n"
		    "-p PID [--addr ADDR]... [--json]",
	.opts = audit_opts,
	.run = cmd_audit,
};

struct finding {
	const char *kind;
	uint32_t pid;
	uint64_t start;
	uint64_t end;
	char *detail;	  /* a JSON object, made by the JSON writer */
	char *text;	  /* the same, for people */
	size_t symbols;	  /* mmap2-overlap: its detail is made last, */
	uint64_t time;	  /* from these and the samples counted */
	uint64_t samples; /* after the replay */
};

/* Samples in executable anon memory no symbol source named. */
struct orphan_region {
	uint32_t pid;
	uint64_t start;
	uint64_t end;
	uint64_t samples;
};

/* A process's mmap2-overlap findings, to count the samples they cover. */
struct overlaps {
	uint32_t pid;
	size_t *idx; /* into audit.f */
	size_t n;
	size_t cap;
};

struct audit {
	struct jt_stream *s;
	struct finding *f;
	size_t n;
	size_t cap;
	struct audit_cow *cow;
	const char *const *kinds; /* --kind: only these; NULL: all */
	struct jt_hash orphans;	  /* (pid, start) -> struct orphan_region */
	struct jt_hash overlaps;  /* pid -> struct overlaps */
	struct jt_hash nspids;	  /* pid -> struct nspid, where they differ */
	struct jt_strtab strs;
};

struct nspid {
	uint32_t pid;
	uint32_t nspid;
};

/* Every kind of finding, in the order --help lists them. */

static bool wanted(const char *const *kinds, const char *kind)
{
	for (; kinds && *kinds; kinds++)
		if (!strcmp(*kinds, kind))
			return true;
	return !kinds;
}

/* "cow,jit-orphan" into the known kinds it names; -1 on one unknown. */
static int parse_kinds(const char *arg, const char **out,
		       const char *const **kinds)
{
	size_t n = 0, k, len;
	const char *p = arg;

	while (*p) {
		len = strcspn(p, ",");
		for (k = 0; all_kinds[k]; k++)
			if (strlen(all_kinds[k]) == len &&
			    !strncmp(all_kinds[k], p, len))
				break;
		if (!all_kinds[k])
			return -1;
		out[n++] = all_kinds[k];
		p += len + (p[len] == ',');
		if (n == sizeof(all_kinds) / sizeof(*all_kinds) - 1)
			break;
	}
	out[n] = NULL;
	*kinds = out;
	return n ? 0 : -1;
}

/* detail: an open writer holding the finding's detail object, or NULL. */
static struct finding *add(struct audit *a, const char *kind, uint32_t pid,
			   uint64_t start, uint64_t end, const char *text,
			   struct jt_json_mem *detail)
{
	struct finding *f;
	char *d = detail ? jt_json_mem_close(detail) : NULL;

	if (!wanted(a->kinds, kind) ||
	    jt_reserve(&a->f, &a->cap, a->n + 1, sizeof(*a->f))) {
		free(d);
		return NULL;
	}
	f = &a->f[a->n++];
	memset(f, 0, sizeof(*f));
	f->kind = kind;
	f->pid = pid;
	f->start = start;
	f->end = end;
	f->text = strdup(text);
	f->detail = d;
	return f;
}

static void add_finding(void *ctx, const char *kind, uint32_t pid,
			uint64_t start, uint64_t end, const char *text,
			struct jt_json_mem *detail)
{
	add(ctx, kind, pid, start, end, text, detail);
}

/* Opens a finding's detail object; NULL without memory. */
static struct jt_json *detail(struct jt_json_mem *d)
{
	struct jt_json *j = jt_json_mem_open(d);

	if (j)
		jt_json_object(j);
	return j;
}

/* A perf-map line over an older one: time-blind tools name it wrong. */
static void jit_item(struct audit *a, struct jt_model *m,
		     const struct jt_jit_item *j)
{
	const struct jt_region *r;
	struct jt_json_mem d;
	struct jt_json *w;
	char text[512];

	if (j->op != JT_JIT_LOAD)
		return;
	if (j->source == JT_SRC_PERFMAP && m->replaced.name &&
	    (!j->name || strcmp(m->replaced.name, j->name))) {
		snprintf(text, sizeof(text), "%s replaced by %s",
			 m->replaced.name, j->name);
		if ((w = detail(&d))) {
			jt_json_str_field(w, "old", m->replaced.name);
			jt_json_str_field(w, "new", j->name);
			jt_json_u64_field(w, "old_loaded_ns",
					  m->replaced.loaded_ns);
			jt_json_u64_field(w, "new_loaded_ns", j->time);
			jt_json_end(w);
		}
		add(a, "perfmap-reuse", j->pid, j->addr, j->addr + j->size,
		    text, &d);
	}
	r = jt_model_lookup(m, j->pid, j->addr);
	if (!r || !(r->prot & PROT_EXEC)) {
		snprintf(text, sizeof(text), "%s loaded %s", j->name,
			 r ? "into memory that is not executable" :
			     "where nothing is mapped");
		if ((w = detail(&d))) {
			jt_json_str_field(w, "name", j->name);
			jt_json_bool_field(w, "mapped", r);
			jt_json_str_field(w, "source",
					  jt_source_name(j->source));
			jt_json_end(w);
		}
		add(a, "jit-orphan", j->pid, j->addr, j->addr + j->size, text,
		    &d);
	}
}

/* Functions in [s, e): a perf-map entry jitdump also names counts once. */
static size_t jit_symbols_in(const struct jt_proc *p, uint64_t s, uint64_t e)
{
	size_t n = jt_jittab_count_in(&p->jitdump, s, e);
	const struct jt_jitsym *j = jt_jittab_first_in(&p->perfmap, s, e);

	for (; j && j->start < e; j = jt_jittab_next(&p->perfmap, j))
		n += !jt_jittab_find(&p->jitdump, j->start);
	return n;
}

static bool overlaps_eq(const void *val, const void *key)
{
	return ((const struct overlaps *)val)->pid == *(const uint32_t *)key;
}

static struct overlaps *overlaps_of(struct audit *a, uint32_t pid, bool make)
{
	uint64_t h = jt_hash_u64(pid);
	struct overlaps *o = jt_hash_find(&a->overlaps, h, overlaps_eq, &pid);

	if (o || !make)
		return o;
	o = calloc(1, sizeof(*o));
	if (!o || jt_hash_add(&a->overlaps, h, o)) {
		free(o);
		return NULL;
	}
	o->pid = pid;
	return o;
}

static void note_overlap(struct audit *a, uint32_t pid, size_t idx)
{
	struct overlaps *o = overlaps_of(a, pid, true);

	if (o && !jt_reserve(&o->idx, &o->cap, o->n + 1, sizeof(*o->idx)))
		o->idx[o->n++] = idx;
}

/*
 * JIT samples from the MMAP2 on, in the range it claims: what a tool
 * that trusts the record names wrong.
 */
static void count_overlapped(struct audit *a, const struct jt_sample *smp,
			     const struct jt_symres *y)
{
	struct overlaps *o;
	size_t i;

	if ((y->source != JT_SRC_JITDUMP && y->source != JT_SRC_PERFMAP) ||
	    !(o = overlaps_of(a, smp->pid, false)))
		return;
	for (i = 0; i < o->n; i++) {
		struct finding *f = &a->f[o->idx[i]];

		f->samples += f->start <= smp->ip && smp->ip < f->end;
	}
}

/* An executable MMAP2 over JIT code already loaded: trusting it loses it. */
static void mmap2(struct audit *a, struct jt_model *m, const struct jt_item *it)
{
	struct jt_mmap2 mm;
	struct finding *f;
	struct jt_proc *p;
	size_t n;
	char text[256];

	if (jt_perf_mmap2(it->data, it->len, &mm) || !(mm.prot & PROT_EXEC))
		return;
	p = jt_model_find(m, mm.pid);
	if (!p || !(n = jit_symbols_in(p, mm.start, mm.start + mm.len)))
		return;
	snprintf(text, sizeof(text),
		 "perf MMAP2 [0x%" PRIx64 "(0x%" PRIx64 ")] %.*s covers %zu "
		 "JIT symbols loaded before it",
		 mm.start, mm.len, (int)mm.filename_len, mm.filename, n);
	f = add(a, "mmap2-overlap", mm.pid, mm.start, mm.start + mm.len, text,
		NULL);
	if (f) {
		f->symbols = n;
		f->time = it->time;
		note_overlap(a, mm.pid, f - a->f);
	}
}

static bool orphan_eq(const void *val, const void *key)
{
	const struct orphan_region *a = val, *b = key;

	return a->pid == b->pid && a->start == b->start;
}

static void note_orphan(struct audit *a, uint32_t pid,
			const struct jt_symres *y)
{
	struct orphan_region k = { pid, y->region_start, y->region_end, 1 };
	uint64_t h = jt_hash_u64(k.start ^ jt_hash_u64(pid));
	struct orphan_region *o = jt_hash_find(&a->orphans, h, orphan_eq, &k);

	if (o) {
		o->samples++;
		return;
	}
	o = malloc(sizeof(*o));
	if (o && !jt_hash_add(&a->orphans, h, o))
		*o = k;
	else
		free(o);
}

static void sample(struct audit *a, struct jt_model *m,
		   const struct jt_item *it, const struct jt_symres *y)
{
	const struct jt_region *r;
	struct jt_sample smp;

	if (!y || jt_perf_sample(it->data, it->len, a->s->sample_type, &smp))
		return;
	count_overlapped(a, &smp, y);
	if (a->s->sample_type & PERF_SAMPLE_ADDR)
		audit_cow_sample(a->cow, m, &smp);
	if (y->sym || y->kernel || y->source != JT_SRC_ANON || y->path)
		return;
	r = jt_model_lookup(m, smp.pid, smp.ip);
	if (r && (r->prot & PROT_EXEC) && r->kind != JT_RK_VDSO)
		note_orphan(a, smp.pid, y);
}

static bool nspid_eq(const void *val, const void *key)
{
	return ((const struct nspid *)val)->pid == *(const uint32_t *)key;
}

static uint32_t nspid_of(const struct audit *a, uint32_t pid)
{
	const struct nspid *n =
		jt_hash_find(&a->nspids, jt_hash_u64(pid), nspid_eq, &pid);

	return n ? n->nspid : 0;
}

/* Findings outlive their processes: keep who they were in a namespace. */
static void note_nspid(struct audit *a, const struct jt_proc *p)
{
	struct nspid *n;

	if (!p || !p->nspid || p->nspid == p->pid ||
	    nspid_of(a, p->pid) == p->nspid)
		return;
	free(jt_hash_del(&a->nspids, jt_hash_u64(p->pid), nspid_eq, &p->pid));
	n = malloc(sizeof(*n));
	if (n && !jt_hash_add(&a->nspids, jt_hash_u64(p->pid), n))
		*n = (struct nspid){ p->pid, p->nspid };
	else
		free(n);
}

static void on_item(void *ctx, struct jt_model *m, const struct jt_item *it,
		    const struct jt_symres *y)
{
	struct audit *a = ctx;
	const struct perf_event_header *h = it->data;
	const struct jt_hdr *bh = it->data;

	if (it->kind == JT_IT_BPF && it->len >= sizeof(*bh) &&
	    (bh->type == JT_EV_EXEC || bh->type == JT_EV_FORK))
		note_nspid(a,
			   jt_model_find(
				   m, bh->type == JT_EV_EXEC ?
					      bh->pid :
					      ((const struct jt_fork_event *)bh)
						      ->child_pid));

	if (it->kind == JT_IT_BPF && it->len >= sizeof(*bh) &&
	    bh->type == JT_EV_COW)
		audit_cow_fault(a->cow, m, it->data);
	if (it->kind == JT_IT_JIT)
		jit_item(a, m, it->data);
	else if (it->kind == JT_IT_PERF && h->type == PERF_RECORD_MMAP2)
		mmap2(a, m, it);
	else if (it->kind == JT_IT_PERF && h->type == PERF_RECORD_SAMPLE)
		sample(a, m, it, y);
}

/* Returns the region after the last member. */
static const struct jt_region *coalesced_one(struct audit *a,
					     const struct jt_proc *p,
					     const struct jt_region *r,
					     size_t members)
{
	const struct jt_aspace *as = p->as;
	struct jt_kvma v = jt_aspace_kvma(as, r);
	char name[JT_PATH_MAX], text[JT_PATH_MAX + 64];
	struct jt_json_mem d;
	struct jt_json *w = detail(&d);
	const struct jt_region *k = r;
	size_t i;

	snprintf(name, sizeof(name), "%s", jt_region_name(r));
	if (w) {
		jt_json_u64_field(w, "regions", members);
		jt_json_str_field(w, "backing", name);
		jt_json_name(w, "pieces");
		jt_json_array(w);
	}
	for (i = 0; i < members && k; i++, k = jt_aspace_next(as, k)) {
		if (!w)
			continue;
		jt_json_array(w);
		jt_json_hex(w, k->start);
		jt_json_hex(w, k->end);
		jt_json_end(w);
	}
	if (w) {
		jt_json_end(w);
		jt_json_end(w);
	}
	snprintf(text, sizeof(text),
		 "kernel VMA holds %zu requested regions (%s)", members, name);
	add(a, "coalesced", p->pid, v.start, v.end, text, &d);
	return k;
}

/* Kernel VMAs holding more than one requested region, at the end. */
static void coalesced(struct audit *a, const struct jt_proc *p)
{
	const struct jt_aspace *as = p->as;
	const struct jt_region *r = as ? jt_aspace_first(as) : NULL;

	while (r) {
		size_t members = jt_aspace_vma_members(as, r);

		if (members > 1 && jt_aspace_kvma(as, r).start == r->start)
			r = coalesced_one(a, p, r, members);
		else
			r = jt_aspace_next(as, r);
	}
}

/*
 * mmap2-overlap: the JIT-named samples in each range, which a tool that
 * trusts the record would lose; the detail object is made here.
 */
static void overlap_details(struct audit *a)
{
	size_t k;

	for (k = 0; k < a->n; k++) {
		struct jt_json_mem d;
		struct jt_json *w;

		if (strcmp(a->f[k].kind, "mmap2-overlap") || !(w = detail(&d)))
			continue;
		jt_json_u64_field(w, "symbols", a->f[k].symbols);
		jt_json_u64_field(w, "time", a->f[k].time);
		jt_json_u64_field(w, "samples", a->f[k].samples);
		jt_json_end(w);
		a->f[k].detail = jt_json_mem_close(&d);
	}
}

static void orphans(struct audit *a)
{
	struct jt_json_mem d;
	struct jt_json *w;
	char text[256];
	size_t i;

	jt_hash_for_each (&a->orphans, i) {
		const struct orphan_region *o = a->orphans.e[i].val;

		snprintf(text, sizeof(text),
			 "%" PRIu64 " samples in executable anon memory no "
			 "symbol source names",
			 o->samples);
		if ((w = detail(&d))) {
			jt_json_u64_field(w, "samples", o->samples);
			jt_json_end(w);
		}
		add(a, "jit-orphan", o->pid, o->start, o->end, text, &d);
	}
}

/* A process's last state: what its regions and pages ended as. */
static void exited(void *ctx, struct jt_model *m, struct jt_proc *p)
{
	struct audit *a = ctx;

	coalesced(a, p);
	audit_cow_proc(a->cow, p);
}

static void finish(struct audit *a, struct jt_model *m)
{
	struct jt_proc *p;

	overlap_details(a);
	/* The dead were seen as they exited. */
	for (p = m->first; p; p = p->next)
		if (!p->dead_ns)
			exited(a, m, p);
	orphans(a);
	audit_cow_lines(a->cow);
}

static void free_audit(struct audit *a)
{
	size_t i;

	for (i = 0; i < a->n; i++) {
		free(a->f[i].detail);
		free(a->f[i].text);
	}
	free(a->f);
	audit_cow_free(a->cow);
	jt_hash_for_each (&a->orphans, i)
		free(a->orphans.e[i].val);
	jt_hash_free(&a->orphans);
	jt_hash_for_each (&a->overlaps, i) {
		struct overlaps *o = a->overlaps.e[i].val;

		free(o->idx);
		free(o);
	}
	jt_hash_free(&a->overlaps);
	jt_hash_for_each (&a->nspids, i)
		free(a->nspids.e[i].val);
	jt_hash_free(&a->nspids);
	jt_strtab_free(&a->strs);
}

static int cmp_finding(const void *x, const void *y)
{
	const struct finding *a = x, *b = y;
	int c = strcmp(a->kind, b->kind);

	if (c)
		return c;
	if (a->pid != b->pid)
		return a->pid < b->pid ? -1 : 1;
	return a->start < b->start ? -1 : a->start > b->start;
}

static void print_json(const struct audit *a, FILE *f)
{
	struct jt_json j;
	size_t i;

	jt_json_init(&j, f);
	jt_json_array(&j);
	for (i = 0; i < a->n; i++) {
		const struct finding *f = &a->f[i];

		jt_json_object(&j);
		jt_json_str_field(&j, "kind", f->kind);
		jt_json_u64_field(&j, "pid", f->pid);
		if (nspid_of(a, f->pid))
			jt_json_u64_field(&j, "nspid", nspid_of(a, f->pid));
		jt_json_hex_field(&j, "start", f->start);
		jt_json_hex_field(&j, "end", f->end);
		jt_json_name(&j, "detail");
		jt_json_raw(&j, f->detail ? f->detail : "{}");
		jt_json_end(&j);
	}
	jt_json_end(&j);
}

static void print(struct audit *a, bool json)
{
	const char *kind = NULL;
	size_t i, n;

	if (json) {
		print_json(a, stdout);
		return;
	}
	for (i = 0; i < a->n; i++) {
		const struct finding *f = &a->f[i];

		if (!kind || strcmp(kind, f->kind)) {
			kind = f->kind;
			for (n = i; n < a->n && !strcmp(a->f[n].kind, kind);
			     n++)
				;
			printf("%s== %s: %zu finding%s\n", i ? "\n" : "", kind,
			       n - i, n - i == 1 ? "" : "s");
			/* Private pages read best by file and page. */
			if (!strcmp(kind, "cow")) {
				audit_cow_print(a->cow, stdout);
				i = n - 1;
				continue;
			}
		}
		char pid[32];

		/* 4438:1 for pid 4438, pid 1 in its PID namespace. */
		if (nspid_of(a, f->pid))
			snprintf(pid, sizeof(pid), "%u:%u", f->pid,
				 nspid_of(a, f->pid));
		else
			snprintf(pid, sizeof(pid), "%u", f->pid);
		printf("  pid %-7s %012" PRIx64 "-%012" PRIx64 "  %s\n", pid,
		       f->start, f->end, jt_tx(f->text));
	}
	if (!a->n)
		printf("no findings\n");
}

static int run_audit(struct audit *a, const char *in, FILE *json, bool talk);

int cmd_audit(int argc, char **argv)
{
	const char *in = "jittrace.data";
	const char *kinds[sizeof(all_kinds) / sizeof(*all_kinds)];
	uint64_t addrs[64];
	int naddrs = 0;
	pid_t pid = 0;
	char *end;
	struct audit a = {};
	bool json = false;
	int c;

	while ((c = jt_getopt(argc, argv, &jt_cmd_audit)) != -1) {
		switch (c) {
		case 'i':
			in = optarg;
			break;
		case 'p':
			pid = strtol(optarg, &end, 10);
			if (*end || pid <= 0)
				return jt_cmd_error(&jt_cmd_audit, "bad --pid");
			break;
		case 'a':
			if (naddrs == 64)
				return jt_cmd_error(&jt_cmd_audit,
						    "too many --addr");
			addrs[naddrs++] = strtoull(optarg, &end, 16);
			if (*end)
				return jt_cmd_error(&jt_cmd_audit,
						    "bad --addr");
			break;
		case 'j':
			json = true;
			break;
		case 'k':
			if (parse_kinds(optarg, kinds, &a.kinds))
				return jt_cmd_error(&jt_cmd_audit,
						    "bad --kind");
			break;
		case 'h':
			jt_cmd_usage(stdout, &jt_cmd_audit);
			return 0;
		default:
			return jt_cmd_error(&jt_cmd_audit, NULL);
		}
	}
	if (optind < argc)
		return jt_cmd_error(&jt_cmd_audit, "unexpected argument");
	if (naddrs && !pid)
		return jt_cmd_error(&jt_cmd_audit, "--addr needs -p");
	if (a.kinds && pid)
		return jt_cmd_error(&jt_cmd_audit, "--kind is for recordings");
	if (pid)
		return jt_audit_live(pid, addrs, naddrs, json);
	return run_audit(&a, in, json ? stdout : NULL, true);
}

/* Every finding of the recording in, as audit --json prints them. */
int jt_audit_json(const char *in, FILE *out)
{
	struct audit a = {};

	return run_audit(&a, in, out, false);
}

/*
 * json: the findings as JSON to json; NULL: as text to stdout. talk: the
 * loss footer too (to stdout, after text).
 */
static int run_audit(struct audit *a, const char *in, FILE *json, bool talk)
{
	struct jt_pipe_ops ops = {
		.item = on_item, .exited = exited, .ctx = a, .named = true
	};
	struct jt_stream s;
	struct jt_pipe p;
	int err;

	if (jt_view_open(&s, in))
		return 1;
	a->s = &s;
	/* The writers of copied pages are named by the pipeline's namer. */
	a->cow = audit_cow_new(&p.syms, add_finding, a);
	if (!a->cow) {
		jt_stream_free(&s);
		return 1;
	}
	err = jt_view_run(&p, &s, in, &ops);
	if (!err) {
		finish(a, &p.m);
		if (a->n)
			qsort(a->f, a->n, sizeof(*a->f), cmp_finding);
		if (json)
			print_json(a, json);
		else
			print(a, false);
		if (!json && talk)
			jt_print_loss_footer(stdout, &s, &p);
	}
	free_audit(a);
	jt_pipe_free(&p);
	jt_stream_free(&s);
	return err;
}
