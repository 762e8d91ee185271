// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <zlib.h>
#include "export/pprof.h"
#include "lib/utf8.h"
#include "gen/profile.pb-c.h"
#include "lib/hash.h"
#include "lib/reserve.h"
#include "lib/strtab.h"

struct pstring {
	const char *s; /* interned in the profile's own table */
	int64_t idx;
};

struct pfunction {
	int64_t name;
	int64_t file;
	uint64_t id;
};

struct pmapping {
	uint64_t start;
	uint64_t limit;
	uint64_t offset;
	int64_t file;
	int64_t build_id;
	uint64_t id;
};

struct plocation {
	uint64_t mapping;
	uint64_t addr;
	uint64_t function;
	uint64_t id;
};

struct psample {
	uint64_t *locs;
	size_t nlocs;
	int64_t pid; /* string indices of the labels */
	int64_t comm;
	int64_t source;
	int64_t count;
	int64_t nanos;
};

struct jt_pprof {
	struct jt_strtab strs;
	struct jt_hash str_idx; /* interned pointer -> struct pstring */
	const char **str;	/* by index */
	size_t nstr;
	size_t str_cap;
	struct jt_hash functions; /* of struct pfunction */
	struct pfunction **fn;
	size_t nfn;
	size_t fn_cap;
	struct jt_hash mappings; /* of struct pmapping */
	struct pmapping **map;
	size_t nmap;
	size_t map_cap;
	struct jt_hash locations; /* of struct plocation */
	struct plocation **loc;
	size_t nloc;
	size_t loc_cap;
	struct jt_hash samples; /* of struct psample */
	struct psample **smp;
	size_t nsmp;
	size_t smp_cap;
	int64_t time_ns;
	int64_t duration_ns;
	int64_t period_ns;
	bool hide_kernel;
	unsigned int labels; /* JT_PPROF_LABEL_* */
	/* the fixed strings */
	int64_t k_samples, k_count, k_cpu, k_nanoseconds;
	int64_t k_pid, k_comm, k_source;
};

/* Keep pointers; an array of them grows through jt_reserve. */
static int keep(void *arr, size_t *n, size_t *cap, void *v)
{
	void ***a = arr;

	if (jt_reserve(arr, cap, *n + 1, sizeof(void *)))
		return -ENOMEM;
	(*a)[(*n)++] = v;
	return 0;
}

static bool pstring_eq(const void *val, const void *key)
{
	return ((const struct pstring *)val)->s == key;
}

/*
 * s, or a copy with each byte that is not UTF-8 as U+FFFD (*tmp, freed by
 * the caller): Pyroscope refuses a whole profile for one such name, and a
 * JIT writes its names byte for byte.
 */
static const char *valid_utf8(const char *s, char **tmp)
{
	const unsigned char *u = (const unsigned char *)s;
	size_t n = strlen(s), i = 0, o = 0, len;

	while (i < n && (u[i] < 0x80 || (len = jt_utf8_len(u + i, n - i))))
		i += u[i] < 0x80 ? 1 : len;
	if (i == n || !(*tmp = malloc(3 * n + 1)))
		return s;
	for (i = 0; i < n;) {
		len = u[i] < 0x80 ? 1 : jt_utf8_len(u + i, n - i);
		if (len) {
			memcpy(*tmp + o, s + i, len);
			o += len;
			i += len;
		} else {
			memcpy(*tmp + o, "\xef\xbf\xbd", 3);
			o += 3;
			i++;
		}
	}
	(*tmp)[o] = 0;
	return *tmp;
}

/* The string's index in the table; -1 without memory. */
static int64_t string(struct jt_pprof *p, const char *s)
{
	char *tmp = NULL;
	const char *ok = valid_utf8(s ? s : "", &tmp);
	const char *in = jt_intern(&p->strs, ok, strlen(ok));
	uint64_t h = jt_hash_u64((uintptr_t)in);
	struct pstring *e;

	free(tmp);
	if (!in)
		return -1;
	e = jt_hash_find(&p->str_idx, h, pstring_eq, in);
	if (e)
		return e->idx;
	e = malloc(sizeof(*e));
	if (!e || jt_hash_add(&p->str_idx, h, e)) {
		free(e);
		return -1;
	}
	*e = (struct pstring){ in, (int64_t)p->nstr };
	if (keep(&p->str, &p->nstr, &p->str_cap, (void *)in))
		return -1;
	return e->idx;
}

