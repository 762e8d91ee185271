// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * jittrace record: capture only. BPF events and perf records go to the
 * file as they come; interpretation is left to the model at report time.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <bpf/libbpf.h>
#include "lib/clock.h"
#include "jittrace.h"
#include "lib/cli.h"
#include "lib/chan.h"
#include "lib/jt_file.h"
#include "lib/reserve.h"
#include "live/jvmti.h"
#include "record/buildids.h"
#include "record/detach.h"
#include "record/vdso.h"
#include "record/jitfiles.h"
#include "record/kallsyms_capture.h"
#include "record/output.h"
#include "record/perf_rings.h"
#include "record/live.h"
#include "record/kfeatures.h"
#include "record/probes.h"
#include "record/snapshot.h"
#include "record/target.h"

struct record_opts {
	const char *output;
	const char *user;
	bool run_as_root;
	bool all;
	pid_t pid;
	double duration;
	bool verbose;
	bool cow;
	bool jvmti;
	char jvmti_path[4096];
	enum jt_tier_want tier;
	uint32_t bpf_ring_kb;
	struct jt_jit_budget budget;
	struct jt_perf_opts perf;
	char **argv;
};

#define BUSY_MAX 64

struct recorder {
	struct record_opts o;
	struct jt_writer w;
	struct jt_probes probes;
	struct jt_perf perf;
	struct jt_target target;
	struct jt_jitfiles jit;
	struct jt_opener opener; /* other users' files, off the loop */
	struct jt_buildids bids;
	struct jt_output out;
	uint64_t bpf_records;
	size_t jit_files;
	uint64_t views_reused; /* the JIT files' view_tmp hits, kept past close
				*/
	uint64_t lost_written;
	uint64_t perf_lost;    /* the perf rings' count, as last read */
	uint64_t perf_lost_ns; /* when: 0, never */
	int pidfd;	       /* the process whose exit ends the recording */
	pid_t busy[BUSY_MAX];  /* whose VMAs to read again after this pass */
	int nbusy;
	uint64_t ring_wakes;   /* passes the BPF ring woke us for (-v says) */
	uint64_t lane_records; /* of bpf_records, those read from lanes */
	bool write_failed;     /* said once */
};

/*
 * Reading a perf event's count makes the kernel interrupt the CPU the
 * event runs on (an IPI), and the traced process pays for it: on every
 * drain pass that was a third of the recorder's time and most of the
 * cost per traced mmap call. The count moves only when a ring is full,
 * and the kernel writes its own LOST record into the ring then: a
 * reading a second is enough, and the last one is taken at the end.
 */
#define PERF_LOST_READ_NS 1000000000ULL

static volatile sig_atomic_t stop_signal;

static void on_signal(int sig)
{
	stop_signal = sig;
}

static const struct jt_opt record_opts[] = {
	{ 'o', 0, "output", "FILE", "recording file (default jittrace.data)",
	  JT_ARG_FILE },
	{ 'e', 0, "event", "EVENT",
	  "what to sample on: cycles (default), instructions, cpu-clock, "
	  "task-clock, page-faults, ..." },
	{ 'F', 0, "freq", "HZ", "sampling frequency (default 999)" },
	{ 'c', 0, "count", "PERIOD", "sample every PERIOD events instead" },
	{ 'g', 0, NULL, NULL, "record call chains: --call-graph dwarf" },
	{ 0, 'G', "call-graph", "MODE",
	  "fp: the chain the kernel walks by frame pointers; dwarf[,SIZE]: "
	  "user registers and SIZE bytes of user stack (default 8192), "
	  "unwound from CFI by every view",
	  JT_ARG_WORD, jt_call_graph_modes },
	{ 'd', 0, "data", NULL,
	  "record data addresses (PERF_SAMPLE_ADDR); implies --cow" },
	{ 0, 0x102, "jvmti", NULL,
	  "name Java's JIT code with jittrace's JVMTI agent: loaded at start "
	  "into the command's JVMs (JAVA_TOOL_OPTIONS), attached to a running "
	  "JVM with -p, to every one with -a" },
	{ 0, 'C', "cow", NULL,
	  "record copy-on-write faults (which pages became private); costs a "
	  "VMA lookup per write fault" },
	{ 0, 'T', "tier", "TIER",
	  "probes: auto (default: per hook, fentry, then kprobe, then "
	  "tracepoints; a mapping call's syscall tracepoint before its "
	  "kprobes), kernel (fentry or kprobe, else fail), fentry, kprobe or "
	  "tracepoint",
	  JT_ARG_WORD, jt_tier_wants },
	{ 'p', 0, "pid", "PID", "attach to a running process", JT_ARG_PID },
	{ 'a', 0, "all-cpus", NULL, "every process on the system" },
	{ 0, 'D', "duration", "SECS", "stop after SECS (-p and -a)" },
	{ 'm', 0, "mmap-pages", "N",
	  "perf ring data pages per CPU, a power of two (default 256)" },
	{ 0, 'B', "bpf-ring", "KB",
	  "BPF ring buffer size, a power of two (default 8192)" },
	{ 0, 'J', "max-jit-bytes", "N",
	  "copy at most N bytes of each jitdump or perf-map file (K, M, G "
	  "suffixes; default 256M); the rest is counted, not copied" },
	{ 0, 'K', "max-process-jit-bytes", "N",
	  "the same for all of one process's files (default 512M)" },
	{ 0, 'W', "max-process-writes", "N",
	  "record at most N perf-map write events of one process (default "
	  "1000000); the rest are counted" },
	{ 0, 'u', "user", "USER", "run the command as USER", JT_ARG_USER },
	{ 0, 'R', "run-as-root", NULL,
	  "run the command as root (not recommended)" },
	{ 'v', 0, "verbose", NULL, "show libbpf's messages" },
	{ 0 },
};

