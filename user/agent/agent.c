// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * jittrace agent: always-on, system-wide; profiles per window and on
 * request, named as `report` names them. The capture runs on this
 * thread until SIGTERM or SIGINT; the reader, the HTTP server and the
 * pusher run on their own.
 */
#include <curl/curl.h>
#include <errno.h>
#include <grp.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "agent/agent.h"
#include "agent/http.h"
#include "agent/profiles.h"
#include "agent/push.h"
#include "agent/secret.h"
#include "export/pprof.h"
#include "agent/spool.h"
#include "jittrace.h"
#include "lib/cli.h"
#include "record/live.h"

static const char usage[] =
	"usage: jittrace agent [options]\n"
	"  --listen ADDR:PORT  serve HTTP here (default 127.0.0.1:6060)\n"
	"  -F, --freq HZ       samples per second per CPU (default 19)\n"
	"  -e, --event EVENT   cycles (default), cpu-clock, ...\n"
	"  -g                  call chains: --call-graph dwarf\n"
	"      --jvmti         load jittrace's JVMTI agent into the JVMs\n"
	"                      running at start (HotSpot attach)\n"
	"      --call-graph MODE  fp (frame pointers, cheapest) or\n"
	"                      dwarf[,SIZE] (registers and SIZE bytes of\n"
	"                      stack per sample, unwound from CFI)\n"
	"  --window SECS       one profile per SECS (default 10)\n"
	"  --spool DIR         write each window to DIR/jittrace-HOST-START."
	"pb.gz\n"
	"  --spool-max MB      delete the oldest past MB (default 1024)\n"
	"  --push URL          POST each window to a Pyroscope /ingest\n"
	"  --auth-token-file F callers present this token (Authorization:\n"
	"                      Bearer) for all but /healthz\n"
	"  --labels LIST       labels on each sample, of pid,comm,source\n"
	"                      (default comm,source: a series each in the\n"
	"                      backend; pid makes one per process)\n"
	"  --auth-group NAME   without a token, local members see every\n"
	"                      process, as root does (others: their own)\n"
	"  --push-auth-file F  its credentials: \"Bearer TOKEN\" or\n"
	"                      user:password (else $JITTRACE_PUSH_AUTH)\n"
	"  --max-memory MB     memory for JIT symbol tables (default 256)\n"
	"  --cow               record copy-on-write faults\n"
	"  --tier TIER         auto, kernel, fentry, kprobe or tracepoint\n"
	"  -v, --verbose       show libbpf's messages\n";

static int parse_listen(const char *s, struct jt_agent_opts *o)
{
	static char host[64];
	const char *colon = strrchr(s, ':');
	char *end;
	unsigned long port;

	if (!colon || colon == s || (size_t)(colon - s) >= sizeof(host))
		return -1;
	port = strtoul(colon + 1, &end, 10);
	if (*end || !colon[1] || port > 65535)
		return -1;
	/* "[::1]:6060": an IPv6 literal in brackets, as URLs write it. */
	if (s[0] == '[' && colon[-1] == ']')
		snprintf(host, sizeof(host), "%.*s", (int)(colon - s - 2),
			 s + 1);
	else
		snprintf(host, sizeof(host), "%.*s", (int)(colon - s), s);
	o->listen_host = host;
	o->listen_port = port;
	return 0;
}

static int number(const char *s, uint64_t max, uint64_t *v)
{
	char *end;

	if (*s < '0' || *s > '9')
		return -1;
	*v = strtoull(s, &end, 10);
	return *end || !*v || *v > max ? -1 : 0;
}

static int parse_labels(const char *s, unsigned int *labels)
{
	static const char *const names[] = { "pid", "comm", "source" };
	char copy[64], *tok, *save;
	unsigned int i;

	if (strlen(s) >= sizeof(copy))
		return -1;
	strcpy(copy, s);
	*labels = 0;
	for (tok = strtok_r(copy, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save)) {
		for (i = 0; i < 3 && strcmp(tok, names[i]); i++)
			;
		if (i == 3)
			return -1;
		*labels |= 1u << i;
	}
	return 0;
}

