// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* jittrace maps: each process's requested regions and their kernel VMAs. */
#include <getopt.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include "jittrace.h"
#include "lib/fmt.h"
#include "lib/json.h"
#include "lib/perf_rec.h"
#include "model/replay.h"
#include "views/view.h"

static const char usage[] =
	"usage: jittrace maps [-i FILE] [--pid PID] [--at NS] [--json] "
	"[--perf]\n"
	"  -i, --input FILE  recording (default jittrace.data)\n"
	"      --pid PID     only this process\n"
	"      --at NS       the maps at CLOCK_MONOTONIC time NS (default:\n"
	"                    each process's last moment alive)\n"
	"      --json        a JSON array, one object per region\n"
	"      --perf        also list perf's MMAP2 records for the process\n";

struct maps_opts {
	const char *input;
	uint32_t pid;
	uint64_t at;
	int json;
	int perf;
};

struct maps_ctx {
	struct maps_opts *o;
	const struct jt_stream *s;
	struct jt_json j;
};

static int parse(int argc, char **argv, struct maps_opts *o)
{
	static const struct option longopts[] = {
		{ "input", required_argument, NULL, 'i' },
		{ "pid", required_argument, NULL, 'p' },
		{ "at", required_argument, NULL, 't' },
		{ "json", no_argument, NULL, 'j' },
		{ "perf", no_argument, NULL, 'P' },
		{ "help", no_argument, NULL, 'h' },
		{},
	};
	char *end;
	int c;

	o->input = "jittrace.data";
	while ((c = getopt_long(argc, argv, "i:h", longopts, NULL)) != -1) {
		switch (c) {
		case 'i':
			o->input = optarg;
			break;
		case 'p':
			o->pid = strtoul(optarg, &end, 10);
			if (*end || !o->pid)
				return jt_usage_error(usage, "bad --pid");
			break;
		case 't':
			o->at = strtoull(optarg, &end, 10);
			if (*end || !o->at)
				return jt_usage_error(usage, "bad --at");
			break;
		case 'j':
			o->json = 1;
			break;
		case 'P':
			o->perf = 1;
			break;
		case 'h':
			fputs(usage, stdout);
			exit(0);
		default:
			return jt_usage_error(usage, NULL);
		}
	}
	if (optind < argc)
		return jt_usage_error(usage, "unexpected argument");
	return 0;
}

static void json_kvma(struct jt_json *j, const struct jt_region *r)
{
	jt_json_name(j, "kernel_vma");
	if (!r->kvma.end) {
		jt_json_null(j);
		return;
	}
	jt_json_object(j);
	jt_json_hex_field(j, "start", r->kvma.start);
	jt_json_hex_field(j, "end", r->kvma.end);
	jt_json_end(j);
}

static void json_region(struct maps_ctx *c, const struct jt_proc *p,
			const struct jt_region *r, size_t members)
{
	struct jt_json *j = &c->j;
	char prot[5];

	jt_json_object(j);
	jt_json_u64_field(j, "pid", p->pid);
	jt_json_str_field(j, "comm", p->comm);
	jt_json_hex_field(j, "start", r->start);
	jt_json_hex_field(j, "end", r->end);
	jt_json_str_field(j, "prot",
			  jt_prot_str(r->prot, jt_region_shared(r), prot));
	jt_json_str_field(j, "path", r->kind == JT_RK_FILE ? r->path : NULL);
	jt_json_str_field(j, "name", jt_region_name(r));
	jt_json_hex_field(j, "offset", r->kind == JT_RK_FILE ? r->pgoff : 0);
	jt_json_u64_field(j, "dev", r->dev);
	jt_json_u64_field(j, "ino", r->ino);
	json_kvma(j, r);
	jt_json_bool_field(j, "coalesced", members > 1);
	jt_json_u64_field(j, "vma_regions", members);
	jt_json_u64_field(j, "born_ns", r->born_ns);
	jt_json_str_field(j, "origin", jt_origin_name(r->origin));
	jt_json_end(j);
}

