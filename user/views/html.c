// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * jittrace html: one self-contained page per recording. The data is
 * gathered by html_data.c and by audit; the page's own script and style
 * (views/html/) are compiled in, so the page asks the network for nothing
 * and its Content-Security-Policy forbids it to.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "jittrace.h"
#include "lib/cli.h"
#include "lib/json.h"
#include "views/audit.h"
#include "views/html_data.h"
#include "views/view.h"
#include "gen/html_assets.h"

static const struct jt_opt html_opts[] = {
	{ 'i', 0, "input", "FILE", "recording (default jittrace.data)",
	  JT_ARG_FILE },
	{ 'o', 0, "output", "FILE", "the page to write (default jittrace.html)",
	  JT_ARG_FILE },
	{ 0, 'p', "pid", "PID", "only this process" },
	{ 0 },
};

const struct jt_cmd jt_cmd_html = {
	.name = "html",
	.summary =
		"one page to look at: the address space over time, the flame "
		"graph, the copy-on-write map, the findings",
	.synopsis = "[-i FILE] [-o FILE] [--pid PID]",
	.opts = html_opts,
	.run = cmd_html,
};

struct html_opts {
	const char *in;
	const char *out;
	uint32_t pid;
};

static int parse(int argc, char **argv, struct html_opts *o)
{
	char *end;
	int c;

	o->in = "jittrace.data";
	o->out = "jittrace.html";
	while ((c = jt_getopt(argc, argv, &jt_cmd_html)) != -1) {
		switch (c) {
		case 'i':
			o->in = optarg;
			break;
		case 'o':
			o->out = optarg;
			break;
		case 'p':
			o->pid = strtoul(optarg, &end, 10);
			if (*end || !o->pid)
				return jt_cmd_error(&jt_cmd_html, "bad --pid");
			break;
		case 'h':
			jt_cmd_usage(stdout, &jt_cmd_html);
			exit(0);
		default:
			return jt_cmd_error(&jt_cmd_html, NULL);
		}
	}
	if (optind < argc)
		return jt_cmd_error(&jt_cmd_html, "unexpected argument");
	return 0;
}

/* The page's data: what html_data gathered and audit's findings. */
static int gather(const struct html_opts *o, FILE *json)
{
	struct jt_pipe_ops ops = { .item = html_data_item,
				   .exited = html_data_exited,
				   .named = true };
	FILE *audit = tmpfile();
	struct html_data *d = NULL;
	struct jt_stream s;
	struct jt_pipe p;
	struct jt_json j;
	int err = 1;

	if (!audit || jt_view_open(&s, o->in))
		goto out;
	d = html_data_new(&s, o->pid);
	ops.ctx = d;
	if (d && !jt_view_run(&p, &s, o->in, &ops)) {
		html_data_finish(d, &p.m);
		err = 0;
	}
	html_data_release(d);
	if (d)
		jt_pipe_free(&p);
	jt_stream_free(&s);
	if (err || jt_audit_json(o->in, audit))
		goto out;
	jt_json_init(&j, json);
	jt_json_object(&j);
	jt_json_str_field(&j, "file", o->in);
	jt_json_u64_field(&j, "pid", o->pid);
	jt_json_name(&j, "data");
	err = html_data_write(d, &j);
	jt_json_name(&j, "audit");
	if (!err && jt_json_raw_file(&j, audit))
		err = -EIO;
	jt_json_end(&j);
out:
	html_data_free(d);
	if (audit)
		fclose(audit);
	return err ? 1 : 0;
}

/* JSON inside <script>: "</" would end it early; "<\/" is the same JSON. */
static int copy_escaped(FILE *from, FILE *to)
{
	int c, prev = 0;

	rewind(from);
	while ((c = getc(from)) != EOF) {
		if (prev == '<' && c == '/')
			putc('\\', to);
		putc(c, to);
		prev = c;
	}
	return ferror(from) || ferror(to) ? -EIO : 0;
}

static int write_page(FILE *f, FILE *json)
{
	fputs("<!doctype html>\n<html lang=\"en\"><head><meta "
	      "charset=\"utf-8\">\n"
	      "<meta http-equiv=\"Content-Security-Policy\" "
	      "content=\"default-src "
	      "'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; "
	      "img-src data:\">\n<title>jittrace</title>\n<style>\n",
	      f);
	fwrite(jt_page_css, 1, sizeof(jt_page_css) - 1, f);
	fputs("</style></head><body>\n<script id=\"jt-data\" "
	      "type=\"application/json\">",
	      f);
	if (copy_escaped(json, f))
		return -EIO;
	fputs("</script>\n<script>\n", f);
	fwrite(jt_page_js, 1, sizeof(jt_page_js) - 1, f);
	fputs("</script>\n</body></html>\n", f);
	return ferror(f) ? -EIO : 0;
}

int cmd_html(int argc, char **argv)
{
	struct html_opts o = {};
	FILE *json, *page;
	int err, fd;

	err = parse(argc, argv, &o);
	if (err)
		return err;
	json = tmpfile();
	if (!json || gather(&o, json)) {
		if (json)
			fclose(json);
		return 1;
	}
	/* Not through a link someone left where the page goes. */
	fd = open(o.out, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC,
		  0644);
	page = fd >= 0 ? fdopen(fd, "w") : NULL;
	if (!page) {
		fprintf(stderr, "jittrace: %s: %s\n", o.out, strerror(errno));
		if (fd >= 0)
			close(fd);
		fclose(json);
		return 1;
	}
	err = write_page(page, json);
	fclose(json);
	if (fclose(page) || err) {
		fprintf(stderr, "jittrace: writing %s failed\n", o.out);
		return 1;
	}
	fprintf(stderr, "jittrace: wrote %s\n", o.out);
	return 0;
}
