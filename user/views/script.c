// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* jittrace script: every event and sample in time order. */
#include <getopt.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include "jittrace.h"
#include "lib/fmt.h"
#include "lib/perf_rec.h"
#include "model/replay.h"
#include "views/view.h"

static const char usage[] =
	"usage: jittrace script [-i FILE] [--json]\n"
	"  -i, --input FILE  recording (default jittrace.data)\n"
	"      --json        one JSON object per line\n";

struct script_ctx {
	const struct jt_stream *s;
	int json;
	uint64_t samples;
	uint64_t unresolved;
};

static void hex(const char *key, uint64_t v)
{
	printf(",\"%s\":\"0x%" PRIx64 "\"", key, v);
}

static void json_head(const char *type, uint64_t time, uint32_t pid,
		      uint32_t tid, uint32_t cpu)
{
	printf("{\"type\":\"%s\",\"time\":%" PRIu64
	       ",\"pid\":%u,\"tid\":%u,\"cpu\":%u",
	       type, time, pid, tid, cpu);
}

static void text_head(struct jt_model *m, const char *type, uint64_t time,
		      uint32_t pid, uint32_t tid, uint32_t cpu)
{
	struct jt_proc *p = jt_model_find(m, pid);
	char t[32];

	printf("%16s %7u/%-7u [%03u] %s: %-9s", p && p->comm[0] ? p->comm : "?",
	       pid, tid, cpu, jt_time_str(time, t), type);
}

static void json_vma(const char *key, const struct jt_vma *v)
{
	if (!v->end) {
		printf(",\"%s\":null", key);
		return;
	}
	printf(",\"%s\":{\"start\":\"0x%" PRIx64 "\",\"end\":\"0x%" PRIx64
	       "\",\"flags\":\"0x%" PRIx64 "\"}",
	       key, (uint64_t)v->start, (uint64_t)v->end, (uint64_t)v->flags);
}

/* Event strings come from a file: never trust them to end in a NUL. */
static const char *bounded(char *buf, size_t size, const char *s, size_t len)
{
	if (!len)
		return NULL;
	snprintf(buf, size, "%.*s", (int)strnlen(s, len), s);
	return buf;
}

static void map_event(struct script_ctx *c, struct jt_model *m,
		      const struct jt_map_event *ev)
{
	char buf[JT_PATH_MAX + 1];
	const char *path = bounded(buf, sizeof(buf), ev->path, ev->path_len);
	int i;

	if (c->json) {
		printf(",\"args\":[");
		for (i = 0; i < 6; i++)
			printf("%s\"0x%llx\"", i ? "," : "",
			       (unsigned long long)ev->args[i]);
		printf("],\"result\":%lld", (long long)ev->result);
		json_vma("vma", &ev->vma);
		json_vma("vma_last", &ev->vma_last);
		printf(",\"path\":");
		jt_json_str(stdout, path);
		return;
	}
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
		printf(" %s", path);
}

static void bpf_event(struct script_ctx *c, struct jt_model *m,
		      const struct jt_item *it)
{
	const struct jt_hdr *h = it->data;
	const struct jt_fork_event *f = it->data;
	const struct jt_exec_event *e = it->data;
	const struct jt_exit_event *x = it->data;
	const char *name = jt_event_name(h->type);
	char path[JT_PATH_MAX + 1], comm[JT_COMM_LEN + 1];

	if (!jt_event_valid(h, it->len))
		return;
	if (c->json)
		json_head(name, h->time, h->pid, h->tid, h->cpu);
	else
		text_head(m, name, h->time, h->pid, h->tid, h->cpu);
	switch (h->type) {
	case JT_EV_FORK:
		printf(c->json ? ",\"child_pid\":%u,\"child_tid\":%u,"
				 "\"thread\":%s" :
				 " child=%u/%u%s",
		       f->child_pid, f->child_tid,
		       c->json ?
			       (f->flags & JT_FORK_THREAD ? "true" : "false") :
			       (f->flags & JT_FORK_THREAD ? " thread" : ""));
		break;
	case JT_EV_EXEC:
		bounded(comm, sizeof(comm), e->comm, sizeof(e->comm));
		if (!bounded(path, sizeof(path), e->path, e->path_len))
			path[0] = 0;
		if (c->json) {
			printf(",\"comm\":");
			jt_json_str(stdout, comm);
			printf(",\"attach\":%s,\"path\":",
			       e->flags & JT_EXEC_ATTACH ? "true" : "false");
			jt_json_str(stdout, e->path_len ? path : NULL);
		} else {
			printf(" %s%s", path,
			       e->flags & JT_EXEC_ATTACH ? " (attach)" : "");
		}
		break;
	case JT_EV_EXIT:
		printf(c->json ? ",\"group\":%s,\"exit_code\":%d" :
				 " group=%s code=%d",
		       x->group_dead ? "true" : "false", x->exit_code);
		break;
	default:
		map_event(c, m, it->data);
	}
	printf(c->json ? "}\n" : "\n");
}