static void text_region(const struct jt_region *r, size_t members)
{
	char prot[5], t[32], kv[48] = "?";

	if (r->kvma.end)
		snprintf(kv, sizeof(kv), "%" PRIx64 "-%" PRIx64, r->kvma.start,
			 r->kvma.end);
	printf("%012" PRIx64 "-%012" PRIx64 " %s %08" PRIx64
	       " %-8s %20s %-27s %-11s %s\n",
	       r->start, r->end,
	       jt_prot_str(r->prot, jt_region_shared(r), prot),
	       r->kind == JT_RK_FILE ? r->pgoff : 0, jt_origin_name(r->origin),
	       jt_time_str(r->born_ns, t), kv, members > 1 ? "coalesced" : "",
	       jt_region_name(r));
}

static void perf_mmap2s(const struct jt_stream *s, uint32_t pid, uint64_t at)
{
	size_t i;

	printf("# perf MMAP2 records (the kernel's view):\n");
	for (i = 0; i < s->n; i++) {
		const struct jt_item *it = &s->items[i];
		struct jt_mmap2 m;
		char t[32];

		if (at && it->time > at)
			break;
		if (it->kind != JT_IT_PERF ||
		    jt_perf_mmap2(it->data, it->len, &m) || m.pid != pid)
			continue;
		printf("#   %s [0x%" PRIx64 "(0x%" PRIx64 ") @ 0x%" PRIx64
		       " %c%c%c] %.*s\n",
		       jt_time_str(it->time, t), m.start, m.len, m.pgoff,
		       m.prot & 1 ? 'r' : '-', m.prot & 2 ? 'w' : '-',
		       m.prot & 4 ? 'x' : '-', (int)m.filename_len, m.filename);
	}
}

static void show_proc(struct maps_ctx *c, const struct jt_proc *p)
{
	const struct jt_aspace *as = p->as;
	const struct jt_region *r;
	char t[32];

	if (!c->o->json) {
		printf("pid %u (%s) %s", p->pid, p->comm[0] ? p->comm : "?",
		       p->exe ? p->exe : "");
		if (p->dead_ns)
			printf(" [exited %s]", jt_time_str(p->dead_ns, t));
		printf("\n%-25s %-4s %-8s %-8s %20s %-27s %-11s %s\n",
		       "START-END", "PROT", "OFFSET", "MADE BY", "BORN",
		       "KERNEL VMA", "", "BACKING");
	}
	for (r = as ? jt_aspace_first(as) : NULL; r;
	     r = jt_aspace_next(as, r)) {
		size_t members = jt_aspace_vma_members(as, r);

		if (c->o->json)
			json_region(c, p, r, members);
		else
			text_region(r, members);
	}
	if (!c->o->json && c->o->perf)
		perf_mmap2s(c->s, p->pid, c->o->at);
	if (!c->o->json)
		printf("\n");
}

static int shown(const struct maps_opts *o, const struct jt_proc *p)
{
	if (o->pid && p->pid != o->pid)
		return 0;
	if (o->at &&
	    (p->first_ns > o->at || (p->dead_ns && p->dead_ns < o->at)))
		return 0;
	return 1;
}

int cmd_maps(int argc, char **argv)
{
	struct maps_opts o = {};
	struct maps_ctx c = { .o = &o };
	struct jt_stream s;
	struct jt_model m;
	size_t i, n = 0;
	int err = parse(argc, argv, &o);

	if (err)
		return err;
	if (jt_view_open(&s, o.input))
		return 1;
	c.s = &s;
	jt_model_init(&m);
	jt_replay(&s, &m, o.at, NULL, NULL);
	jt_json_init(&c.j, stdout);
	if (o.json)
		jt_json_array(&c.j);
	for (i = 0; i < m.nprocs; i++) {
		if (!shown(&o, m.procs[i]))
			continue;
		show_proc(&c, m.procs[i]);
		n++;
	}
	if (o.json)
		jt_json_end(&c.j);
	else
		jt_print_loss_footer(stdout, &s, &m);
	if (!n && o.pid)
		fprintf(stderr, "jittrace: no process %u in %s\n", o.pid,
			o.input);
	jt_model_free(&m);
	jt_stream_free(&s);
	return !n && o.pid ? 1 : 0;
}
