// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "lib/reserve.h"
#include "model/pipeline.h"

/* perf's COMM names processes the BPF side never saw exec (-a, -p). */
static void perf_comm(struct jt_model *m, const struct jt_item *it)
{
	const struct perf_event_header *h = it->data;
	const uint32_t *p = (const void *)(h + 1);
	char comm[JT_COMM_LEN] = {};
	size_t max = it->len - sizeof(*h) - 8;

	if (it->len < sizeof(*h) + 8 + 1)
		return;
	memcpy(comm, p + 2, max < sizeof(comm) - 1 ? max : sizeof(comm) - 1);
	if (p[0] == p[1]) {
		struct jt_proc *proc = jt_model_find(m, p[0]);

		if (!proc || !proc->comm[0] ||
		    (h->misc & PERF_RECORD_MISC_COMM_EXEC))
			jt_model_set_comm(m, p[0], comm);
	}
}

static void apply(struct jt_model *m, const struct jt_item *it)
{
	const struct perf_event_header *h = it->data;
	struct jt_mmap2 mm;

	if (it->kind == JT_IT_BPF)
		jt_model_apply(m, it->data, it->len);
	else if (it->kind == JT_IT_JIT)
		jt_model_apply_jit(m, it->data); /* one record (jit_one) */
	else if (h->type == PERF_RECORD_COMM)
		perf_comm(m, it);
	else if (!jt_perf_mmap2(h, it->len, &mm))
		jt_model_perf_vma(m, mm.pid, mm.tid, mm.start,
				  mm.start + mm.len);
}

/*
 * Record i of a JIT item, as an item of its own: what models and views
 * take. A write's perf-map lines travel as one item (stream.c).
 */
static const struct jt_item *jit_one(const struct jt_item *it, uint32_t i,
				     struct jt_item *one)
{
	const struct jt_jit_item *j = jt_jit_rec(it, i);

	if (!it->nrec)
		return it;
	*one = *it;
	one->data = j;
	one->len = sizeof(*j) + (j->name ? j->name_len + 1 : 0);
	one->nrec = 0;
	return one;
}

static void deliver_one(struct jt_pipe *p, const struct jt_item *it,
			struct jt_named *named)
{
	if (it->kind != JT_IT_JIT || !p->ops->jit_naming_only)
		apply(&p->m, it);
	if (named)
		jt_syms_count(&p->syms, named);
	if (p->ops->item)
		p->ops->item(p->ops->ctx, &p->m, it,
			     named ? &named->res : NULL);
}

static void deliver(struct jt_pipe *p, struct jt_item *it,
		    struct jt_named *named)
{
	struct jt_item one;
	uint32_t i;

	if (it->kind == JT_IT_JIT)
		for (i = 0; i < jt_jit_count(it); i++)
			deliver_one(p, jit_one(it, i, &one), NULL);
	else
		deliver_one(p, it, named);
	jt_model_reap(&p->m, it->time);
	jt_named_put(&p->syms, named);
	jt_stream_put(p->s, it);
}

/* Let items reach the consumer, oldest first, once none waits. */
static void release(struct jt_pipe *p, uint64_t now, bool all)
{
	while (p->head < p->n) {
		struct jt_held *h = &p->held[p->head];

		if (h->named && h->named->pending) {
			if (!all && h->it->time + JT_RETRO_NS >= now &&
			    p->n - p->head <= JT_RETRO_MAX)
				break;
			jt_syms_settle(&p->syms, h->named);
			if (!all)
				p->retro_forced++;
		}
		p->head++;
		deliver(p, h->it, h->named);
	}
	if (p->head == p->n) {
		p->head = p->n = 0;
	} else if (p->head > 1024 && p->head * 2 > p->n) {
		memmove(p->held, p->held + p->head,
			(p->n - p->head) * sizeof(*p->held));
		p->n -= p->head;
		p->head = 0;
	}
}

static int hold(struct jt_pipe *p, struct jt_item *it, struct jt_named *named)
{
	if (jt_reserve(&p->held, &p->cap, p->n + 1, sizeof(*p->held))) {
		jt_named_put(&p->syms, named);
		jt_stream_put(p->s, it);
		return -ENOMEM;
	}
	p->held[p->n++] = (struct jt_held){ it, named, p->steps };
	return 0;
}

