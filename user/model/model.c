// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include "model/model.h"

#define IS_ERR_RET(r) ((uint64_t)(r) >= (uint64_t)-4095)
#define VM_READ 0x1
#define VM_WRITE 0x2
#define VM_EXEC 0x4
#define VM_SHARED 0x8
#define VM_IO 0x4000
#define VM_PFNMAP 0x400
#define MREMAP_DONTUNMAP 4
/* One image has a partial .bss page or two (the program, its loader). */
#define JT_EXEC_COW_MAX 16

void jt_model_init(struct jt_model *m)
{
	memset(m, 0, sizeof(*m));
}

static void jit_free(struct jt_proc *p)
{
	jt_jittab_free(&p->jitdump);
	jt_jittab_free(&p->perfmap);
	jt_jitlog_free(&p->jitlog);
}

static void proc_free(struct jt_proc *p)
{
	free(p->exec_cow);
	jt_aspace_put(p->as);
	jit_free(p);
	free(p);
}

void jt_model_free(struct jt_model *m)
{
	struct jt_proc *p = m->first, *next;

	for (; p; p = next) {
		next = p->next;
		proc_free(p);
	}
	jt_hash_free(&m->by_pid);
	jt_strtab_free(&m->strs);
	memset(m, 0, sizeof(*m));
}

static bool pid_eq(const void *val, const void *key)
{
	return ((const struct jt_proc *)val)->pid == *(const uint32_t *)key;
}

static uint64_t pid_hash(uint32_t pid)
{
	return jt_hash_u64(pid);
}

struct jt_proc *jt_model_find(struct jt_model *m, uint32_t pid)
{
	struct jt_proc *p = m->found;

	if (p && p->pid == pid)
		return p;
	p = jt_hash_find(&m->by_pid, pid_hash(pid), pid_eq, &pid);
	if (p)
		m->found = p;
	return p;
}

struct jt_proc *jt_model_nth(struct jt_model *m, size_t i)
{
	struct jt_proc *p = m->first;

	while (p && i--)
		p = p->next;
	return p;
}

static void unlink_proc(struct jt_model *m, struct jt_proc *p)
{
	if (jt_model_find(m, p->pid) == p)
		jt_hash_del(&m->by_pid, pid_hash(p->pid), pid_eq, &p->pid);
	if (m->found == p)
		m->found = NULL;
	if (p->prev)
		p->prev->next = p->next;
	else
		m->first = p->next;
	if (p->next)
		p->next->prev = p->prev;
	else
		m->last = p->prev;
	m->nprocs--;
}

/* A new process entry for pid; an older one with that pid stays listed. */
static struct jt_proc *new_proc(struct jt_model *m, uint32_t pid)
{
	struct jt_proc *p = calloc(1, sizeof(*p)), *old;

	if (!p)
		return NULL;
	old = jt_hash_del(&m->by_pid, pid_hash(pid), pid_eq, &pid);
	m->found = NULL;
	if (jt_hash_add(&m->by_pid, pid_hash(pid), p)) {
		if (old)
			jt_hash_add(&m->by_pid, pid_hash(pid), old);
		free(p);
		return NULL;
	}
	p->pid = pid;
	p->first_ns = m->now;
	p->ordinal = ++m->ordinals;
	p->prev = m->last;
	if (m->last)
		m->last->next = p;
	else
		m->first = p;
	m->last = p;
	m->nprocs++;
	return p;
}

/* The live process with this pid, created when the stream first names it. */
struct jt_proc *jt_model_get(struct jt_model *m, uint32_t pid)
{
	struct jt_proc *p = jt_model_find(m, pid);

	if (p && !p->dead_ns)
		return p;
	p = new_proc(m, pid);
	if (!p)
		m->stats.nomem++;
	return p;
}

static struct jt_aspace *aspace_of(struct jt_model *m, struct jt_proc *p)
{
	if (!p->as)
		p->as = jt_aspace_new();
	if (!p->as)
		m->stats.nomem++;
	return p->as;
}

const struct jt_region *jt_model_lookup(struct jt_model *m, uint32_t pid,
					uint64_t addr)
{
	struct jt_proc *p = jt_model_find(m, pid);

	return p && p->as ? jt_aspace_find(p->as, addr) : NULL;
}

