// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <stdio.h>
#include <unistd.h>
#include "jittrace.h"

int jt_usage_error(const char *use, const char *msg)
{
	if (msg)
		fprintf(stderr, "jittrace: %s\n", msg);
	fputs(use, stderr);
	return 2;
}

int jt_require_root(const char *what)
{
	if (geteuid() == 0)
		return 0;
	fprintf(stderr,
		"jittrace: %s needs root (CAP_BPF and CAP_PERFMON); "
		"try: sudo jittrace %s ...\n",
		what, what);
	return -1;
}
