// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* jittrace doctor: what this kernel allows, probed as record probes it. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include <linux/perf_event.h>
#include "jittrace.h"
#include "jittrace.skel.h"
#include "record/perf_rings.h"
#include "record/probes.h"

/* The kernel function each hook's kernel tier would attach to. */
static const char *const kernel_fn[JT_HOOK_MAX] = {
	[JT_HOOK_MMAP] = "mmap_region",
	[JT_HOOK_MPROTECT] = "mprotect_fixup",
	[JT_HOOK_MUNMAP] = "do_vmi_munmap",
	[JT_HOOK_MREMAP] = "move_vma",
	[JT_HOOK_BRK] = "do_brk_flags",
};

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

static void check_system(void)
{
	char buf[256];
	int err;

	printf("system\n");
	line("privileges", jt_privileges() ? "ok" : "no",
	     jt_privileges() ? jt_privileges() :
			       "record needs root: sudo jittrace record");
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

/* Load and attach the very programs record uses, then let them go. */
static int check_tracepoints(void)
{
	struct jittrace_bpf *skel = jittrace_bpf__open();
	int err;

	if (!skel)
		return -errno;
	/* Every program, the --cow one included. */
	err = jittrace_bpf__load(skel);
	if (!err)
		err = jittrace_bpf__attach(skel);
	jittrace_bpf__destroy(skel);
	return err;
}

static void check_hooks(void)
{
	struct btf *vmlinux = btf__load_vmlinux_btf();
	int tp = check_tracepoints(), i;
	char detail[160];

	printf("probes (hook: tier record uses, and why)\n");
	for (i = 0; i < JT_HOOK_MAX; i++) {
		const char *fn = kernel_fn[i];
		int k = 1;

		if (fn && vmlinux &&
		    btf__find_by_name_kind(vmlinux, fn, BTF_KIND_FUNC) < 0)
			snprintf(detail, sizeof(detail),
				 "kernel tier: %s not in BTF", fn);
		else if (fn && (k = jt_probe_kernel_fn(fn)))
			snprintf(detail, sizeof(detail),
				 "kernel tier: fentry/%s refused (%s)", fn,
				 strerror(-k));
		else if (fn)
			snprintf(detail, sizeof(detail),
				 "kernel tier: fentry/%s loads", fn);
		else
			snprintf(detail, sizeof(detail),
				 "sched tracepoints (stable everywhere)");
		if (tp)
			line(jt_hook_names[i], "NONE", strerror(-tp));
		else
			line(jt_hook_names[i], "tracepoint", detail);
	}
	btf__free(vmlinux);
}

int cmd_doctor(int argc, char **argv)
{
	if (argc > 1 && strcmp(argv[1], "-v")) {
		fputs("usage: jittrace doctor [-v]\n",
		      argc > 1 && !strcmp(argv[1], "-h") ? stdout : stderr);
		return argc > 1 && !strcmp(argv[1], "-h") ? 0 : 2;
	}
	jt_libbpf_quiet(argc > 1);
	check_system();
	check_pmu();
	if (geteuid()) {
		printf("probes\n  (run as root to probe what record can "
		       "load)\n");
		return 1;
	}
	check_hooks();
	return 0;
}
