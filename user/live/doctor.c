// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* jittrace doctor: what this kernel allows, probed as record probes it. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include <linux/perf_event.h>
#include "jittrace.h"
#include "lib/cli.h"
#include "jittrace.skel.h"
#include "live/caps.h"
#include "record/perf_rings.h"
#include "record/kfeatures.h"
#include "record/probes.h"

static void line(const char *what, const char *verdict, const char *detail)
{
	printf("  %-26s %-10s %s\n", what, verdict, detail ? detail : "");
}

static void read_first_line(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "re");

	snprintf(buf, len, "unknown");
	if (!f)
		return;
	if (fgets(buf, len, f))
		buf[strcspn(buf, "\n")] = 0;
	fclose(f);
}

/* "root, or CAP_BPF, ...: missing CAP_PERFMON" */
static const char *missing_caps(char *buf, size_t len)
{
	size_t i, n;

	n = snprintf(buf, len,
		     "needs root or the required capabilities; "
		     "missing:");
	for (i = 0; i < jt_ncap_uses && n < len; i++)
		if (jt_cap_uses[i].required &&
		    !jt_cap_effective(jt_cap_uses[i].cap))
			n += snprintf(buf + n, len - n, " %s",
				      jt_cap_uses[i].name);
	return buf;
}

/* Without root, each capability record and agent use, and what for. */
static void check_caps(void)
{
	char what[160];
	size_t i;

	if (!geteuid())
		return;
	for (i = 0; i < jt_ncap_uses; i++) {
		const struct jt_cap_use *c = &jt_cap_uses[i];
		bool have = jt_cap_effective(c->cap);

		snprintf(what, sizeof(what), "%s%s",
			 have	     ? "" :
			 c->required ? "needed: " :
				       "without it, no ",
			 c->what);
		line(c->name, have ? "ok" : "missing", what);
	}
}

static void check_system(void)
{
	char buf[256];
	int err;

	printf("system\n");
	line("privileges", jt_privileges() ? "ok" : "no",
	     jt_privileges() ? jt_privileges() :
			       missing_caps(buf, sizeof(buf)));
	check_caps();
	line("BTF", access("/sys/kernel/btf/vmlinux", R_OK) ? "missing" : "ok",
	     "/sys/kernel/btf/vmlinux");
	err = jt_ensure_tracefs();
	line("tracefs", err ? "missing" : "ok",
	     err ? "mount -t tracefs nodev /sys/kernel/tracing" :
		   "/sys/kernel/tracing");
	err = jt_ensure_bpffs();
	line("bpffs", err ? "missing" : "ok",
	     err ? "mount -t bpf bpf /sys/fs/bpf" : "/sys/fs/bpf");
	read_first_line("/proc/sys/kernel/perf_event_paranoid", buf,
			sizeof(buf));
	line("perf_event_paranoid", buf, NULL);
	read_first_line("/sys/kernel/security/lockdown", buf, sizeof(buf));
	line("lockdown", strstr(buf, "[none]") ? "none" : "see", buf);
	line("kprobes",
	     access("/sys/bus/event_source/devices/kprobe", F_OK) ? "no" :
								    "yes",
	     NULL);
}

