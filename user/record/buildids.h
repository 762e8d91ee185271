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
#include "lib/hash.h"
#include "lib/jt_file.h"
#include "record/opener.h"

struct jt_file_id {
	uint64_t dev;
	uint64_t ino;
};

struct jt_buildids {
	struct jt_writer *w;
	struct jt_opener *opener; /* the recorder's: opens off the loop */
	/* The user a process runs as, when a file of it is read; -1: not
	 * known. Asked once per new file, never per event. */
	uid_t (*owner)(void *ctx, pid_t pid);
	void *owner_ctx;
	struct jt_hash seen; /* of struct jt_file_id: one record per file */
	bool cfi;	     /* and its CFI, for --call-graph dwarf */
};

/* Write the CFI sections in c of the object with build-id id. */
void jt_buildids_write_cfi(struct jt_writer *w, const unsigned char *id,
			   size_t id_len, const struct jt_cfi_copy *c);

void jt_buildids_event(struct jt_buildids *b, const struct jt_hdr *h,
		       size_t len);
void jt_buildids_free(struct jt_buildids *b);

#endif