void jt_model_set_comm(struct jt_model *m, uint32_t pid, const char *comm)
{
	struct jt_proc *p = jt_model_get(m, pid);

	if (p)
		strncpy(p->comm, comm, sizeof(p->comm) - 1);
}

static const char *event_path(struct jt_model *m, const struct jt_map_event *ev)
{
	if (!ev->path_len)
		return NULL;
	return jt_intern(&m->strs, ev->path, strnlen(ev->path, ev->path_len));
}

static void check(struct jt_model *m, int err)
{
	if (err)
		m->stats.nomem++;
}

static void observe(struct jt_aspace *as, const struct jt_map_event *ev)
{
	struct jt_kvma a = { ev->vma.start, ev->vma.end, ev->vma.flags };
	struct jt_kvma b = { ev->vma_last.start, ev->vma_last.end,
			     ev->vma_last.flags };

	jt_aspace_observe(as, &a);
	if (b.start != a.start)
		jt_aspace_observe(as, &b);
}

static void apply_mmap(struct jt_model *m, struct jt_aspace *as,
		       const struct jt_map_event *ev)
{
	uint64_t flags = ev->args[3];
	struct jt_region r = {
		.start = ev->result,
		.end = ev->result + JT_PAGE_ALIGN(ev->args[1]),
		.prot = ev->args[2],
		.mflags = flags,
		.born_ns = ev->h.time,
		.origin = JT_EV_MMAP,
	};

	if (flags & MAP_ANONYMOUS) {
		r.kind = (flags & MAP_TYPE) == MAP_PRIVATE ? JT_RK_ANON :
							     JT_RK_SHARED_ANON;
	} else {
		r.kind = JT_RK_FILE;
		r.path = event_path(m, ev);
		r.dev = ev->dev;
		r.ino = ev->ino;
		r.pgoff = ev->args[5];
	}
	check(m, jt_aspace_map(as, &r));
}

static void jit_cut_tables(struct jt_proc *p, uint64_t start, uint64_t end)
{
	jt_jittab_cut(&p->jitdump, start, end);
	jt_jittab_cut(&p->perfmap, start, end);
}

static void jit_replay(struct jt_model *m, struct jt_proc *p);
static bool jit_log(struct jt_proc *p, const struct jt_jit_item *j);

/*
 * Code in a range that is unmapped or replaced is gone. Records still
 * in the log come after the tables' contents: so must the cut.
 */
static void jit_cut(struct jt_model *m, struct jt_proc *p, uint64_t start,
		    uint64_t end)
{
	struct jt_jit_item c = { .op = JT_JITLOG_CUT,
				 .addr = start,
				 .size = end - start };

	if (start >= end || (p->jitlog.n && jit_log(p, &c)))
		return;
	if (p->jitlog.n)
		jit_replay(m, p);
	jit_cut_tables(p, start, end);
}

/* A System V segment: a shared mapping of its shmem file. */
static void apply_shmat(struct jt_model *m, struct jt_aspace *as,
			const struct jt_map_event *ev)
{
	struct jt_region r = {
		.start = ev->result,
		.end = ev->vma.start == (uint64_t)ev->result ?
			       ev->vma.end :
			       (uint64_t)ev->result + JT_PAGE_SIZE,
		.prot = ev->vma.flags & (VM_READ | VM_WRITE | VM_EXEC),
		.mflags = MAP_SHARED,
		.kind = JT_RK_FILE,
		.path = event_path(m, ev),
		.dev = ev->dev,
		.ino = ev->ino,
		.born_ns = ev->h.time,
		.origin = JT_EV_SHMAT,
	};

	check(m, jt_aspace_map(as, &r));
}

/* shmdt names only the address: the segment attached there goes. */
static void apply_shmdt(struct jt_model *m, struct jt_proc *p,
			struct jt_aspace *as, uint64_t addr)
{
	const struct jt_region *r = jt_aspace_find(as, addr);

	if (r && r->start == addr && r->origin == JT_EV_SHMAT) {
		uint64_t start = r->start, end = r->end;

		jit_cut(m, p, start, end);
		jt_aspace_cut(as, start, end);
	}
}