const struct jt_cmd jt_cmd_record = {
	.name = "record",
	.summary =
		"run a command (or attach), record its memory map and samples",
	.synopsis = "[options] -- COMMAND [ARGS...]\n[options] -p PID | -a",
	.opts = record_opts,
	.in_order = true,
	.runs_command = true,
	.run = cmd_record,
};

static bool pow2(unsigned long v)
{
	return v && !(v & (v - 1));
}

/* A positive decimal: strtoull alone takes "-5" as 2^64 - 5. */
static bool positive(const char *s, uint64_t *v)
{
	char *end;

	if (*s < '0' || *s > '9')
		return false;
	errno = 0;
	*v = strtoull(s, &end, 10);
	return !*end && !errno && *v;
}

static uint64_t max_sample_rate(void)
{
	unsigned long long v = 0;
	FILE *f = fopen("/proc/sys/kernel/perf_event_max_sample_rate", "re");

	if (f && fscanf(f, "%llu", &v) != 1)
		v = 0;
	if (f)
		fclose(f);
	return v;
}

/*
 * What perf checks before it opens an event, said as perf would. As
 * perf does, the default rate comes down to the kernel's maximum, which
 * the kernel lowers itself where its sample interrupts run long (an
 * emulated arm64 guest on a busy host went to 500 Hz); one asked for
 * with -F is refused.
 */
static int check_sampling(struct record_opts *o, bool freq_given)
{
	uint64_t max = max_sample_rate();

	if (freq_given && o->perf.period)
		return jt_cmd_error(&jt_cmd_record, "give -F or -c, not both");
	if (o->perf.period || !max || o->perf.freq <= max)
		return 0;
	if (freq_given) {
		fprintf(stderr,
			"jittrace: -F %llu is above the kernel's maximum "
			"sampling rate, %llu Hz (kernel.perf_event_max_sample_"
			"rate): lower -F or raise that sysctl\n",
			(unsigned long long)o->perf.freq,
			(unsigned long long)max);
		return 2;
	}
	fprintf(stderr,
		"jittrace: lowering the default sampling rate from %llu to "
		"%llu Hz, the kernel's maximum (kernel.perf_event_max_sample_"
		"rate)\n",
		(unsigned long long)o->perf.freq, (unsigned long long)max);
	o->perf.freq = max;
	return 0;
}

static int parse(int argc, char **argv, struct record_opts *o)
{
	bool freq_given = false;
	const char *why;
	char *end;
	int c;

	o->output = "jittrace.data";
	o->perf.freq = 999;
	o->perf.pages = 256; /* 1 MiB per CPU: a JIT's MMAP2 bursts fit */
	o->bpf_ring_kb = 8192;
	o->budget =
		(struct jt_jit_budget){ 256ULL << 20, 512ULL << 20, 1000000 };
	while ((c = jt_getopt(argc, argv, &jt_cmd_record)) != -1) {
		switch (c) {
		case 'o':
			o->output = optarg;
			break;
		case 'e':
			o->perf.event = optarg;
			break;
		case 'F':
			if (!positive(optarg, &o->perf.freq))
				return jt_cmd_error(
					&jt_cmd_record,
					"-F wants a positive number of "
					"samples per second");
			freq_given = true;
			break;
		case 'c':
			if (!positive(optarg, &o->perf.period))
				return jt_cmd_error(
					&jt_cmd_record,
					"-c wants a positive number of "
					"events per sample");
			break;
		case 'g':
			o->perf.callchain = true;
			o->perf.callgraph = JT_CG_DWARF;
			o->perf.stack_size = JT_CG_STACK_DEFAULT;
			break;
		case 'G':
			if (jt_parse_call_graph(optarg, &o->perf.callgraph,
						&o->perf.stack_size, &why))
				return jt_cmd_error(&jt_cmd_record, why);
			o->perf.callchain = true;
			break;
		case 'd':
			o->perf.data_addr = true;
			break;
		case 'p':
			o->pid = strtol(optarg, &end, 10);
			if (*end || o->pid <= 0)
				return jt_cmd_error(&jt_cmd_record,
						    "bad -p value");
			break;
		case 'a':
			o->all = true;
			break;
		case 'D':
			o->duration = strtod(optarg, &end);
			if (*end || o->duration <= 0)
				return jt_cmd_error(&jt_cmd_record,
						    "bad --duration");
			break;
		case 'm':
			o->perf.pages = strtoul(optarg, &end, 10);
			if (*end || !pow2(o->perf.pages))
				return jt_cmd_error(&jt_cmd_record,
						    "-m wants a power of two");
			break;
		case 'B':
			o->bpf_ring_kb = strtoul(optarg, &end, 10);
			if (*end || !pow2(o->bpf_ring_kb) ||
			    o->bpf_ring_kb < 4 || o->bpf_ring_kb > (1u << 21))
				return jt_cmd_error(
					&jt_cmd_record,
					"--bpf-ring wants a power of two "
					"from 4 to 2097152 (KB)");
			break;
		case 'C':
			o->cow = true;
			break;
		case 0x102:
			o->jvmti = true;
			break;
		case 'J':
			if (jt_parse_size(optarg, &o->budget.file_bytes))
				return jt_cmd_error(
					&jt_cmd_record,
					"--max-jit-bytes wants a size: "
					"a positive number, then K, M "
					"or G");
			break;
		case 'K':
			if (jt_parse_size(optarg, &o->budget.process_bytes))
				return jt_cmd_error(
					&jt_cmd_record,
					"--max-process-jit-bytes wants "
					"a size: a positive number, "
					"then K, M or G");
			break;
		case 'W':
			o->budget.process_writes = strtoull(optarg, &end, 10);
			if (*end || !*optarg || optarg[0] == '-')
				return jt_cmd_error(
					&jt_cmd_record,
					"--max-process-writes wants a "
					"whole number");
			break;
		case 'T':
			c = jt_tier_want_parse(optarg);
			if (c < 0)
				return jt_cmd_error(
					&jt_cmd_record,
					"--tier wants auto, kernel, "
					"fentry, kprobe or tracepoint");
			o->tier = c;
			break;
		case 'u':
			o->user = optarg;
			break;
		case 'R':
			o->run_as_root = true;
			break;
		case 'v':
			o->verbose = true;
			break;
		case 'h':
			jt_cmd_usage(stdout, &jt_cmd_record);
			exit(0);
		default:
			return jt_cmd_error(&jt_cmd_record, NULL);
		}
	}
	o->argv = argv + optind;
	if (!!o->argv[0] + !!o->pid + o->all != 1)
		return jt_cmd_error(&jt_cmd_record,
				    "give a command, -p PID or -a (one)");
	return check_sampling(o, freq_given);
}

