// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "lib/clock.h"
#include "agent/jitbudget.h"
#include "agent/profiles.h"
#include "agent/push.h"
#include "agent/spool.h"
#include "export/pprof.h"
#include "export/pprof_named.h"
#include "lib/procfile.h"
#include "model/pipeline.h"

struct cutter {
	struct jt_agent *a;
	struct jt_stream s;
	struct jt_pipe p;
	struct jt_profile_req win; /* this thread's own: no lock */
	int64_t nanos;		   /* per sample, when the event gives none */
	uint64_t period_ns;
	struct jt_jitbudget budget;
	bool budget_set;    /* from the RSS once the capture runs */
	uint64_t jit_items; /* not yet in a->met: counted without the lock */
};

/*
 * A cut may wait this long after its end for stragglers: the stream's
 * reorder window, a sample waiting for its code-load record, a round.
 */
#define CUT_AFTER_NS (JT_REORDER_NS + JT_RETRO_NS + 100000000ULL)

static int64_t real_ns(const struct jt_agent *a, uint64_t mono)
{
	return (int64_t)mono + a->mono_to_real;
}

static int req_begin(struct cutter *c, struct jt_profile_req *r, uint64_t start,
		     uint64_t len)
{
	r->start = start;
	r->end = start + len;
	r->samples = 0;
	r->pprof = jt_pprof_new(real_ns(c->a, start), c->period_ns);
	if (r->pprof)
		jt_pprof_set_labels(r->pprof, c->a->o.labels);
	return r->pprof ? 0 : -ENOMEM;
}

/* Encode what r holds; its duration is what it covered. */
static void req_cut(struct jt_profile_req *r, uint64_t until)
{
	if (!r->pprof) {
		r->err = -ENOMEM;
		return;
	}
	if (until > r->end)
		until = r->end;
	jt_pprof_set_duration(r->pprof,
			      until > r->start ? until - r->start : 0);
	r->err = jt_pprof_encode(r->pprof, &r->buf, &r->len);
	jt_pprof_free(r->pprof);
	r->pprof = NULL;
}

/* JIT file bytes past --max-memory's share: counted, never read. */
static uint64_t truncated_bytes(const struct jt_stream *s)
{
	uint64_t n = s->gone_truncated;
	size_t i;

	for (i = 0; i < s->nsources; i++)
		n += s->sources[i]->truncated;
	return n;
}

/* audit's "coalesced": kernel VMAs that hold more than one region. */
static uint64_t coalesced(const struct jt_aspace *as)
{
	const struct jt_region *r = jt_aspace_first(as);
	uint64_t n = 0;

	while (r) {
		size_t members = jt_aspace_vma_members(as, r);

		if (members > 1 && jt_aspace_kvma(as, r).start == r->start) {
			n++;
			while (members-- && r)
				r = jt_aspace_next(as, r);
		} else {
			r = jt_aspace_next(as, r);
		}
	}
	return n;
}

/* How much of the model is alive: once a window, O(regions). */
static void count_alive(struct cutter *c, struct jt_model *m)
{
	struct jt_agent *a = c->a;
	uint64_t regions = 0, syms = 0, cow = 0, merged = 0;
	unsigned int n = 0;
	struct jt_proc *p;

	for (p = m->first; p; p = p->next) {
		if (p->dead_ns)
			continue;
		if (p->as) {
			regions += jt_aspace_count(p->as);
			cow += jt_treap_count(&p->as->cow);
			merged += coalesced(p->as);
		}
		syms += jt_proc_jit_count(p);
		if (jt_proc_jit_count(p) && n < JT_AGENT_JIT_PIDS)
			a->jit_pids[n++] = p->pid;
	}
	a->njit_pids = n;
	a->met.jit_truncated_bytes = truncated_bytes(&c->s);
	a->met.procs = m->nprocs;
	a->met.regions = regions;
	a->met.jit_syms = syms;
	a->met.cow_pages = cow;
	a->met.coalesced = merged;
}

