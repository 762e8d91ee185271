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

static const char usage[] =
	"usage: jittrace export [-i FILE] --format pprof|perf -o OUT "
	"[--pid PID] [-g]\n"
	"  -i, --input FILE    recording (default jittrace.data)\n"
	"      --format FMT    pprof: gzipped profile.proto (go tool pprof,\n"
	"                      speedscope, Parca, Pyroscope); perf: a\n"
	"                      perf.data for perf report and hotspot, with\n"
	"                      JIT code as perf inject --jit gives it\n"
	"  -o, --output OUT    the file to write (perf: JIT ELF files go in\n"
	"                      OUT.jit/ beside it)\n"
	"      --pid PID       only this process\n"
	"  -g                  call chains (when the recording has them)\n";

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
	static const struct option longopts[] = {
		{ "input", required_argument, NULL, 'i' },
		{ "output", required_argument, NULL, 'o' },
		{ "format", required_argument, NULL, 'f' },
		{ "pid", required_argument, NULL, 'p' },
		{ "help", no_argument, NULL, 'h' },
		{},
	};
	char *end;
	int c;

	x->input = "jittrace.data";
	while ((c = getopt_long(argc, argv, "i:o:gh", longopts, NULL)) != -1) {
		switch (c) {
		case 'i':
			x->input = optarg;
			break;
		case 'o':
			x->output = optarg;
			break;
		case 'f':
			x->format = !strcmp(optarg, "pprof") ? FMT_PPROF :
				    !strcmp(optarg, "perf")  ? FMT_PERF :
							       -1;
			if (x->format < 0)
				return jt_usage_error(
					usage, "--format wants pprof or perf");
			break;
		case 'p':
			x->pid = strtoul(optarg, &end, 10);
			if (*end || !x->pid)
				return jt_usage_error(usage, "bad --pid");
			break;
		case 'g':
			x->callchain = true;
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
	if (!x->format)
		return jt_usage_error(usage, "give --format pprof or perf");
	if (!x->output)
		return jt_usage_error(usage, "give -o OUT");
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
