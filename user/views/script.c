// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* jittrace script: every event and sample in time order. */
#include <getopt.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include "jittrace.h"
#include "lib/cli.h"
#include "lib/fmt.h"
#include "lib/perf_rec.h"
#include "lib/reserve.h"
#include "views/script.h"
#include "views/view.h"

static const struct jt_opt script_opts[] = {
	{ 'i', 0, "input", "FILE", "recording (default jittrace.data)",
	  JT_ARG_FILE },
	{ 0, 'j', "json", NULL, "one JSON object per line" },
	{ 0, 'f', "folded", NULL,
	  "collapsed stacks (flamegraph.pl, inferno, speedscope); call chains "
	  "need record -g" },
	{ 0 },
};

const struct jt_cmd jt_cmd_script = {
	.name = "script",
	.summary = "every event and sample in time order",
	.synopsis = "[-i FILE] [--json | --folded]",
	.opts = script_opts,
	.run = cmd_script,
};

static void text_head(struct jt_model *m, const char *type, uint64_t time,
		      uint32_t pid, uint32_t tid, uint32_t cpu)
{
	struct jt_proc *p = jt_model_find(m, pid);
	char t[32];

	printf("%16s %7u/%-7u [%03u] %s: %-9s", jt_tx(jt_proc_comm(p, pid)),
	       pid, tid, cpu, jt_time_str(time, t), type);
	/* In a PID namespace: the pid the process knows itself by. */
	if (p && p->nspid && p->nspid != pid)
		printf(" [ns pid %u]", p->nspid);
}

static void map_event(const struct jt_map_event *ev)
{
	char buf[JT_PATH_MAX + 1];
	const char *path =
		jt_bounded_str(buf, sizeof(buf), ev->path, ev->path_len);

	if (ev->h.type == JT_EV_VMA)
		printf(" %llx-%llx flags=0x%llx",
		       (unsigned long long)ev->vma.start,
		       (unsigned long long)ev->vma.end,
		       (unsigned long long)ev->vma.flags);
	else
		printf(" args=%llx,%llx,%llx,%llx,%llx,%llx = %s%llx "
		       "vma=%llx-%llx",
		       (unsigned long long)ev->args[0],
		       (unsigned long long)ev->args[1],
		       (unsigned long long)ev->args[2],
		       (unsigned long long)ev->args[3],
		       (unsigned long long)ev->args[4],
		       (unsigned long long)ev->args[5],
		       ev->result < 0 && ev->result > -4096 ? "-" : "",
		       (unsigned long long)(ev->result < 0 &&
							    ev->result > -4096 ?
						    -ev->result :
						    ev->result),
		       (unsigned long long)ev->vma.start,
		       (unsigned long long)ev->vma.end);
	if (path)
		printf(" %s", jt_tx(path));
	if (ev->flags & JT_MF_EXEC_LOAD)
		printf(" (execve)");
}

static void cow_text(const struct jt_cow_event *w)
{
	printf(" page=%llx %s error_code=%llx", (unsigned long long)w->page,
	       jt_cow_kind_name(w->kind), (unsigned long long)w->error_code);
	if (w->h.size >= sizeof(*w)) /* version 3 ends before it */
		printf(" ip=%llx", (unsigned long long)w->ip);
	if (w->flags & JT_MF_EXEC_LOAD)
		printf(" (execve)");
}

static void bpf_event(struct script_ctx *c, struct jt_model *m,
		      const struct jt_item *it)
{
	const struct jt_hdr *h = it->data;
	const struct jt_fork_event *f = it->data;
	const struct jt_exec_event *e = it->data;
	const struct jt_exit_event *x = it->data;
	const struct jt_write_event *w = it->data;
	char path[JT_PATH_MAX + 1];

	if (!jt_event_valid(h, it->len))
		return;
	if (c->json) {
		jt_script_json_bpf(c, it);
		return;
	}
	text_head(m, jt_event_name(h->type), h->time, h->pid, h->tid, h->cpu);
	switch (h->type) {
	case JT_EV_FORK:
		printf(" child=%u/%u%s", f->child_pid, f->child_tid,
		       f->flags & JT_FORK_THREAD ? " thread" : "");
		break;
	case JT_EV_EXEC:
		if (!jt_bounded_str(path, sizeof(path), e->path, e->path_len))
			path[0] = 0;
		printf(" %s%s", jt_tx(path),
		       e->flags & JT_EXEC_ATTACH ? " (attach)" : "");
		break;
	case JT_EV_COW:
		cow_text(it->data);
		break;
	case JT_EV_MAPWRITE:
		printf(" end=%llu len=%llu", (unsigned long long)w->end,
		       (unsigned long long)w->len);
		break;
	case JT_EV_EXIT:
		printf(" group=%s code=%d", x->group_dead ? "true" : "false",
		       x->exit_code);
		break;
	default:
		map_event(it->data);
	}
	printf("\n");
}