/* execve's writes that no region of its snapshot took: counted, let go. */
static void exec_cow_drop(struct jt_model *m, struct jt_proc *p)
{
	m->stats.exec_cow_lost += p->n_exec_cow;
	free(p->exec_cow);
	p->exec_cow = NULL;
	p->n_exec_cow = 0;
	p->exec_ns = 0;
}

/*
 * A page the ELF loader zeroed (padzero) lies in a region of the new
 * image: it is private from the image's first instruction on.
 */
static void exec_cow_take(struct jt_model *m, struct jt_proc *p,
			  const struct jt_region *r)
{
	uint32_t i, kept = 0;

	for (i = 0; i < p->n_exec_cow; i++) {
		struct jt_cowpage *c = &p->exec_cow[i];

		if (c->page < r->start || c->page >= r->end) {
			p->exec_cow[kept++] = *c;
			continue;
		}
		/* BPF could not read the VMA: a new image's anon is born
		 * private. */
		if (c->kind == JT_COW_RAW && r->kind != JT_RK_FILE)
			continue;
		if (c->kind == JT_COW_RAW)
			c->kind = JT_COW_FILE_FIRST;
		c->fork_shared = r->kind != JT_RK_FILE;
		check(m, jt_aspace_cow(p->as, c));
	}
	p->n_exec_cow = kept;
}

/* Held until the EXEC that follows; one image writes a page or two. */
static void exec_cow_hold(struct jt_model *m, struct jt_proc *p,
			  const struct jt_cowpage *c)
{
	struct jt_cowpage *n;

	if (p->exec_ns) /* an exec that never took them, then another */
		exec_cow_drop(m, p);
	if (p->n_exec_cow >= JT_EXEC_COW_MAX) {
		m->stats.exec_cow_lost++;
		return;
	}
	n = realloc(p->exec_cow, (p->n_exec_cow + 1) * sizeof(*n));
	if (!n) {
		m->stats.nomem++;
		return;
	}
	p->exec_cow = n;
	n[p->n_exec_cow++] = *c;
}

static uint16_t snapshot_kind(const struct jt_map_event *ev)
{
	const struct jt_vma *v = &ev->vma;

	if (ev->path_len)
		return JT_RK_FILE;
	if (v->start <= ev->args[2] && ev->args[2] < v->end)
		return JT_RK_STACK;
	if (v->start == ev->args[3])
		return JT_RK_VDSO;
	if ((v->flags & (VM_IO | VM_PFNMAP)) == (VM_IO | VM_PFNMAP))
		return JT_RK_VVAR;
	if (v->start >= ev->args[0] && v->end <= JT_PAGE_ALIGN(ev->args[1]) &&
	    ev->args[1] > ev->args[0])
		return JT_RK_HEAP;
	return v->flags & VM_SHARED ? JT_RK_SHARED_ANON : JT_RK_ANON;
}

static void apply_vma(struct jt_model *m, struct jt_proc *p,
		      struct jt_aspace *as, const struct jt_map_event *ev)
{
	const struct jt_vma *v = &ev->vma;
	struct jt_region r = {
		.start = v->start,
		.end = v->end,
		.prot = v->flags & (VM_READ | VM_WRITE | VM_EXEC),
		.mflags = v->flags & VM_SHARED ? MAP_SHARED : MAP_PRIVATE,
		.born_ns = ev->h.time,
		.origin = JT_EV_VMA,
		.kind = snapshot_kind(ev),
	};
	struct jt_kvma k = { v->start, v->end, v->flags };

	if (ev->flags & JT_MF_VMA_REREAD) {
		jt_aspace_observe(as, &k);
		return;
	}
	if (r.kind == JT_RK_FILE) {
		r.path = event_path(m, ev);
		r.dev = ev->dev;
		r.ino = ev->ino;
		r.pgoff = v->pgoff * JT_PAGE_SIZE;
	}
	/* A snapshot region is exactly the VMA it was read from. */
	check(m, jt_aspace_map(as, &r));
	jt_aspace_observe(as, &k);
	if (p->n_exec_cow && p->exec_ns == ev->h.time)
		exec_cow_take(m, p, &r);
}

