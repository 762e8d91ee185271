// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <linux/perf_event.h>
#include "export/jitdir.h"
#include "export/jitelf.h"
#include "export/perfdata.h"

/* perf's own cap on a chain (PERF_MAX_STACK_DEPTH plus markers). */
#define JT_PERF_CHAIN_MAX 512
#include "lib/hash.h"
#include "lib/perf_rec.h"
#include "model/kallsyms.h"

#define PERF_MAGIC2 0x32454c4946524550ULL /* "PERFILE2" */
#define HEADER_BUILD_ID 2
#define HEADER_NRCPUS 7
#define HEADER_CMDLINE 11
#define HEADER_EVENT_DESC 12
#define EVENT_ID 1 /* the one event's id, in the attr's table and its desc */
#define NAME_ALIGN 64
#define MISC_MMAP_BUILD_ID (1 << 14)
#define MISC_BUILD_ID_SIZE (1 << 15)
#define WBUF (1 << 20)

struct file_section {
	uint64_t offset;
	uint64_t size;
};

struct file_header {
	uint64_t magic;
	uint64_t size;
	uint64_t attr_size;
	struct file_section attrs;
	struct file_section data;
	struct file_section event_types;
	uint64_t features[4]; /* a 256-bit map */
};

struct file_attr {
	struct perf_event_attr attr;
	struct file_section ids;
};

/* A file with a build-id, for the HEADER_BUILD_ID table. */
struct bid_file {
	uint64_t dev;
	uint64_t ino;
	const struct jt_buildid_rec *bid;
	const char *path;
};

/* A JIT function's ELF file: one per (process, name, size). */
struct jit_file {
	uint32_t pid;
	const char *name; /* interned by the stream */
	uint64_t size;
	char *path;
};

/* A retro-named function already given an early mapping. */
struct early {
	uint32_t pid;
	const char *name;
	uint64_t start;
};

struct jt_perfdata {
	int fd;
	char *path;
	char jitdir[PATH_MAX];
	int jitdir_fd;
	bool created;  /* path is ours to remove */
	uint32_t cpus; /* one past the highest CPU a sample ran on */
	bool done;     /* closed whole: what was written stays */
	const struct jt_stream *s;
	uint32_t pid;
	bool callchain;
	uint64_t chain[JT_PERF_CHAIN_MAX];
	struct perf_event_attr attr;
	unsigned char *buf;
	size_t len;
	uint64_t data_bytes;
	uint64_t jit_files;
	struct jt_hash bids;  /* (dev, ino) -> struct bid_file */
	struct jt_hash elves; /* (pid, name, size) -> struct jit_file */
	struct jt_hash early; /* of struct early */
	bool kernel_done;
	uint64_t records; /* since the last FINISHED_ROUND */
	int err;
};

/*
 * Records go out in time order: a FINISHED_ROUND now and then lets
 * perf's ordered events flush as it reads, instead of holding the file.
 */
#define ROUND_RECORDS 10000
#define PERF_RECORD_FINISHED_ROUND                                             \
	68 /* perf's own, PERF_RECORD_USER_TYPE_START + 4 */

static uint64_t data_offset(void)
{
	return sizeof(struct file_header) + sizeof(struct file_attr);
}

