// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "jt_abi.h"
#include "lib/perf_rec.h"
#include "lib/reserve.h"
#include "model/perf_view.h"
#include "model/stream.h"
#include "unwind/regs.h"

/* A perf-map writer's write(2)s not yet claimed by a line, oldest first. */
struct jt_write_queue {
	uint32_t pid;
	uint64_t ino;
	uint64_t dead_ns;		 /* its process exited then; 0: alive */
	struct jt_jit_source *src;	 /* the file being read, if any */
	struct jt_jit_source *refused;	 /* writes to it are only counted */
	struct jt_write_queue *pid_next; /* the process's other files */
	uint64_t written;		 /* write(2)s, since its pid began */
	bool bound;			 /* a source ever took it */
	struct jt_mapwrite *w;
	size_t head;
	size_t n;
	size_t cap;
};

/* A process's write queues, to drop them all once it is gone. */
struct pid_queues {
	uint32_t pid;
	struct jt_write_queue *first;
};

/* A process that exited, and when: its queues go a while after. */
struct exited {
	uint32_t pid;
	uint64_t time;
};

/*
 * Pieces a process's exit makes the recorder read come within a pass
 * or two; after this its writes bind no more lines.
 */
#define QUEUE_GRACE_NS 1000000000ULL

struct jt_mapwrite {
	uint64_t start; /* where the write began in the file */
	uint64_t end;
	uint64_t time;
};

/*
 * Parked pieces are copied one after another into chunks, freed in
 * order once read: a malloc per piece, among the small items' frees,
 * made glibc consolidate its fast bins at each (8% of the agent's time
 * under process churn), and one growing buffer kept twice its peak.
 */
#define PARK_CHUNK (1 << 20)

struct jt_park_chunk {
	struct jt_park_chunk *next;
	size_t used;
	size_t cap;
	char data[];
};

/* A JIT file piece, held until the rounds pass the time it was read. */
struct jt_parked {
	uint64_t read_time;
	void *rec; /* its copy of the JT_REC_JIT payload, in chunk */
	struct jt_park_chunk *chunk;
	uint32_t len;
};

/* Writes older than this when a new one comes were made to no line. */
#define STALE_WRITE_NS (10 * 1000000000ULL)

/*
 * Small items come and go by the ten thousand a second (a perf-map line
 * each): a malloc and a free each were a tenth of the agent's time under
 * process churn. The number out swings by tens of thousands (the reorder
 * window, samples waiting for their names): a pool of a fixed 4096 sent
 * a third of report's items through malloc and free. So the pool keeps
 * as many as are out, at least ITEM_POOL_MIN: memory stays within twice
 * what is live.
 */
#define ITEM_POOL_MIN 4096
/*
 * Each item taken from the pool was put back long ago and is out of the
 * cache: the pool is a stack of pointers, so the one taken this many
 * allocations on is fetched now. Linked through the items, only the
 * next could be, too late to hide the miss (3% of report's time).
 */
#define POOL_AHEAD 8

/* An item of len data bytes, which follow it; the caller fills them. */
static struct jt_item *item_alloc(struct jt_stream *s, uint16_t kind,
				  uint64_t time, size_t len)
{
	bool small = sizeof(struct jt_item) + len <= JT_ITEM_POOL_SIZE;
	struct jt_item *it = NULL;

	if (small && s->npool) {
		it = s->pool[--s->npool];
		if (s->npool >= POOL_AHEAD)
			__builtin_prefetch(s->pool[s->npool - POOL_AHEAD], 1);
	} else {
		it = malloc(small ? JT_ITEM_POOL_SIZE : sizeof(*it) + len);
	}
	if (!it) {
		s->err = -ENOMEM;
		return NULL;
	}
	s->nout += small;
	*it = (struct jt_item){ .time = time,
				.seq = ++s->seq,
				.data = it + 1,
				.len = len,
				.kind = kind,
				.pooled = small };
	return it;
}

static struct jt_item *new_item(struct jt_stream *s, uint16_t kind,
				uint64_t time, const void *data, uint32_t len)
{
	struct jt_item *it = item_alloc(s, kind, time, len);

	if (it)
		memcpy(it + 1, data, len);
	return it;
}

void jt_stream_put(struct jt_stream *s, struct jt_item *it)
{
	if (it && it->pooled) {
		s->nout--;
		if ((s->npool < ITEM_POOL_MIN || s->npool < s->nout) &&
		    !jt_reserve(&s->pool, &s->pool_cap, s->npool + 1,
				sizeof(*s->pool))) {
			s->pool[s->npool++] = it;
			return;
		}
	}
	free(it);
}

/* The source an item came from: the BPF ring, the JIT files, a CPU. */
static size_t source_of(const struct jt_item *it)
{
	return it->kind == JT_IT_BPF || it->derived ? 0 :
	       it->kind == JT_IT_JIT		    ? 1 :
						      2 + (size_t)it->cpu;
}

static void push(struct jt_stream *s, struct jt_item *it)
{
	if (!it)
		return;
	if (it->time > s->max_time)
		s->max_time = it->time;
	if (jt_ordered_push(&s->ord, it, source_of(it)))
		s->err = -ENOMEM;
}