/*
 * Kept, not applied: perf is told mid-syscall, before the model has made
 * that call's cuts, so the VMA would land on regions about to change.
 */
void jt_model_perf_vma(struct jt_model *m, uint32_t pid, uint32_t tid,
		       uint64_t start, uint64_t end)
{
	struct jt_perf_seen *s = &m->seen[m->seen_next++ % JT_PERF_SEEN];

	*s = (struct jt_perf_seen){ pid, tid, { start, end, 0 } };
}

bool jt_event_euid(const struct jt_hdr *h, size_t len, uint32_t *euid)
{
	const struct jt_fork_event *f = (const void *)h;
	const struct jt_exec_event *e = (const void *)h;
	size_t at;

	if (h->type == JT_EV_FORK && len >= sizeof(*f) &&
	    (f->flags & JT_FORK_EUID)) {
		*euid = f->child_euid;
		return true;
	}
	if (h->type != JT_EV_EXEC || len < sizeof(*e) ||
	    !(e->flags & JT_EXEC_EUID))
		return false;
	/* After the path, not aligned; versions before 5 have none. */
	at = sizeof(*e) + e->path_len;
	if (at > len || len - at < sizeof(*euid))
		return false;
	memcpy(euid, (const char *)e + at, sizeof(*euid));
	return true;
}

/*
 * BPF could not read the VMA (mmap_lock contended): take the newest
 * MMAP2 the same thread caused that covers the result, if any.
 */
static void recover_vma(struct jt_model *m, struct jt_aspace *as,
			const struct jt_map_event *ev)
{
	const struct jt_region *r = jt_aspace_find(as, ev->result);
	unsigned int i;

	m->stats.vma_busy++;
	if (!r || jt_aspace_kvma(as, r).end)
		return;
	for (i = 1; i <= JT_PERF_SEEN && i <= m->seen_next; i++) {
		const struct jt_perf_seen *s =
			&m->seen[(m->seen_next - i) % JT_PERF_SEEN];

		if (s->tid != ev->h.tid || s->pid != ev->h.pid ||
		    s->v.start > r->start || s->v.end < r->end)
			continue;
		jt_aspace_observe(as, &s->v);
		m->stats.vma_from_perf++;
		return;
	}
}

static void apply_map_event(struct jt_model *m, const struct jt_map_event *ev)
{
	struct jt_proc *p = jt_model_get(m, ev->h.pid);
	struct jt_aspace *as = p ? aspace_of(m, p) : NULL;
	const __u64 *a = ev->args;

	if (!as)
		return;
	/*
	 * The ELF loader maps into the new mm before the EXEC event that
	 * replaces the old one; the exec snapshot holds these mappings.
	 */
	if (ev->flags & JT_MF_EXEC_LOAD) {
		m->stats.exec_loads++;
		return;
	}
	if (ev->h.type == JT_EV_VMA) {
		apply_vma(m, p, as, ev);
		return;
	}
	if (ev->h.type != JT_EV_BRK && IS_ERR_RET(ev->result))
		return;
	switch (ev->h.type) {
	case JT_EV_MMAP:
		jit_cut(m, p, ev->result, ev->result + JT_PAGE_ALIGN(a[1]));
		apply_mmap(m, as, ev);
		break;
	case JT_EV_MPROTECT:
		check(m, jt_aspace_protect(as, a[0], a[0] + JT_PAGE_ALIGN(a[1]),
					   a[2]));
		break;
	case JT_EV_MUNMAP:
		jit_cut(m, p, a[0], a[0] + JT_PAGE_ALIGN(a[1]));
		check(m, jt_aspace_cut(as, a[0], a[0] + JT_PAGE_ALIGN(a[1])));
		break;
	case JT_EV_MREMAP:
		if (!(a[3] & MREMAP_DONTUNMAP) && ev->result != (int64_t)a[0])
			jit_cut(m, p, a[0], a[0] + JT_PAGE_ALIGN(a[1]));
		check(m, jt_aspace_remap(as, a[0], JT_PAGE_ALIGN(a[1]),
					 ev->result, JT_PAGE_ALIGN(a[2]),
					 a[3] & MREMAP_DONTUNMAP, ev->h.time));
		break;
	case JT_EV_BRK:
		check(m, jt_aspace_brk(as, a[1], ev->result, ev->h.time));
		break;
	case JT_EV_SHMAT:
		apply_shmat(m, as, ev);
		break;
	case JT_EV_SHMDT:
		apply_shmdt(m, p, as, a[0]);
		break;
	}
	observe(as, ev);
	if (ev->flags & JT_MF_VMA_BUSY)
		recover_vma(m, as, ev);
}

