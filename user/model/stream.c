// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "jt_abi.h"
#include "lib/perf_rec.h"
#include "model/stream.h"
#include "lib/reserve.h"

static int push(struct jt_stream *s, size_t *cap, const struct jt_item *it)
{
	if (jt_reserve(&s->items, cap, s->n + 1, sizeof(*s->items)))
		return -ENOMEM;
	s->items[s->n++] = *it;
	return 0;
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
	if (jt_stream_meta(s, "perf.sample_type"))
		s->sample_type = strtoull(jt_stream_meta(s, "perf.sample_type"),
					  NULL, 0);
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

static int add_perf(struct jt_stream *s, size_t *cap, const struct jt_rec *r,
		    uint64_t seq)
{
	const struct jt_perf_rec *pr = r->data;
	const struct perf_event_header *h;
	struct jt_item it = { .kind = JT_IT_PERF, .seq = seq };
	uint32_t len;

	if (r->len < sizeof(*pr) + sizeof(*h)) {
		s->unknown_recs++;
		return 0;
	}
	h = (const void *)(pr + 1);
	len = r->len - sizeof(*pr);
	if (h->size != len) {
		s->unknown_recs++;
		return 0;
	}
	if (h->type == PERF_RECORD_LOST && len >= sizeof(*h) + 16)
		s->perf_lost += ((const uint64_t *)(h + 1))[1];
	it.time = jt_perf_time(h, len, s->sample_type);
	if (!it.time) {
		s->untimed++;
		return 0;
	}
	it.data = h;
	it.len = len;
	it.cpu = pr->cpu;
	return push(s, cap, &it);
}

static int add_bpf(struct jt_stream *s, size_t *cap, const struct jt_rec *r,
		   uint64_t seq)
{
	const struct jt_hdr *h = r->data;
	struct jt_item it = { .kind = JT_IT_BPF, .seq = seq };

	if (r->len < sizeof(*h)) {
		s->unknown_recs++;
		return 0;
	}
	it.time = h->time;
	it.data = h;
	it.len = r->len;
	it.cpu = h->cpu;
	return push(s, cap, &it);
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

static int add_source(struct jt_stream *s, const struct jt_rec *r)
{
	const struct jt_jitfile_rec *f = r->data;
	struct jt_jit_source *src;
	size_t plen;

	if (r->len < sizeof(*f) + 1) {
		s->unknown_recs++;
		return 0;
	}
	if (jt_reserve(&s->sources, &s->sources_cap, s->nsources + 1,
		       sizeof(*s->sources)))
		return -ENOMEM;
	src = &s->sources[s->nsources++];
	memset(src, 0, sizeof(*src));
	src->id = f->file_id;
	src->pid = f->pid;
	src->kind = f->kind;
	src->found = f->found;
	src->found_ns = f->time;
	src->status = f->status;
	src->ino = f->ino;
	plen = strnlen((const char *)(f + 1), r->len - sizeof(*f));
	src->path = jt_intern(&s->strs, (const char *)(f + 1), plen);
	jt_jitdump_init(&src->dump);
	jt_perfmap_init(&src->map);
	return src->path ? 0 : -ENOMEM;
}

struct jit_feed {
	struct jt_stream *s;
	struct jt_jit_source *src;
	uint64_t read_time;
	uint64_t seq;
	size_t *cap;
	int err;
};

/*
 * A perf-map line was written by the first write(2) of its file that
 * ended at or past the line's end; without one, it is as old as the
 * read that found it.
 */
static uint64_t line_time(struct jt_stream *s, struct jit_feed *f,
			  const struct jt_jit_event *ev)
{
	struct jt_jit_source *src = f->src;

	if (src->kind != JT_JIT_PERFMAP)
		return f->read_time;
	while (src->write_next < src->write_end &&
	       s->writes[src->write_next].end < ev->file_end)
		src->write_next++;
	if (src->write_next == src->write_end)
		return f->read_time;
	src->timed_lines++;
	return s->writes[src->write_next].time;
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

/*
 * The item refers to its jt_jit_item by index until loading ends: the
 * array still grows.
 */
static void on_jit(void *ctx, const struct jt_jit_event *ev)
{
	struct jit_feed *f = ctx;
	struct jt_stream *s = f->s;
	struct jt_jit_item *j;
	struct jt_item it = { .kind = JT_IT_JIT, .seq = f->seq };

	if (f->err)
		return;
	if (jt_reserve(&s->jit, &s->jit_cap, s->njit + 1, sizeof(*s->jit))) {
		f->err = -ENOMEM;
		return;
	}
	j = &s->jit[s->njit];
	*j = (struct jt_jit_item){
		/* Times the file gives are the writer's; else when we read. */
		.time = f->src->kind == JT_JIT_PERFMAP ? line_time(s, f, ev) :
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
		.name = ev->name_len ?
				jt_intern(&s->strs, ev->name, ev->name_len) :
				NULL,
	};
	/*
	 * A file found at attach holds code loaded before the process was
	 * known: that code is what was there when we came, in file order.
	 */
	if (f->src->found == JT_FOUND_ATTACH && j->time < f->src->found_ns)
		j->time = f->src->found_ns;
	it.time = j->time;
	it.data = (const void *)(uintptr_t)s->njit++;
	f->err = push(s, f->cap, &it);
}

static struct jt_jit_source *find_source(struct jt_stream *s, uint32_t id)
{
	size_t i;

	for (i = 0; i < s->nsources; i++)
		if (s->sources[i].id == id && !s->sources[i].status)
			return &s->sources[i];
	return NULL;
}

static int add_jit(struct jt_stream *s, size_t *cap, const struct jt_rec *r,
		   uint64_t seq)
{
	const struct jt_jit_rec *jr = r->data;
	struct jit_feed f = { s, NULL, 0, seq, cap, 0 };
	const void *bytes = jr + 1;
	size_t n;

	if (r->len < sizeof(*jr) || !(f.src = find_source(s, jr->file_id))) {
		s->unknown_recs++;
		return 0;
	}
	n = r->len - sizeof(*jr);
	f.read_time = jr->time;
	if (jr->offset != f.src->next_offset) {
		/*
		 * A piece is missing: a perf-map starts over at the next
		 * line; a jitdump cannot find its next record again.
		 */
		f.src->gaps++;
		jt_perfmap_free(&f.src->map);
		jt_perfmap_init(&f.src->map);
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
	return f.err;
}

static int add_write(struct jt_stream *s, const struct jt_rec *r, uint64_t seq)
{
	const struct jt_write_event *w = r->data;
	struct jt_mapwrite *n;

	if (r->len != sizeof(*w) || w->h.size != sizeof(*w))
		return 0;
	if (jt_reserve(&s->writes, &s->writes_cap, s->nwrites + 1,
		       sizeof(*s->writes)))
		return -ENOMEM;
	n = s->writes;
	n[s->nwrites++] = (struct jt_mapwrite){ w->h.pid, w->ino, w->end,
						w->h.time, seq };
	return 0;
}

static int add_buildid(struct jt_stream *s, const struct jt_rec *r)
{
	if (r->len < sizeof(struct jt_buildid_rec) ||
	    ((const struct jt_buildid_rec *)r->data)->len > 20)
		return 0;
	if (jt_reserve(&s->buildids, &s->buildids_cap, s->nbuildids + 1,
		       sizeof(*s->buildids)))
		return -ENOMEM;
	s->buildids[s->nbuildids++] = r->data;
	return 0;
}

const struct jt_buildid_rec *jt_stream_buildid(const struct jt_stream *s,
					       uint64_t dev, uint64_t ino)
{
	size_t i;

	for (i = 0; i < s->nbuildids; i++)
		if (s->buildids[i]->dev == dev && s->buildids[i]->ino == ino)
			return s->buildids[i];
	return NULL;
}

static int cmp_write(const void *a, const void *b)
{
	const struct jt_mapwrite *x = a, *y = b;

	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	if (x->ino != y->ino)
		return x->ino < y->ino ? -1 : 1;
	if (x->time != y->time)
		return x->time < y->time ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* First write after (upper) or at (lower) (pid, ino) in the sorted list. */
static size_t write_bound(const struct jt_stream *s, uint32_t pid, uint64_t ino,
			  bool upper)
{
	size_t lo = 0, hi = s->nwrites;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const struct jt_mapwrite *w = &s->writes[mid];
		bool before = w->pid < pid ||
			      (w->pid == pid &&
			       (w->ino < ino || (upper && w->ino == ino)));

		if (before)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/*
 * Each perf-map source's run of writes in the sorted list, by binary
 * search: a file written a byte at a time gives millions of writes.
 */
static void bind_writes(struct jt_stream *s)
{
	size_t i;

	if (s->nwrites)
		qsort(s->writes, s->nwrites, sizeof(*s->writes), cmp_write);
	for (i = 0; i < s->nsources; i++) {
		struct jt_jit_source *src = &s->sources[i];

		src->write_next = write_bound(s, src->pid, src->ino, false);
		src->write_end = write_bound(s, src->pid, src->ino, true);
	}
}

static int cmp_item(const void *a, const void *b)
{
	const struct jt_item *x = a, *y = b;

	if (x->time != y->time)
		return x->time < y->time ? -1 : 1;
	if (x->seq != y->seq)
		return x->seq < y->seq ? -1 : 1;
	/* Records of one JIT piece: in the order the file has them. */
	return x->data < y->data ? -1 : x->data > y->data;
}

struct deferred {
	struct jt_rec rec;
	uint64_t seq;
};

/*
 * JIT file pieces are parsed last: a piece can reach the file before the
 * BPF event of the write that made it, and perf-map lines need those.
 */
static int read_all(struct jt_stream *s)
{
	struct deferred *jit = NULL;
	size_t cap = 0, njit = 0, jit_cap = 0, i;
	struct jt_rec r;
	uint64_t seq = 0;
	int err = 0;

	while (!err && jt_reader_next(&s->rd, &r) == 1) {
		seq++;
		switch (r.type) {
		case JT_REC_META:
			err = add_meta(s, r.data, r.len);
			break;
		case JT_REC_BPF:
			err = add_bpf(s, &cap, &r, seq);
			if (!err && r.len >= sizeof(struct jt_hdr) &&
			    ((const struct jt_hdr *)r.data)->type ==
				    JT_EV_MAPWRITE)
				err = add_write(s, &r, seq);
			break;
		case JT_REC_PERF:
			err = add_perf(s, &cap, &r, seq);
			break;
		case JT_REC_JITFILE:
			err = add_source(s, &r);
			break;
		case JT_REC_JIT:
			err = jt_reserve(&jit, &jit_cap, njit + 1,
					 sizeof(*jit));
			if (!err)
				jit[njit++] = (struct deferred){ r, seq };
			break;
		case JT_REC_KALLSYMS:
			s->kallsyms = r.data;
			s->kallsyms_len = r.len;
			break;
		case JT_REC_BUILDID:
			err = add_buildid(s, &r);
			break;
		case JT_REC_LOST:
			if (r.len >= sizeof(s->lost))
				memcpy(&s->lost, r.data, sizeof(s->lost));
			break;
		case JT_REC_FINISH:
			if (r.len >= sizeof(s->finish)) {
				memcpy(&s->finish, r.data, sizeof(s->finish));
				s->finished = 1;
			}
			break;
		default:
			s->unknown_recs++;
		}
	}
	bind_writes(s);
	for (i = 0; i < njit && !err; i++)
		err = add_jit(s, &cap, &jit[i].rec, jit[i].seq);
	free(jit);
	return err;
}

static int load(struct jt_stream *s, int err, const char *path, char *msg,
		size_t msglen)
{
	if (!err)
		err = read_all(s);
	if (err) {
		snprintf(msg, msglen, "%s: %s", path,
			 err == -EINVAL	 ? "not a jittrace recording" :
			 err == -EPROTO	 ? "unsupported recording version" :
			 err == -ENODATA ? "empty: no recording in it" :
			 err == -ESPIPE	 ? "not a regular file or a pipe" :
					   strerror(-err));
		return err;
	}
	for (size_t i = 0; i < s->n; i++)
		if (s->items[i].kind == JT_IT_JIT)
			s->items[i].data = &s->jit[(uintptr_t)s->items[i].data];
	if (s->n)
		qsort(s->items, s->n, sizeof(*s->items), cmp_item);
	return 0;
}

int jt_stream_load(struct jt_stream *s, const char *path, char *msg,
		   size_t msglen)
{
	memset(s, 0, sizeof(*s));
	return load(s, jt_reader_open(&s->rd, path), path, msg, msglen);
}

int jt_stream_load_mem(struct jt_stream *s, const void *buf, size_t len,
		       char *msg, size_t msglen)
{
	memset(s, 0, sizeof(*s));
	return load(s, jt_reader_open_mem(&s->rd, buf, len), "(memory)", msg,
		    msglen);
}

void jt_stream_warn(const struct jt_stream *s, const char *path)
{
	if (s->rd.truncated)
		fprintf(stderr,
			"jittrace: %s: %s at byte %llu of %zu; "
			"showing the %zu events before it\n",
			path, s->rd.why, (unsigned long long)s->rd.stop_offset,
			s->rd.size, s->n);
	else if (!s->finished)
		fprintf(stderr,
			"jittrace: %s: recording was not finished "
			"(recorder killed?); showing all %zu events\n",
			path, s->n);
	if (s->unknown_recs)
		fprintf(stderr,
			"jittrace: %s: %llu malformed records skipped\n", path,
			(unsigned long long)s->unknown_recs);
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
	free(s->items);
	for (i = 0; i < s->nsources; i++) {
		jt_jitdump_free(&s->sources[i].dump);
		jt_perfmap_free(&s->sources[i].map);
	}
	free(s->sources);
	free(s->writes);
	free(s->buildids);
	free(s->jit);
	jt_strtab_free(&s->strs);
	jt_reader_close(&s->rd);
	memset(s, 0, sizeof(*s));
}