static void window_out(struct cutter *c, uint64_t until)
{
	struct jt_profile_req *w = &c->win;
	struct jt_agent *a = c->a;
	int64_t from = real_ns(a, w->start) / 1000000000LL;
	int64_t to = real_ns(a, w->end) / 1000000000LL;

	req_cut(w, until);
	pthread_mutex_lock(&a->lock);
	a->met.windows++;
	a->met.window_bytes = w->len;
	count_alive(c, &c->p.ahead); /* where the JIT tables are */
	a->met.jit_names = c->p.names.h.n;
	a->met.retro_forced = c->p.retro_forced;
	pthread_mutex_unlock(&a->lock);
	if (!w->err && a->spool)
		jt_spool_write(a->spool, from, w->buf, w->len);
	if (!w->err && a->push)
		jt_push_enqueue(a->push, from, to, w->buf, w->len);
	free(w->buf);
	w->buf = NULL;
}

/* Cut every window that ended by t; the next starts where t falls. */
static void windows_to(struct cutter *c, uint64_t t)
{
	uint64_t wn = c->a->o.window_ns, next;

	if (t < c->win.end)
		return;
	window_out(c, c->win.end);
	next = c->win.end + (t - c->win.end) / wn * wn;
	if (req_begin(c, &c->win, next, wn))
		c->win.err = -ENOMEM;
}

/*
 * Requests that ended by t are cut and their waiters woken; at the end
 * of the stream (all), every one, with what it has until t.
 */
static void reqs_to(struct cutter *c, uint64_t t, bool all)
{
	struct jt_agent *a = c->a;
	struct jt_profile_req *r;
	bool woke = false;

	for (r = a->reqs; r; r = r->next) {
		if (r->done || (t < r->end && !all))
			continue;
		req_cut(r, t);
		r->done = true;
		woke = true;
	}
	if (woke)
		pthread_cond_broadcast(&a->cond);
}

static void count_sample(struct jt_agent_metrics *met,
			 const struct jt_symres *y)
{
	met->samples++;
	if (y->kernel)
		met->kernel_samples++;
	else if (y->source <= JT_SRC_ANON)
		met->by_source[y->source]++;
	if (y->retro)
		met->retro++;
}

struct owner {
	uint32_t pid;
	bool mine;
};

static bool owner_eq(const void *val, const void *key)
{
	return ((const struct owner *)val)->pid == *(const uint32_t *)key;
}

/*
 * Whether pid runs as r's user: read once per process and request. One
 * gone before it could be read is not the caller's to see.
 */
static bool owned(struct jt_profile_req *r, uint32_t pid)
{
	uint64_t h = jt_hash_u64(pid);
	struct owner *o = jt_hash_find(&r->owners, h, owner_eq, &pid);
	uint32_t nspid;
	uid_t euid;

	if (o)
		return o->mine;
	o = malloc(sizeof(*o));
	if (!o)
		return false;
	*o = (struct owner){ pid, !jt_proc_status(pid, &euid, &nspid) &&
					  euid == r->uid };
	if (jt_hash_add(&r->owners, h, o)) {
		free(o);
		return false;
	}
	return o->mine;
}

static void owners_free(struct jt_profile_req *r)
{
	size_t i;

	jt_hash_for_each (&r->owners, i)
		free(r->owners.e[i].val);
	jt_hash_free(&r->owners);
}

static void add_sample(struct cutter *c, struct jt_model *m,
		       const struct jt_sample *smp, const struct jt_symres *y)
{
	struct jt_agent *a = c->a;
	bool cb = a->o.callchain;
	struct jt_profile_req *r;

	if (smp->time < c->win.start) {
		a->met.late_samples++;
	} else if (c->win.pprof) {
		if (jt_pprof_add_named(c->win.pprof, m, smp, y, cb, c->nanos))
			c->win.err = -ENOMEM;
		c->win.samples++;
	}
	for (r = a->reqs; r; r = r->next) {
		if (r->done || smp->time < r->start || smp->time >= r->end ||
		    (r->pid && r->pid != smp->pid) || !r->pprof ||
		    (r->uid != (uid_t)-1 && !owned(r, smp->pid)))
			continue;
		if (jt_pprof_add_named(r->pprof, m, smp, y, cb, c->nanos))
			r->err = -ENOMEM;
		r->samples++;
	}
}

/* Under a->lock. */
static void publish_jit_items(struct cutter *c)
{
	c->a->met.items[JT_IT_JIT] += c->jit_items;
	c->jit_items = 0;
}