static void note_busy(struct recorder *r, const void *data, size_t size);

static uid_t jit_owner(void *jit, pid_t pid)
{
	return jt_jitfiles_owner(jit, pid);
}

static int on_bpf_event(void *ctx, void *data, size_t size)
{
	struct recorder *r = ctx;

	note_busy(r, data, size);
	if (jt_jitfiles_admit(&r->jit, data, size)) {
		jt_writer_add(&r->w, JT_REC_BPF, data, size, NULL, 0);
		r->bpf_records++;
	}
	jt_jitfiles_event(&r->jit, data, size);
	jt_buildids_event(&r->bids, data, size);
	return 0;
}

static int emit_synth(void *ctx, const void *ev, size_t size)
{
	return on_bpf_event(ctx, (void *)ev, size);
}

/*
 * A lookup that found mmap_lock busy (a sibling thread held it through
 * every retry): the process's VMAs are read from /proc after this pass.
 */
static void note_busy(struct recorder *r, const void *data, size_t size)
{
	const struct jt_map_event *ev = data;
	int i;

	if (size < sizeof(*ev) || ev->h.type == JT_EV_VMA ||
	    ev->h.type > JT_EV_SHMDT || !(ev->flags & JT_MF_VMA_BUSY))
		return;
	for (i = 0; i < r->nbusy && r->busy[i] != (pid_t)ev->h.pid; i++)
		;
	if (i == r->nbusy && r->nbusy < BUSY_MAX)
		r->busy[r->nbusy++] = ev->h.pid;
}

static void reread_busy(struct recorder *r)
{
	int i;

	/* Under the test's injected busy lookups only BPF reads them again. */
	for (i = 0; i < r->nbusy && !jt_test_vma_busy(); i++)
		jt_snapshot_vmas(r->busy[i], jt_mono_ns(), emit_synth, r);
	r->nbusy = 0;
}

static int write_meta(struct recorder *r, int argc, char **argv)
{
	char buf[8192];
	struct utsname u;
	size_t n = 0;
	int i;

	uname(&u);
	n += snprintf(buf + n, sizeof(buf) - n,
		      "host=%s\nkernel=%s\nmachine=%s\nclock=CLOCK_MONOTONIC\n"
		      "start_ns=%llu\nstart_unix=%lld\nmode=%s\n"
		      "perf.event=%s\nperf.sample_type=0x%llx\n"
		      "perf.sample_regs_user=0x%llx\nperf.mmap=bpf\n",
		      u.nodename, u.release, u.machine,
		      (unsigned long long)jt_mono_ns(), (long long)time(NULL),
		      r->o.all ? "all" :
		      r->o.pid ? "pid" :
				 "command",
		      r->perf.event,
		      (unsigned long long)r->perf.attr.sample_type,
		      (unsigned long long)r->perf.attr.sample_regs_user);
	for (i = 0; i < JT_HOOK_MAX; i++)
		n += snprintf(buf + n, sizeof(buf) - n, "tier.%s=%s\n",
			      jt_hook_names[i],
			      jt_tier_name(r->probes.tier[i]));
	n += snprintf(buf + n, sizeof(buf) - n, "exec_snapshot=%s\n",
		      r->probes.snap ? "iterator" : "anchors");
	n += snprintf(buf + n, sizeof(buf) - n, "cow=%s\n",
		      r->o.cow || r->o.perf.data_addr ? "on" : "off");
	if (r->o.perf.callgraph == JT_CG_DWARF)
		n += jt_vdso_capture(&r->w, buf + n, sizeof(buf) - n);
	/* What one sample stands for, for exports that give CPU time. */
	n += snprintf(buf + n, sizeof(buf) - n, "perf.freq=%llu\n",
		      r->perf.attr.freq ?
			      (unsigned long long)r->perf.attr.sample_freq :
			      0ULL);
	if (!r->perf.attr.freq)
		n += snprintf(buf + n, sizeof(buf) - n, "perf.period=%llu\n",
			      (unsigned long long)r->perf.attr.sample_period);
	/* Readers wait for ROUND marks rather than guess from times. */
	n += snprintf(buf + n, sizeof(buf) - n, "rounds=1\n");
	n += jt_perf_tsc_meta(&r->perf, buf + n, sizeof(buf) - n);
	n += snprintf(buf + n, sizeof(buf) - n, "cmdline=");
	for (i = 0; i < argc && n < sizeof(buf) - 2; i++)
		n += snprintf(buf + n, sizeof(buf) - n, "%s%s", i ? " " : "",
			      argv[i]);
	n += snprintf(buf + n, sizeof(buf) - n, "\n");
	if (n >= sizeof(buf))
		n = sizeof(buf) - 1;
	return jt_writer_add(&r->w, JT_REC_META, buf, n, NULL, 0);
}

