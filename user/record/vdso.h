/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The vdso has no file: its CFI comes from the recorder's own copy, the
 * same image the kernel maps into every process it traces.
 */
#ifndef JT_RECORD_VDSO_H
#define JT_RECORD_VDSO_H

#include <stddef.h>
#include "lib/jt_file.h"

/* Write its CFI; "vdso.build_id=HEX\n" into meta. Bytes written to meta. */
int jt_vdso_capture(struct jt_writer *w, char *meta, size_t len);

#endif
