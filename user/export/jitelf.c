// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <elf.h>
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "export/jitelf.h"
#include "lib/io.h"

static const char shstrtab[] = "\0.text\0.symtab\0.strtab\0.shstrtab";

enum { SH_NULL, SH_TEXT, SH_SYMTAB, SH_STRTAB, SH_SHSTRTAB, SH_NUM };

static size_t align8(size_t n)
{
	return (n + 7) & ~(size_t)7;
}

/*
 * The code's bytes are not in the recording (a perf-map has none): the
 * text is SHT_NOBITS, enough for perf to name it, not to annotate it. A
 * declared size, however large, takes no bytes in the file.
 */
int jt_jitelf_write(int fd, const char *name, uint64_t size)
{
	size_t nlen = strlen(name) + 1;
	size_t text = JT_JITELF_TEXT_OFFSET;
	/* After the ELF and program headers, as perf's genelf lays it out. */
	size_t ph = sizeof(Elf64_Ehdr);
	/* Zeros stand for the code up to a cap; past it, no bytes at all. */
	bool bytes = size <= JT_JITELF_MAX_BYTES;
	size_t sym = align8(text + (bytes ? size : 0));
	size_t str = sym + 2 * sizeof(Elf64_Sym);
	size_t shs = str + 1 + nlen;
	size_t sh = align8(shs + sizeof(shstrtab));
	size_t total = sh + SH_NUM * sizeof(Elf64_Shdr);
	unsigned char *buf = calloc(1, total);
	Elf64_Ehdr *e = (void *)buf;
	Elf64_Phdr *seg = (void *)(buf + ph);
	Elf64_Sym *s = (void *)(buf + sym);
	Elf64_Shdr *h = (void *)(buf + sh);
	int err;

	if (!buf)
		return -ENOMEM;
	memcpy(e->e_ident, ELFMAG, SELFMAG);
	e->e_ident[EI_CLASS] = ELFCLASS64;
	e->e_ident[EI_DATA] = ELFDATA2LSB;
	e->e_ident[EI_VERSION] = EV_CURRENT;
	e->e_type = ET_DYN;
	e->e_machine = EM_X86_64;
	e->e_version = EV_CURRENT;
	e->e_ehsize = sizeof(*e);
	/*
	 * One PT_LOAD for the code: elfutils (hotspot's perfparser) will not
	 * report an ELF without one; perf reads the sections alone.
	 */
	e->e_phoff = ph;
	e->e_phentsize = sizeof(Elf64_Phdr);
	e->e_phnum = 1;
	*seg = (Elf64_Phdr){ .p_type = PT_LOAD,
			     .p_flags = PF_R | PF_X,
			     .p_offset = text,
			     .p_vaddr = text,
			     .p_paddr = text,
			     .p_filesz = bytes ? size : 0,
			     .p_memsz = size,
			     .p_align = 0x1000 };
	e->e_shoff = sh;
	e->e_shentsize = sizeof(Elf64_Shdr);
	e->e_shnum = SH_NUM;
	e->e_shstrndx = SH_SHSTRTAB;
	s[1].st_name = 1;
	s[1].st_info = ELF64_ST_INFO(STB_GLOBAL, STT_FUNC);
	s[1].st_shndx = SH_TEXT;
	s[1].st_value = text;
	s[1].st_size = size;
	memcpy(buf + str + 1, name, nlen);
	memcpy(buf + shs, shstrtab, sizeof(shstrtab));
	h[SH_TEXT] = (Elf64_Shdr){ .sh_name = 1,
				   .sh_type = bytes ? SHT_PROGBITS : SHT_NOBITS,
				   .sh_flags = SHF_ALLOC | SHF_EXECINSTR,
				   .sh_addr = text,
				   .sh_offset = text,
				   .sh_size = size,
				   .sh_addralign = 16 };
	h[SH_SYMTAB] = (Elf64_Shdr){ .sh_name = 7,
				     .sh_type = SHT_SYMTAB,
				     .sh_offset = sym,
				     .sh_size = 2 * sizeof(Elf64_Sym),
				     .sh_link = SH_STRTAB,
				     .sh_info = 1,
				     .sh_addralign = 8,
				     .sh_entsize = sizeof(Elf64_Sym) };
	h[SH_STRTAB] = (Elf64_Shdr){ .sh_name = 15,
				     .sh_type = SHT_STRTAB,
				     .sh_offset = str,
				     .sh_size = 1 + nlen,
				     .sh_addralign = 1 };
	h[SH_SHSTRTAB] = (Elf64_Shdr){ .sh_name = 23,
				       .sh_type = SHT_STRTAB,
				       .sh_offset = shs,
				       .sh_size = sizeof(shstrtab),
				       .sh_addralign = 1 };
	err = jt_write_all(fd, buf, total);
	free(buf);
	return err;
}