static void check_pmu(void)
{
	struct perf_event_attr a = { .size = sizeof(a) };
	int fd;

	jt_perf_event_attr("cycles", &a);
	a.disabled = 1;
	fd = syscall(SYS_perf_event_open, &a, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
	printf("sampling\n");
	if (fd >= 0) {
		close(fd);
		line("hardware PMU (cycles)", "ok", NULL);
		return;
	}
	line("hardware PMU (cycles)", "no", strerror(errno));
	line("fallback", "cpu-clock", "record samples cpu-clock instead");
}

static void check_kfeatures(void)
{
	unsigned int miss = jt_kfeatures_missing();
	char since[32];
	int f;

	printf("kernel BPF features\n");
	for (f = 0; f < JT_KF_MAX; f++) {
		snprintf(since, sizeof(since), "Linux %s and later",
			 jt_kfeature_since(f));
		line(jt_kfeature_name(f), miss & (1u << f) ? "MISSING" : "ok",
		     since);
	}
}

static int ignore_event(void *ctx, void *data, size_t size)
{
	return 0;
}

static void hook_detail(const struct jt_probes *p, int h, char *buf, size_t len)
{
	const char *const *fn = jt_hook_kernel_fns(h);
	const char *x = jt_hook_exit_fn(h);
	size_t n = 0;

	if (!fn[0]) {
		snprintf(buf, len, "sched tracepoints (stable everywhere)");
		return;
	}
	if (p->kprobes_passed & (1u << h))
		n = snprintf(buf, len,
			     "kprobes passed over, dearer than the syscall "
			     "tracepoint (--tier kprobe takes them); ");
	else if (p->tier[h] == JT_TIER_TRACEPOINT)
		n = snprintf(buf, len, "kernel tier refused: ");
	else
		n = snprintf(buf, len, "on");
	if (p->tier[h] != JT_TIER_TRACEPOINT) {
		for (; *fn && n < len; fn++)
			if (jt_probes_use_fn(p, h, *fn))
				n += snprintf(buf + n, len - n, " %s",
					      jt_kfn_target(*fn));
		if (x && n < len && jt_probes_use_fn(p, h, x))
			n += snprintf(buf + n, len - n, " %s", x);
	}
	if (p->why[h][0] && n < len)
		snprintf(buf + n, len - n, "%s%s",
			 p->tier[h] == JT_TIER_TRACEPOINT ? "" : "; ",
			 p->why[h]);
}

/* Why a hook has no tier: what the kernel lacks, else the load's error. */
static void hook_missing(int err, char *buf, size_t len)
{
	unsigned int miss = jt_kfeatures_missing() & jt_kfeatures_required();
	size_t n;

	if (!miss) {
		snprintf(buf, len, "%s", strerror(-err));
		return;
	}
	n = snprintf(buf, len, "needs ");
	jt_kfeatures_describe(miss, buf + n, len - n);
}

/*
 * Load and attach the very programs record would, then let them go.
 * Returns 0 when record can work on this kernel.
 */
static int check_hooks(void)
{
	struct jt_probes p;
	char detail[320];
	int err, h;

	err = jt_probes_load(&p, JT_WANT_AUTO, false, true, 1 << 16,
			     ignore_event, NULL);
	if (!err)
		err = jt_probes_attach(&p);
	printf("probes (hook: tier record uses, and why)\n");
	for (h = 0; h < JT_HOOK_MAX; h++) {
		if (err)
			hook_missing(err, detail, sizeof(detail));
		else
			hook_detail(&p, h, detail, sizeof(detail));
		line(jt_hook_names[h], err ? "NONE" : jt_tier_name(p.tier[h]),
		     detail);
	}
	line("exec-snapshot", jt_probes_snapshot(&p),
	     p.snap   ? "task_vma iterator, at the exec" :
	     p.legacy ? "the mm's list of VMAs, at the exec (kernel < 6.1)" :
			"runs of VMAs around the binary, interpreter, vdso "
			"and stack (no task_vma iterator: kernel < 6.7)");
	if (!err)
		line("programs", p.legacy ? "legacy" : "current",
		     p.legacy ? "bounded loops, VMAs from the mm's tree, "
				"registers from the kernel stack (kernel "
				"< 5.17)" :
				"bpf_loop, bpf_find_vma, task storage");
	jt_probes_close(&p);
	return err;
}

static const struct jt_opt doctor_opts[] = {
	{ 'v', 0, "verbose", NULL, "show libbpf's messages as it probes" },
	{ 0 },
};

const struct jt_cmd jt_cmd_doctor = {
	.name = "doctor",
	.summary = "what this kernel allows and which probes would be used",
	.synopsis = "[-v]",
	.opts = doctor_opts,
	.run = cmd_doctor,
};

int cmd_doctor(int argc, char **argv)
{
	bool verbose = false;
	int c;

	while ((c = jt_getopt(argc, argv, &jt_cmd_doctor)) != -1) {
		if (c == 'v')
			verbose = true;
		else if (c == 'h')
			return jt_cmd_usage(stdout, &jt_cmd_doctor), 0;
		else
			return jt_cmd_error(&jt_cmd_doctor, NULL);
	}
	if (optind < argc)
		return jt_cmd_error(&jt_cmd_doctor, "unexpected argument");
	jt_libbpf_quiet(verbose);
	check_system();
	check_pmu();
	if (!jt_privileges()) {
		printf("probes\n  (run as root to probe what record can "
		       "load)\n");
		return 1;
	}
	check_kfeatures();
	if (check_hooks()) {
		fflush(stdout);
		if (!jt_kfeatures_explain())
			fprintf(stderr, "jittrace: record cannot load its BPF "
					"programs on this kernel (doctor -v "
					"shows libbpf's messages)\n");
		return 1;
	}
	return 0;
}
