/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* The command line's shared pieces: usage errors, sizes, --call-graph,
 * privileges. */
#ifndef JT_CLI_H
#define JT_CLI_H

#include <stdint.h>

/* Print msg (if any) and usage to stderr; returns 2, the usage exit code. */
int jt_usage_error(const char *usage, const char *msg);
/* "256M": a positive byte count with an optional K, M or G; 0 or -1. */
int jt_parse_size(const char *s, uint64_t *v);

/* perf's --call-graph modes: fp (kernel-walked), dwarf (unwound later). */
enum jt_callgraph {
	JT_CG_NONE,
	JT_CG_FP,
	JT_CG_DWARF,
};
#define JT_CG_STACK_DEFAULT 8192
#define JT_CG_STACK_MAX 65528
/* --call-graph's words, for completion: dwarf may take ,SIZE */
extern const char *const jt_call_graph_modes[];
/* "fp", "dwarf" or "dwarf,SIZE": 0, or -1 with *why set. */
int jt_parse_call_graph(const char *s, uint8_t *mode, uint32_t *size,
			const char **why);
/* 0 when we may load BPF and open perf events; else says why, returns -1. */
int jt_require_root(const char *what);
/* What lets us trace ("root", a capability), or NULL. */
const char *jt_privileges(void);

#endif
