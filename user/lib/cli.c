// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <linux/capability.h>
#include "lib/cli.h"

int jt_usage_error(const char *use, const char *msg)
{
	if (msg)
		fprintf(stderr, "jittrace: %s\n", msg);
	fputs(use, stderr);
	return 2;
}

const char *const jt_call_graph_modes[] = { "fp", "dwarf", NULL };

int jt_parse_call_graph(const char *s, uint8_t *mode, uint32_t *size,
			const char **why)
{
	uint64_t v;

	*why = "--call-graph wants fp, dwarf or dwarf,SIZE";
	if (!strcmp(s, "fp")) {
		*mode = JT_CG_FP;
		return 0;
	}
	if (strncmp(s, "dwarf", 5) || (s[5] && s[5] != ','))
		return -1;
	*mode = JT_CG_DWARF;
	*size = JT_CG_STACK_DEFAULT;
	if (!s[5])
		return 0;
	/* The kernel takes multiples of 8 that fit a record (perf's cap). */
	*why = "--call-graph dwarf,SIZE wants 8 to 65528 bytes";
	if (jt_parse_size(s + 6, &v) || v > JT_CG_STACK_MAX || v < 8)
		return -1;
	*size = (v + 7) & ~7ULL;
	if (*size > JT_CG_STACK_MAX)
		*size = JT_CG_STACK_MAX;
	return 0;
}

int jt_parse_size(const char *s, uint64_t *v)
{
	unsigned int shift = 0;
	char *end;

	if (*s < '0' || *s > '9')
		return -1;
	errno = 0;
	*v = strtoull(s, &end, 10);
	if (errno || !*v)
		return -1;
	switch (*end) {
	case 'K':
	case 'k':
		shift = 10;
		break;
	case 'M':
	case 'm':
		shift = 20;
		break;
	case 'G':
	case 'g':
		shift = 30;
		break;
	case 0:
		return 0;
	default:
		return -1;
	}
	if (end[1] || *v > (UINT64_MAX >> shift))
		return -1;
	*v <<= shift;
	return 0;
}

#ifndef CAP_PERFMON
#define CAP_PERFMON 38
#define CAP_BPF 39
#endif

static bool has_cap(const struct __user_cap_data_struct *d, int cap)
{
	return d[cap / 32].effective & (1u << (cap % 32));
}

const char *jt_privileges(void)
{
	struct __user_cap_header_struct h = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct d[2] = {};

	if (geteuid() == 0)
		return "root";
	if (syscall(SYS_capget, &h, d))
		return NULL;
	if (has_cap(d, CAP_SYS_ADMIN))
		return "CAP_SYS_ADMIN";
	if (has_cap(d, CAP_BPF) && has_cap(d, CAP_PERFMON))
		return "CAP_BPF and CAP_PERFMON";
	return NULL;
}

int jt_require_root(const char *what)
{
	if (jt_privileges())
		return 0;
	fprintf(stderr,
		"jittrace: %s needs root (or CAP_BPF and CAP_PERFMON); "
		"try: sudo jittrace %s ...\n",
		what, what);
	return -1;
}