static void on_item(void *ctx, struct jt_model *m, const struct jt_item *it,
		    const struct jt_symres *y)
{
	struct cutter *c = ctx;
	struct jt_agent *a = c->a;
	struct jt_sample smp;

	/* Items reach us in time order: one at t closes all before it. */
	windows_to(c, it->time);
	/*
	 * A perf-map line each, by the ten thousand a second: the lock
	 * for each was a twentieth of the agent's time. Requests are cut
	 * at the next sample or round instead.
	 */
	if (it->kind == JT_IT_JIT) {
		const struct jt_jit_item *j = it->data;
		/* A TEXT record is a write's lines, each a record to be. */
		uint64_t n = j->op == JT_JIT_TEXT ? j->size : 1;

		jt_jitbudget_loaded(&c->budget, &c->p, j->pid, n);
		c->jit_items += n;
		return;
	}
	pthread_mutex_lock(&a->lock);
	publish_jit_items(c);
	a->met.items[it->kind < 3 ? it->kind : 0]++;
	reqs_to(c, it->time, false);
	if (y && y->is_sample &&
	    !jt_perf_sample(it->data, it->len, c->s.sample_type, &smp)) {
		count_sample(&a->met, y);
		add_sample(c, m, &smp, y);
		jt_jitbudget_sampled(&c->budget, smp.pid, smp.time);
	}
	pthread_mutex_unlock(&a->lock);
}

/*
 * A quiet machine sends no items to close a window: the ROUND marks say
 * how far the capture has read, and past CUT_AFTER_NS nothing earlier
 * can still come but a sample held for its code (counted late).
 */
static void on_round(void *ctx, uint64_t horizon)
{
	struct cutter *c = ctx;
	struct jt_agent *a = c->a;

	if (!c->budget_set) {
		uint64_t base = jt_agent_rss();

		/*
		 * A third of what is left: the rest is for JIT records in
		 * flight (the reorder window holds a file's burst at once)
		 * and for what the allocator keeps after an eviction.
		 */
		c->budget_set = true;
		jt_jitbudget_init(&c->budget,
				  a->o.max_memory > base ?
					  (a->o.max_memory - base) / 3 :
					  0);
	}
	pthread_mutex_lock(&a->lock);
	publish_jit_items(c);
	a->met.jit_evicted_procs = c->budget.evicted_procs;
	a->met.jit_evicted_syms = c->budget.evicted_syms;
	a->horizon = horizon;
	a->met.lost = c->s.lost;
	a->met.perf_lost_records = c->s.perf_lost;
	a->met.perfmap_unread_writes = c->s.unread_writes;
	if (horizon > CUT_AFTER_NS)
		reqs_to(c, horizon - CUT_AFTER_NS, false);
	pthread_mutex_unlock(&a->lock);
	if (horizon > CUT_AFTER_NS)
		windows_to(c, horizon - CUT_AFTER_NS);
}

static void proc_gone(void *ctx, struct jt_model *m, struct jt_proc *p)
{
	struct cutter *c = ctx;

	jt_jitbudget_exited(&c->budget, p->pid);
}

/* CPU time per sample: the period of a clock event, else 1/frequency. */
static void sample_clock(struct cutter *c)
{
	const char *ev = jt_stream_meta(&c->s, "perf.event");
	uint64_t hz = c->a->o.freq;

	c->period_ns = hz ? 1000000000ULL / hz : 1000000;
	c->nanos =
		ev && (!strcmp(ev, "cpu-clock") || !strcmp(ev, "task-clock")) ?
			0 :
			(int64_t)c->period_ns;
}

/* The stream ended (SIGTERM): what was cut so far goes out. */
static void drain_all(struct cutter *c)
{
	struct jt_agent *a = c->a;
	uint64_t now = a->horizon ? a->horizon : jt_mono_ns();

	if (c->win.pprof && now > c->win.start)
		window_out(c, now);
	jt_pprof_free(c->win.pprof);
	c->win.pprof = NULL;
	pthread_mutex_lock(&a->lock);
	a->ended = true;
	reqs_to(c, now, true);
	pthread_cond_broadcast(&a->cond);
	pthread_mutex_unlock(&a->lock);
}