struct jt_pprof *jt_pprof_new(int64_t time_ns, int64_t period_ns)
{
	struct jt_pprof *p = calloc(1, sizeof(*p));

	if (!p)
		return NULL;
	p->time_ns = time_ns;
	p->period_ns = period_ns;
	p->labels = JT_PPROF_LABELS_ALL;
	/* pprof: string_table[0] is "". */
	if (string(p, "") != 0 || (p->k_samples = string(p, "samples")) < 0 ||
	    (p->k_count = string(p, "count")) < 0 ||
	    (p->k_cpu = string(p, "cpu")) < 0 ||
	    (p->k_nanoseconds = string(p, "nanoseconds")) < 0 ||
	    (p->k_pid = string(p, "pid")) < 0 ||
	    (p->k_comm = string(p, "comm")) < 0 ||
	    (p->k_source = string(p, "source")) < 0) {
		jt_pprof_free(p);
		return NULL;
	}
	return p;
}

static bool function_eq(const void *val, const void *key)
{
	const struct pfunction *a = val, *b = key;

	return a->name == b->name && a->file == b->file;
}

static uint64_t function(struct jt_pprof *p, int64_t name, int64_t file)
{
	struct pfunction k = { name, file, 0 }, *f;
	uint64_t h = jt_hash_u64(name * 0x9e3779b97f4a7c15ULL ^ file);

	f = jt_hash_find(&p->functions, h, function_eq, &k);
	if (f)
		return f->id;
	f = malloc(sizeof(*f));
	if (!f || jt_hash_add(&p->functions, h, f)) {
		free(f);
		return 0;
	}
	*f = k;
	f->id = p->nfn + 1;
	return keep(&p->fn, &p->nfn, &p->fn_cap, f) ? 0 : f->id;
}

static bool mapping_eq(const void *val, const void *key)
{
	const struct pmapping *a = val, *b = key;

	return a->start == b->start && a->limit == b->limit &&
	       a->offset == b->offset && a->file == b->file &&
	       a->build_id == b->build_id;
}

static uint64_t mapping(struct jt_pprof *p, const struct jt_pprof_frame *fr)
{
	struct pmapping k = { fr->map_start,	       fr->map_limit,
			      fr->map_offset,	       string(p, fr->file),
			      string(p, fr->build_id), 0 },
			*m;
	uint64_t h;

	if (!fr->map_limit || k.file < 0 || k.build_id < 0)
		return 0;
	h = jt_hash_u64(k.start ^ jt_hash_u64(k.limit ^ (k.file << 20)));
	m = jt_hash_find(&p->mappings, h, mapping_eq, &k);
	if (m)
		return m->id;
	m = malloc(sizeof(*m));
	if (!m || jt_hash_add(&p->mappings, h, m)) {
		free(m);
		return 0;
	}
	*m = k;
	m->id = p->nmap + 1;
	return keep(&p->map, &p->nmap, &p->map_cap, m) ? 0 : m->id;
}

static bool location_eq(const void *val, const void *key)
{
	const struct plocation *a = val, *b = key;

	return a->mapping == b->mapping && a->addr == b->addr &&
	       a->function == b->function;
}

/* A location per (mapping, address, function): the time is in which. */
static uint64_t location(struct jt_pprof *p, const struct jt_pprof_frame *fr)
{
	int64_t name = string(p, fr->name), file = string(p, fr->file);
	struct plocation k = { 0, fr->addr, 0, 0 }, *l;
	uint64_t h;

	if (name < 0 || file < 0)
		return 0;
	k.mapping = mapping(p, fr);
	k.function = function(p, name, file);
	if (!k.function)
		return 0;
	h = jt_hash_u64(k.addr ^ jt_hash_u64(k.function ^ (k.mapping << 32)));
	l = jt_hash_find(&p->locations, h, location_eq, &k);
	if (l)
		return l->id;
	l = malloc(sizeof(*l));
	if (!l || jt_hash_add(&p->locations, h, l)) {
		free(l);
		return 0;
	}
	*l = k;
	l->id = p->nloc + 1;
	return keep(&p->loc, &p->nloc, &p->loc_cap, l) ? 0 : l->id;
}

static uint64_t sample_hash(const struct psample *s)
{
	uint64_t h = jt_hash_u64(s->pid ^ (s->comm << 21) ^ (s->source << 42));
	size_t i;

	for (i = 0; i < s->nlocs; i++)
		h = jt_hash_u64(h ^ s->locs[i]);
	return h;
}