static void flush(struct jt_perfdata *w)
{
	size_t off = 0;

	while (off < w->len && !w->err) {
		ssize_t n = write(w->fd, w->buf + off, w->len - off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			w->err = -errno;
		else
			off += n;
	}
	w->len = 0;
}

static void round_mark(struct jt_perfdata *w);

static void put(struct jt_perfdata *w, const void *p, size_t n)
{
	if (w->len + n > WBUF)
		flush(w);
	memcpy(w->buf + w->len, p, n);
	w->len += n;
	w->data_bytes += n;
}

/* sample_id_all: TID, TIME, CPU, as the attr's sample_type has them. */
struct sample_id {
	uint32_t pid, tid;
	uint64_t time;
	uint32_t cpu, res;
};

static void record(struct jt_perfdata *w, uint32_t type, uint16_t misc,
		   const void *body, size_t blen, const char *name,
		   size_t nlen_aligned, const struct sample_id *id)
{
	struct perf_event_header h = {
		type, misc, sizeof(h) + blen + nlen_aligned + sizeof(*id)
	};
	static const char zeros[NAME_ALIGN + 8];
	size_t nlen = name ? strlen(name) + 1 : 0;

	put(w, &h, sizeof(h));
	put(w, body, blen);
	if (name) {
		put(w, name, nlen);
		put(w, zeros, nlen_aligned - nlen);
	}
	put(w, id, sizeof(*id));
}

static size_t align8(size_t n)
{
	return (n + 7) & ~(size_t)7;
}

struct mmap2_body {
	uint32_t pid, tid;
	uint64_t addr, len, pgoff;
	union {
		struct {
			uint32_t maj, min;
			uint64_t ino, ino_generation;
		};
		struct {
			uint8_t build_id_size;
			uint8_t res1;
			uint16_t res2;
			uint8_t build_id[20];
		};
	};
	uint32_t prot, flags;
};

static bool bid_eq(const void *val, const void *key)
{
	const struct bid_file *a = val, *b = key;

	return a->dev == b->dev && a->ino == b->ino;
}

/* Files with build-ids go in the header too, as perf record puts them. */
static void note_bid(struct jt_perfdata *w, const struct jt_region *r,
		     const struct jt_buildid_rec *b)
{
	struct bid_file k = { r->dev, r->ino, b, r->path }, *f;
	uint64_t h = jt_hash_u64(r->dev ^ jt_hash_u64(r->ino));

	if (jt_hash_find(&w->bids, h, bid_eq, &k))
		return;
	f = malloc(sizeof(*f));
	if (f && !jt_hash_add(&w->bids, h, f))
		*f = k;
	else
		free(f);
}

/* As /proc/PID/maps names it, but anonymous memory as perf does. */
static const char *region_file(const struct jt_region *r)
{
	if (r->kind == JT_RK_ANON || r->kind == JT_RK_SHARED_ANON ||
	    (r->kind == JT_RK_FILE && !r->path))
		return "//anon";
	return jt_region_name(r);
}

static void mmap2_region(struct jt_perfdata *w, const struct jt_hdr *h,
			 const struct jt_region *r)
{
	const struct jt_buildid_rec *b =
		r->kind == JT_RK_FILE ?
			jt_stream_buildid(w->s, r->dev, r->ino) :
			NULL;
	struct mmap2_body m = { h->pid, h->tid, r->start, r->end - r->start,
				r->kind == JT_RK_FILE ? r->pgoff : 0 };
	struct sample_id id = { h->pid, h->tid, h->time, h->cpu, 0 };
	const char *name = region_file(r);
	uint16_t misc = PERF_RECORD_MISC_USER;

	if (b && b->len) {
		misc |= MISC_MMAP_BUILD_ID;
		m.build_id_size = b->len;
		memcpy(m.build_id, b->id, b->len);
		note_bid(w, r, b);
	} else if (r->kind == JT_RK_FILE) {
		m.maj = r->dev >> 20;
		m.min = r->dev & 0xfffff;
		m.ino = r->ino;
	}
	if (!(r->prot & PROT_EXEC))
		misc |= PERF_RECORD_MISC_MMAP_DATA;
	m.prot = r->prot;
	m.flags = jt_region_shared(r) ? MAP_SHARED : MAP_PRIVATE;
	record(w, PERF_RECORD_MMAP2, misc, &m, sizeof(m), name,
	       align8(strlen(name) + 1), &id);
}

/*
 * The range an event mapped anew, to say what now lies there. Not an
 * mprotect: perf keeps the last mapping it was told of at an address, so
 * re-announcing a W^X flip would hide the JIT functions inside, which is
 * what perf's own MMAP2 records get wrong.
 */
static bool event_range(const struct jt_hdr *h, uint32_t len, uint64_t *s,
			uint64_t *e)
{
	const struct jt_map_event *ev = (const void *)h;

	if (!jt_event_valid(h, len) || h->type == JT_EV_EXEC ||
	    h->type == JT_EV_FORK || h->type == JT_EV_EXIT ||
	    h->type == JT_EV_MAPWRITE || h->type == JT_EV_COW ||
	    h->type == JT_EV_MUNMAP || h->type == JT_EV_SHMDT ||
	    h->type == JT_EV_MPROTECT || (ev->flags & JT_MF_EXEC_LOAD))
		return false;
	if (h->type != JT_EV_VMA && h->type != JT_EV_BRK && ev->result < 0 &&
	    ev->result > -4096)
		return false;
	switch (h->type) {
	case JT_EV_MMAP:
		*s = ev->result;
		*e = *s + JT_PAGE_ALIGN(ev->args[1]);
		break;
	case JT_EV_MREMAP:
		*s = ev->result;
		*e = *s + JT_PAGE_ALIGN(ev->args[2]);
		break;
	case JT_EV_BRK:
		*s = JT_PAGE_ALIGN(ev->args[1]);
		*e = JT_PAGE_ALIGN(ev->result);
		break;
	default: /* VMA, SHMAT */
		*s = ev->vma.start;
		*e = ev->vma.end;
	}
	return *s < *e;
}

static void map_event(struct jt_perfdata *w, struct jt_model *m,
		      const struct jt_item *it)
{
	const struct jt_hdr *h = it->data;
	struct jt_proc *p = jt_model_find(m, h->pid);
	const struct jt_region *r;
	uint64_t s, e;

	if (!p || !p->as || !event_range(h, it->len, &s, &e))
		return;
	for (r = jt_aspace_from(p->as, s); r && r->start < e;
	     r = jt_aspace_next(p->as, r))
		mmap2_region(w, h, r);
}

struct comm_body {
	uint32_t pid, tid;
	char comm[JT_COMM_LEN];
};

/* A process perf has no COMM for (it was there before we came). */
static void exec_comm(struct jt_perfdata *w, const struct jt_item *it)
{
	const struct jt_exec_event *ev = it->data;
	struct comm_body c = { ev->h.pid, ev->h.pid };
	struct sample_id id = { ev->h.pid, ev->h.tid, ev->h.time, ev->h.cpu,
				0 };

	if (!jt_event_valid(&ev->h, it->len))
		return;
	memcpy(c.comm, ev->comm, sizeof(c.comm));
	c.comm[sizeof(c.comm) - 1] = 0;
	record(w, PERF_RECORD_COMM,
	       ev->flags & JT_EXEC_ATTACH ? 0 : PERF_RECORD_MISC_COMM_EXEC, &c,
	       sizeof(c), NULL, 0, &id);
}

static bool jit_eq(const void *val, const void *key)
{
	const struct jit_file *a = val, *b = key;

	return a->pid == b->pid && a->name == b->name && a->size == b->size;
}

/* The ELF perf names the function by: made once, then reused. */
static const char *jit_elf(struct jt_perfdata *w, uint32_t pid,
			   const char *name, uint64_t size)
{
	struct jit_file k = { pid, name, size, NULL }, *f;
	uint64_t h = jt_hash_u64(pid ^ jt_hash_u64((uintptr_t)name ^ size));
	char base[64];
	int fd, err;

	f = jt_hash_find(&w->elves, h, jit_eq, &k);
	if (f)
		return f->path;
	snprintf(base, sizeof(base), "jitted-%u-%llu.so", pid,
		 (unsigned long long)++w->jit_files);
	fd = openat(w->jitdir_fd, base,
		    O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (fd < 0) {
		w->err = -errno;
		return NULL;
	}
	err = jt_jitelf_write(fd, name, size);
	if (close(fd) && !err)
		err = -errno;
	if (err) {
		w->err = err;
		return NULL;
	}
	f = malloc(sizeof(*f));
	if (!f || asprintf(&k.path, "%s/%s", w->jitdir, base) < 0 ||
	    jt_hash_add(&w->elves, h, f)) {
		free(f);
		w->err = -ENOMEM;
		return NULL;
	}
	*f = k;
	return f->path;
}

static void mmap2_jit(struct jt_perfdata *w, uint32_t pid, const char *name,
		      uint64_t start, uint64_t end, uint64_t time)
{
	struct mmap2_body m = { pid, pid, start, end - start,
				JT_JITELF_TEXT_OFFSET };
	struct sample_id id = { pid, pid, time, 0, 0 };
	const char *path;

	if (!name || end <= start ||
	    !(path = jit_elf(w, pid, name, end - start)))
		return;
	m.prot = PROT_READ | PROT_EXEC;
	m.flags = MAP_PRIVATE;
	record(w, PERF_RECORD_MMAP2, PERF_RECORD_MISC_USER, &m, sizeof(m), path,
	       align8(strlen(path) + 1), &id);
}

/* jitdump wins where both name an address, as jittrace's names go. */
static void jit_item(struct jt_perfdata *w, struct jt_model *m,
		     const struct jt_jit_item *j)
{
	struct jt_proc *p = jt_model_find(m, j->pid);
	const struct jt_jitsym *s;

	if (!p)
		return;
	s = jt_jittab_find(&p->jitdump, j->addr);
	if (j->source == JT_SRC_PERFMAP &&
	    (s || !(s = jt_jittab_find(&p->perfmap, j->addr))))
		return;
	if (s && s->start == j->addr)
		mmap2_jit(w, j->pid, s->name, s->start, s->end, j->time);
}

static bool early_eq(const void *val, const void *key)
{
	const struct early *a = val, *b = key;

	return a->pid == b->pid && a->name == b->name && a->start == b->start;
}

/*
 * A sample named by a code-load record written after it: its function
 * gets a mapping just before the sample, once. Nothing else held the
 * address in between, or jittrace would not have named it so.
 */
static void early_jit(struct jt_perfdata *w, const struct jt_sample *smp,
		      const struct jt_symres *y)
{
	struct early k = { smp->pid, y->sym, y->sym_start }, *e;
	uint64_t h =
		jt_hash_u64(k.pid ^ jt_hash_u64((uintptr_t)k.name ^ k.start));

	if (jt_hash_find(&w->early, h, early_eq, &k))
		return;
	e = malloc(sizeof(*e));
	if (!e || jt_hash_add(&w->early, h, e)) {
		free(e);
		w->err = -ENOMEM;
		return;
	}
	*e = k;
	mmap2_jit(w, smp->pid, y->sym, y->sym_start, y->sym_end,
		  smp->time ? smp->time - 1 : 0);
}

/*
 * The chain perf reads: the kernel's frames, then the user frames as the
 * unwinder found them (a --call-graph dwarf recording keeps no user
 * chain of its own), each context behind its marker. JIT frames named
 * by a late record get their ELF early, as the leaf does.
 */
static uint64_t chain_of(struct jt_perfdata *w, const struct jt_sample *smp,
			 const struct jt_symres *y)
{
	uint64_t nr = 0, ctx = 0;
	uint32_t i;

	if (!y || !y->nframes) {
		nr = smp->nr_chain < JT_PERF_CHAIN_MAX ? smp->nr_chain :
							 JT_PERF_CHAIN_MAX;
		if (nr)
			memcpy(w->chain, smp->chain, nr * sizeof(uint64_t));
		return nr;
	}
	for (i = 0; i < y->nframes && nr + 2 < JT_PERF_CHAIN_MAX; i++) {
		const struct jt_symres *f = &y->frames[i];
		uint64_t want =
			f->kernel ? PERF_CONTEXT_KERNEL : PERF_CONTEXT_USER;

		/* perf finds inlined functions in the DWARF itself. */
		if (f->inlined)
			continue;
		if (want != ctx)
			w->chain[nr++] = ctx = want;
		w->chain[nr++] = f->ip;
		if (f->retro && f->sym && f->sym_end > f->sym_start)
			early_jit(w, smp, f);
	}
	return nr;
}

static void sample(struct jt_perfdata *w, const struct jt_item *it,
		   const struct jt_symres *y)
{
	const struct perf_event_header *ph = it->data;
	struct jt_sample smp;
	struct {
		uint64_t ip;
		uint32_t pid, tid;
		uint64_t time;
		uint32_t cpu, res;
		uint64_t period;
	} b;
	struct perf_event_header h = { PERF_RECORD_SAMPLE, ph->misc, 0 };
	uint64_t nr = 0;

	if (jt_perf_sample(it->data, it->len, w->s->sample_type, &smp) ||
	    (w->pid && smp.pid != w->pid))
		return;
	if (y && y->retro && y->sym && y->sym_end > y->sym_start)
		early_jit(w, &smp, y);
	b = (typeof(b)){ smp.ip,  smp.pid, smp.tid,   smp.time,
			 smp.cpu, 0,	   smp.period };
	if (smp.cpu >= w->cpus)
		w->cpus = smp.cpu + 1;
	if (w->callchain)
		nr = chain_of(w, &smp, y);
	h.size = sizeof(h) + sizeof(b) +
		 (w->callchain ? 8 + nr * sizeof(uint64_t) : 0);
	put(w, &h, sizeof(h));
	put(w, &b, sizeof(b));
	if (w->callchain) {
		put(w, &nr, sizeof(nr));
		put(w, w->chain, nr * sizeof(uint64_t));
	}
}

/* COMM, FORK, EXIT and LOST as the kernel gave them: the ids match. */
static void side_band(struct jt_perfdata *w, const struct jt_item *it)
{
	const struct perf_event_header *h = it->data;
	struct jt_sample_id id;

	if (h->type != PERF_RECORD_COMM && h->type != PERF_RECORD_FORK &&
	    h->type != PERF_RECORD_EXIT && h->type != PERF_RECORD_LOST)
		return;
	if (w->pid && h->type != PERF_RECORD_LOST &&
	    (jt_perf_sample_id(h, it->len, w->s->sample_type, &id) ||
	     id.pid != w->pid))
		return;
	put(w, h, h->size);
}

/*
 * bpf_prog_TAG, TAG 16 hex digits, as the kernel names a program: not
 * the kernel's own bpf_prog_realloc.cold and the like.
 */
static bool is_prog(const char *name)
{
	return !strncmp(name, "bpf_prog_", 9) &&
	       strspn(name + 9, "0123456789abcdef") >= 16;
}

/* What perf cannot find in /proc/kallsyms later: the recording's BPF. */
static void bpf_ksymbols(struct jt_perfdata *w, const struct jt_kallsyms *k)
{
	struct {
		uint64_t addr;
		uint32_t len;
		uint16_t type;
		uint16_t flags;
	} b = { .type = PERF_RECORD_KSYMBOL_TYPE_BPF };
	struct sample_id id = { UINT32_MAX, 0, 0, 0, 0 };
	size_t i, nlen;

	for (i = 0; i + 1 < k->n; i++) {
		const char *name = k->syms[i].name;

		if (!is_prog(name))
			continue;
		/* Up to the next symbol: the program's end where the
		 * recorder knew its length, as it does for its own. */
		b.addr = k->syms[i].addr;
		b.len = k->syms[i + 1].addr - b.addr;
		if (!b.len || b.len > (1u << 20))
			continue;
		nlen = strlen(name) + 1;
		record(w, PERF_RECORD_KSYMBOL, 0, &b, sizeof(b), name,
		       align8(nlen), &id);
	}
}

/*
 * The kernel map as perf record announces it: without it perf does not
 * relocate kallsyms and names no kernel sample. _text from the
 * recording's own copy of /proc/kallsyms; BPF programs, which are gone
 * once the recorder is, as perf record's KSYMBOL records give them.
 */
static void kernel_mmap(struct jt_perfdata *w)
{
	static const char name[] = "[kernel.kallsyms]_text";
	struct {
		uint32_t pid, tid;
		uint64_t start, len, pgoff;
	} m = { UINT32_MAX, 0 };
	struct sample_id id = { UINT32_MAX, 0, 0, 0, 0 };
	struct jt_kallsyms k;
	uint64_t end = 0;
	size_t i;

	w->kernel_done = true;
	if (!w->s->kallsyms ||
	    jt_kallsyms_load(&k, w->s->kallsyms, w->s->kallsyms_len))
		return;
	for (i = 0; i < k.n; i++) {
		if (!strcmp(k.syms[i].name, "_text"))
			m.start = k.syms[i].addr;
		else if (!strcmp(k.syms[i].name, "_etext"))
			end = k.syms[i].addr;
	}
	if (m.start) {
		/* Up to the end of its text, so BPF programs and modules
		 * are outside it and get maps of their own. */
		m.len = end > m.start ? end - m.start : UINT64_MAX - m.start;
		m.pgoff = m.start;
		record(w, PERF_RECORD_MMAP, PERF_RECORD_MISC_KERNEL, &m,
		       sizeof(m), name, align8(sizeof(name)), &id);
		bpf_ksymbols(w, &k);
	}
	jt_kallsyms_free(&k);
}

static void round_mark(struct jt_perfdata *w)
{
	struct perf_event_header h = { PERF_RECORD_FINISHED_ROUND, 0,
				       sizeof(h) };

	w->records = 0;
	put(w, &h, sizeof(h));
}

void jt_perfdata_item(struct jt_perfdata *w, struct jt_model *m,
		      const struct jt_item *it, const struct jt_symres *y)
{
	const struct perf_event_header *ph = it->data;
	const struct jt_hdr *bh = it->data;

	if (w->err)
		return;
	if (!w->kernel_done)
		kernel_mmap(w);
	if (++w->records >= ROUND_RECORDS)
		round_mark(w);
	if (it->kind == JT_IT_JIT) {
		const struct jt_jit_item *j = it->data;

		if ((!w->pid || j->pid == w->pid) && j->op != JT_JIT_CLOSE)
			jit_item(w, m, j);
	} else if (it->kind == JT_IT_PERF) {
		if (ph->type == PERF_RECORD_SAMPLE)
			sample(w, it, y);
		else
			side_band(w, it);
	} else if (it->len >= sizeof(*bh) && (!w->pid || bh->pid == w->pid)) {
		if (bh->type == JT_EV_EXEC)
			exec_comm(w, it);
		else
			map_event(w, m, it);
	}
}

/* The recording's event, for perf to name it. */
static void event_attr(struct perf_event_attr *a, const struct jt_stream *s)
{
	const char *ev = jt_stream_meta(s, "perf.event");
	const char *freq = jt_stream_meta(s, "perf.freq");

	a->type = PERF_TYPE_SOFTWARE;
	a->config = PERF_COUNT_SW_CPU_CLOCK;
	if (ev && !strcmp(ev, "task-clock")) {
		a->config = PERF_COUNT_SW_TASK_CLOCK;
	} else if (ev && !strcmp(ev, "page-faults")) {
		a->config = PERF_COUNT_SW_PAGE_FAULTS;
	} else if (ev && !strcmp(ev, "cycles")) {
		a->type = PERF_TYPE_HARDWARE;
		a->config = PERF_COUNT_HW_CPU_CYCLES;
	} else if (ev && !strcmp(ev, "instructions")) {
		a->type = PERF_TYPE_HARDWARE;
		a->config = PERF_COUNT_HW_INSTRUCTIONS;
	}
	if (freq && strtoull(freq, NULL, 10)) {
		a->freq = 1;
		a->sample_freq = strtoull(freq, NULL, 10);
	} else {
		a->sample_period = 1;
	}
}

struct jt_perfdata *jt_perfdata_open(const char *path,
				     const struct jt_stream *s, uint32_t pid,
				     bool callchain, int *err)
{
	struct jt_perfdata *w = calloc(1, sizeof(*w));

	*err = -ENOMEM;
	if (!w)
		return NULL;
	w->fd = w->jitdir_fd = -1;
	w->s = s;
	w->pid = pid;
	/* The stream has read no META yet: its sample_type is not known. */
	w->callchain = callchain;
	w->buf = malloc(WBUF);
	w->path = strdup(path);
	if (!w->buf || !w->path)
		goto fail;
	w->fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC,
		     0600);
	w->created = w->fd >= 0;
	if (w->fd < 0 || lseek(w->fd, data_offset(), SEEK_SET) < 0) {
		*err = -errno;
		goto fail;
	}
	w->jitdir_fd = jt_jitdir_make(path, w->jitdir);
	if (w->jitdir_fd < 0) {
		*err = w->jitdir_fd;
		goto fail;
	}
	event_attr(&w->attr, s);
	w->attr.size = sizeof(w->attr);
	w->attr.sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_TID |
			      PERF_SAMPLE_TIME | PERF_SAMPLE_CPU |
			      PERF_SAMPLE_PERIOD |
			      (w->callchain ? PERF_SAMPLE_CALLCHAIN : 0);
	w->attr.sample_id_all = 1;
	w->attr.mmap = w->attr.mmap2 = w->attr.comm = w->attr.task = 1;
	w->attr.ksymbol = 1;
	w->attr.use_clockid = 1;
	w->attr.clockid = CLOCK_MONOTONIC;
	*err = 0;
	return w;
fail:
	jt_perfdata_abort(w);
	return NULL;
}

/* HEADER_BUILD_ID: one record per file, its name padded to 64. */
static void build_ids(struct jt_perfdata *w)
{
	size_t i;

	jt_hash_for_each (&w->bids, i) {
		const struct bid_file *f = w->bids.e[i].val;
		struct {
			struct perf_event_header h;
			int32_t pid;
			uint8_t id[20];
			uint8_t size;
			uint8_t res[3];
		} r = {};
		size_t nlen = (strlen(f->path) + 1 + NAME_ALIGN - 1) &
			      ~(size_t)(NAME_ALIGN - 1);
		static const char zeros[NAME_ALIGN];

		r.h.misc = PERF_RECORD_MISC_USER | MISC_BUILD_ID_SIZE;
		r.h.size = sizeof(r) + nlen;
		r.pid = -1;
		memcpy(r.id, f->bid->id, f->bid->len);
		r.size = f->bid->len;
		put(w, &r, sizeof(r));
		put(w, f->path, strlen(f->path) + 1);
		put(w, zeros, nlen - strlen(f->path) - 1);
	}
}

/* perf's header string: its length padded to 64, then the bytes. */
static void put_string(struct jt_perfdata *w, const char *s)
{
	static const char zeros[NAME_ALIGN];
	uint32_t len = (strlen(s) + 1 + NAME_ALIGN - 1) & ~(NAME_ALIGN - 1);

	put(w, &len, sizeof(len));
	put(w, s, strlen(s));
	put(w, zeros, len - strlen(s));
}

/*
 * HEADER_NRCPUS: hotspot sizes its per-CPU tables by it, and crashed now
 * and then without (a sample on CPU 1 of none). The CPUs samples name.
 */
static void nrcpus(struct jt_perfdata *w)
{
	uint32_t n[2] = { w->cpus ? w->cpus : 1, w->cpus ? w->cpus : 1 };

	put(w, n, sizeof(n));
}

/* HEADER_CMDLINE: the recorded command, as perf report prints it. */
static void cmdline(struct jt_perfdata *w)
{
	const char *c = jt_stream_meta(w->s, "cmdline");
	uint32_t nr = 1;

	put(w, &nr, sizeof(nr));
	put_string(w, c ? c : "jittrace");
}

/*
 * HEADER_EVENT_DESC: the event's name beside its attr; hotspot lists
 * costs by it, and showed none without.
 */
static void event_desc(struct jt_perfdata *w)
{
	const char *ev = jt_stream_meta(w->s, "perf.event");
	uint32_t nr = 1, size = sizeof(w->attr), ids = 1;
	uint64_t id = EVENT_ID;

	put(w, &nr, sizeof(nr));
	put(w, &size, sizeof(size));
	put(w, &w->attr, sizeof(w->attr));
	put(w, &ids, sizeof(ids));
	put_string(w, ev ? ev : "cpu-clock");
	put(w, &id, sizeof(id));
}

/*
 * Features follow the data: a table of one section each, in the order of
 * their bits, then their contents.
 */
static void features(struct jt_perfdata *w, struct file_header *fh,
		     struct file_attr *fa, uint64_t data_end)
{
	uint64_t id = EVENT_ID;
	static void (*const write[])(struct jt_perfdata *) = { build_ids,
							       nrcpus, cmdline,
							       event_desc };
	static const int bits[] = { HEADER_BUILD_ID, HEADER_NRCPUS,
				    HEADER_CMDLINE, HEADER_EVENT_DESC };
	struct file_section table[4] = {};
	uint64_t at = data_end + sizeof(table);
	size_t i;

	w->data_bytes = 0;
	put(w, table, sizeof(table));
	for (i = 0; i < 4; i++) {
		fh->features[0] |= 1ULL << bits[i];
		table[i].offset = at;
		write[i](w);
		table[i].size = data_end + w->data_bytes - at;
		at += table[i].size;
	}
	/* The attr's id table, after the features. */
	fa->ids = (struct file_section){ at, sizeof(id) };
	put(w, &id, sizeof(id));
	flush(w);
	if (!w->err &&
	    pwrite(w->fd, table, sizeof(table), data_end) != sizeof(table))
		w->err = -errno;
}

int jt_perfdata_close(struct jt_perfdata *w)
{
	struct file_header fh = { .magic = PERF_MAGIC2,
				  .size = sizeof(fh),
				  .attr_size = sizeof(struct file_attr) };
	struct file_attr fa = { .attr = w->attr };
	uint64_t data_end;
	int err;

	round_mark(w);
	flush(w);
	data_end = data_offset() + w->data_bytes;
	fh.attrs = (struct file_section){ sizeof(fh), sizeof(fa) };
	fh.data = (struct file_section){ data_offset(), w->data_bytes };
	features(w, &fh, &fa, data_end);
	if (!w->err &&
	    (pwrite(w->fd, &fh, sizeof(fh), 0) != sizeof(fh) ||
	     pwrite(w->fd, &fa, sizeof(fa), sizeof(fh)) != sizeof(fa)))
		w->err = -errno;
	err = w->err;
	if (close(w->fd) && !err)
		err = -errno;
	w->fd = -1;
	w->done = !err;
	jt_perfdata_abort(w);
	return err;
}

void jt_perfdata_abort(struct jt_perfdata *w)
{
	size_t i;

	if (!w)
		return;
	if (w->fd >= 0)
		close(w->fd);
	/* Not finished: nothing half-written is left for perf to read. */
	if (!w->done && w->created)
		unlink(w->path);
	if (!w->done)
		jt_jitdir_remove(w->jitdir_fd, w->jitdir);
	if (w->jitdir_fd >= 0)
		close(w->jitdir_fd);
	jt_hash_for_each (&w->bids, i)
		free(w->bids.e[i].val);
	jt_hash_free(&w->bids);
	jt_hash_for_each (&w->elves, i) {
		struct jit_file *f = w->elves.e[i].val;

		free(f->path);
		free(f);
	}
	jt_hash_free(&w->elves);
	jt_hash_for_each (&w->early, i)
		free(w->early.e[i].val);
	jt_hash_free(&w->early);
	free(w->buf);
	free(w->path);
	free(w);
}
