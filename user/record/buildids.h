/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The build-id of every file a traced process maps executable, read once
 * per file while it is mapped, so that a report made later or elsewhere
 * uses a file's symbols only if it is still the same file.
 */
#ifndef JT_BUILDIDS_H
#define JT_BUILDIDS_H

#include <stddef.h>
#include <stdint.h>
#include "jt_abi.h"
#include "lib/jt_file.h"

struct jt_buildids {
	struct jt_writer *w;
	struct {
		uint64_t dev;
		uint64_t ino;
	} * seen;
	size_t n;
	size_t cap;
};

void jt_buildids_event(struct jt_buildids *b, const struct jt_hdr *h,
		       size_t len);
void jt_buildids_free(struct jt_buildids *b);

#endif