static void sample(struct script_ctx *c, struct jt_model *m,
		   const struct jt_item *it)
{
	uint64_t st = c->s->sample_type;
	const struct jt_region *r;
	struct jt_resolved res;
	struct jt_sample s;
	uint64_t i;

	if (jt_perf_sample(it->data, it->len, st, &s))
		return;
	jt_resolve(m, s.pid, s.ip, s.misc, &res);
	r = res.region;
	c->samples++;
	c->unresolved += !r && !res.kernel;
	if (!c->json) {
		text_head(m, "sample", s.time, s.pid, s.tid, s.cpu);
		printf(" %16" PRIx64 " %s", s.ip,
		       res.kernel ? "[kernel]" :
		       r	  ? jt_region_name(r) :
				    "[unknown]");
		if (r && r->kind == JT_RK_FILE)
			printf("+0x%" PRIx64, res.offset);
		else if (r)
			printf(" %" PRIx64 "-%" PRIx64, r->start, r->end);
		if (st & PERF_SAMPLE_ADDR)
			printf(" addr=%" PRIx64, s.addr);
		printf("\n");
		return;
	}
	json_head("sample", s.time, s.pid, s.tid, s.cpu);
	hex("ip", s.ip);
	printf(",\"kernel\":%s,\"period\":%" PRIu64,
	       res.kernel ? "true" : "false", s.period);
	if (r) {
		hex("region_start", r->start);
		hex("region_end", r->end);
	} else {
		printf(",\"region_start\":null,\"region_end\":null");
	}
	printf(",\"path\":");
	jt_json_str(stdout, r && r->kind == JT_RK_FILE ? r->path : NULL);
	printf(",\"region\":");
	jt_json_str(stdout, r ? jt_region_name(r) : NULL);
	if (r && r->kind == JT_RK_FILE)
		hex("offset", res.offset);
	if (st & PERF_SAMPLE_ADDR)
		hex("data_addr", s.addr);
	if (st & PERF_SAMPLE_CALLCHAIN) {
		printf(",\"callchain\":[");
		for (i = 0; i < s.nr_chain; i++)
			printf("%s\"0x%" PRIx64 "\"", i ? "," : "", s.chain[i]);
		printf("]");
	}
	printf("}\n");
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
		json_head("perf_mmap2", it->time, mm.pid, mm.tid, it->cpu);
		hex("start", mm.start);
		hex("end", mm.start + mm.len);
		hex("pgoff", mm.pgoff);
		printf(",\"prot\":%u,\"flags\":%u,\"ino\":%" PRIu64
		       ",\"filename\":",
		       mm.prot, mm.flags, mm.ino);
		jt_json_str(stdout, name);
		printf("}\n");
		return;
	}
	text_head(m, "PERF_RECORD_MMAP2", it->time, mm.pid, mm.tid, it->cpu);
	printf(" [0x%" PRIx64 "(0x%" PRIx64 ") @ 0x%" PRIx64 " prot=%u] %s\n",
	       mm.start, mm.len, mm.pgoff, mm.prot, name);
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
		json_head(name, it->time, id.pid, id.tid, it->cpu);
		printf("}\n");
	} else {
		text_head(m, name, it->time, id.pid, id.tid, it->cpu);
		printf("\n");
	}
}

static void on_item(void *ctx, struct jt_model *m, const struct jt_item *it)
{
	struct script_ctx *c = ctx;
	const struct perf_event_header *h = it->data;

	if (it->kind == JT_IT_BPF)
		bpf_event(c, m, it);
	else if (h->type == PERF_RECORD_SAMPLE)
		sample(c, m, it);
	else if (h->type == PERF_RECORD_MMAP2)
		perf_mmap2(c, m, it);
	else
		perf_other(c, m, it);
}

int cmd_script(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "input", required_argument, NULL, 'i' },
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{},
	};
	const char *input = "jittrace.data";
	struct script_ctx c = {};
	struct jt_stream s;
	struct jt_model m;
	int opt;

	while ((opt = getopt_long(argc, argv, "i:h", longopts, NULL)) != -1) {
		switch (opt) {
		case 'i':
			input = optarg;
			break;
		case 'j':
			c.json = 1;
			break;
		case 'h':
			fputs(usage, stdout);
			return 0;
		default:
			return jt_usage_error(usage, NULL);
		}
	}
	if (optind < argc)
		return jt_usage_error(usage, "unexpected argument");
	if (jt_view_open(&s, input))
		return 1;
	c.s = &s;
	jt_model_init(&m);
	jt_replay(&s, &m, 0, on_item, &c);
	if (!c.json) {
		printf("# %llu samples, %llu [unknown]\n",
		       (unsigned long long)c.samples,
		       (unsigned long long)c.unresolved);
		jt_print_loss_footer(stdout, &s, &m);
	}
	jt_model_free(&m);
	jt_stream_free(&s);
	return 0;
}
