// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* jittrace script --json: one object per event, one per line. */
#include "lib/fmt.h"
#include "views/script.h"
#include "views/view.h"

static void head(struct jt_json *j, const char *type, uint64_t time,
		 uint32_t pid, uint32_t tid, uint32_t cpu)
{
	jt_json_object(j);
	jt_json_str_field(j, "type", type);
	jt_json_u64_field(j, "time", time);
	jt_json_u64_field(j, "pid", pid);
	jt_json_u64_field(j, "tid", tid);
	jt_json_u64_field(j, "cpu", cpu);
}

static void vma(struct jt_json *j, const char *key, const struct jt_vma *v)
{
	jt_json_name(j, key);
	if (!v->end) {
		jt_json_null(j);
		return;
	}
	jt_json_object(j);
	jt_json_hex_field(j, "start", v->start);
	jt_json_hex_field(j, "end", v->end);
	jt_json_hex_field(j, "flags", v->flags);
	jt_json_end(j);
}

static void map_event(struct jt_json *j, const struct jt_map_event *ev)
{
	char buf[JT_PATH_MAX + 1];
	int i;

	jt_json_name(j, "args");
	jt_json_array(j);
	for (i = 0; i < 6; i++)
		jt_json_hex(j, ev->args[i]);
	jt_json_end(j);
	jt_json_i64_field(j, "result", ev->result);
	vma(j, "vma", &ev->vma);
	vma(j, "vma_last", &ev->vma_last);
	jt_json_str_field(
		j, "path",
		jt_bounded_str(buf, sizeof(buf), ev->path, ev->path_len));
	jt_json_u64_field(j, "flags", ev->flags);
}

static void exec_event(struct jt_json *j, const struct jt_exec_event *e)
{
	char path[JT_PATH_MAX + 1], comm[JT_COMM_LEN + 1];

	jt_bounded_str(comm, sizeof(comm), e->comm, sizeof(e->comm));
	jt_json_str_field(j, "comm", comm);
	jt_json_bool_field(j, "attach", e->flags & JT_EXEC_ATTACH);
	if (e->nspid && e->nspid != e->h.pid)
		jt_json_u64_field(j, "nspid", e->nspid);
	jt_json_str_field(
		j, "path",
		jt_bounded_str(path, sizeof(path), e->path, e->path_len));
}

/* Left out where the record does not say (versions before 5). */
static void euid(struct jt_json *j, const struct jt_hdr *h, size_t len)
{
	uint32_t u;

	if (jt_event_euid(h, len, &u))
		jt_json_u64_field(j, "euid", u);
}

static void cow_event(struct jt_json *j, const struct jt_cow_event *w)
{
	jt_json_hex_field(j, "page", w->page);
	jt_json_str_field(j, "kind", jt_cow_kind_name(w->kind));
	jt_json_u64_field(j, "error_code", w->error_code);
	jt_json_u64_field(j, "flags", w->flags);
	if (w->h.size >= sizeof(*w)) /* version 3 ends before it */
		jt_json_hex_field(j, "ip", w->ip);
}

void jt_script_json_bpf(struct script_ctx *c, const struct jt_item *it)
{
	const struct jt_hdr *h = it->data;
	const struct jt_fork_event *f = it->data;
	const struct jt_exit_event *x = it->data;
	const struct jt_write_event *w = it->data;
	struct jt_json *j = &c->j;

	head(j, jt_event_name(h->type), h->time, h->pid, h->tid, h->cpu);
	switch (h->type) {
	case JT_EV_FORK:
		jt_json_u64_field(j, "child_pid", f->child_pid);
		jt_json_u64_field(j, "child_tid", f->child_tid);
		jt_json_bool_field(j, "thread", f->flags & JT_FORK_THREAD);
		if (f->child_nspid && f->child_nspid != f->child_tid)
			jt_json_u64_field(j, "child_nspid", f->child_nspid);
		euid(j, h, it->len);
		break;
	case JT_EV_EXEC:
		exec_event(j, it->data);
		euid(j, h, it->len);
		break;
	case JT_EV_COW:
		cow_event(j, it->data);
		break;
	case JT_EV_MAPWRITE:
		jt_json_u64_field(j, "end", w->end);
		jt_json_u64_field(j, "len", w->len);
		break;
	case JT_EV_EXIT:
		jt_json_bool_field(j, "group", x->group_dead);
		jt_json_i64_field(j, "exit_code", x->exit_code);
		break;
	default:
		map_event(j, it->data);
	}
	jt_json_end(j);
}

static void region(struct jt_json *j, const struct jt_symres *y)
{
	jt_json_name(j, "region_start");
	if (y->region_start)
		jt_json_hex(j, y->region_start);
	else
		jt_json_null(j);
	jt_json_name(j, "region_end");
	if (y->region_start)
		jt_json_hex(j, y->region_end);
	else
		jt_json_null(j);
}

