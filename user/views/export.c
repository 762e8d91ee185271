// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * jittrace export: a recording as a profile other tools read, named as
 * jittrace names it: pprof (go tool pprof, speedscope, Parca, Pyroscope)
 * or perf.data (perf report, hotspot).
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "export/perfdata.h"
#include "export/pprof.h"
#include "export/pprof_named.h"
#include "jittrace.h"
#include "lib/cli.h"
#include "lib/io.h"
#include "lib/perf_rec.h"
#include "views/view.h"

static const char *const formats[] = { "pprof", "perf", NULL };

static const struct jt_opt export_opts[] = {
	{ 'i', 0, "input", "FILE", "recording (default jittrace.data)",
	  JT_ARG_FILE },
	{ 0, 'f', "format", "FMT",
	  "pprof: gzipped profile.proto (go tool pprof, speedscope, Parca, "
	  "Pyroscope); perf: a perf.data for perf report and hotspot, with JIT "
	  "code as perf inject --jit gives it",
	  JT_ARG_WORD, formats },
	{ 'o', 0, "output", "OUT",
	  "the file to write (perf: JIT ELF files go in OUT.jit/ beside it)",
	  JT_ARG_FILE },
	{ 0, 'p', "pid", "PID", "only this process" },
	{ 'g', 0, NULL, NULL, "call chains (when the recording has them)" },
	{ 0 },
};

const struct jt_cmd jt_cmd_export = {
	.name = "export",
	.summary = "the profile as pprof or perf.data, names as jittrace "
		   "gives them",
	.synopsis = "[-i FILE] --format pprof|perf -o OUT [--pid PID] [-g]",
	.opts = export_opts,
	.run = cmd_export,
};

enum { FMT_NONE, FMT_PPROF, FMT_PERF };

struct export
{
	const char *input;
	const char *output;
	int format;
	uint32_t pid;
	bool callchain;
	struct jt_stream *s;
	struct jt_pprof *pprof;
	struct jt_perfdata *perf;
	int64_t nanos; /* per sample, when the event gives no time */
	uint64_t first_ns;
	uint64_t last_ns;
	uint64_t samples;
	int err;
};

static int parse(int argc, char **argv, struct export *x)
{
	char *end;
	int c;

	x->input = "jittrace.data";
	while ((c = jt_getopt(argc, argv, &jt_cmd_export)) != -1) {
		switch (c) {
		case 'i':
			x->input = optarg;
			break;
		case 'o':
			x->output = optarg;
			break;
		case 'f':
			x->format = !strcmp(optarg, formats[0]) ? FMT_PPROF :
				    !strcmp(optarg, formats[1]) ? FMT_PERF :
								  -1;
			if (x->format < 0)
				return jt_cmd_error(
					&jt_cmd_export,
					"--format wants pprof or perf");
			break;
		case 'p':
			x->pid = strtoul(optarg, &end, 10);
			if (*end || !x->pid)
				return jt_cmd_error(&jt_cmd_export,
						    "bad --pid");
			break;
		case 'g':
			x->callchain = true;
			break;
		case 'h':
			jt_cmd_usage(stdout, &jt_cmd_export);
			exit(0);
		default:
			return jt_cmd_error(&jt_cmd_export, NULL);
		}
	}
	if (optind < argc)
		return jt_cmd_error(&jt_cmd_export, "unexpected argument");
	if (!x->format)
		return jt_cmd_error(&jt_cmd_export,
				    "give --format pprof or perf");
	if (!x->output)
		return jt_cmd_error(&jt_cmd_export, "give -o OUT");
	return 0;
}

/* CPU time per sample: the period of a clock event, else 1/frequency. */
static int64_t sample_nanos(const struct jt_stream *s)
{
	const char *ev = jt_stream_meta(s, "perf.event");
	const char *freq = jt_stream_meta(s, "perf.freq");

	if (ev && (!strcmp(ev, "cpu-clock") || !strcmp(ev, "task-clock")))
		return 0;
	if (freq && strtoull(freq, NULL, 10))
		return 1000000000LL / (int64_t)strtoull(freq, NULL, 10);
	return 0;
}

/*
 * pprof's period, what one sample stands for: 1/frequency, or a clock
 * event's fixed period (its unit is ns). Each sample keeps its own.
 */