static int add_meta(struct jt_stream *s, const char *text, size_t len)
{
	const char *end = text + len;

	while (text < end) {
		const char *nl = memchr(text, '\n', end - text);
		const char *eq = memchr(text, '=', (nl ? nl : end) - text);
		struct jt_meta *m;

		if (!nl)
			nl = end;
		if (eq) {
			if (jt_reserve(&s->meta, &s->meta_cap, s->nmeta + 1,
				       sizeof(*s->meta)))
				return -ENOMEM;
			m = s->meta;
			m[s->nmeta].key = strndup(text, eq - text);
			m[s->nmeta].value = strndup(eq + 1, nl - eq - 1);
			s->nmeta++;
		}
		text = nl + 1;
	}
	if (jt_stream_meta(s, "rounds"))
		s->rounds = 1;
	if (jt_stream_meta(s, "perf.sample_type"))
		s->sample_type = strtoull(jt_stream_meta(s, "perf.sample_type"),
					  NULL, 0);
	if (jt_stream_meta(s, "perf.sample_regs_user"))
		s->regs_user = strtoull(
			jt_stream_meta(s, "perf.sample_regs_user"), NULL, 0);
	s->perf_view = jt_stream_meta(s, "perf.mmap") &&
		       !strcmp(jt_stream_meta(s, "perf.mmap"), "bpf");
	s->foreign_arch = jt_stream_meta(s, "machine") &&
			  strcmp(jt_stream_meta(s, "machine"), JT_UW_UNAME);
	if (jt_stream_meta(s, "tsc.mult")) {
		s->tsc.zero =
			strtoull(jt_stream_meta(s, "tsc.zero") ?: "0", NULL, 0);
		s->tsc.mult = strtoul(jt_stream_meta(s, "tsc.mult"), NULL, 0);
		s->tsc.shift = strtoul(jt_stream_meta(s, "tsc.shift") ?: "0",
				       NULL, 0) &
			       63;
		s->tsc.mono_offset = strtoll(
			jt_stream_meta(s, "tsc.mono_offset") ?: "0", NULL, 0);
	}
	return 0;
}

/*
 * Stack copies stored as deltas (--call-graph dwarf) come back whole,
 * in file order, as the recorder wrote them; h and len become the whole
 * sample. False: the record is to be left out (counted).
 */
static bool whole_stack(struct jt_stream *s, const struct jt_rec *r,
			const struct perf_event_header **h, uint32_t *len)
{
	const struct jt_delta_hdr *dh;
	size_t olen;

	if (!s->deltas_ready) {
		jt_stackdelta_init(
			&s->deltas, s->sample_type, s->regs_user,
			jt_uw_perf_sp_of(jt_stream_meta(s, "machine")));
		s->deltas_ready = true;
	}
	if ((*h)->type == PERF_RECORD_EXIT && *len >= sizeof(**h) + 16)
		jt_stackdelta_forget(&s->deltas, ((const uint32_t *)*h)[4]);
	if ((*h)->type != PERF_RECORD_SAMPLE ||
	    !(s->sample_type & PERF_SAMPLE_STACK_USER))
		return true;
	if (r->type == JT_REC_PERF) {
		jt_stackdelta_note(&s->deltas, *h, *len);
		return true;
	}
	dh = (const void *)((const struct jt_perf_rec *)r->data + 1);
	if (!s->delta_buf && !(s->delta_buf = malloc(65536)))
		return false;
	if (jt_stackdelta_decode(&s->deltas, dh, *h, *len, s->delta_buf, 65536,
				 &olen))
		return false;
	*h = (const void *)s->delta_buf;
	*len = olen;
	return true;
}

static void add_perf(struct jt_stream *s, const struct jt_rec *r)
{
	const struct jt_perf_rec *pr = r->data;
	const struct perf_event_header *h;
	size_t skip = sizeof(*pr);
	struct jt_item *it;
	uint64_t time;
	uint32_t len;

	if (r->type == JT_REC_PERF_DELTA)
		skip += sizeof(struct jt_delta_hdr);
	if (r->len < skip + sizeof(*h)) {
		s->unknown_recs++;
		return;
	}
	h = (const void *)((const char *)r->data + skip);
	len = r->len - skip;
	if (h->size != len) {
		s->unknown_recs++;
		return;
	}
	if (!whole_stack(s, r, &h, &len)) {
		s->stack_unknown++;
		return;
	}
	if (h->type == PERF_RECORD_LOST && len >= sizeof(*h) + 16)
		s->perf_lost += ((const uint64_t *)(h + 1))[1];
	time = jt_perf_time(h, len, s->sample_type);
	if (!time) {
		s->untimed++;
		return;
	}
	it = new_item(s, JT_IT_PERF, time, h, len);
	if (it)
		it->cpu = pr->cpu;
	push(s, it);
}

const char *jt_source_name(uint16_t source)
{
	static const char *const names[] = {
		[JT_SRC_UNKNOWN] = "unknown",	[JT_SRC_JITDUMP] = "jitdump",
		[JT_SRC_PERFMAP] = "perfmap",	[JT_SRC_ELF] = "elf",
		[JT_SRC_KALLSYMS] = "kallsyms", [JT_SRC_ANON] = "anon",
	};

	return source < sizeof(names) / sizeof(names[0]) ? names[source] :
							   "unknown";
}

struct file_key {
	uint32_t pid;
	uint64_t ino;
};

static uint64_t file_hash(uint32_t pid, uint64_t ino)
{
	return jt_hash_u64(ino * 0x9e3779b97f4a7c15ULL + pid);
}

static bool queue_eq(const void *val, const void *key)
{
	const struct jt_write_queue *q = val;
	const struct file_key *k = key;

	return q->pid == k->pid && q->ino == k->ino;
}

static bool pidq_eq(const void *val, const void *key)
{
	return ((const struct pid_queues *)val)->pid == *(const uint32_t *)key;
}

static struct pid_queues *pid_queues(struct jt_stream *s, uint32_t pid,
				     bool make)
{
	struct pid_queues *p =
		jt_hash_find(&s->pid_queues, jt_hash_u64(pid), pidq_eq, &pid);

	if (p || !make)
		return p;
	p = calloc(1, sizeof(*p));
	if (!p || jt_hash_add(&s->pid_queues, jt_hash_u64(pid), p)) {
		free(p);
		return NULL;
	}
	p->pid = pid;
	return p;
}

