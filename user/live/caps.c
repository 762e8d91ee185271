// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <linux/capability.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "live/caps.h"

#ifndef CAP_PERFMON
#define CAP_PERFMON 38
#define CAP_BPF 39
#endif
#ifndef CAP_CHECKPOINT_RESTORE
#define CAP_CHECKPOINT_RESTORE 40
#endif

/* Found by running the agent under setpriv with each one taken away. */
const struct jt_cap_use jt_cap_uses[] = {
	{ CAP_BPF, "CAP_BPF", "loading the BPF programs and maps", true },
	{ CAP_PERFMON, "CAP_PERFMON",
	  "perf events and tracing programs (sampling, every probe)", true },
	{ CAP_DAC_READ_SEARCH, "CAP_DAC_READ_SEARCH",
	  "tracefs event ids (mode 0700); other users' perf-maps and jitdumps",
	  true },
	{ CAP_SYS_PTRACE, "CAP_SYS_PTRACE",
	  "other users' /proc/PID/maps and a container's /tmp "
	  "(/proc/PID/root)",
	  false },
	{ CAP_CHECKPOINT_RESTORE, "CAP_CHECKPOINT_RESTORE",
	  "/proc/PID/map_files: the jitdump a process mapped, audit -p",
	  false },
	{ CAP_SYSLOG, "CAP_SYSLOG",
	  "kernel symbol addresses in /proc/kallsyms (else kernel samples "
	  "are unnamed)",
	  false },
	{ CAP_SYS_RESOURCE, "CAP_SYS_RESOURCE",
	  "RLIMIT_MEMLOCK for BPF maps, on kernels before 5.11 only", false },
};

const size_t jt_ncap_uses = sizeof(jt_cap_uses) / sizeof(jt_cap_uses[0]);

bool jt_cap_effective(int cap)
{
	struct __user_cap_header_struct h = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct d[2] = {};

	if (syscall(SYS_capget, &h, d))
		return false;
	return d[cap / 32].effective & (1u << (cap % 32));
}