static int64_t profile_period(const struct jt_stream *s)
{
	const char *ev = jt_stream_meta(s, "perf.event");
	const char *freq = jt_stream_meta(s, "perf.freq");
	const char *period = jt_stream_meta(s, "perf.period");
	bool clock =
		ev && (!strcmp(ev, "cpu-clock") || !strcmp(ev, "task-clock"));

	if (freq && strtoull(freq, NULL, 10))
		return 1000000000LL / (int64_t)strtoull(freq, NULL, 10);
	if (clock && period && strtoll(period, NULL, 10) > 0)
		return strtoll(period, NULL, 10);
	return 1000000;
}

static void on_item(void *ctx, struct jt_model *m, const struct jt_item *it,
		    const struct jt_symres *y)
{
	struct export *x = ctx;
	struct jt_sample smp;

	if (x->perf)
		jt_perfdata_item(x->perf, m, it, y);
	if (!y || !y->is_sample ||
	    jt_perf_sample(it->data, it->len, x->s->sample_type, &smp) ||
	    (x->pid && smp.pid != x->pid))
		return;
	/* The recording's META records are read by now, not at open. */
	if (!x->samples++) {
		x->first_ns = smp.time;
		x->nanos = sample_nanos(x->s);
		if (x->pprof)
			jt_pprof_set_period(x->pprof, profile_period(x->s));
	}
	x->last_ns = smp.time;
	if (x->pprof &&
	    jt_pprof_add_named(x->pprof, m, &smp, y, x->callchain, x->nanos))
		x->err = -ENOMEM;
}

/* The recording's start as wall time, for pprof's time_nanos. */
static int64_t wall_start(const struct jt_stream *s, uint64_t first_ns)
{
	const char *unix_s = jt_stream_meta(s, "start_unix");
	const char *mono = jt_stream_meta(s, "start_ns");
	int64_t t = unix_s ? strtoll(unix_s, NULL, 10) * 1000000000LL : 0;

	if (t && mono && first_ns > strtoull(mono, NULL, 10))
		t += first_ns - strtoull(mono, NULL, 10);
	return t;
}

static int write_file(const char *path, const void *buf, size_t len)
{
	int fd = open(path,
		      O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC,
		      0644);
	int err;

	if (fd < 0)
		return -errno;
	err = jt_write_all(fd, buf, len);
	if (close(fd) && !err)
		err = -errno;
	if (err) /* a full disk: no half a profile left behind */
		unlink(path);
	return err;
}

static int finish_pprof(struct export *x)
{
	void *buf;
	size_t len;
	int err;

	jt_pprof_set_duration(x->pprof, x->last_ns - x->first_ns);
	err = jt_pprof_encode(x->pprof, &buf, &len);
	if (!err) {
		err = write_file(x->output, buf, len);
		free(buf);
	}
	return err;
}

int cmd_export(int argc, char **argv)
{
	struct export x = {};
	struct jt_pipe_ops ops = { .item = on_item, .ctx = &x, .named = true };
	struct jt_stream s;
	struct jt_pipe p;
	int err = parse(argc, argv, &x);

	if (err)
		return err;
	if (jt_view_open(&s, x.input))
		return 1;
	x.s = &s;
	if (x.format == FMT_PPROF)
		x.pprof = jt_pprof_new(0, 1000000);
	else
		x.perf = jt_perfdata_open(x.output, &s, x.pid, x.callchain,
					  &err);
	if (!x.pprof && !x.perf) {
		if (err == -EEXIST)
			fprintf(stderr,
				"jittrace: %s.jit exists and is not an earlier "
				"export's: remove it, or give another -o\n",
				x.output);
		else
			fprintf(stderr, "jittrace: %s: %s\n", x.output,
				strerror(err ? -err : ENOMEM));
		jt_stream_free(&s);
		return 1;
	}
	err = jt_view_run(&p, &s, x.input, &ops);
	if (!err && x.err)
		err = x.err;
	if (!err && x.pprof) {
		jt_pprof_set_time(x.pprof, wall_start(&s, x.first_ns));
		err = finish_pprof(&x);
	} else if (!err) {
		err = jt_perfdata_close(x.perf);
		x.perf = NULL;
	}
	if (err)
		fprintf(stderr, "jittrace: export to %s: %s\n", x.output,
			strerror(err < 0 ? -err : EIO));
	else
		fprintf(stderr, "jittrace: wrote %s (%" PRIu64 " samples)\n",
			x.output, x.samples);
	jt_pprof_free(x.pprof);
	jt_perfdata_abort(x.perf);
	jt_pipe_free(&p);
	jt_stream_free(&s);
	return err ? 1 : 0;
}
