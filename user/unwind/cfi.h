/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Call-frame information of one object (an ELF file, or one piece of JIT
 * code), read by elfutils' libdw from the section bytes alone: the
 * recording keeps those bytes, so a recording unwinds where the files
 * are not.
 */
#ifndef JT_CFI_H
#define JT_CFI_H

#include <stddef.h>
#include <stdint.h>
#include "unwind/unwind.h"

enum jt_cfi_kind {
	JT_CFI_EH_FRAME,
	JT_CFI_EH_FRAME_HDR,
	JT_CFI_DEBUG_FRAME,
	JT_CFI_NKINDS,
};

/* One section: its bytes and the address the object gives it. */
struct jt_cfi_sect {
	const void *data;
	size_t len;
	uint64_t addr;
};

struct jt_cfi;

/* A file's CFI sections, copied out of it (by a thread that may block). */
struct jt_cfi_copy {
	struct jt_cfi_sect s[JT_CFI_NKINDS];
	unsigned char *buf;
};

/* NULL when fd is no ELF file or has no CFI. */
struct jt_cfi_copy *jt_cfi_copy_fd(int fd);
void jt_cfi_copy_free(struct jt_cfi_copy *c);

/* Copies the bytes; NULL when none of them is usable CFI. */
struct jt_cfi *jt_cfi_new(const struct jt_cfi_sect s[JT_CFI_NKINDS]);
/* The CFI sections of the ELF file at fd (pointers into e's data). */
int jt_cfi_elf_sections(void *elf, struct jt_cfi_sect s[JT_CFI_NKINDS]);
/*
 * Step out of the frame at object address addr: out gets the caller's
 * registers. 1: stepped; 0: the outermost frame (its return address is
 * undefined); -2: the rule reads past the stack copy; -1: no rule covers
 * addr, or it needs what the sample lacks.
 */
int jt_cfi_step(struct jt_cfi *c, uint64_t addr, const struct jt_uw_stack *st,
		const struct jt_uw_regs *in, struct jt_uw_regs *out);
void jt_cfi_free(struct jt_cfi *c);

#endif