/* A recording's periods are untrusted: sums stop at the type's end. */
static int64_t sat_add(int64_t a, int64_t b)
{
	int64_t r;

	if (!__builtin_add_overflow(a, b, &r))
		return r;
	return b > 0 ? INT64_MAX : INT64_MIN;
}

static bool sample_eq(const void *val, const void *key)
{
	const struct psample *a = val, *b = key;

	return a->pid == b->pid && a->comm == b->comm &&
	       a->source == b->source && a->nlocs == b->nlocs &&
	       !memcmp(a->locs, b->locs, a->nlocs * sizeof(*a->locs));
}

int jt_pprof_add(struct jt_pprof *p, const struct jt_pprof_sample *s)
{
	uint64_t locs[128];
	char pid[16];
	struct psample k = { .locs = locs }, *e;
	uint64_t h;
	size_t i;

	for (i = 0; i < s->nframes && k.nlocs < 128; i++) {
		locs[k.nlocs] = location(p, &s->frames[i]);
		if (!locs[k.nlocs++])
			return -ENOMEM;
	}
	snprintf(pid, sizeof(pid), "%u", s->pid);
	/* Index 0 is "": a label not kept tells no samples apart. */
	k.pid = p->labels & JT_PPROF_LABEL_PID ? string(p, pid) : 0;
	k.comm = p->labels & JT_PPROF_LABEL_COMM ? string(p, s->comm) : 0;
	k.source = p->labels & JT_PPROF_LABEL_SOURCE ? string(p, s->source) : 0;
	if (k.pid < 0 || k.comm < 0 || k.source < 0)
		return -ENOMEM;
	h = sample_hash(&k);
	e = jt_hash_find(&p->samples, h, sample_eq, &k);
	if (e) {
		e->count = sat_add(e->count, s->count);
		e->nanos = sat_add(e->nanos, s->nanos);
		return 0;
	}
	e = malloc(sizeof(*e));
	if (e)
		e->locs = malloc((k.nlocs ? k.nlocs : 1) * sizeof(*e->locs));
	if (!e || !e->locs || jt_hash_add(&p->samples, h, e)) {
		if (e)
			free(e->locs);
		free(e);
		return -ENOMEM;
	}
	memcpy(e->locs, locs, k.nlocs * sizeof(*locs));
	e->nlocs = k.nlocs;
	e->pid = k.pid;
	e->comm = k.comm;
	e->source = k.source;
	e->count = s->count;
	e->nanos = s->nanos;
	return keep(&p->smp, &p->nsmp, &p->smp_cap, e);
}

void jt_pprof_hide_kernel(struct jt_pprof *p)
{
	p->hide_kernel = true;
}

void jt_pprof_set_labels(struct jt_pprof *p, unsigned int labels)
{
	p->labels = labels;
}

static uint64_t shown(const struct jt_pprof *p, uint64_t addr)
{
	return p->hide_kernel && addr >> 63 ? 0 : addr;
}

void jt_pprof_set_duration(struct jt_pprof *p, int64_t duration_ns)
{
	p->duration_ns = duration_ns;
}

void jt_pprof_set_period(struct jt_pprof *p, int64_t period_ns)
{
	p->period_ns = period_ns;
}

void jt_pprof_set_time(struct jt_pprof *p, int64_t time_ns)
{
	p->time_ns = time_ns;
}

typedef Perftools__Profiles__Profile Profile;
typedef Perftools__Profiles__ValueType ValueType;
typedef Perftools__Profiles__Sample Sample;
typedef Perftools__Profiles__Label Label;
typedef Perftools__Profiles__Mapping Mapping;
typedef Perftools__Profiles__Location Location;
typedef Perftools__Profiles__Line Line;
typedef Perftools__Profiles__Function Function;

/* The message's parts, allocated together and freed together. */
struct parts {
	ValueType vt[3];
	ValueType *types[2];
	Sample *samples;
	Sample **sample_ptrs;
	Label *labels;
	Label **label_ptrs;
	int64_t *values;
	Mapping *mappings;
	Mapping **mapping_ptrs;
	Location *locations;
	Location **location_ptrs;
	Line *lines;
	Line **line_ptrs;
	Function *functions;
	Function **function_ptrs;
};

static void parts_free(struct parts *m)
{
	free(m->samples);
	free(m->sample_ptrs);
	free(m->labels);
	free(m->label_ptrs);
	free(m->values);
	free(m->mappings);
	free(m->mapping_ptrs);
	free(m->locations);
	free(m->location_ptrs);
	free(m->lines);
	free(m->line_ptrs);
	free(m->functions);
	free(m->function_ptrs);
}