static void apply_fork(struct jt_model *m, const struct jt_fork_event *ev)
{
	struct jt_proc *parent, *child;

	if (ev->flags & JT_FORK_THREAD)
		return;
	parent = jt_model_get(m, ev->h.pid);
	child = new_proc(m, ev->child_pid);
	if (!parent || !child) {
		m->stats.nomem++;
		return;
	}
	memcpy(child->comm, parent->comm, sizeof(child->comm));
	child->exe = parent->exe;
	child->nspid = ev->child_nspid;
	/* The child runs copies of the parent's code pages. */
	if (jt_jittab_copy(&child->jitdump, &parent->jitdump) ||
	    jt_jittab_copy(&child->perfmap, &parent->perfmap) ||
	    jt_jitlog_copy(&child->jitlog, &parent->jitlog))
		m->stats.nomem++;
	if (m->procs_only)
		return;
	if (ev->flags & JT_FORK_VM) {
		child->as = aspace_of(m, parent);
		if (child->as)
			child->as->refs++;
		return;
	}
	child->as = parent->as ? jt_aspace_clone(parent->as) : jt_aspace_new();
	if (!child->as) {
		m->stats.nomem++;
		return;
	}
	/* From here both sides share every private page until they write. */
	jt_aspace_forked(child->as, ev->h.time);
	if (parent->as)
		jt_aspace_forked(parent->as, ev->h.time);
}

static void apply_exec(struct jt_model *m, const struct jt_exec_event *ev)
{
	struct jt_proc *p = jt_model_get(m, ev->h.pid);

	if (!p)
		return;
	memcpy(p->comm, ev->comm, sizeof(p->comm));
	p->comm[sizeof(p->comm) - 1] = 0;
	if (ev->nspid)
		p->nspid = ev->nspid;
	if (ev->path_len)
		p->exe = jt_intern(&m->strs, ev->path,
				   strnlen(ev->path, ev->path_len));
	jt_aspace_put(p->as);
	p->as = m->procs_only ? NULL : jt_aspace_new();
	if (!p->as && !m->procs_only)
		m->stats.nomem++;
	if (p->exec_ns)
		exec_cow_drop(m, p);
	/* Its snapshot's VMA records carry the EXEC's time. */
	if (p->n_exec_cow)
		p->exec_ns = ev->h.time;
	jit_free(p);
}

static void reap_later(struct jt_model *m, struct jt_proc *p)
{
	if (m->reap_last)
		m->reap_last->reap_next = p;
	else
		m->reap_first = p;
	m->reap_last = p;
}

static void apply_exit(struct jt_model *m, const struct jt_exit_event *ev)
{
	struct jt_proc *p = jt_model_find(m, ev->h.pid);

	if (!ev->group_dead || !p || p->dead_ns)
		return;
	p->dead_ns = ev->h.time;
	p->exit_code = ev->exit_code;
	exec_cow_drop(m, p);
	if (m->on_exit)
		m->on_exit(m->exit_ctx, m, p);
	if (!m->free_dead)
		return;
	/*
	 * Its JIT tables go now: a forked child shares its parent's until
	 * one side changes them, and a parent that goes on loading code
	 * would copy them for a child that is gone.
	 */
	jit_free(p);
	reap_later(m, p);
}

void jt_model_reap(struct jt_model *m, uint64_t now)
{
	struct jt_proc *p;

	while ((p = m->reap_first) && p->dead_ns + JT_REAP_NS < now) {
		m->reap_first = p->reap_next;
		if (!m->reap_first)
			m->reap_last = NULL;
		unlink_proc(m, p);
		proc_free(p);
	}
}