static struct jt_write_queue *queue_of(struct jt_stream *s, uint32_t pid,
				       uint64_t ino)
{
	struct file_key k = { pid, ino };
	uint64_t h = file_hash(pid, ino);
	struct jt_write_queue *q =
		jt_hash_find(&s->write_queues, h, queue_eq, &k);
	struct pid_queues *p;

	if (q)
		return q;
	p = pid_queues(s, pid, true);
	q = p ? calloc(1, sizeof(*q)) : NULL;
	if (!q || jt_hash_add(&s->write_queues, h, q)) {
		free(q);
		s->err = -ENOMEM;
		return NULL;
	}
	q->pid = pid;
	q->ino = ino;
	q->pid_next = p->first;
	p->first = q;
	return q;
}

/* Writes no source took: the lines they made were never read. */
static void count_unread(struct jt_stream *s, struct jt_write_queue *q)
{
	if (q->bound || !q->written)
		return;
	if (s->unread_maps < JT_UNREAD_SHOWN)
		s->unread[s->unread_maps] =
			(struct jt_unread_map){ q->pid, q->written };
	s->unread_maps++;
	s->unread_writes += q->written;
	q->written = 0;
}

static void queue_free(struct jt_stream *s, struct jt_write_queue *q)
{
	struct file_key k = { q->pid, q->ino };

	count_unread(s, q);

	if (q->src)
		q->src->writes = NULL;
	if (q->refused)
		q->refused->writes = NULL;
	jt_hash_del(&s->write_queues, file_hash(q->pid, q->ino), queue_eq, &k);
	free(q->w);
	free(q);
}

/* The process is gone: its write(2)s may still time pieces read at exit. */
static void queues_exited(struct jt_stream *s, uint32_t pid, uint64_t time)
{
	struct pid_queues *p = pid_queues(s, pid, false);
	struct jt_write_queue *q;

	if (!p)
		return;
	for (q = p->first; q; q = q->pid_next)
		q->dead_ns = time;
	if (jt_reserve(&s->exited, &s->exited_cap, s->nexited + 1,
		       sizeof(*s->exited)))
		return; /* kept till the end: memory, not correctness */
	s->exited[s->nexited++] = (struct exited){ pid, time };
}

/* Drop the queues of processes gone for longer than the grace. */
static void queues_reap(struct jt_stream *s, uint64_t horizon)
{
	while (s->exited_head < s->nexited &&
	       s->exited[s->exited_head].time + QUEUE_GRACE_NS < horizon) {
		uint32_t pid = s->exited[s->exited_head++].pid;
		struct pid_queues *p = pid_queues(s, pid, false);
		struct jt_write_queue **link, *q;

		if (!p)
			continue;
		for (link = &p->first; (q = *link);) {
			/* One that came back to life (pid reuse) stays. */
			if (q->dead_ns &&
			    q->dead_ns + QUEUE_GRACE_NS < horizon) {
				*link = q->pid_next;
				queue_free(s, q);
			} else {
				link = &q->pid_next;
			}
		}
		if (!p->first) {
			jt_hash_del(&s->pid_queues, jt_hash_u64(pid), pidq_eq,
				    &pid);
			free(p);
		}
	}
	if (s->exited_head == s->nexited)
		s->exited_head = s->nexited = 0;
}

static bool id_eq(const void *val, const void *key)
{
	return ((const struct jt_jit_source *)val)->id ==
	       *(const uint32_t *)key;
}

static void proc_exited(struct jt_stream *s, uint32_t pid, uint64_t time)
{
	queues_exited(s, pid, time);
	if (!s->free_dead_sources ||
	    jt_reserve(&s->gone, &s->gone_cap, s->ngone + 1, sizeof(*s->gone)))
		return;
	s->gone[s->ngone++] = (struct exited){ pid, time };
}

static void source_free(struct jt_stream *s, size_t i)
{
	struct jt_jit_source *src = s->sources[i];
	struct jt_write_queue *q = src->writes;

	if (q && q->src == src)
		q->src = NULL;
	if (q && q->refused == src)
		q->refused = NULL;
	s->gone_truncated += src->truncated;
	jt_hash_del(&s->source_ids, jt_hash_u64(src->id), id_eq, &src->id);
	jt_jitdump_free(&src->dump);
	jt_perfmap_free(&src->map);
	free((char *)src->path);
	free(src);
	s->sources[i] = s->sources[--s->nsources];
}

/*
 * After the grace nothing reads a dead process's files: free them,
 * unless a queue still refers to one (its pid came back) or a newer
 * process with the pid found it.
 */
static void sources_reap(struct jt_stream *s, uint64_t horizon)
{
	size_t i;

	while (s->gone_head < s->ngone &&
	       s->gone[s->gone_head].time + QUEUE_GRACE_NS < horizon) {
		struct exited e = s->gone[s->gone_head++];

		if (pid_queues(s, e.pid, false))
			continue;
		for (i = s->nsources; i-- > 0;)
			if (s->sources[i]->pid == e.pid &&
			    s->sources[i]->found_ns <= e.time)
				source_free(s, i);
	}
	if (s->gone_head == s->ngone)
		s->gone_head = s->ngone = 0;
}

/*
 * A queue times the lines of one source, and counts the writes of one
 * refused: the file found again (the same pid and inode) takes it over,
 * so no older source keeps a pointer the queue's end would leave dangling.
 */
static void bind_queue(struct jt_write_queue *q, struct jt_jit_source *src)
{
	struct jt_jit_source **slot = src->status ? &q->refused : &q->src;

	q->bound = true;
	if (*slot && *slot != src)
		(*slot)->writes = NULL;
	*slot = src;
}

static void map_init(struct jt_stream *s, struct jt_jit_source *src)
{
	jt_perfmap_init(&src->map);
	src->map.text = s->perfmap_text;
}