static int parts_alloc(struct parts *m, const struct jt_pprof *p)
{
	size_t s = p->nsmp ? p->nsmp : 1;

	m->samples = calloc(s, sizeof(*m->samples));
	m->sample_ptrs = calloc(s, sizeof(*m->sample_ptrs));
	m->labels = calloc(3 * s, sizeof(*m->labels));
	m->label_ptrs = calloc(3 * s, sizeof(*m->label_ptrs));
	m->values = calloc(2 * s, sizeof(*m->values));
	m->mappings = calloc(p->nmap + 1, sizeof(*m->mappings));
	m->mapping_ptrs = calloc(p->nmap + 1, sizeof(*m->mapping_ptrs));
	m->locations = calloc(p->nloc + 1, sizeof(*m->locations));
	m->location_ptrs = calloc(p->nloc + 1, sizeof(*m->location_ptrs));
	m->lines = calloc(p->nloc + 1, sizeof(*m->lines));
	m->line_ptrs = calloc(p->nloc + 1, sizeof(*m->line_ptrs));
	m->functions = calloc(p->nfn + 1, sizeof(*m->functions));
	m->function_ptrs = calloc(p->nfn + 1, sizeof(*m->function_ptrs));
	return m->samples && m->sample_ptrs && m->labels && m->label_ptrs &&
			       m->values && m->mappings && m->mapping_ptrs &&
			       m->locations && m->location_ptrs && m->lines &&
			       m->line_ptrs && m->functions &&
			       m->function_ptrs ?
		       0 :
		       -ENOMEM;
}

static void fill_sample(const struct jt_pprof *p, struct parts *m, size_t i)
{
	const struct psample *s = p->smp[i];
	const int64_t keys[3] = { p->k_pid, p->k_comm, p->k_source };
	const int64_t vals[3] = { s->pid, s->comm, s->source };
	Sample *o = &m->samples[i];
	size_t k, n = 0;

	perftools__profiles__sample__init(o);
	o->n_location_id = s->nlocs;
	o->location_id = s->locs;
	o->n_value = 2;
	o->value = &m->values[2 * i];
	o->value[0] = s->count;
	o->value[1] = s->nanos;
	o->label = &m->label_ptrs[3 * i];
	for (k = 0; k < 3; k++) {
		Label *l = &m->labels[3 * i + n];

		if (!(p->labels & (1u << k)))
			continue;
		perftools__profiles__label__init(l);
		l->key = keys[k];
		l->str = vals[k];
		o->label[n++] = l;
	}
	o->n_label = n;
	m->sample_ptrs[i] = o;
}

/* pprof takes mapping[0] for the main binary: the first file mapped. */
static size_t first_file(const struct jt_pprof *p)
{
	size_t i;

	for (i = 0; i < p->nmap; i++)
		if (p->str[p->map[i]->file][0] == '/')
			return i;
	return 0;
}

static void fill_tables(const struct jt_pprof *p, struct parts *m)
{
	size_t i, main = first_file(p);

	for (i = 0; i < p->nmap; i++) {
		const struct pmapping *x = p->map[i];
		Mapping *o = &m->mappings[i];

		perftools__profiles__mapping__init(o);
		o->id = x->id;
		o->memory_start = shown(p, x->start);
		o->memory_limit = shown(p, x->limit);
		o->file_offset = x->offset;
		o->filename = x->file;
		o->build_id = x->build_id;
		/* Names come with the profile: pprof must not symbolize. */
		o->has_functions = true;
		m->mapping_ptrs[i] = o;
	}
	/* Moved to the front, the main binary takes id 1 and the first
	 * mapping its id: ids stay their index plus one, as Parca requires. */
	if (main) {
		m->mapping_ptrs[main] = m->mapping_ptrs[0];
		m->mapping_ptrs[0] = &m->mappings[main];
		m->mapping_ptrs[0]->id = 1;
		m->mapping_ptrs[main]->id = main + 1;
	}
	for (i = 0; i < p->nloc; i++) {
		const struct plocation *x = p->loc[i];
		Location *o = &m->locations[i];

		perftools__profiles__location__init(o);
		perftools__profiles__line__init(&m->lines[i]);
		m->lines[i].function_id = x->function;
		m->line_ptrs[i] = &m->lines[i];
		o->id = x->id;
		o->mapping_id = x->mapping == main + 1 ? 1 :
				x->mapping == 1	       ? main + 1 :
							 x->mapping;
		o->address = shown(p, x->addr);
		o->n_line = 1;
		o->line = &m->line_ptrs[i];
		m->location_ptrs[i] = o;
	}
	for (i = 0; i < p->nfn; i++) {
		const struct pfunction *x = p->fn[i];
		Function *o = &m->functions[i];

		perftools__profiles__function__init(o);
		o->id = x->id;
		o->name = o->system_name = x->name;
		o->filename = x->file;
		m->function_ptrs[i] = o;
	}
}