/* Each count costs syscalls (a map read, a read per perf fd): once. */
static struct jt_lost_rec losses(struct recorder *r, bool now)
{
	uint64_t t = jt_mono_ns();

	if (now || !r->perf_lost_ns ||
	    t - r->perf_lost_ns >= PERF_LOST_READ_NS) {
		r->perf_lost = jt_perf_lost(&r->perf);
		r->perf_lost_ns = t;
	}
	return (struct jt_lost_rec){ t, jt_probes_lost(&r->probes),
				     r->perf_lost, r->w.dropped };
}

static void write_lost(struct recorder *r, bool force)
{
	struct jt_lost_rec l = losses(r, force);
	uint64_t total = l.bpf_events + l.perf_records + l.bpf_errors;

	/* After a failed write the count can only go to stderr. */
	if (r->w.err || (!force && total == r->lost_written))
		return;
	r->lost_written = total;
	jt_writer_add(&r->w, JT_REC_LOST, &l, sizeof(l), NULL, 0);
}

/* pids of every thread of pid: -p follows all of them. */
static int list_threads(pid_t pid, pid_t **out)
{
	char path[64];
	struct dirent *de;
	size_t cap = 0;
	int n = 0;
	DIR *d;

	snprintf(path, sizeof(path), "/proc/%d/task", pid);
	d = opendir(path);
	if (!d)
		return -errno;
	*out = NULL;
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		if (jt_reserve(out, &cap, n + 1, sizeof(**out)))
			break;
		(*out)[n++] = atoi(de->d_name);
	}
	closedir(d);
	return n;
}

static int open_perf(struct recorder *r)
{
	pid_t *tids = NULL;
	int n, err;

	if (r->o.all)
		return jt_perf_open(&r->perf, &r->o.perf, NULL, 0, false);
	if (!r->o.pid)
		return jt_perf_open(&r->perf, &r->o.perf, &r->target.pid, 1,
				    true);
	n = list_threads(r->o.pid, &tids);
	if (n <= 0) {
		fprintf(stderr, "jittrace: no process %d\n", r->o.pid);
		return -ESRCH;
	}
	err = jt_perf_open(&r->perf, &r->o.perf, tids, n, false);
	free(tids);
	return err;
}

static void setup_failed(const char *what, int err, bool libbpf_hint)
{
	struct rlimit rl = {};

	if (err == -EMFILE || err == -ENFILE) {
		getrlimit(RLIMIT_NOFILE, &rl);
		fprintf(stderr,
			"jittrace: %s failed: out of file descriptors (ulimit "
			"-n is %llu); BPF programs, maps and perf events each "
			"take one: raise it with 'ulimit -n'\n",
			what, (unsigned long long)rl.rlim_cur);
		return;
	}
	fprintf(stderr, "jittrace: %s failed: %s%s\n", what, strerror(-err),
		err == -EPERM ? " (run 'jittrace doctor')" :
		!libbpf_hint  ? "" :
				" (-v shows libbpf's messages)");
}

/* The programs load while a thread reads the kernel's symbols. */
static int setup_probes(struct recorder *r, struct jt_kallsyms_capture *ks)
{
	char buf[512];
	int err;

	jt_kallsyms_start(ks);
	if (!r->o.all && !r->o.pid &&
	    jt_target_identity(&r->target, r->o.user, r->o.run_as_root))
		return -EPERM;
	err = jt_probes_load(&r->probes, r->o.tier, r->o.all,
			     r->o.cow || r->o.perf.data_addr,
			     r->o.bpf_ring_kb * 1024, on_bpf_event, r);
	if (err == -ENOTSUP)
		return err;
	if (err) {
		setup_failed("loading BPF programs", err, !r->o.verbose);
		jt_kfeatures_explain();
		return err;
	}
	jt_probes_describe(&r->probes, buf, sizeof(buf));
	fprintf(stderr, "jittrace: probes: %s\n", buf);
	return 0;
}