static void data_addr(struct jt_json *j, struct jt_model *m,
		      const struct jt_sample *s)
{
	struct jt_proc *p = jt_model_find(m, s->pid);

	jt_json_hex_field(j, "data_addr", s->addr);
	jt_json_str_field(
		j, "sharing",
		jt_sharing_name(p && p->as ? jt_aspace_sharing(p->as, s->addr) :
					     JT_SHARE_NONE));
}

/* A process in a PID namespace: the pid it knows itself by, too. */
static void nspid_field(struct jt_json *j, struct jt_model *m, uint32_t pid)
{
	const struct jt_proc *p = jt_model_find(m, pid);

	if (p && p->nspid && p->nspid != pid)
		jt_json_u64_field(j, "nspid", p->nspid);
}

/* The named stack, innermost first: kernel frames, then user frames. */
static void frames(struct jt_json *j, const struct jt_symres *y)
{
	char buf[256];
	uint32_t i;

	jt_json_name(j, "frames");
	jt_json_array(j);
	for (i = 0; i < y->nframes; i++) {
		const struct jt_symres *f = &y->frames[i];

		jt_json_object(j);
		jt_json_hex_field(j, "ip", f->ip);
		jt_json_str_field(j, "sym", f->sym);
		jt_json_str_field(j, "name",
				  jt_symres_name(f, buf, sizeof(buf)));
		jt_json_str_field(j, "dso", f->dso);
		jt_json_str_field(j, "source", jt_source_name(f->source));
		if (f->retro)
			jt_json_bool_field(j, "retro", true);
		if (f->inlined)
			jt_json_bool_field(j, "inlined", true);
		jt_json_end(j);
	}
	jt_json_end(j);
}

void jt_script_json_sample(struct script_ctx *c, struct jt_model *m,
			   const struct jt_sample *s, const struct jt_symres *y)
{
	struct jt_json *j = &c->j;
	uint64_t i;

	head(j, "sample", s->time, s->pid, s->tid, s->cpu);
	nspid_field(j, m, s->pid);
	jt_json_hex_field(j, "ip", s->ip);
	jt_json_bool_field(j, "kernel", y->kernel);
	jt_json_u64_field(j, "period", s->period);
	region(j, y);
	jt_json_str_field(j, "path", y->path);
	if (y->path)
		jt_json_hex_field(j, "offset", y->offset);
	jt_json_str_field(j, "sym", y->sym);
	jt_json_str_field(j, "dso", y->dso);
	jt_json_str_field(j, "source", jt_source_name(y->source));
	jt_json_bool_field(j, "retro", y->retro);
	if (c->s->sample_type & PERF_SAMPLE_ADDR)
		data_addr(j, m, s);
	if (c->s->sample_type & PERF_SAMPLE_CALLCHAIN) {
		jt_json_name(j, "callchain");
		jt_json_array(j);
		for (i = 0; i < s->nr_chain; i++)
			jt_json_hex(j, s->chain[i]);
		jt_json_end(j);
	}
	if (y->nframes)
		frames(j, y);
	if (y->chain_end)
		jt_json_str_field(j, "unwind",
				  jt_uw_end_name(y->chain_end - 1));
	jt_json_end(j);
}

void jt_script_json_mmap2(struct script_ctx *c, const struct jt_item *it,
			  const struct jt_mmap2 *mm, const char *name)
{
	struct jt_json *j = &c->j;

	head(j, "perf_mmap2", it->time, mm->pid, mm->tid, it->cpu);
	jt_json_hex_field(j, "start", mm->start);
	jt_json_hex_field(j, "end", mm->start + mm->len);
	jt_json_hex_field(j, "pgoff", mm->pgoff);
	jt_json_u64_field(j, "prot", mm->prot);
	jt_json_u64_field(j, "flags", mm->flags);
	jt_json_u64_field(j, "ino", mm->ino);
	jt_json_str_field(j, "filename", name);
	jt_json_end(j);
}

void jt_script_json_perf(struct script_ctx *c, const char *name,
			 const struct jt_item *it,
			 const struct jt_sample_id *id)
{
	const struct perf_event_header *h = it->data;
	struct jt_json *j = &c->j;

	head(j, name, it->time, id->pid, id->tid, it->cpu);
	/* PERF_RECORD_LOST: id, then the count */
	if (h->type == PERF_RECORD_LOST && it->len >= sizeof(*h) + 16)
		jt_json_u64_field(j, "lost", ((const uint64_t *)(h + 1))[1]);
	jt_json_end(j);
}

void jt_script_json_jit(struct script_ctx *c, const struct jt_jit_item *ji,
			const char *op)
{
	struct jt_json *j = &c->j;

	head(j, op, ji->time, ji->pid, ji->pid, 0);
	jt_json_hex_field(j, "addr", ji->addr);
	jt_json_hex_field(j, "size", ji->size);
	if (ji->op == JT_JIT_MOVE)
		jt_json_hex_field(j, "old_addr", ji->old_addr);
	jt_json_str_field(j, "source", jt_source_name(ji->source));
	jt_json_u64_field(j, "code_index", ji->code_index);
	jt_json_str_field(j, "name", ji->name);
	jt_json_end(j);
}
