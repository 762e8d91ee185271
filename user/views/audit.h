/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* audit's findings for another view (html): as audit --json prints them. */
#ifndef JT_AUDIT_H
#define JT_AUDIT_H

#include <stdio.h>

/* 0, or 1 after saying why not. */
int jt_audit_json(const char *in, FILE *out);

#endif