static int setup_rest(struct recorder *r, struct jt_kallsyms_capture *ks,
		      int argc, char **argv)
{
	int fds[256], err = 0;

	if (r->o.argv[0]) {
		err = jt_target_spawn(&r->target, r->o.argv);
		if (!err)
			err = jt_probes_trace(&r->probes, r->target.pid);
	} else if (r->o.pid) {
		err = jt_probes_trace(&r->probes, r->o.pid);
		jt_jitfiles_track(&r->jit, r->o.pid, 0);
	}
	if (!err)
		err = open_perf(r);
	if (!err)
		err = write_meta(r, argc, argv);
	/* With our own programs: kernel stacks of the traced syscalls go
	 * through them. */
	if (err)
		jt_kallsyms_abandon(ks);
	else if (jt_kallsyms_finish(ks, &r->w, fds,
				    jt_probes_prog_fds(&r->probes, fds, 256)))
		fprintf(stderr, "jittrace: /proc/kallsyms unreadable: kernel "
				"samples will show as [kernel.kallsyms]\n");
	if (!err)
		err = jt_probes_attach(&r->probes);
	if (err)
		setup_failed("setting up", err, false);
	return err;
}

static int setup(struct recorder *r, int argc, char **argv)
{
	struct jt_kallsyms_capture ks;
	int err = setup_probes(r, &ks);

	if (err) {
		jt_kallsyms_abandon(&ks);
		return err;
	}
	return setup_rest(r, &ks, argc, argv);
}

/* Scripts wait for this line: everything is attached from here on. */
static int announce(struct recorder *r)
{
	int err = jt_perf_enable(&r->perf);

	if (err)
		return err;
	if (r->o.all)
		fprintf(stderr,
			"jittrace: recording system-wide; Ctrl-C to stop\n");
	else
		fprintf(stderr, "jittrace: recording pid %d; Ctrl-C to stop\n",
			r->o.pid);
	return 0;
}

/* -a and -p: what was mapped before we came, written before the file
 * replaces an older one, so a process that is gone fails cleanly. */
static int prepare(struct recorder *r)
{
	int err = 0;

	if (r->o.all)
		jt_snapshot_all(jt_mono_ns(), emit_synth, r);
	else if (r->o.pid)
		err = jt_snapshot_pid(r->o.pid, jt_mono_ns(), emit_synth, r);
	if (err == -ENOENT)
		fprintf(stderr,
			"jittrace: pid %d has no memory map to trace (a kernel "
			"thread, or it has exited)\n",
			r->o.pid);
	else if (err)
		fprintf(stderr, "jittrace: reading /proc/%d/maps: %s\n",
			r->o.pid, strerror(-err));
	return err;
}

static int start(struct recorder *r)
{
	int e;

	if (r->o.all || r->o.pid)
		return announce(r);
	e = jt_target_release(&r->target);
	if (!e)
		return 0;
	fprintf(stderr, "jittrace: %s: %s\n", r->o.argv[0],
		e == ENOENT ? "command not found" : strerror(e));
	return -e;
}

/* Each source is known by its fd when epoll says it is ready. */
static int epoll_add(int ep, int fd, uint32_t events)
{
	struct epoll_event ev = { .events = events, .data.fd = fd };

	return epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev);
}

/*
 * The command's or the attached process's exit wakes us at once (a
 * pidfd is readable when its process exits): waiting for the next tick
 * made every recording end up to 100 ms late.
 */
static void watch_exit(struct recorder *r, int ep)
{
	pid_t pid = r->target.pid ? r->target.pid : r->o.pid;

	r->pidfd = pid ? syscall(SYS_pidfd_open, pid, 0) : -1;
	if (r->pidfd >= 0 && epoll_add(ep, r->pidfd, EPOLLIN)) {
		close(r->pidfd);
		r->pidfd = -1;
	}
}

static int make_epoll(struct recorder *r)
{
	int fd = epoll_create1(EPOLL_CLOEXEC);

	if (fd < 0)
		return -errno;
	/*
	 * Edge-triggered: the ring is readable whenever a record waits, and
	 * under a steady stream one always does, so level-triggered returned
	 * at once after every pass (6,000 passes a second on the mmap loop)
	 * however rarely BPF asked to wake us.
	 */
	if (epoll_add(fd, ring_buffer__epoll_fd(r->probes.rb),
		      EPOLLIN | EPOLLET) ||
	    (r->jit.inotify_fd >= 0 &&
	     epoll_add(fd, r->jit.inotify_fd, EPOLLIN))) {
		close(fd);
		return -errno;
	}
	watch_exit(r, fd);
	return fd;
}

/* One pass over every source; the file stays readable if we die after. */
static int drain(struct recorder *r)
{
	struct jt_round_rec round = { jt_mono_ns() };
	int err = ring_buffer__consume(r->probes.rb);

	if (err < 0 && err != -EINTR)
		return err;
	r->lane_records += jt_lanes_drain(&r->probes.lanes, on_bpf_event, r);
	reread_busy(r);
	jt_jitfiles_poll(&r->jit);
	jt_perf_drain(&r->perf, &r->w);
	write_lost(r, false);
	/* Every ring drained: what happened before the pass is all in. */
	jt_writer_add(&r->w, JT_REC_ROUND, &round, sizeof(round), NULL, 0);
	/* A full disk does not end the command: what is lost is counted. */
	if (jt_writer_pass_done(&r->w, round.time) && !r->write_failed) {
		r->write_failed = true;
		fprintf(stderr,
			"jittrace: writing %s: %s; the recording ends at byte "
			"%llu, later events are counted as lost\n",
			r->o.output, strerror(r->w.err),
			(unsigned long long)r->w.bytes);
	}
	return 0;
}