static void add_source(struct jt_stream *s, const struct jt_rec *r)
{
	const struct jt_jitfile_rec *f = r->data;
	struct jt_jit_source *src;
	size_t plen;

	/* Ids are the recorder's, one per file: a second is corrupt. */
	if (r->len < sizeof(*f) + 1 ||
	    (!f->status && jt_hash_find(&s->source_ids, jt_hash_u64(f->file_id),
					id_eq, &f->file_id))) {
		s->unknown_recs++;
		return;
	}
	src = calloc(1, sizeof(*src));
	if (!src || jt_reserve(&s->sources, &s->sources_cap, s->nsources + 1,
			       sizeof(*s->sources))) {
		free(src);
		s->err = -ENOMEM;
		return;
	}
	s->sources[s->nsources++] = src;
	src->id = f->file_id;
	src->pid = f->pid;
	src->kind = f->kind;
	src->found = f->found;
	src->found_ns = f->time;
	src->status = f->status;
	src->ino = f->ino;
	plen = strnlen((const char *)(f + 1), r->len - sizeof(*f));
	/* Its own copy: a pid's file is one of a kind, and goes with it. */
	src->path = strndup((const char *)(f + 1), plen);
	jt_jitdump_init(&src->dump);
	map_init(s, src);
	if (!src->path)
		s->err = -ENOMEM;
	if (src->kind == JT_JIT_PERFMAP)
		src->writes = queue_of(s, src->pid, src->ino);
	if (src->writes)
		bind_queue(src->writes, src);
	if (src->status && src->writes) {
		/* Refused: what it was written is only counted. */
		src->ignored_writes += src->writes->n - src->writes->head;
		src->writes->head = src->writes->n = 0;
	} else if (!src->status &&
		   jt_hash_add(&s->source_ids, jt_hash_u64(src->id), src)) {
		s->err = -ENOMEM;
	}
}

static void add_write(struct jt_stream *s, const struct jt_rec *r)
{
	const struct jt_write_event *w = r->data;
	struct jt_write_queue *q;

	if (r->len != sizeof(*w) || w->h.size != sizeof(*w))
		return;
	q = queue_of(s, w->h.pid, w->ino);
	if (!q)
		return;
	if (q->dead_ns && w->h.time > q->dead_ns) {
		/* The pid is someone else's now: its writes start afresh. */
		count_unread(s, q);
		q->head = q->n = 0;
		q->dead_ns = 0;
		q->bound = false;
		if (q->src)
			q->src->writes = NULL;
		if (q->refused)
			q->refused->writes = NULL;
		q->src = q->refused = NULL;
	}
	if (q->refused) {
		q->refused->ignored_writes++;
		return;
	}
	q->written++;
	while (q->head < q->n &&
	       q->w[q->head].time + STALE_WRITE_NS < w->h.time)
		q->head++;
	if (q->head > 4096 && q->head * 2 > q->n) {
		memmove(q->w, q->w + q->head, (q->n - q->head) * sizeof(*q->w));
		q->n -= q->head;
		q->head = 0;
	}
	if (jt_reserve(&q->w, &q->cap, q->n + 1, sizeof(*q->w))) {
		s->err = -ENOMEM;
		return;
	}
	q->w[q->n++] =
		(struct jt_mapwrite){ w->end >= w->len ? w->end - w->len : 0,
				      w->end, w->h.time };
}

/* The MMAP2 records perf would have written for a BPF event, after it. */
static void add_perf_view(struct jt_stream *s, const struct jt_hdr *h,
			  size_t len)
{
	struct jt_perf_view v[2];
	struct jt_sample_id id = { h->pid, h->tid, h->time, h->cpu };
	unsigned char
		buf[sizeof(struct perf_event_header) + 64 + JT_PATH_MAX + 64];
	int i, n = jt_perf_view(h, len, s->sample_type & PERF_SAMPLE_ADDR, v);
	struct jt_item *it;
	size_t size;

	for (i = 0; i < n; i++) {
		size = jt_perf_mmap2_make(buf, sizeof(buf), &v[i].m, v[i].misc,
					  &id, s->sample_type);
		it = size ? new_item(s, JT_IT_PERF, h->time, buf, size) : NULL;
		if (!it)
			continue;
		it->cpu = h->cpu;
		it->derived = 1;
		push(s, it);
	}
}

static void add_bpf(struct jt_stream *s, const struct jt_rec *r)
{
	const struct jt_hdr *h = r->data;
	struct jt_item *it;

	if (r->len < sizeof(*h)) {
		s->unknown_recs++;
		return;
	}
	if (h->type == JT_EV_MAPWRITE)
		add_write(s, r);
	else if (h->type == JT_EV_EXIT &&
		 r->len >= sizeof(struct jt_exit_event) &&
		 ((const struct jt_exit_event *)h)->group_dead)
		proc_exited(s, h->pid, h->time);
	it = new_item(s, JT_IT_BPF, h->time, h, r->len);
	if (it)
		it->cpu = h->cpu;
	push(s, it);
	if (s->perf_view)
		add_perf_view(s, h, r->len);
}

/*
 * Perf-map lines one write made share its time: they go out as one item,
 * so the merge, the pipeline's hold and the item's own cost are paid once
 * per write, not per line (most of the agent's time under churn).
 */
#define BATCH_MAX 64
#define BATCH_NAMES 4096

struct jit_feed {
	struct jt_stream *s;
	struct jt_jit_source *src;
	uint64_t read_time;
	uint32_t n;
	uint32_t names_len;
	struct jt_jit_item batch[BATCH_MAX];
	char names[BATCH_NAMES];
};

/*
 * A perf-map line was written by the first write(2) of its file that
 * ended at or past the line's end; without one, it is as old as the
 * read that found it.
 */