static int parse_opt(int c, struct jt_agent_opts *o)
{
	struct group *g;
	const char *why;
	uint64_t v;

	switch (c) {
	case 'L':
		if (parse_listen(optarg, o))
			return jt_usage_error(usage,
					      "--listen wants ADDR:PORT");
		break;
	case 'F':
		if (number(optarg, 100000, &o->freq))
			return jt_usage_error(usage,
					      "-F wants a positive rate");
		break;
	case 'e':
		o->event = optarg;
		break;
	case 0x101:
		o->jvmti = true;
		break;
	case 'g':
		o->callchain = true;
		o->callgraph = JT_CG_DWARF;
		o->stack_size = JT_CG_STACK_DEFAULT;
		break;
	case 0x100:
		if (jt_parse_call_graph(optarg, &o->callgraph, &o->stack_size,
					&why))
			return jt_usage_error(usage, why);
		o->callchain = true;
		break;
	case 'W':
		if (number(optarg, 3600, &v))
			return jt_usage_error(usage,
					      "--window wants 1 to 3600 s");
		o->window_ns = v * 1000000000ULL;
		break;
	case 'S':
		o->spool_dir = optarg;
		break;
	case 'M':
		/* MB, or a size with K, M or G: tests keep a spool small. */
		if (!number(optarg, 1 << 24, &v))
			o->spool_max = v << 20;
		else if (jt_parse_size(optarg, &o->spool_max))
			return jt_usage_error(usage, "--spool-max wants MB");
		break;
	case 'P':
		o->push_url = optarg;
		break;
	case 'U':
		o->push_auth_file = optarg;
		break;
	case 'K':
		o->auth_token_file = optarg;
		break;
	case 'A':
		if (parse_labels(optarg, &o->labels))
			return jt_usage_error(usage,
					      "--labels wants pid, comm "
					      "and source, comma-separated");
		break;
	case 'G':
		g = getgrnam(optarg);
		if (!g)
			return jt_usage_error(
				usage, "--auth-group wants a group name");
		o->auth_group = g->gr_gid;
		break;
	case 'X':
		if (number(optarg, 1 << 24, &v) || v < 16)
			return jt_usage_error(
				usage, "--max-memory wants 16 MB or more");
		o->max_memory = v << 20;
		break;
	case 'C':
		o->cow = true;
		break;
	case 'T':
		c = jt_tier_want_parse(optarg);
		if (c < 0)
			return jt_usage_error(
				usage, "--tier wants auto, kernel, fentry, "
				       "kprobe or tracepoint");
		o->tier = c;
		break;
	case 'v':
		o->verbose = true;
		break;
	case 'h':
		fputs(usage, stdout);
		exit(0);
	default:
		return jt_usage_error(usage, NULL);
	}
	return 0;
}

static int parse(int argc, char **argv, struct jt_agent_opts *o)
{
	static const struct option longopts[] = {
		{ "listen", required_argument, NULL, 'L' },
		{ "freq", required_argument, NULL, 'F' },
		{ "event", required_argument, NULL, 'e' },
		{ "window", required_argument, NULL, 'W' },
		{ "spool", required_argument, NULL, 'S' },
		{ "spool-max", required_argument, NULL, 'M' },
		{ "push", required_argument, NULL, 'P' },
		{ "push-auth-file", required_argument, NULL, 'U' },
		{ "auth-token-file", required_argument, NULL, 'K' },
		{ "auth-group", required_argument, NULL, 'G' },
		{ "labels", required_argument, NULL, 'A' },
		{ "max-memory", required_argument, NULL, 'X' },
		{ "cow", no_argument, NULL, 'C' },
		{ "tier", required_argument, NULL, 'T' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "call-graph", required_argument, NULL, 0x100 },
		{ "jvmti", no_argument, NULL, 0x101 },
		{ "help", no_argument, NULL, 'h' },
		{},
	};
	int c, err;

	*o = (struct jt_agent_opts){ .listen_host = "127.0.0.1",
				     .listen_port = 6060,
				     .freq = 19,
				     .window_ns = 10000000000ULL,
				     .spool_max = 1024ULL << 20,
				     .max_memory = 256ULL << 20,
				     .auth_group = (gid_t)-1,
				     .labels = JT_PPROF_LABEL_COMM |
					       JT_PPROF_LABEL_SOURCE };
	while ((c = getopt_long(argc, argv, "F:e:gvh", longopts, NULL)) != -1) {
		err = parse_opt(c, o);
		if (err)
			return err;
	}
	if (optind < argc)
		return jt_usage_error(usage, "unexpected argument");
	return 0;
}

/* The host name as a file name and a label value: [A-Za-z0-9._-]. */
static void host_name(char *buf, size_t len)
{
	char *p;

	if (gethostname(buf, len))
		snprintf(buf, len, "localhost");
	buf[len - 1] = 0;
	for (p = buf; *p; p++)
		if (!(*p >= 'a' && *p <= 'z') && !(*p >= 'A' && *p <= 'Z') &&
		    !(*p >= '0' && *p <= '9') && *p != '.' && *p != '-')
			*p = '_';
}

static int64_t mono_to_real(void)
{
	struct timespec m, r;

	clock_gettime(CLOCK_MONOTONIC, &m);
	clock_gettime(CLOCK_REALTIME, &r);
	return (r.tv_sec - m.tv_sec) * 1000000000LL + (r.tv_nsec - m.tv_nsec);
}