/* Exited counts, reaped or not: a zombie's parent may be waiting on us. */
static bool pid_gone(pid_t pid)
{
	char path[64], buf[256], *p;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT || errno == ESRCH;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return true;
	buf[n] = 0;
	/* "pid (comm) S ...": comm may hold anything, the state follows
	 * the last ')'. */
	p = strrchr(buf, ')');
	return p && p[1] == ' ' && (p[2] == 'Z' || p[2] == 'X');
}

static bool target_done(struct recorder *r, int *status)
{
	if (r->target.pid &&
	    waitpid(r->target.pid, status, WNOHANG) == r->target.pid) {
		r->target.pid = 0;
		return true;
	}
	return r->o.pid && pid_gone(r->o.pid);
}

/*
 * Loop until the command exits, a signal, or --duration. BPF wakes us
 * only when its ring fills and inotify when a perf-map grows; otherwise
 * the timeout is the tick that moves everything to the file.
 */
static int run(struct recorder *r, int *status)
{
	uint64_t deadline =
		r->o.duration ? jt_mono_ns() + r->o.duration * 1e9 : 0;
	int ring = ring_buffer__epoll_fd(r->probes.rb);
	struct epoll_event evs[4];
	int ep = make_epoll(r), err = 0, i, n;

	if (ep < 0)
		return ep;
	while (!stop_signal && !err) {
		n = epoll_wait(ep, evs, 4, 100);
		if (n < 0 && errno != EINTR)
			err = -errno;
		for (i = 0; i < n; i++)
			r->ring_wakes += evs[i].data.fd == ring;
		if (!err)
			err = drain(r);
		if (deadline && jt_mono_ns() >= deadline)
			break;
		if (target_done(r, status))
			break;
	}
	if (r->pidfd >= 0)
		close(r->pidfd);
	close(ep);
	return err;
}

/* Opens and reads that hung, and those of the same users not tried since. */
static void opener_report(const struct jt_opener *o)
{
	if (o->timed_out || o->refused)
		fprintf(stderr,
			"jittrace: %llu file opens or reads hung past %d ms "
			"(reads of root's files on a local disk: %d ms) and "
			"were left; %llu more of the same users were not "
			"tried\n",
			(unsigned long long)o->timed_out, JT_OPEN_WAIT_MS,
			JT_READ_WAIT_MS, (unsigned long long)o->refused);
}

/*
 * How the tracepoint tier's COW faults found their VMAs: a walk of the
 * tree costs no interrupt, bpf_find_vma a self-IPI each (maple.bpf.h).
 * With -v, how the mapping calls' were found: a walk that no writer
 * overlapped costs half of bpf_find_vma's try-lock and callback.
 */
static void say_vma_lookups(struct recorder *r)
{
	uint64_t n[JT_LOOKUP_MAX];

	if (jt_probes_vma_lookups(&r->probes, n))
		return;
	if (n[JT_LOOKUP_WALK] + n[JT_LOOKUP_FIND_VMA])
		fprintf(stderr,
			"jittrace: COW faults' VMAs: %llu by a walk of the VMA "
			"tree, %llu by bpf_find_vma\n",
			(unsigned long long)n[JT_LOOKUP_WALK],
			(unsigned long long)n[JT_LOOKUP_FIND_VMA]);
	if (r->o.verbose)
		fprintf(stderr,
			"jittrace: mapping calls' VMAs: %llu by a walk of the "
			"VMA tree that no writer overlapped, %llu by "
			"bpf_find_vma\n",
			(unsigned long long)n[JT_LOOKUP_CALL_WALK],
			(unsigned long long)n[JT_LOOKUP_CALL_FIND_VMA]);
}

/* With -v: how many events came by the CPUs' lanes (lanes.bpf.h). */
static void say_lanes(const struct recorder *r)
{
	if (!r->probes.lanes.slots)
		fprintf(stderr, "jittrace: BPF lanes: none; every event came "
				"by the ring\n");
	else
		fprintf(stderr,
			"jittrace: BPF lanes, for the %s: %u records per CPU, "
			"woken at %u; they carried %llu of the %llu BPF "
			"events\n",
			r->probes.lanes.kernel_tier ? "kernel tier's exits" :
						      "syscall tracepoints",
			r->probes.lanes.slots, r->probes.lanes.slots / 2,
			(unsigned long long)r->lane_records,
			(unsigned long long)r->bpf_records);
}

