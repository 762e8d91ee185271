/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
#ifndef JT_KALLSYMS_CAPTURE_H
#define JT_KALLSYMS_CAPTURE_H

#include "lib/jt_file.h"

/* Write the kernel's text symbols to the recording; 0 or -errno. */
int jt_kallsyms_capture(struct jt_writer *w);

#endif
