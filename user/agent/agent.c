// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * jittrace agent: always-on, system-wide; profiles per window and on
 * request, named as `report` names them. The capture runs on this
 * thread until SIGTERM or SIGINT; the reader, the HTTP server and the
 * pusher run on their own.
 */
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
#include "agent/netlibs.h"
#include "agent/profiles.h"
#include "agent/push.h"
#include "agent/secret.h"
#include "export/pprof.h"
#include "agent/spool.h"
#include "jittrace.h"
#include "lib/cli.h"
#include "record/live.h"

static const char *const label_names[] = { "pid", "comm", "source", NULL };

static const struct jt_opt agent_opts[] = {
	{ 0, 'L', "listen", "ADDR:PORT",
	  "serve HTTP here (default 127.0.0.1:6060)" },
	{ 'F', 0, "freq", "HZ", "samples per second per CPU (default 19)" },
	{ 'e', 0, "event", "EVENT", "cycles (default), cpu-clock, ..." },
	{ 'g', 0, NULL, NULL, "call chains: --call-graph dwarf" },
	{ 0, 0x100, "call-graph", "MODE",
	  "fp (frame pointers, cheapest) or dwarf[,SIZE] (registers and SIZE "
	  "bytes of stack per sample, unwound from CFI)",
	  JT_ARG_WORD, jt_call_graph_modes },
	{ 0, 0x101, "jvmti", NULL,
	  "load jittrace's JVMTI agent into the JVMs running at start "
	  "(HotSpot attach)" },
	{ 0, 'W', "window", "SECS", "one profile per SECS (default 10)" },
	{ 0, 'S', "spool", "DIR",
	  "write each window to DIR/jittrace-HOST-START.pb.gz", JT_ARG_DIR },
	{ 0, 'M', "spool-max", "MB",
	  "delete the oldest past MB (default 1024)" },
	{ 0, 'P', "push", "URL", "POST each window to a Pyroscope /ingest" },
	{ 0, 'U', "push-auth-file", "FILE",
	  "its credentials: \"Bearer TOKEN\" or user:password (else "
	  "$JITTRACE_PUSH_AUTH)",
	  JT_ARG_FILE },
	{ 0, 'K', "auth-token-file", "FILE",
	  "callers present this token (Authorization: Bearer) for all but "
	  "/healthz",
	  JT_ARG_FILE },
	{ 0, 'G', "auth-group", "NAME",
	  "without a token, local members see every process, as root does "
	  "(others: their own)" },
	{ 0, 'A', "labels", "LIST",
	  "labels on each sample, of pid,comm,source (default comm,source: a "
	  "series each in the backend; pid makes one per process)",
	  JT_ARG_WORDS, label_names },
	{ 0, 'X', "max-memory", "MB",
	  "memory for JIT symbol tables (default 256)" },
	{ 0, 'C', "cow", NULL, "record copy-on-write faults" },
	{ 0, 'T', "tier", "TIER", "auto, kernel, fentry, kprobe or tracepoint",
	  JT_ARG_WORD, jt_tier_wants },
	{ 'v', 0, "verbose", NULL, "show libbpf's messages" },
	{ 0 },
};

const struct jt_cmd jt_cmd_agent = {
	.name = "agent",
	.summary = "always on, system-wide: pprof profiles over HTTP, spooled "
		   "or pushed",
	.synopsis = "[options]",
	.opts = agent_opts,
	.run = cmd_agent,
};

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
	char copy[64], *tok, *save;
	int i;

	if (strlen(s) >= sizeof(copy))
		return -1;
	strcpy(copy, s);
	*labels = 0;
	for (tok = strtok_r(copy, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save)) {
		i = jt_word_index(label_names, tok);
		if (i < 0)
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
			return jt_cmd_error(&jt_cmd_agent,
					    "--listen wants ADDR:PORT");
		break;
	case 'F':
		if (number(optarg, 100000, &o->freq))
			return jt_cmd_error(&jt_cmd_agent,
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
			return jt_cmd_error(&jt_cmd_agent, why);
		o->callchain = true;
		break;
	case 'W':
		if (number(optarg, 3600, &v))
			return jt_cmd_error(&jt_cmd_agent,
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
			return jt_cmd_error(&jt_cmd_agent,
					    "--spool-max wants MB");
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
			return jt_cmd_error(&jt_cmd_agent,
					    "--labels wants pid, comm "
					    "and source, comma-separated");
		break;
	case 'G':
		g = getgrnam(optarg);
		if (!g)
			return jt_cmd_error(&jt_cmd_agent,
					    "--auth-group wants a group name");
		o->auth_group = g->gr_gid;
		break;
	case 'X':
		if (number(optarg, 1 << 24, &v) || v < 16)
			return jt_cmd_error(&jt_cmd_agent,
					    "--max-memory wants 16 MB or more");
		o->max_memory = v << 20;
		break;
	case 'C':
		o->cow = true;
		break;
	case 'T':
		c = jt_tier_want_parse(optarg);
		if (c < 0)
			return jt_cmd_error(
				&jt_cmd_agent,
				"--tier wants auto, kernel, fentry, "
				"kprobe or tracepoint");
		o->tier = c;
		break;
	case 'v':
		o->verbose = true;
		break;
	case 'h':
		jt_cmd_usage(stdout, &jt_cmd_agent);
		exit(0);
	default:
		return jt_cmd_error(&jt_cmd_agent, NULL);
	}
	return 0;
}

static int parse(int argc, char **argv, struct jt_agent_opts *o)
{
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
	while ((c = jt_getopt(argc, argv, &jt_cmd_agent)) != -1) {
		err = parse_opt(c, o);
		if (err)
			return err;
	}
	if (optind < argc)
		return jt_cmd_error(&jt_cmd_agent, "unexpected argument");
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
 * The channel is the only buffer between capture and reader: a reader
 * that falls behind blocks the capture, whose BPF ring then counts what
 * it cannot take.
 */
#define CHAN_MAX (1 << 20)

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
	int err;

	if (!http)
		return 1;
	err = jt_chan_init(&a->chan, CHAN_MAX);
	if (!err)
		err = pthread_create(&reader, NULL, jt_profiles_run, a) ?
			      -EAGAIN :
			      0;
	if (err) {
		fprintf(stderr, "jittrace: agent: %s\n", strerror(-err));
		jt_http_stop(http);
		return 1;
	}
	err = jt_record_live(&lo, &a->chan);
	pthread_join(reader, NULL);
	jt_chan_free(&a->chan);
	jt_push_stop(a->push);
	jt_http_stop(http);
	fprintf(stderr, "jittrace: agent: stopped\n");
	return err ? 1 : 0;
}

int cmd_agent(int argc, char **argv)
{
	struct jt_agent a = {};
	int err = parse(argc, argv, &a.o), rc;
	char why[256];

	if (err)
		return err;
	if (jt_require_root("agent"))
		return 1;
	if (jt_netlibs_open(why, sizeof(why))) {
		fprintf(stderr,
			"jittrace: agent: %s (its HTTP server and push need "
			"libmicrohttpd and libcurl)\n",
			why);
		return 1;
	}
	pthread_mutex_init(&a.lock, NULL);
	pthread_cond_init(&a.cond, NULL);
	host_name(a.host, sizeof(a.host));
	a.mono_to_real = mono_to_real();
	jt_curl.global_init(CURL_GLOBAL_DEFAULT);
	rc = outputs_start(&a) ? 1 : serve(&a);
	jt_spool_close(a.spool);
	free(a.auth_token);
	jt_curl.global_cleanup();
	return rc;
}