static void finish(struct recorder *r, int exit_status)
{
	struct jt_finish_rec f = { .exit_status = exit_status };
	struct jt_lost_rec l;
	uint64_t lost;

	/* Each --jvmti attach says how it went before we end (bounded). */
	if (r->o.jvmti)
		jt_jvmti_wait();
	ring_buffer__consume(r->probes.rb);
	r->lane_records += jt_lanes_drain(&r->probes.lanes, on_bpf_event, r);
	jt_perf_drain(&r->perf, &r->w);
	r->jit_files = jt_jitfiles_accepted(&r->jit);
	r->views_reused = r->jit.views_reused;
	jt_jitfiles_close(&r->jit);
	opener_report(&r->opener);
	write_lost(r, true);
	f.time = jt_mono_ns();
	f.bpf_records = r->bpf_records;
	f.perf_records = r->perf.records;
	if (!r->w.err)
		jt_writer_add(&r->w, JT_REC_FINISH, &f, sizeof(f), NULL, 0);
	if (jt_writer_close(&r->w) && !r->write_failed)
		fprintf(stderr, "jittrace: writing %s: %s\n", r->o.output,
			strerror(r->w.err));
	l = losses(r, true);
	lost = l.bpf_events + l.perf_records + l.bpf_errors;
	if (lost)
		fprintf(stderr,
			"jittrace: %llu events lost (%llu BPF ring full, "
			"%llu perf ring, %llu write)\n",
			(unsigned long long)lost,
			(unsigned long long)l.bpf_events,
			(unsigned long long)l.perf_records,
			(unsigned long long)l.bpf_errors);
	else
		fprintf(stderr, "jittrace: 0 events lost\n");
	say_vma_lookups(r);
	if (r->o.verbose) {
		say_lanes(r);
		fprintf(stderr,
			"jittrace: the BPF ring woke the recorder %llu "
			"times; file opens: %llu in a /tmp on a local disk, "
			"%llu by the opener's worker; reads by the worker "
			"(files not on a local disk): %llu\n",
			(unsigned long long)r->ring_wakes,
			(unsigned long long)r->opener.direct,
			(unsigned long long)r->opener.worked,
			(unsigned long long)r->opener.reads);
		fprintf(stderr,
			"jittrace: execs whose /tmp an earlier exec's answer "
			"gave (the same mounts seen from the same root): "
			"%llu\n",
			(unsigned long long)r->views_reused);
	}
	fprintf(stderr,
		"jittrace: wrote %s (%llu BPF events, %llu perf records, "
		"%zu JIT files, %.1f MB)\n",
		r->o.output, (unsigned long long)r->bpf_records,
		(unsigned long long)r->perf.records, r->jit_files,
		r->w.bytes / 1e6);
}

static int exit_code(int status)
{
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	if (WIFSIGNALED(status))
		return 128 + WTERMSIG(status);
	return 1;
}

static void install_signals(void)
{
	struct sigaction sa = { .sa_handler = on_signal };

	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
}

/* The command keeps running when we stop early: end it, reap it. */
static int reap_target(struct recorder *r, int status)
{
	if (!r->target.pid)
		return exit_code(status);
	kill(r->target.pid, stop_signal ? stop_signal : SIGTERM);
	while (waitpid(r->target.pid, &status, 0) < 0 && errno == EINTR)
		;
	return exit_code(status);
}

/* Under sudo the recording belongs to whoever ran sudo, as with perf. */
static int give_file_to_user(struct recorder *r)
{
	const char *uid = getenv("SUDO_UID"), *gid = getenv("SUDO_GID");

	if (!uid || !gid || geteuid() != 0)
		return 0;
	return jt_output_give(&r->out, strtoul(uid, NULL, 10),
			      strtoul(gid, NULL, 10));
}

/*
 * Programs, maps and a perf event per CPU and thread each take a
 * descriptor: use what the hard limit allows. The command gets the
 * limit it was started with back.
 */
