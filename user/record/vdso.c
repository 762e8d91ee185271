// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <gelf.h>
#include <stdio.h>
#include <string.h>
#include <sys/auxv.h>
#include "record/buildids.h"
#include "record/vdso.h"
#include "unwind/cfi.h"

/* The vdso's extent, from the end of its last loaded segment. */
static size_t vdso_size(const unsigned char *base)
{
	const Elf64_Ehdr *eh = (const void *)base;
	const Elf64_Phdr *ph;
	size_t end = 0;
	int i;

	if (memcmp(eh->e_ident, ELFMAG, SELFMAG) ||
	    eh->e_ident[EI_CLASS] != ELFCLASS64)
		return 0;
	ph = (const void *)(base + eh->e_phoff);
	for (i = 0; i < eh->e_phnum; i++)
		if (ph[i].p_type == PT_LOAD &&
		    ph[i].p_offset + ph[i].p_filesz > end)
			end = ph[i].p_offset + ph[i].p_filesz;
	/* Section headers sit past the segments in the same image. */
	if (eh->e_shoff + (size_t)eh->e_shnum * eh->e_shentsize > end)
		end = eh->e_shoff + (size_t)eh->e_shnum * eh->e_shentsize;
	return end;
}

static size_t build_id(Elf *e, unsigned char id[20])
{
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;
	GElf_Nhdr nh;
	size_t off, name_off, desc_off;

	while ((scn = elf_nextscn(e, scn))) {
		Elf_Data *d = elf_getdata(scn, NULL);

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_NOTE || !d)
			continue;
		for (off = 0;
		     (off = gelf_getnote(d, off, &nh, &name_off, &desc_off));)
			if (nh.n_type == NT_GNU_BUILD_ID && nh.n_descsz <= 20) {
				memcpy(id, (char *)d->d_buf + desc_off,
				       nh.n_descsz);
				return nh.n_descsz;
			}
	}
	return 0;
}

int jt_vdso_capture(struct jt_writer *w, char *meta, size_t len)
{
	unsigned char *base = (void *)getauxval(AT_SYSINFO_EHDR), id[20];
	struct jt_cfi_copy c = {};
	size_t size = base ? vdso_size(base) : 0, n, i;
	int k = 0;
	Elf *e;

	if (!size)
		return 0;
	elf_version(EV_CURRENT);
	e = elf_memory((char *)base, size);
	n = e ? build_id(e, id) : 0;
	if (n && jt_cfi_elf_sections(e, c.s) > 0) {
		jt_buildids_write_cfi(w, id, n, &c);
		k = snprintf(meta, len, "vdso.build_id=");
		for (i = 0; i < n; i++)
			k += snprintf(meta + k, len - k, "%02x", id[i]);
		k += snprintf(meta + k, len - k, "\n");
	}
	elf_end(e);
	return k;
}