void *jt_profiles_run(void *agent)
{
	struct cutter c = { .a = agent };
	struct jt_pipe_ops ops = { .item = on_item,
				   .exited = proc_gone,
				   .ctx = &c,
				   .named = true,
				   .jit_naming_only = true,
				   .procs_only = true,
				   /* Profiles copy what they keep. */
				   .free_names = true };
	char msg[256];
	int err;

	err = jt_stream_open_chan(&c.s, &c.a->chan, msg, sizeof(msg));
	if (err) {
		fprintf(stderr, "jittrace: agent: %s\n", msg);
		drain_all(&c);
		return NULL;
	}
	c.s.free_dead_sources = true;
	c.s.perfmap_text = true;
	c.s.on_round = on_round;
	c.s.round_ctx = &c;
	sample_clock(&c);
	jt_jitbudget_init(&c.budget, c.a->o.max_memory / 2);
	if (req_begin(&c, &c.win, jt_mono_ns(), c.a->o.window_ns))
		c.win.err = -ENOMEM;
	err = jt_pipe_run(&c.p, &c.s, &ops);
	if (err)
		fprintf(stderr, "jittrace: agent: reading the capture: %s\n",
			strerror(-err));
	drain_all(&c);
	jt_jitbudget_free(&c.budget);
	jt_pipe_free(&c.p);
	jt_stream_free(&c.s);
	return NULL;
}

static void req_unlink(struct jt_agent *a, struct jt_profile_req *r)
{
	struct jt_profile_req **pp;

	for (pp = &a->reqs; *pp; pp = &(*pp)->next)
		if (*pp == r) {
			*pp = r->next;
			a->nreqs--;
			return;
		}
}

/*
 * Until r is cut; each second, whether its asker is still there: a client
 * that left gives its slot back now, not when its seconds are up.
 */
static int req_wait(struct jt_agent *a, struct jt_profile_req *r,
		    const struct jt_profile_asker *who)
{
	uint64_t give_up = r->end + CUT_AFTER_NS + 10000000000ULL, next;
	struct timespec ts;
	int64_t real;

	while (!r->done) {
		if (who->gone && who->gone(who->ctx))
			return -ECONNABORTED;
		next = jt_mono_ns() + 1000000000ULL;
		if (jt_mono_ns() >= give_up)
			return -ETIMEDOUT;
		/* cond waits on CLOCK_REALTIME: convert the deadline. */
		real = real_ns(a, next < give_up ? next : give_up);
		ts.tv_sec = real / 1000000000LL;
		ts.tv_nsec = real % 1000000000LL;
		pthread_cond_timedwait(&a->cond, &a->lock, &ts);
	}
	return r->err;
}

int jt_profiles_request(struct jt_agent *a, const struct jt_profile_asker *who,
			uint64_t seconds, void **buf, size_t *len)
{
	struct jt_profile_req *r = calloc(1, sizeof(*r));
	uint64_t hz = a->o.freq ? a->o.freq : 1;
	int err;

	if (!r)
		return -ENOMEM;
	r->pid = who->pid;
	r->uid = who->uid;
	r->start = jt_mono_ns();
	r->end = r->start + seconds * 1000000000ULL;
	r->pprof = jt_pprof_new(real_ns(a, r->start), 1000000000LL / hz);
	if (r->pprof)
		jt_pprof_set_labels(r->pprof, a->o.labels);
	if (r->pprof && who->hide_kernel)
		jt_pprof_hide_kernel(r->pprof);
	pthread_mutex_lock(&a->lock);
	if (!r->pprof)
		err = -ENOMEM;
	else if (a->ended || !a->capturing)
		err = -ESHUTDOWN;
	else if (a->nreqs >= JT_AGENT_MAX_REQS)
		err = -EBUSY;
	else
		err = 0;
	if (!err) {
		r->next = a->reqs;
		a->reqs = r;
		a->nreqs++;
		err = req_wait(a, r, who);
		req_unlink(a, r);
	}
	pthread_mutex_unlock(&a->lock);
	if (!err) {
		*buf = r->buf;
		*len = r->len;
		r->buf = NULL;
	}
	jt_pprof_free(r->pprof);
	owners_free(r);
	free(r->buf);
	free(r);
	return err;
}