static void named_exit(void *ctx, struct jt_model *m, struct jt_proc *proc)
{
	jt_syms_exited(ctx, proc->pid);
}

/*
 * A sample's stack copy is for the unwinder only: once its frames are
 * final it goes, so the samples held for late names cost little.
 */
static struct jt_item *drop_stack(struct jt_pipe *p, struct jt_item *it,
				  struct jt_named *n)
{
	struct jt_item *small;
	size_t len;

	if (!n->res.chain_end ||
	    (n->pending && n->res.chain_end - 1 != JT_UW_END_COMPLETE))
		return it;
	len = jt_perf_sample_strip((void *)it->data, it->len, p->s->sample_type,
				   p->s->regs_user);
	if (len == it->len)
		return it;
	it->len = len;
	small = realloc(it, sizeof(*it) + len);
	if (!small)
		return it;
	small->data = small + 1;
	n->it = small;
	return small;
}

static int step(struct jt_pipe *p, struct jt_item *it)
{
	struct jt_named *named;

	if (!p->ops->named) {
		deliver(p, it, NULL);
		return 0;
	}
	/* A name that dies now may be held by any sample named before. */
	p->names.now = ++p->steps;
	if (it->kind == JT_IT_JIT) {
		struct jt_item one;
		uint32_t i;

		for (i = 0; i < jt_jit_count(it); i++) {
			apply(&p->ahead, jit_one(it, i, &one));
			jt_syms_jit(&p->syms, &p->ahead, jt_jit_rec(it, i));
		}
		named = NULL;
	} else {
		apply(&p->ahead, it);
		/* Samples come in runs: a sample warms its successors'. */
		if (it->kind == JT_IT_PERF)
			jt_syms_prefetch(&p->syms, &p->ahead,
					 jt_stream_peek(p->s, false),
					 jt_stream_peek(p->s, true));
		named = jt_syms_sample(&p->syms, &p->ahead, it);
		if (named)
			it = drop_stack(p, it, named);
	}
	jt_model_reap(&p->ahead, it->time);
	if (hold(p, it, named))
		return -ENOMEM;
	release(p, it->time, false);
	if (p->ops->free_names)
		jt_names_sweep(&p->names, p->head < p->n ?
						  p->held[p->head].step :
						  p->steps + 1);
	return 0;
}

int jt_pipe_run(struct jt_pipe *p, struct jt_stream *s,
		const struct jt_pipe_ops *ops)
{
	struct jt_item *it;
	int err = 0;

	memset(p, 0, sizeof(*p));
	p->s = s;
	p->ops = ops;
	jt_syms_init(&p->syms, s);
	jt_model_init(&p->ahead);
	jt_model_init(&p->m);
	p->ahead.free_dead = p->m.free_dead = !ops->keep_dead;
	p->m.procs_only = ops->procs_only && ops->named;
	/* Every JIT name the pipeline hands out comes from one table. */
	p->ahead.names = p->m.names = p->syms.jitnames = &p->names;
	/* Samples are named in ahead: its tables are built as they need. */
	p->ahead.lazy_jit = true;
	p->ahead.on_exit = named_exit;
	p->ahead.exit_ctx = &p->syms;
	p->m.on_exit = ops->exited;
	p->m.exit_ctx = ops->ctx;
	while (!err && (it = jt_stream_next(s))) {
		if (ops->until && it->time > ops->until) {
			jt_stream_put(s, it);
			break;
		}
		err = step(p, it);
	}
	release(p, UINT64_MAX, true);
	if (!err && (s->err || p->syms.err))
		err = s->err ? s->err : p->syms.err;
	return err;
}

void jt_pipe_free(struct jt_pipe *p)
{
	size_t i;

	for (i = p->head; i < p->n; i++) {
		jt_named_put(&p->syms, p->held[i].named);
		jt_stream_put(p->s, p->held[i].it);
	}
	free(p->held);
	jt_syms_free(&p->syms);
	jt_model_free(&p->ahead);
	jt_model_free(&p->m);
	/* Last: the models' tables put their names as they go. */
	jt_nametab_free(&p->names);
	memset(p, 0, sizeof(*p));
}