static uint64_t line_time(struct jit_feed *f, const struct jt_jit_event *ev)
{
	struct jt_write_queue *q = f->src->writes;

	if (!q)
		return f->read_time;
	while (q->head < q->n && q->w[q->head].end < ev->file_end)
		q->head++;
	if (q->head == q->n)
		return f->read_time;
	f->src->timed_lines++;
	return q->w[q->head].time;
}

/*
 * jitdump times are the writer's CLOCK_MONOTONIC, or TSC with the arch
 * flag: converted when the recording kept perf's conversion, else the
 * time the piece was read, counted.
 */
static uint64_t dump_time(struct jt_stream *s, struct jit_feed *f,
			  const struct jt_jit_event *ev)
{
	if (ev->time)
		return ev->time;
	if (ev->arch_time && s->tsc.mult)
		return jt_tsc_to_mono(&s->tsc, ev->arch_time);
	s->arch_time_unconverted++;
	return f->read_time;
}

/* The item, then the load's CFI, inlining entries and name, if any. */
static struct jt_item *jit_item(struct jt_stream *s, struct jt_jit_item *j,
				const struct jt_jit_event *ev)
{
	size_t more = ev->unwind_len + ev->inl_len +
		      (ev->name_len ? ev->name_len + 1 : 0);
	struct jt_item *it =
		item_alloc(s, JT_IT_JIT, j->time, sizeof(*j) + more);
	char *p;

	if (!it)
		return NULL;
	p = (char *)(it + 1) + sizeof(*j);
	if (ev->unwind_len)
		memcpy(p, ev->unwind, ev->unwind_len);
	p += ev->unwind_len;
	if (ev->inl_len)
		memcpy(p, ev->inl, ev->inl_len);
	p += ev->inl_len;
	if (ev->name_len) {
		memcpy(p, ev->name, ev->name_len);
		p[ev->name_len] = 0;
		j->name = p;
		j->name_len = ev->name_len;
	}
	memcpy(it + 1, j, sizeof(*j));
	return it;
}

/* The lines gathered so far, as one item: the records, then the names. */
static void batch_flush(struct jit_feed *f)
{
	size_t recs = f->n * sizeof(*f->batch);
	struct jt_item *it;
	struct jt_jit_item *r;
	char *names;
	uint32_t i;

	if (!f->n)
		return;
	it = item_alloc(f->s, JT_IT_JIT, f->batch[0].time, recs + f->names_len);
	if (it) {
		it->nrec = f->n;
		r = memcpy(it + 1, f->batch, recs);
		names = memcpy((char *)(it + 1) + recs, f->names, f->names_len);
		for (i = 0; i < f->n; i++)
			if (r[i].name)
				r[i].name = names + (r[i].name - f->names);
		push(f->s, it);
	}
	f->n = f->names_len = 0;
}

/* j into the batch; false when it must go on its own (a long name). */
static bool batch_add(struct jit_feed *f, const struct jt_jit_item *j,
		      const char *name, uint32_t len)
{
	uint32_t need = len ? len + 1 : 0;

	if (need > BATCH_NAMES)
		return false;
	if (f->n && (f->batch[0].time != j->time || f->n == BATCH_MAX ||
		     f->names_len + need > BATCH_NAMES))
		batch_flush(f);
	f->batch[f->n] = *j;
	if (len) {
		char *p = f->names + f->names_len;

		memcpy(p, name, len);
		p[len] = 0;
		f->batch[f->n].name = p;
		f->batch[f->n].name_len = len;
		f->names_len += need;
	}
	f->n++;
	return true;
}

struct text_each {
	const struct jt_jit_item *text;
	void (*fn)(void *ctx, const struct jt_jit_item *load);
	void *ctx;
};

static void text_load(void *ctx, const struct jt_jit_event *ev)
{
	const struct text_each *c = ctx;
	struct jt_jit_item l = { .time = c->text->time,
				 .pid = c->text->pid,
				 .op = JT_JIT_LOAD,
				 .source = JT_SRC_PERFMAP,
				 .addr = ev->addr,
				 .size = ev->size,
				 .name = ev->name,
				 .name_len = ev->name_len };

	c->fn(c->ctx, &l);
}

int jt_jit_text_each(const struct jt_jit_item *text,
		     void (*fn)(void *ctx, const struct jt_jit_item *load),
		     void *ctx)
{
	struct text_each c = { text, fn, ctx };

	return jt_perfmap_text_each(text->name, text->name_len, text->time,
				    text->pid, text_load, &c);
}

/*
 * Where the lines of the write that made the line starting at s end, no
 * further than end, with that write's time; time 0 when no write is
 * known (the lines are as old as the read, as in line_time).
 */
static const char *write_end(struct jit_feed *f, const char *s, const char *end,
			     uint64_t off, uint64_t *time)
{
	struct jt_write_queue *q = f->src->writes;
	const char *nl = memchr(s, '\n', end - s);
	uint64_t w;

	*time = 0;
	if (!q)
		return end;
	while (q->head < q->n && q->w[q->head].end < off + (nl + 1 - s))
		q->head++;
	if (q->head == q->n)
		return end;
	*time = q->w[q->head].time;
	w = q->w[q->head].end;
	if (w >= off + (end - s))
		return end;
	/* The last line that ends by w: its '\n' is before byte w. */
	return (const char *)memrchr(s, '\n', w - off) + 1;
}

/*
 * A run of whole lines as TEXT records, one per write(2) that made them,
 * each with that write's time: the item and its copy are paid per
 * write, not per line (most of the agent's time under churn).
 */