static uint32_t min_size(uint16_t type)
{
	switch (type) {
	case JT_EV_MMAP:
	case JT_EV_MPROTECT:
	case JT_EV_MUNMAP:
	case JT_EV_MREMAP:
	case JT_EV_BRK:
	case JT_EV_VMA:
	case JT_EV_SHMAT:
	case JT_EV_SHMDT:
		return sizeof(struct jt_map_event);
	case JT_EV_FORK:
		return offsetof(struct jt_fork_event,
				child_euid); /* version 4 */
	case JT_EV_EXEC:
		return sizeof(struct jt_exec_event);
	case JT_EV_EXIT:
		return sizeof(struct jt_exit_event);
	case JT_EV_MAPWRITE:
		return sizeof(struct jt_write_event);
	case JT_EV_COW:
		return offsetof(struct jt_cow_event, ip); /* version 3 */
	}
	return 0;
}

/* Sizes come from a file: check every one before trusting a field. */
bool jt_event_valid(const struct jt_hdr *h, uint32_t len)
{
	uint32_t min;

	if (len < sizeof(*h) || h->size != len)
		return false;
	min = min_size(h->type);
	if (!min || len < min)
		return false;
	if (min == sizeof(struct jt_map_event))
		return ((const struct jt_map_event *)h)->path_len <= len - min;
	if (h->type == JT_EV_EXEC)
		return ((const struct jt_exec_event *)h)->path_len <= len - min;
	return true;
}

/*
 * BPF could not read the VMA: decide from the region we know. A write
 * to a page that was not present in private anon memory makes a page
 * born private, no copy.
 */
static bool raw_is_cow(const struct jt_region *r, uint64_t error_code)
{
	if (jt_region_shared(r) || r->kind == JT_RK_SHARED_ANON)
		return false;
	return r->kind == JT_RK_FILE || (error_code & 1);
}

static void apply_cow(struct jt_model *m, const struct jt_cow_event *ev)
{
	struct jt_proc *p;
	const struct jt_cowpage *old;
	const struct jt_region *r;
	struct jt_cowpage c = { .page = ev->page,
				.time = ev->h.time,
				.tid = ev->h.tid,
				.kind = ev->kind };

	/*
	 * The new image's page, written before EXEC replaces the old one.
	 * The command record starts is first met here, in its execve.
	 */
	if (ev->flags & JT_MF_EXEC_LOAD) {
		p = jt_model_get(m, ev->h.pid);
		c.exec_load = 1;
		if (p)
			exec_cow_hold(m, p, &c);
		return;
	}
	p = jt_model_find(m, ev->h.pid);
	if (!p || !p->as) {
		m->stats.cow_no_proc++;
		return;
	}
	r = jt_aspace_find(p->as, ev->page);
	if (!r) {
		m->stats.cow_unmapped++;
		return;
	}
	if (ev->kind == JT_COW_RAW) {
		m->stats.cow_raw++;
		if (!raw_is_cow(r, ev->error_code))
			return;
		c.kind = r->kind == JT_RK_FILE && !(ev->error_code & 1) ?
				 JT_COW_FILE_FIRST :
			 r->kind == JT_RK_FILE ? JT_COW_FILE_WP :
						 JT_COW_ANON_WP;
	}
	/* A version 3 recording's COW event ends before its ip. */
	if (ev->h.size >= sizeof(*ev))
		c.ip = ev->ip;
	/* The kernel sees a write-protected page; the model knows whose. */
	old = jt_aspace_cowpage(p->as, ev->page);
	c.fork_shared = r->kind != JT_RK_FILE ||
			(old && old->time <= jt_aspace_fork_ns(p->as, r));
	check(m, jt_aspace_cow(p->as, &c));
}

/*
 * The process a JIT record belongs to. One that exited takes it still
 * (its file is read at exit); one the model never met, or already let
 * go of, is kept only as long as an exited one would be.
 */
static struct jt_proc *jit_owner(struct jt_model *m, uint32_t pid)
{
	struct jt_proc *p = jt_model_find(m, pid);

