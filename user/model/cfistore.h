/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The CFI sections a recording carries (JT_REC_CFI), by build-id, put
 * back together from their pieces as the reader meets them.
 */
#ifndef JT_CFISTORE_H
#define JT_CFISTORE_H

#include <stddef.h>
#include <stdint.h>
#include "lib/hash.h"

struct jt_cfi;

struct jt_cfistore {
	struct jt_hash objs; /* build-id -> struct cfi_obj */
	uint64_t bytes;
	uint64_t bad; /* pieces that did not fit what came before */
};

void jt_cfistore_add(struct jt_cfistore *c, const void *rec, size_t len);
/* The object's CFI, when every piece of it came; the caller's to free. */
struct jt_cfi *jt_cfistore_get(struct jt_cfistore *c, const unsigned char *id,
			       size_t id_len);
void jt_cfistore_free(struct jt_cfistore *c);

#endif