static void on_text(struct jit_feed *f, const struct jt_jit_event *ev)
{
	const char *s = ev->name, *end = s + ev->name_len, *cut;
	uint64_t off = ev->file_end - ev->name_len, lines;
	struct jt_jit_event one = *ev;

	batch_flush(f);
	for (; s < end; off += cut - s, s = cut) {
		struct jt_jit_item j = { .pid = f->src->pid,
					 .op = JT_JIT_TEXT,
					 .source = JT_SRC_PERFMAP };

		cut = write_end(f, s, end, off, &j.time);
		lines = jt_perfmap_lines(s, cut - s);
		if (j.time)
			f->src->timed_lines += lines;
		else
			j.time = f->read_time;
		if (f->src->found == JT_FOUND_ATTACH &&
		    j.time < f->src->found_ns)
			j.time = f->src->found_ns;
		j.size = lines;
		one.name = s;
		one.name_len = cut - s;
		push(f->s, jit_item(f->s, &j, &one));
	}
}

static void on_record(struct jit_feed *f, const struct jt_jit_event *ev)
{
	struct jt_stream *s = f->s;
	struct jt_jit_item j = {
		/* Times the file gives are the writer's; else when we read. */
		.time = f->src->kind == JT_JIT_PERFMAP ? line_time(f, ev) :
							 dump_time(s, f, ev),
		/* The file's owner, not what a record claims. */
		.pid = f->src->pid,
		.op = ev->op,
		.source = f->src->kind == JT_JIT_JITDUMP ? JT_SRC_JITDUMP :
							   JT_SRC_PERFMAP,
		.addr = ev->addr,
		.old_addr = ev->old_addr,
		.size = ev->size,
		.code_index = ev->code_index,
		.unwind_len = ev->unwind_len,
		.unwind_hdr_len = ev->unwind_hdr_len,
		.inl_len = ev->inl_len,
		.inl_count = ev->inl_count,
	};

	/*
	 * A file found at attach holds code loaded before the process was
	 * known: that code is what was there when we came, in file order.
	 */
	if (f->src->found == JT_FOUND_ATTACH && j.time < f->src->found_ns)
		j.time = f->src->found_ns;
	if (f->src->kind == JT_JIT_PERFMAP &&
	    batch_add(f, &j, ev->name, ev->name_len))
		return;
	batch_flush(f);
	push(s, jit_item(s, &j, ev));
}

static void on_jit(void *ctx, const struct jt_jit_event *ev)
{
	if (ev->op == JT_JIT_TEXT)
		on_text(ctx, ev);
	else
		on_record(ctx, ev);
}

/*
 * The recorder read a perf-map again from its start: it was rewritten in
 * place. Its lines are parsed anew, each timed by the write that made it,
 * which the first write back at the file's start begins.
 */
static void new_version(struct jt_stream *s, struct jt_jit_source *src)
{
	struct jt_write_queue *q = src->writes;

	jt_perfmap_free(&src->map);
	map_init(s, src);
	/* Past the write of the old version's last line, to the new one's. */
	if (q && q->head < q->n)
		q->head++;
	while (q && q->head < q->n && q->w[q->head].start)
		q->head++;
}

static void parse_piece(struct jt_stream *s, const struct jt_parked *p)
{
	const struct jt_jit_rec *jr = p->rec;
	uint32_t id = jr->file_id;
	struct jit_feed f = { .s = s, .read_time = jr->time };
	const void *bytes = jr + 1;
	size_t n = p->len - sizeof(*jr);

	f.src = jt_hash_find(&s->source_ids, jt_hash_u64(id), id_eq, &id);
	if (!f.src) {
		s->unknown_recs++;
		return;
	}
	if (!jr->offset && f.src->next_offset &&
	    f.src->kind == JT_JIT_PERFMAP) {
		new_version(s, f.src);
	} else if (jr->offset != f.src->next_offset) {
		/*
		 * A piece is missing: a perf-map starts over at the next
		 * line; a jitdump cannot find its next record again.
		 */
		f.src->gaps++;
		jt_perfmap_free(&f.src->map);
		map_init(s, f.src);
		if (!f.src->dump.failed)
			snprintf(f.src->dump.err, sizeof(f.src->dump.err),
				 "a piece of the file is missing from the "
				 "recording");
		f.src->dump.failed = true;
	}
	f.src->next_offset = jr->offset + n;
	if (f.src->kind == JT_JIT_JITDUMP)
		jt_jitdump_feed(&f.src->dump, bytes, n, on_jit, &f);
	else
		jt_perfmap_feed(&f.src->map, bytes, n, jr->time, f.src->pid,
				on_jit, &f);
	batch_flush(&f);
}

/* Room for len bytes at the tail: a new chunk when the last is full. */
static void *park_room(struct jt_stream *s, size_t len,
		       struct jt_park_chunk **chunk)
{
	struct jt_park_chunk *c = s->park_tail;
	size_t off = c ? (c->used + 7) & ~(size_t)7 : 0;

	if (!c || off + len > c->cap) {
		size_t cap = len > PARK_CHUNK ? len : PARK_CHUNK;

		c = malloc(sizeof(*c) + cap);
		if (!c)
			return NULL;
		*c = (struct jt_park_chunk){ .cap = cap };
		if (s->park_tail)
			s->park_tail->next = c;
		else
			s->park_head = c;
		s->park_tail = c;
		off = 0;
	}
	c->used = off + len;
	*chunk = c;
	return c->data + off;
}

/* Chunks before the one the next unread piece lies in are read. */
static void park_release(struct jt_stream *s)
{
	struct jt_park_chunk *keep = s->parked_head < s->nparked ?
					     s->parked[s->parked_head].chunk :
					     NULL;

	while (s->park_head && s->park_head != keep) {
		struct jt_park_chunk *next = s->park_head->next;

		free(s->park_head);
		s->park_head = next;
	}
	if (!s->park_head)
		s->park_tail = NULL;
}