	if (p)
		return p;
	p = new_proc(m, pid);
	if (!p) {
		m->stats.nomem++;
		return NULL;
	}
	if (m->free_dead) {
		p->dead_ns = m->now;
		reap_later(m, p);
	}
	return p;
}

/*
 * A name as it enters a table: one pointer per string from here on. With
 * m->names, a reference the caller puts once the table has its own.
 */
static const char *jit_name(struct jt_model *m, const struct jt_jit_item *j)
{
	if (!j->name)
		return NULL;
	if (m->names)
		return jt_name_get(m->names, j->name, j->name_len);
	return jt_intern(&m->strs, j->name, j->name_len);
}

static void apply_jit_now(struct jt_model *m, struct jt_proc *p,
			  const struct jt_jit_item *j);

struct text_ctx {
	struct jt_model *m;
	struct jt_proc *p;
};

static void text_load(void *ctx, const struct jt_jit_item *load)
{
	struct text_ctx *c = ctx;

	apply_jit_now(c->m, c->p, load);
}

/* A write's perf-map lines, parsed now that a lookup needs them. */
static void apply_text(struct jt_model *m, struct jt_proc *p,
		       const struct jt_jit_item *j)
{
	struct text_ctx c = { m, p };
	int n = jt_jit_text_each(j, text_load, &c);

	if (n < 0)
		check(m, n);
	else
		m->stats.jit_text_skipped += n;
}

static void apply_jit_now(struct jt_model *m, struct jt_proc *p,
			  const struct jt_jit_item *j)
{
	struct jt_jittab *t;
	struct jt_jitsym s;

	t = j->source == JT_SRC_JITDUMP ? &p->jitdump : &p->perfmap;
	switch (j->op) {
	case JT_JIT_LOAD: {
		/* What a load replaced is for audits, not the naming model. */
		const struct jt_jitsym *old =
			m->lazy_jit ? NULL : jt_jittab_find(t, j->addr);
		const char *name = jit_name(m, j);

		m->replaced = old ? *old : (struct jt_jitsym){};
		if (j->name && !name) {
			check(m, -ENOMEM);
			break;
		}
		if (jt_jittab_empty(t))
			t->counted = m->names;
		s = (struct jt_jitsym){ j->addr, j->addr + j->size, name,
					j->code_index, j->time };
		check(m, jt_jittab_load(t, &s));
		if (m->names)
			jt_name_put(name);
		break;
	}
	case JT_JIT_MOVE:
		if (jt_jittab_move(t, j->old_addr, j->addr, j->size, j->time))
			m->stats.jit_move_unknown++;
		break;
	case JT_JIT_UNLOAD: {
		/* Freed code names nothing from now on. */
		const struct jt_jitsym *old = jt_jittab_find(t, j->addr);

		if (old && old->start == j->addr)
			jt_jittab_cut(t, old->start, old->end);
		break;
	}
	case JT_JITLOG_CUT:
		jit_cut_tables(p, j->addr, j->addr + j->size);
		break;
	case JT_JIT_TEXT:
		apply_text(m, p, j);
		break;
	}
}

/* [lo, hi) grown to the whole of t's function that holds addr. */
static void widen_by(const struct jt_jittab *t, uint64_t addr, uint64_t *lo,
		     uint64_t *hi)
{
	const struct jt_jitsym *s;

	/* Most logging processes have nothing in their tables yet. */
	if (jt_jittab_empty(t))
		return;
	s = jt_jittab_find(t, addr);
	if (!s)
		return;
	if (s->start < *lo)
		*lo = s->start;
	if (s->end > *hi)
		*hi = s->end;
}

/*
 * Where j changes what p's tables say: its own range, and the whole of
 * each function in the tables it cuts into (a cut takes a function
 * whole), or moves or unloads. Functions an earlier log entry loaded
 * are in the log's range already.
 */
