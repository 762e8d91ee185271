// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <stdbool.h>
#include <stdlib.h>
#include "agent/jitbudget.h"

struct jit_use {
	uint32_t pid;
	bool evicted;
	uint64_t syms;
	uint64_t last_sample; /* 0: never sampled, the first to go */
};

static bool use_eq(const void *val, const void *key)
{
	return ((const struct jit_use *)val)->pid == *(const uint32_t *)key;
}

static struct jit_use *use_of(struct jt_jitbudget *b, uint32_t pid, bool add)
{
	struct jit_use *u =
		jt_hash_find(&b->procs, jt_hash_u64(pid), use_eq, &pid);

	if (u || !add)
		return u;
	u = calloc(1, sizeof(*u));
	if (u && jt_hash_add(&b->procs, jt_hash_u64(pid), u)) {
		free(u);
		return NULL;
	}
	if (u)
		u->pid = pid;
	return u;
}

void jt_jitbudget_init(struct jt_jitbudget *b, uint64_t bytes)
{
	*b = (struct jt_jitbudget){ .max_syms = bytes / JT_JITSYM_BYTES };
}

/* O(processes with JIT code), and only when over the budget. */
static struct jit_use *least_recent(struct jt_jitbudget *b)
{
	struct jit_use *best = NULL, *u;
	size_t i;

	jt_hash_for_each (&b->procs, i) {
		u = b->procs.e[i].val;
		if (!u->evicted && u->syms &&
		    (!best || u->last_sample < best->last_sample))
			best = u;
	}
	return best;
}

/* Down to 3/4 of the budget, so that eviction is not on every record. */
static void evict(struct jt_jitbudget *b, struct jt_pipe *p)
{
	struct jit_use *u;

	while (b->syms > b->max_syms / 4 * 3 && (u = least_recent(b))) {
		jt_model_evict_jit(&p->ahead, u->pid);
		jt_model_evict_jit(&p->m, u->pid);
		b->syms -= u->syms;
		b->evicted_syms += u->syms;
		b->evicted_procs++;
		u->syms = 0;
		u->evicted = true;
	}
}

void jt_jitbudget_loaded(struct jt_jitbudget *b, struct jt_pipe *p,
			 uint32_t pid, uint64_t n)
{
	struct jit_use *u = use_of(b, pid, true);

	if (!u || u->evicted)
		return;
	u->syms += n;
	b->syms += n;
	if (b->syms > b->max_syms)
		evict(b, p);
}

void jt_jitbudget_sampled(struct jt_jitbudget *b, uint32_t pid, uint64_t t)
{
	struct jit_use *u = use_of(b, pid, false);

	if (u)
		u->last_sample = t;
}

void jt_jitbudget_exited(struct jt_jitbudget *b, uint32_t pid)
{
	struct jit_use *u =
		jt_hash_del(&b->procs, jt_hash_u64(pid), use_eq, &pid);

	if (!u)
		return;
	b->syms -= u->syms;
	free(u);
}

void jt_jitbudget_free(struct jt_jitbudget *b)
{
	size_t i;

	jt_hash_for_each (&b->procs, i)
		free(b->procs.e[i].val);
	jt_hash_free(&b->procs);
}