static void park(struct jt_stream *s, const struct jt_rec *r)
{
	struct jt_parked *p;

	if (r->len < sizeof(struct jt_jit_rec)) {
		s->unknown_recs++;
		return;
	}
	if (s->parked_head && s->parked_head == s->nparked)
		s->parked_head = s->nparked = 0;
	if (jt_reserve(&s->parked, &s->parked_cap, s->nparked + 1,
		       sizeof(*s->parked))) {
		s->err = -ENOMEM;
		return;
	}
	p = &s->parked[s->nparked];
	p->read_time = ((const struct jt_jit_rec *)r->data)->time;
	p->len = r->len;
	p->rec = park_room(s, r->len, &p->chunk);
	if (!p->rec) {
		s->err = -ENOMEM;
		return;
	}
	memcpy(p->rec, r->data, r->len);
	s->nparked++;
}

/* Pieces read before every event up to upto was in: their writes are. */
static void unpark(struct jt_stream *s, uint64_t upto)
{
	while (s->parked_head < s->nparked &&
	       s->parked[s->parked_head].read_time <= upto)
		parse_piece(s, &s->parked[s->parked_head++]);
	park_release(s);
	if (s->parked_head > 64 && s->parked_head * 2 > s->nparked) {
		memmove(s->parked, s->parked + s->parked_head,
			(s->nparked - s->parked_head) * sizeof(*s->parked));
		s->nparked -= s->parked_head;
		s->parked_head = 0;
	}
}

static bool buildid_eq(const void *val, const void *key)
{
	const struct jt_buildid_rec *b = val, *k = key;

	return b->dev == k->dev && b->ino == k->ino;
}

static void add_buildid(struct jt_stream *s, const struct jt_rec *r)
{
	const struct jt_buildid_rec *b = r->data;
	struct jt_buildid_rec *copy;
	uint64_t h;

	if (r->len < sizeof(*b) || b->len > 20)
		return;
	h = jt_hash_u64(b->dev ^ (b->ino * 0x9e3779b97f4a7c15ULL));
	if (jt_hash_find(&s->buildids, h, buildid_eq, b))
		return;
	copy = malloc(sizeof(*copy));
	if (!copy || jt_hash_add(&s->buildids, h, copy)) {
		free(copy);
		s->err = -ENOMEM;
		return;
	}
	memcpy(copy, b, sizeof(*copy));
}

const struct jt_buildid_rec *jt_stream_buildid(const struct jt_stream *s,
					       uint64_t dev, uint64_t ino)
{
	struct jt_buildid_rec k = { .dev = dev, .ino = ino };

	return jt_hash_find(&s->buildids,
			    jt_hash_u64(dev ^ (ino * 0x9e3779b97f4a7c15ULL)),
			    buildid_eq, &k);
}

struct jt_cfi *jt_stream_cfi(struct jt_stream *s, const unsigned char *id,
			     size_t id_len)
{
	return jt_cfistore_get(&s->cfis, id, id_len);
}

static void add_jitcap(struct jt_stream *s, const struct jt_rec *r)
{
	const struct jt_jitcap_rec *c = r->data;
	size_t i;

	if (r->len < sizeof(*c))
		return;
	for (i = 0; i < s->nsources; i++)
		if (s->sources[i]->id == c->file_id)
			s->sources[i]->truncated = c->skipped;
}

static void add_proccap(struct jt_stream *s, const struct jt_rec *r)
{
	if (r->len < sizeof(struct jt_proccap_rec) ||
	    jt_reserve(&s->proccaps, &s->proccaps_cap, s->nproccaps + 1,
		       sizeof(*s->proccaps))) {
		s->unknown_recs++;
		return;
	}
	memcpy(&s->proccaps[s->nproccaps++], r->data,
	       sizeof(struct jt_proccap_rec));
}

static void add_kallsyms(struct jt_stream *s, const struct jt_rec *r)
{
	free(s->kallsyms);
	s->kallsyms = malloc(r->len ? r->len : 1);
	if (!s->kallsyms) {
		s->err = -ENOMEM;
		return;
	}
	memcpy(s->kallsyms, r->data, r->len);
	s->kallsyms_len = r->len;
}

static void take(struct jt_stream *s, const struct jt_rec *r)
{
	switch (r->type) {
	case JT_REC_META:
		if (add_meta(s, r->data, r->len))
			s->err = -ENOMEM;
		break;
	case JT_REC_BPF:
		add_bpf(s, r);
		break;
	case JT_REC_PERF:
	case JT_REC_PERF_DELTA:
		add_perf(s, r);
		break;
	case JT_REC_JITFILE:
		add_source(s, r);
		break;
	case JT_REC_JIT:
		park(s, r);
		break;
	case JT_REC_JITCAP:
		add_jitcap(s, r);
		break;
	case JT_REC_PROCCAP:
		add_proccap(s, r);
		break;
	case JT_REC_ROUND:
		if (r->len >= sizeof(struct jt_round_rec)) {
			const struct jt_round_rec *rr = r->data;

			s->rounds = 1;
			if (rr->time > s->horizon)
				s->horizon = rr->time;
			if (s->on_round)
				s->on_round(s->round_ctx, s->horizon);
		}
		break;
	case JT_REC_KALLSYMS:
		add_kallsyms(s, r);
		break;
	case JT_REC_BUILDID:
		add_buildid(s, r);
		break;
	case JT_REC_CFI:
		jt_cfistore_add(&s->cfis, r->data, r->len);
		break;
	case JT_REC_LOST:
		if (r->len >= sizeof(s->lost))
			memcpy(&s->lost, r->data, sizeof(s->lost));
		break;
	case JT_REC_FINISH:
		if (r->len >= sizeof(s->finish)) {
			memcpy(&s->finish, r->data, sizeof(s->finish));
			s->finished = 1;
		}
		break;
	default:
		s->unknown_recs++;
	}
}

/*
 * Without ROUND marks (older files, tests) the latest event read stands
 * in for the round: right when the file is in time order per source.
 */
static uint64_t in_horizon(const struct jt_stream *s)
{
	if (s->at_end)
		return UINT64_MAX;
	return s->rounds ? s->horizon : s->max_time;
}