static void jit_reach(const struct jt_proc *p, const struct jt_jit_item *j,
		      uint64_t *lo, uint64_t *hi)
{
	const struct jt_jittab *t =
		j->source == JT_SRC_JITDUMP ? &p->jitdump : &p->perfmap;
	uint64_t a = j->addr, b = j->addr + (j->size ? j->size : 1);

	*lo = a;
	*hi = b;
	if (j->op == JT_JIT_TEXT) { /* where, only parsing says */
		*lo = 0;
		*hi = UINT64_MAX;
		return;
	}
	if (j->op == JT_JIT_MOVE)
		widen_by(t, j->old_addr, lo, hi);
	if (j->op == JT_JIT_UNLOAD)
		widen_by(t, a, lo, hi);
	if (j->op == JT_JITLOG_CUT) {
		widen_by(&p->jitdump, a, lo, hi);
		widen_by(&p->jitdump, b - 1, lo, hi);
		t = &p->perfmap;
	}
	widen_by(t, a, lo, hi);
	widen_by(t, b - 1, lo, hi);
}

/* true: j waits in the log; false: the log is full or memory is out. */
static bool jit_log(struct jt_proc *p, const struct jt_jit_item *j)
{
	uint64_t lo, hi;

	if (p->jitlog.n >= JT_JITLOG_MAX ||
	    p->jitlog.bytes + j->name_len > JT_JITLOG_BYTES)
		return false;
	jit_reach(p, j, &lo, &hi);
	return !jt_jitlog_add(&p->jitlog, j, lo, hi);
}

/* Each name's slot is a miss in a big table: warm it a few loads early. */
#define JIT_AHEAD 8

static void name_prefetch(const struct jt_nametab *t,
			  const struct jt_jit_item *j)
{
	if (j->op == JT_JIT_LOAD && j->name)
		jt_name_prefetch(t, j->name, j->name_len);
}

/* The log into the tables, in order: they are up to date after. */
static void jit_replay(struct jt_model *m, struct jt_proc *p)
{
	struct jt_jitlog l = p->jitlog;
	size_t i;

	memset(&p->jitlog, 0, sizeof(p->jitlog));
	for (i = 0; i < l.n; i++) {
		if (m->names && i + JIT_AHEAD < l.n)
			name_prefetch(m->names, &l.e[i + JIT_AHEAD]);
		apply_jit_now(m, p, &l.e[i]);
	}
	jt_jitlog_free(&l);
}

void jt_model_jit_warm(struct jt_model *m, struct jt_proc *p, uint64_t addr)
{
	if (p && jt_jitlog_covers(&p->jitlog, addr))
		jit_replay(m, p);
}

size_t jt_proc_jit_count(const struct jt_proc *p)
{
	return jt_jittab_count(&p->jitdump) + jt_jittab_count(&p->perfmap) +
	       p->jitlog.records;
}

void jt_model_apply_jit(struct jt_model *m, const struct jt_jit_item *j)
{
	struct jt_proc *p;

	m->now = j->time;
	p = jit_owner(m, j->pid);
	if (!p)
		return;
	if (p->jit_evicted) {
		m->stats.jit_evicted++;
		return;
	}
	if (m->lazy_jit && jit_log(p, j))
		return;
	if (p->jitlog.n)
		jit_replay(m, p);
	apply_jit_now(m, p, j);
}

void jt_model_apply(struct jt_model *m, const struct jt_hdr *h, uint32_t len)
{
	if (!jt_event_valid(h, len)) {
		m->stats.malformed++;
		return;
	}
	m->now = h->time;
	switch (h->type) {
	case JT_EV_FORK:
		apply_fork(m, (const void *)h);
		break;
	case JT_EV_EXEC:
		apply_exec(m, (const void *)h);
		break;
	case JT_EV_EXIT:
		apply_exit(m, (const void *)h);
		break;
	case JT_EV_MAPWRITE:
		break; /* the stream used it to time perf-map lines */
	case JT_EV_COW:
		if (!m->procs_only)
			apply_cow(m, (const void *)h);
		break;
	default:
		if (!m->procs_only)
			apply_map_event(m, (const void *)h);
	}
}

void jt_model_evict_jit(struct jt_model *m, uint32_t pid)
{
	struct jt_proc *p = jt_model_find(m, pid);

	if (!p)
		return;
	jit_free(p);
	p->jit_evicted = true;
}

const char *jt_proc_comm(const struct jt_proc *p, uint32_t pid)
{
	if (p && p->comm[0])
		return p->comm;
	return pid ? "?" : "swapper";
}