static void fill(const struct jt_pprof *p, struct parts *m, Profile *prof)
{
	size_t i;

	perftools__profiles__profile__init(prof);
	for (i = 0; i < 3; i++)
		perftools__profiles__value_type__init(&m->vt[i]);
	m->vt[0].type = p->k_samples;
	m->vt[0].unit = p->k_count;
	m->vt[1].type = m->vt[2].type = p->k_cpu;
	m->vt[1].unit = m->vt[2].unit = p->k_nanoseconds;
	m->types[0] = &m->vt[0];
	m->types[1] = &m->vt[1];
	prof->n_sample_type = 2;
	prof->sample_type = m->types;
	prof->period_type = &m->vt[2];
	prof->period = p->period_ns;
	prof->time_nanos = p->time_ns;
	prof->duration_nanos = p->duration_ns;
	for (i = 0; i < p->nsmp; i++)
		fill_sample(p, m, i);
	fill_tables(p, m);
	prof->n_sample = p->nsmp;
	prof->sample = m->sample_ptrs;
	prof->n_mapping = p->nmap;
	prof->mapping = m->mapping_ptrs;
	prof->n_location = p->nloc;
	prof->location = m->location_ptrs;
	prof->n_function = p->nfn;
	prof->function = m->function_ptrs;
	prof->n_string_table = p->nstr;
	prof->string_table = (char **)p->str;
}

/* pprof files are gzipped protobuf. */
static int gzip(const void *in, size_t n, void **out, size_t *len)
{
	z_stream z = {};
	size_t cap = compressBound(n) + 64;
	unsigned char *buf = malloc(cap);
	int rc;

	if (!buf)
		return -ENOMEM;
	if (deflateInit2(&z, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY)) {
		free(buf);
		return -ENOMEM;
	}
	z.next_in = (unsigned char *)in;
	z.avail_in = n;
	z.next_out = buf;
	z.avail_out = cap;
	rc = deflate(&z, Z_FINISH);
	*len = z.total_out;
	deflateEnd(&z);
	if (rc != Z_STREAM_END) {
		free(buf);
		return -EIO;
	}
	*out = buf;
	return 0;
}

int jt_pprof_encode(struct jt_pprof *p, void **buf, size_t *len)
{
	struct parts m = {};
	Profile prof;
	uint8_t *raw;
	size_t n;
	int err = parts_alloc(&m, p);

	if (err) {
		parts_free(&m);
		return err;
	}
	fill(p, &m, &prof);
	n = perftools__profiles__profile__get_packed_size(&prof);
	raw = malloc(n ? n : 1);
	if (!raw) {
		parts_free(&m);
		return -ENOMEM;
	}
	perftools__profiles__profile__pack(&prof, raw);
	parts_free(&m);
	err = gzip(raw, n, buf, len);
	free(raw);
	return err;
}

void jt_pprof_free(struct jt_pprof *p)
{
	size_t i;

	if (!p)
		return;
	jt_hash_for_each (&p->str_idx, i)
		free(p->str_idx.e[i].val);
	jt_hash_free(&p->str_idx);
	for (i = 0; i < p->nfn; i++)
		free(p->fn[i]);
	for (i = 0; i < p->nmap; i++)
		free(p->map[i]);
	for (i = 0; i < p->nloc; i++)
		free(p->loc[i]);
	for (i = 0; i < p->nsmp; i++) {
		free(p->smp[i]->locs);
		free(p->smp[i]);
	}
	jt_hash_free(&p->functions);
	jt_hash_free(&p->mappings);
	jt_hash_free(&p->locations);
	jt_hash_free(&p->samples);
	free(p->str);
	free(p->fn);
	free(p->map);
	free(p->loc);
	free(p->smp);
	jt_strtab_free(&p->strs);
	free(p);
}