static void fold(struct script_ctx *c, struct jt_model *m,
		 const struct jt_symres *y, uint32_t pid);

static void sample_text(struct script_ctx *c, struct jt_model *m,
			const struct jt_sample *s, const struct jt_symres *y)
{
	char name[256];

	text_head(m, "sample", s->time, s->pid, s->tid, s->cpu);
	printf(" %16" PRIx64 " %s", s->ip,
	       jt_tx(jt_symres_name(y, name, sizeof(name))));
	if (y->path)
		printf(" (%s+0x%" PRIx64 ")", jt_tx(y->path), y->offset);
	printf(" %s%s", jt_source_name(y->source), y->retro ? " retro" : "");
	if (c->s->sample_type & PERF_SAMPLE_ADDR)
		printf(" addr=%" PRIx64, s->addr);
	printf("\n");
}

static void sample(struct script_ctx *c, struct jt_model *m,
		   const struct jt_item *it, const struct jt_symres *y)
{
	struct jt_sample s;

	if (!y || jt_perf_sample(it->data, it->len, c->s->sample_type, &s))
		return;
	c->samples++;
	if (c->folded)
		fold(c, m, y, s.pid);
	else if (c->json)
		jt_script_json_sample(c, m, &s, y);
	else
		sample_text(c, m, &s, y);
}

static void perf_mmap2(struct script_ctx *c, struct jt_model *m,
		       const struct jt_item *it)
{
	struct jt_mmap2 mm;
	char name[JT_PATH_MAX];

	if (jt_perf_mmap2(it->data, it->len, &mm))
		return;
	snprintf(name, sizeof(name), "%.*s", (int)mm.filename_len, mm.filename);
	if (c->json) {
		jt_script_json_mmap2(c, it, &mm, name);
		return;
	}
	text_head(m, "PERF_RECORD_MMAP2", it->time, mm.pid, mm.tid, it->cpu);
	printf(" [0x%" PRIx64 "(0x%" PRIx64 ") @ 0x%" PRIx64 " prot=%u] %s\n",
	       mm.start, mm.len, mm.pgoff, mm.prot, jt_tx(name));
}

static void perf_other(struct script_ctx *c, struct jt_model *m,
		       const struct jt_item *it)
{
	const struct perf_event_header *h = it->data;
	struct jt_sample_id id;
	const char *name;

	switch (h->type) {
	case PERF_RECORD_COMM:
		name = "perf_comm";
		break;
	case PERF_RECORD_FORK:
		name = "perf_fork";
		break;
	case PERF_RECORD_EXIT:
		name = "perf_exit";
		break;
	case PERF_RECORD_LOST:
		name = "perf_lost";
		break;
	case PERF_RECORD_MMAP:
		name = "perf_mmap";
		break;
	default:
		return;
	}
	jt_perf_sample_id(h, it->len, c->s->sample_type, &id);
	if (c->json) {
		jt_script_json_perf(c, name, it, &id);
	} else {
		text_head(m, name, it->time, id.pid, id.tid, it->cpu);
		printf("\n");
	}
}

static void jit_item(struct script_ctx *c, struct jt_model *m,
		     const struct jt_item *it)
{
	const struct jt_jit_item *j = it->data;
	static const char *const ops[] = { "jit_load", "jit_move", "jit_close",
					   "jit_unload" };
	const char *op = j->op < 4 ? ops[j->op] : "jit_unknown";

	if (c->folded)
		return;
	if (c->json) {
		jt_script_json_jit(c, j, op);
		return;
	}
	text_head(m, op, j->time, j->pid, j->pid, 0);
	printf(" %" PRIx64 "+0x%" PRIx64 " %s (%s)\n", j->addr, j->size,
	       j->name ? jt_tx(j->name) : "", jt_source_name(j->source));
}