static uint64_t out_horizon(const struct jt_stream *s)
{
	uint64_t h = in_horizon(s);

	if (h == UINT64_MAX)
		return h;
	return h > JT_REORDER_NS ? h - JT_REORDER_NS : 0;
}

const struct jt_item *jt_stream_peek(const struct jt_stream *s, bool after)
{
	return jt_ordered_peek(&s->ord, after);
}

/* Every source is in: the queues still unclaimed were never read. */
static struct jt_item *unread_at_end(struct jt_stream *s)
{
	size_t i;

	if (s->unread_tallied)
		return NULL;
	s->unread_tallied = true;
	jt_hash_for_each (&s->write_queues, i)
		count_unread(s, s->write_queues.e[i].val);
	return NULL;
}

struct jt_item *jt_stream_next(struct jt_stream *s)
{
	struct jt_item *it;
	struct jt_rec r;

	while (!s->err) {
		it = jt_ordered_pop(&s->ord, out_horizon(s));
		if (it) {
			s->emitted++;
			return it;
		}
		if (s->at_end)
			return unread_at_end(s);
		if (jt_reader_next(&s->rd, &r) == 1)
			take(s, &r);
		else
			s->at_end = 1;
		unpark(s, in_horizon(s));
		queues_reap(s, in_horizon(s));
		sources_reap(s, in_horizon(s));
	}
	return NULL;
}

/* Everything before the first event: meta, kallsyms, what -p found. */
static int read_header(struct jt_stream *s)
{
	return s->err;
}

static int open_done(struct jt_stream *s, int err, const char *path, char *msg,
		     size_t msglen)
{
	if (!err)
		err = read_header(s);
	if (err) {
		snprintf(msg, msglen, "%s: %s", path,
			 err == -EINVAL	 ? "not a jittrace recording" :
			 err == -EPROTO	 ? "unsupported recording version" :
			 err == -ENODATA ? "empty: no recording in it" :
			 err == -ESPIPE	 ? "not a regular file or a pipe" :
					   strerror(-err));
		jt_stream_free(s);
	}
	return err;
}

int jt_stream_open(struct jt_stream *s, const char *path, char *msg,
		   size_t msglen)
{
	memset(s, 0, sizeof(*s));
	return open_done(s, jt_reader_open(&s->rd, path), path, msg, msglen);
}

int jt_stream_open_chan(struct jt_stream *s, struct jt_chan *c, char *msg,
			size_t msglen)
{
	memset(s, 0, sizeof(*s));
	return open_done(s, jt_reader_open_chan(&s->rd, c), "the capture", msg,
			 msglen);
}

int jt_stream_open_mem(struct jt_stream *s, const void *buf, size_t len,
		       char *msg, size_t msglen)
{
	memset(s, 0, sizeof(*s));
	return open_done(s, jt_reader_open_mem(&s->rd, buf, len), "(memory)",
			 msg, msglen);
}

void jt_stream_warn(const struct jt_stream *s, const char *path)
{
	if (s->rd.truncated)
		fprintf(stderr,
			"jittrace: %s: %s%s at byte %llu of %llu; "
			"showing the %llu events before it\n",
			path,
			s->rd.cut_at_end && !s->finished ?
				"recording was not finished (recorder killed, "
				"or the file cut?): " :
				"",
			s->rd.why, (unsigned long long)s->rd.stop_offset,
			(unsigned long long)s->rd.size,
			(unsigned long long)s->emitted);
	else if (!s->finished)
		fprintf(stderr,
			"jittrace: %s: recording was not finished "
			"(recorder killed?); showing all %llu events\n",
			path, (unsigned long long)s->emitted);
	if (s->unknown_recs)
		fprintf(stderr,
			"jittrace: %s: %llu malformed records skipped\n", path,
			(unsigned long long)s->unknown_recs);
	if (s->err == -ENOMEM)
		fprintf(stderr,
			"jittrace: %s: out of memory; stopped after "
			"%llu events\n",
			path, (unsigned long long)s->emitted);
}

const char *jt_stream_meta(const struct jt_stream *s, const char *key)
{
	size_t i;

	for (i = s->nmeta; i-- > 0;)
		if (!strcmp(s->meta[i].key, key))
			return s->meta[i].value;
	return NULL;
}

void jt_stream_free(struct jt_stream *s)
{
	size_t i;

	for (i = 0; i < s->nmeta; i++) {
		free(s->meta[i].key);
		free(s->meta[i].value);
	}
	free(s->meta);
	for (i = 0; i < s->nsources; i++) {
		jt_jitdump_free(&s->sources[i]->dump);
		jt_perfmap_free(&s->sources[i]->map);
		free((char *)s->sources[i]->path);
		free(s->sources[i]);
	}
	free(s->sources);
	free(s->proccaps);
	jt_hash_free(&s->source_ids);
	jt_hash_for_each (&s->write_queues, i) {
		struct jt_write_queue *q = s->write_queues.e[i].val;

		free(q->w);
		free(q);
	}
	jt_hash_free(&s->write_queues);
	jt_hash_for_each (&s->pid_queues, i)
		free(s->pid_queues.e[i].val);
	jt_hash_free(&s->pid_queues);
	free(s->exited);
	free(s->gone);
	s->parked_head = s->nparked;
	park_release(s);
	free(s->parked);
	while (s->npool)
		free(s->pool[--s->npool]);
	free(s->pool);
	jt_hash_for_each (&s->buildids, i)
		free(s->buildids.e[i].val);
	jt_hash_free(&s->buildids);
	jt_cfistore_free(&s->cfis);
	jt_stackdelta_free(&s->deltas);
	free(s->delta_buf);
	jt_ordered_free(&s->ord);
	free(s->kallsyms);
	jt_strtab_free(&s->strs);
	jt_reader_close(&s->rd);
	memset(s, 0, sizeof(*s));
}