static void raise_fd_limit(void)
{
	struct rlimit rl;

	if (!getrlimit(RLIMIT_NOFILE, &rl) && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
}

static int open_output(struct recorder *r)
{
	int err = jt_output_create(&r->out, r->o.output);

	if (err)
		return err;
	err = jt_writer_open_fd(&r->w, r->out.fd);
	if (!err)
		err = jt_jitfiles_init(&r->jit, &r->w, r->o.all, &r->o.budget);
	r->bids.w = &r->w;
	r->jit.opener = r->bids.opener = &r->opener;
	r->bids.owner = jit_owner;
	r->bids.owner_ctx = &r->jit;
	r->bids.cfi = r->o.perf.callgraph == JT_CG_DWARF;
	if (err) {
		fprintf(stderr, "jittrace: %s: %s\n", r->o.output,
			strerror(-err));
		jt_writer_close(&r->w);
		jt_output_discard(&r->out);
		jt_output_close(&r->out);
	}
	return err;
}

/* Only now does the new file replace the old one. */
static int publish(struct recorder *r)
{
	int err = give_file_to_user(r);

	if (!err)
		err = jt_writer_flush(&r->w);
	if (!err)
		err = jt_output_publish(&r->out);
	return err;
}

/* Nothing was recorded: leave the old file as it was. */
static int abandon(struct recorder *r)
{
	int status;

	if (r->target.pid) {
		kill(r->target.pid, SIGKILL);
		waitpid(r->target.pid, &status, 0);
	}
	jt_writer_close(&r->w);
	jt_output_discard(&r->out);
	jt_output_close(&r->out);
	jt_perf_close(&r->perf);
	jt_probes_close(&r->probes);
	return 1;
}

/* --jvmti: the agent is found and checked before anything runs. */
static int jvmti_prepare(struct record_opts *o)
{
	if (jt_jvmti_agent(o->jvmti_path, sizeof(o->jvmti_path)))
		return -1;
	/* A command's JVMs load it at start; its children inherit it. */
	if (o->argv && o->argv[0] && jt_jvmti_env(o->jvmti_path))
		return -1;
	return 0;
}

/* -p, -a, the agent: into the JVMs that run already, once we record. */
static void jvmti_attach(const struct record_opts *o)
{
	pid_t pid = o->pid;

	if (o->jvmti && (o->pid || o->all))
		jt_jvmti_attach(o->jvmti_path, &pid, o->pid ? 1 : 0);
}

/* The recording is complete: exit without waiting for the kernel. */
static void detach_later(const struct jt_probes *p)
{
	int fds[2 * JT_MAX_LINKS + 64];

	jt_detach_after_exit(fds,
			     jt_probes_link_fds(p, fds, 2 * JT_MAX_LINKS + 64));
}

int cmd_record(int argc, char **argv)
{
	struct recorder r = {};
	int status = 0, err, rc;

	err = parse(argc, argv, &r.o);
	if (err)
		return err;
	if (jt_require_root("record"))
		return 1;
	if (r.o.jvmti && jvmti_prepare(&r.o))
		return 1;
	jt_target_save_inherited(&r.target);
	raise_fd_limit();
	jt_libbpf_quiet(r.o.verbose);
	install_signals();
	if (open_output(&r))
		return 1;
	err = setup(&r, argc, argv);
	if (!err)
		err = prepare(&r);
	if (!err)
		err = publish(&r);
	if (err)
		return abandon(&r);
	jt_output_close(&r.out);
	err = start(&r);
	if (!err)
		jvmti_attach(&r.o);
	if (err && r.target.pid) {
		waitpid(r.target.pid, &status, 0);
		r.target.pid = 0;
		finish(&r, -1);
		return -err == ENOENT ? 127 : 126;
	}
	if (!err)
		err = run(&r, &status);
	if (err)
		fprintf(stderr, "jittrace: recording: %s\n", strerror(-err));
	finish(&r, r.target.pid || !r.o.argv[0] ? -1 : exit_code(status));
	rc = r.o.argv[0] ? reap_target(&r, status) : (err ? 1 : 0);
	jt_perf_close(&r.perf);
	detach_later(&r.probes);
	jt_probes_close(&r.probes);
	jt_buildids_free(&r.bids);
	jt_opener_free(&r.opener);
	return rc;
}

/*
 * The agent's capture: record -a into c, which a reader in the same
 * process turns into profiles. Nothing is published or handed to a user.
 */
int jt_record_live(const struct jt_live_opts *lo, struct jt_chan *c)
{
	static char *meta_argv[] = { "jittrace", "agent", NULL };
	struct recorder r = {};
	int status = 0, err;

	r.o.all = true;
	r.o.output = "the agent's stream";
	r.o.perf.freq = lo->freq;
	r.o.perf.event = lo->event;
	r.o.perf.callchain = lo->callchain;
	r.o.perf.callgraph = lo->callgraph;
	r.o.perf.stack_size = lo->stack_size;
	r.o.perf.pages = 64; /* 256 KiB per CPU: 19 Hz fills little */
	r.o.cow = lo->cow;
	r.o.tier = lo->tier;
	r.o.jvmti = lo->jvmti;
	if (r.o.jvmti && jvmti_prepare(&r.o))
		return -EPERM;
	/* Mapped twice, all of it in RSS: 4 MiB holds ~20K events. */
	r.o.bpf_ring_kb = 4096;
	r.o.budget = (struct jt_jit_budget){ lo->max_jit_bytes,
					     lo->max_jit_bytes * 2, 1000000 };
	r.o.verbose = lo->verbose;
	r.o.argv = meta_argv + 2;
	raise_fd_limit();
	jt_libbpf_quiet(r.o.verbose);
	install_signals();
	err = jt_writer_open_chan(&r.w, c);
	if (err) {
		jt_chan_writer_done(c);
		return err;
	}
	err = jt_jitfiles_init(&r.jit, &r.w, true, &r.o.budget);
	r.bids.w = &r.w;
	r.jit.opener = r.bids.opener = &r.opener;
	r.bids.owner = jit_owner;
	r.bids.owner_ctx = &r.jit;
	r.bids.cfi = r.o.perf.callgraph == JT_CG_DWARF;
	if (!err)
		err = setup(&r, 2, meta_argv);
	if (!err)
		err = prepare(&r);
	if (!err)
		err = jt_writer_flush(&r.w);
	if (!err)
		err = start(&r);
	if (!err)
		jvmti_attach(&r.o);
	if (err) {
		jt_writer_close(&r.w);
		jt_perf_close(&r.perf);
		jt_probes_close(&r.probes);
		return err;
	}
	if (lo->ready)
		lo->ready(lo->ctx);
	err = run(&r, &status);
	if (err)
		fprintf(stderr, "jittrace: recording: %s\n", strerror(-err));
	finish(&r, -1);
	jt_perf_close(&r.perf);
	jt_probes_close(&r.probes);
	jt_buildids_free(&r.bids);
	jt_opener_free(&r.opener);
	return err;
}

void jt_record_live_stop(void)
{
	stop_signal = SIGTERM;
}