static void on_item(void *ctx, struct jt_model *m, const struct jt_item *it,
		    const struct jt_symres *y)
{
	struct script_ctx *c = ctx;
	const struct perf_event_header *h = it->data;

	if (it->kind == JT_IT_JIT)
		jit_item(c, m, it);
	else if (c->folded &&
		 (it->kind != JT_IT_PERF || h->type != PERF_RECORD_SAMPLE))
		return;
	else if (it->kind == JT_IT_BPF)
		bpf_event(c, m, it);
	else if (h->type == PERF_RECORD_SAMPLE)
		sample(c, m, it, y);
	else if (h->type == PERF_RECORD_MMAP2)
		perf_mmap2(c, m, it);
	else
		perf_other(c, m, it);
}

struct stack {
	uint64_t count;
	char line[];
};

static bool stack_eq(const void *val, const void *key)
{
	return !strcmp(((const struct stack *)val)->line, key);
}

static int cmp_stack(const void *a, const void *b)
{
	return strcmp((*(struct stack *const *)a)->line,
		      (*(struct stack *const *)b)->line);
}

/* "comm;outer;...;leaf" counted: perf gives the chain leaf first. */
static void fold(struct script_ctx *c, struct jt_model *m,
		 const struct jt_symres *y, uint32_t pid)
{
	struct jt_proc *p = jt_model_find(m, pid);
	char *line = NULL, name[256];
	size_t len = 0, i;
	FILE *f = open_memstream(&line, &len);
	struct stack *k;
	uint64_t h;

	if (!f)
		return;
	fprintf(f, "%s", jt_tx(jt_proc_comm(p, pid)));
	for (i = y->nframes; i-- > 0;)
		fprintf(f, ";%s",
			jt_tx(jt_symres_name(&y->frames[i], name,
					     sizeof(name))));
	if (!y->nframes)
		fprintf(f, ";%s", jt_tx(jt_symres_name(y, name, sizeof(name))));
	fclose(f);
	h = jt_hash_bytes(line, len);
	k = jt_hash_find(&c->stacks, h, stack_eq, line);
	if (k) {
		k->count++;
	} else if ((k = malloc(sizeof(*k) + len + 1))) {
		k->count = 1;
		memcpy(k->line, line, len + 1);
		if (jt_hash_add(&c->stacks, h, k))
			free(k);
	}
	free(line);
}

static void print_folded(struct script_ctx *c)
{
	struct stack **v = malloc((c->stacks.n ? c->stacks.n : 1) * sizeof(*v));
	size_t i, n = 0;

	jt_hash_for_each (&c->stacks, i) {
		if (v)
			v[n++] = c->stacks.e[i].val;
		else
			free(c->stacks.e[i].val);
	}
	if (n)
		qsort(v, n, sizeof(*v), cmp_stack);
	for (i = 0; i < n; i++) {
		printf("%s %" PRIu64 "\n", v[i]->line, v[i]->count);
		free(v[i]);
	}
	free(v);
	jt_hash_free(&c->stacks);
}

int cmd_script(int argc, char **argv)
{
	const char *input = "jittrace.data";
	struct script_ctx c = {};
	struct jt_pipe_ops ops = { .item = on_item, .ctx = &c, .named = true };
	struct jt_stream s;
	struct jt_pipe p;
	int opt, err;

	while ((opt = jt_getopt(argc, argv, &jt_cmd_script)) != -1) {
		switch (opt) {
		case 'i':
			input = optarg;
			break;
		case 'j':
			c.json = 1;
			break;
		case 'f':
			c.folded = 1;
			break;
		case 'h':
			jt_cmd_usage(stdout, &jt_cmd_script);
			return 0;
		default:
			return jt_cmd_error(&jt_cmd_script, NULL);
		}
	}
	if (optind < argc)
		return jt_cmd_error(&jt_cmd_script, "unexpected argument");
	if (c.json && c.folded)
		return jt_cmd_error(&jt_cmd_script,
				    "--json or --folded, not both");
	if (jt_view_open(&s, input))
		return 1;
	c.s = &s;
	jt_json_init(&c.j, stdout);
	err = jt_view_run(&p, &s, input, &ops);
	if (c.folded)
		print_folded(&c);
	else if (!c.json && !err) {
		printf("# %llu samples, %llu [unknown], %llu retro\n",
		       (unsigned long long)p.syms.st.samples,
		       (unsigned long long)p.syms.st.unknown,
		       (unsigned long long)p.syms.st.retro);
		jt_print_loss_footer(stdout, &s, &p);
	}
	jt_pipe_free(&p);
	jt_stream_free(&s);
	return err;
}