static void ready(void *ctx)
{
	struct jt_agent *a = ctx;
	bool v6 = strchr(a->o.listen_host, ':');

	pthread_mutex_lock(&a->lock);
	a->capturing = true;
	pthread_mutex_unlock(&a->lock);
	fprintf(stderr,
		"jittrace: agent: serving "
		"http://%s%s%s:%u/debug/pprof/profile; "
		"SIGTERM to stop\n",
		v6 ? "[" : "", a->o.listen_host, v6 ? "]" : "",
		a->o.listen_port);
}

/*
 * Push credentials from a file or the environment: in the URL, every user
 * reads them in ps. One given there still works, with a warning.
 */
static int push_auth(const struct jt_agent_opts *o, char **auth)
{
	const char *env = getenv("JITTRACE_PUSH_AUTH");
	char err[256];

	*auth = NULL;
	if (jt_url_has_userinfo(o->push_url))
		fprintf(stderr,
			"jittrace: agent: warning: the --push URL holds "
			"credentials, which every user sees in ps: "
			"give them with --push-auth-file\n");
	if (o->push_auth_file) {
		*auth = jt_secret_read(o->push_auth_file, err, sizeof(err));
		if (!*auth) {
			fprintf(stderr,
				"jittrace: agent: --push-auth-file: %s\n", err);
			return -1;
		}
	} else if (env && *env) {
		*auth = strdup(env);
	}
	return 0;
}

static int outputs_start(struct jt_agent *a)
{
	char *auth, err[256];

	if (a->o.auth_token_file) {
		a->auth_token =
			jt_secret_read(a->o.auth_token_file, err, sizeof(err));
		if (!a->auth_token) {
			fprintf(stderr,
				"jittrace: agent: --auth-token-file: %s\n",
				err);
			return -1;
		}
	}

	if (a->o.spool_dir) {
		a->spool = jt_spool_open(a, a->o.spool_dir, a->o.spool_max);
		if (!a->spool)
			return -1;
	}
	if (a->o.push_url) {
		if (push_auth(&a->o, &auth))
			return -1;
		a->push = jt_push_start(a, a->o.push_url, auth);
		if (!a->push) {
			fprintf(stderr, "jittrace: agent: --push: cannot "
					"start\n");
			return -1;
		}
	}
	return 0;
}

/*
 * The pipe is the only buffer between capture and reader: a reader
 * that falls behind blocks the capture, whose BPF ring then counts what
 * it cannot take.
 */
static int make_pipe(int fds[2])
{
	if (pipe2(fds, O_CLOEXEC))
		return -errno;
	fcntl(fds[1], F_SETPIPE_SZ, 1 << 20);
	return 0;
}

static int serve(struct jt_agent *a)
{
	struct jt_live_opts lo = {
		.freq = a->o.freq,
		.event = a->o.event,
		.callchain = a->o.callchain,
		.callgraph = a->o.callgraph,
		.jvmti = a->o.jvmti,
		.stack_size = a->o.stack_size,
		.cow = a->o.cow,
		.tier = a->o.tier,
		/* One JIT file cannot take the memory: the rest is counted. */
		.max_jit_bytes = a->o.max_memory / 32,
		.verbose = a->o.verbose,
		.ready = ready,
		.ctx = a,
	};
	struct MHD_Daemon *http = jt_http_start(a);
	pthread_t reader;
	int fds[2], err;

	if (!http)
		return 1;
	err = make_pipe(fds);
	a->fd = fds[0];
	if (!err)
		err = pthread_create(&reader, NULL, jt_profiles_run, a) ?
			      -EAGAIN :
			      0;
	if (err) {
		fprintf(stderr, "jittrace: agent: %s\n", strerror(-err));
		jt_http_stop(http);
		return 1;
	}
	err = jt_record_live(&lo, fds[1]);
	pthread_join(reader, NULL);
	close(fds[0]);
	jt_push_stop(a->push);
	jt_http_stop(http);
	fprintf(stderr, "jittrace: agent: stopped\n");
	return err ? 1 : 0;
}

int cmd_agent(int argc, char **argv)
{
	struct jt_agent a = {};
	int err = parse(argc, argv, &a.o), rc;

	if (err)
		return err;
	if (jt_require_root("agent"))
		return 1;
	pthread_mutex_init(&a.lock, NULL);
	pthread_cond_init(&a.cond, NULL);
	host_name(a.host, sizeof(a.host));
	a.mono_to_real = mono_to_real();
	curl_global_init(CURL_GLOBAL_DEFAULT);
	rc = outputs_start(&a) ? 1 : serve(&a);
	jt_spool_close(a.spool);
	free(a.auth_token);
	curl_global_cleanup();
	return rc;
}
