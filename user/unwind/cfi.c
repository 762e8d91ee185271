// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * libdw finds the rule for an address (CIE and FDE, .eh_frame_hdr's
 * search table when there is one) and gives each register's rule as a
 * DWARF expression; the few operations CFI uses are evaluated here
 * against the sample's registers and stack copy.
 */
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <gelf.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include "unwind/cfi.h"

struct jt_cfi {
	unsigned char *image; /* a minimal ELF holding only the sections */
	size_t len;
	Elf *elf;
	Dwarf *dw;
	Dwarf_CFI *eh;
	Dwarf_CFI *dbg;
};

static const char *const sect_names[JT_CFI_NKINDS] = {
	[JT_CFI_EH_FRAME] = ".eh_frame",
	[JT_CFI_EH_FRAME_HDR] = ".eh_frame_hdr",
	[JT_CFI_DEBUG_FRAME] = ".debug_frame",
};

#define ALIGN8(x) (((x) + 7) & ~(size_t)7)

/* The section name table: "\0.eh_frame\0.eh_frame_hdr\0..." */
static size_t shstrtab(char *buf, uint32_t off[JT_CFI_NKINDS + 1])
{
	size_t n = 1;
	int i;

	buf[0] = 0;
	for (i = 0; i < JT_CFI_NKINDS; i++) {
		off[i] = n;
		strcpy(buf + n, sect_names[i]);
		n += strlen(sect_names[i]) + 1;
	}
	off[JT_CFI_NKINDS] = n;
	strcpy(buf + n, ".shstrtab");
	return n + sizeof(".shstrtab");
}

static unsigned char *build_image(const struct jt_cfi_sect s[JT_CFI_NKINDS],
				  size_t *len)
{
	char names[64];
	uint32_t name_off[JT_CFI_NKINDS + 1];
	size_t nlen = shstrtab(names, name_off), off = sizeof(Elf64_Ehdr);
	size_t sect_off[JT_CFI_NKINDS], shoff;
	Elf64_Shdr *sh;
	Elf64_Ehdr *eh;
	unsigned char *img;
	int i, n = 1;

	for (i = 0; i < JT_CFI_NKINDS; i++) {
		off = ALIGN8(off);
		sect_off[i] = off;
		off += s[i].len;
	}
	shoff = ALIGN8(off + nlen);
	img = calloc(1, shoff + (JT_CFI_NKINDS + 2) * sizeof(*sh));
	if (!img)
		return NULL;
	eh = (Elf64_Ehdr *)img;
	memcpy(eh->e_ident, ELFMAG, SELFMAG);
	eh->e_ident[EI_CLASS] = ELFCLASS64;
	eh->e_ident[EI_DATA] = ELFDATA2LSB;
	eh->e_ident[EI_VERSION] = EV_CURRENT;
	eh->e_type = ET_DYN;
	eh->e_machine = JT_UW_MACHINE;
	eh->e_version = EV_CURRENT;
	eh->e_ehsize = sizeof(*eh);
	eh->e_shentsize = sizeof(*sh);
	eh->e_shoff = shoff;
	sh = (Elf64_Shdr *)(img + shoff);
	for (i = 0; i < JT_CFI_NKINDS; i++) {
		if (!s[i].len)
			continue;
		memcpy(img + sect_off[i], s[i].data, s[i].len);
		sh[n] = (Elf64_Shdr){ .sh_name = name_off[i],
				      .sh_type = SHT_PROGBITS,
				      .sh_flags = i == JT_CFI_DEBUG_FRAME ?
							  0 :
							  SHF_ALLOC,
				      .sh_addr = s[i].addr,
				      .sh_offset = sect_off[i],
				      .sh_size = s[i].len,
				      .sh_addralign = 1 };
		n++;
	}
	memcpy(img + off, names, nlen);
	sh[n] = (Elf64_Shdr){ .sh_name = name_off[JT_CFI_NKINDS],
			      .sh_type = SHT_STRTAB,
			      .sh_offset = off,
			      .sh_size = nlen,
			      .sh_addralign = 1 };
	eh->e_shstrndx = n;
	eh->e_shnum = n + 1;
	*len = shoff + (n + 1) * sizeof(*sh);
	return img;
}

struct jt_cfi *jt_cfi_new(const struct jt_cfi_sect s[JT_CFI_NKINDS])
{
	struct jt_cfi *c;

	if (!s[JT_CFI_EH_FRAME].len && !s[JT_CFI_DEBUG_FRAME].len)
		return NULL;
	c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	elf_version(EV_CURRENT);
	c->image = build_image(s, &c->len);
	c->elf = c->image ? elf_memory((char *)c->image, c->len) : NULL;
	if (c->elf && s[JT_CFI_EH_FRAME].len)
		c->eh = dwarf_getcfi_elf(c->elf);
	if (c->elf && s[JT_CFI_DEBUG_FRAME].len &&
	    (c->dw = dwarf_begin_elf(c->elf, DWARF_C_READ, NULL)))
		c->dbg = dwarf_getcfi(c->dw);
	if (!c->eh && !c->dbg) {
		jt_cfi_free(c);
		return NULL;
	}
	return c;
}

int jt_cfi_elf_sections(void *elf, struct jt_cfi_sect s[JT_CFI_NKINDS])
{
	Elf *e = elf;
	Elf_Scn *scn = NULL;
	size_t shstrndx;
	GElf_Shdr sh;
	int i, found = 0;

	memset(s, 0, JT_CFI_NKINDS * sizeof(*s));
	if (elf_getshdrstrndx(e, &shstrndx))
		return -1;
	while ((scn = elf_nextscn(e, scn))) {
		const char *name;
		Elf_Data *d;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_PROGBITS ||
		    !(name = elf_strptr(e, shstrndx, sh.sh_name)))
			continue;
		for (i = 0; i < JT_CFI_NKINDS; i++) {
			if (strcmp(name, sect_names[i]) || s[i].len)
				continue;
			/* Compressed debug sections are not CFI libdw reads
			 * raw. */
			if ((sh.sh_flags & SHF_COMPRESSED) ||
			    !(d = elf_getdata(scn, NULL)) || !d->d_size)
				continue;
			s[i] = (struct jt_cfi_sect){ d->d_buf, d->d_size,
						     sh.sh_addr };
			found++;
		}
	}
	return found;
}

struct jt_cfi_copy *jt_cfi_copy_fd(int fd)
{
	struct jt_cfi_sect s[JT_CFI_NKINDS];
	struct jt_cfi_copy *c = NULL;
	size_t total = 0, off = 0;
	Elf *e;
	int i;

	elf_version(EV_CURRENT);
	e = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!e || jt_cfi_elf_sections(e, s) <= 0)
		goto out;
	for (i = 0; i < JT_CFI_NKINDS; i++)
		total += s[i].len;
	c = calloc(1, sizeof(*c));
	if (!c || !(c->buf = malloc(total))) {
		free(c);
		c = NULL;
		goto out;
	}
	for (i = 0; i < JT_CFI_NKINDS; i++) {
		memcpy(c->buf + off, s[i].data, s[i].len);
		c->s[i] = (struct jt_cfi_sect){ c->buf + off, s[i].len,
						s[i].addr };
		off += s[i].len;
	}
out:
	elf_end(e);
	return c;
}

void jt_cfi_copy_free(struct jt_cfi_copy *c)
{
	if (c)
		free(c->buf);
	free(c);
}

struct eval {
	const struct jt_uw_stack *st;
	const struct jt_uw_regs *regs;
	uint64_t cfa;
	bool have_cfa;
	bool short_read; /* the stack copy ended before what the rule reads */
};

static bool reg_value(const struct eval *e, uint64_t reg, uint64_t *v)
{
	if (reg >= JT_UW_NREGS || !(e->regs->valid & (1ULL << reg)))
		return false;
	*v = e->regs->r[reg];
	return true;
}

static bool binop(uint8_t atom, uint64_t a, uint64_t b, uint64_t *r)
{
	switch (atom) {
	case DW_OP_plus:
		*r = a + b;
		break;
	case DW_OP_minus:
		*r = a - b;
		break;
	case DW_OP_mul:
		*r = a * b;
		break;
	case DW_OP_and:
		*r = a & b;
		break;
	case DW_OP_or:
		*r = a | b;
		break;
	case DW_OP_xor:
		*r = a ^ b;
		break;
	case DW_OP_shl:
		*r = b < 64 ? a << b : 0;
		break;
	case DW_OP_shr:
		*r = b < 64 ? a >> b : 0;
		break;
	case DW_OP_shra:
		*r = b < 64 ? (uint64_t)((int64_t)a >> b) : 0;
		break;
	case DW_OP_ge:
		*r = (int64_t)a >= (int64_t)b;
		break;
	case DW_OP_gt:
		*r = (int64_t)a > (int64_t)b;
		break;
	case DW_OP_le:
		*r = (int64_t)a <= (int64_t)b;
		break;
	case DW_OP_lt:
		*r = (int64_t)a < (int64_t)b;
		break;
	case DW_OP_eq:
		*r = a == b;
		break;
	case DW_OP_ne:
		*r = a != b;
		break;
	default:
		return false;
	}
	return true;
}

/* One operation on the stack of depth *n; false: cannot. */
static bool eval_op(struct eval *e, const Dwarf_Op *op, uint64_t *stk, int *n,
		    bool *value)
{
	uint8_t a = op->atom;
	uint64_t v;

	if (*n >= 8)
		return false;
	if (a >= DW_OP_lit0 && a <= DW_OP_lit31) {
		stk[(*n)++] = a - DW_OP_lit0;
	} else if (a >= DW_OP_breg0 && a <= DW_OP_breg31) {
		if (!reg_value(e, a - DW_OP_breg0, &v))
			return false;
		stk[(*n)++] = v + (int64_t)op->number;
	} else if (a >= DW_OP_reg0 && a <= DW_OP_reg31) {
		if (!reg_value(e, a - DW_OP_reg0, &v))
			return false;
		stk[(*n)++] = v;
		*value = true;
	} else if (a == DW_OP_regx) {
		if (!reg_value(e, op->number, &v))
			return false;
		stk[(*n)++] = v;
		*value = true;
	} else if (a == DW_OP_bregx) {
		if (!reg_value(e, op->number, &v))
			return false;
		stk[(*n)++] = v + (int64_t)op->number2;
	} else if (a == DW_OP_call_frame_cfa) {
		if (!e->have_cfa)
			return false;
		stk[(*n)++] = e->cfa;
	} else if (a == DW_OP_stack_value) {
		*value = true;
	} else if (a == DW_OP_const1u || a == DW_OP_const1s ||
		   a == DW_OP_const2u || a == DW_OP_const2s ||
		   a == DW_OP_const4u || a == DW_OP_const4s ||
		   a == DW_OP_const8u || a == DW_OP_const8s ||
		   a == DW_OP_constu || a == DW_OP_consts) {
		stk[(*n)++] = op->number;
	} else if (a == DW_OP_dup) {
		if (!*n)
			return false;
		stk[*n] = stk[*n - 1];
		(*n)++;
	} else if (a == DW_OP_drop) {
		if (!*n)
			return false;
		(*n)--;
	} else if (a == DW_OP_plus_uconst) {
		if (!*n)
			return false;
		stk[*n - 1] += op->number;
	} else if (a == DW_OP_deref) {
		if (!*n)
			return false;
		if (!jt_uw_read(e->st, stk[*n - 1], &stk[*n - 1])) {
			e->short_read = true;
			return false;
		}
	} else {
		if (*n < 2 || !binop(a, stk[*n - 2], stk[*n - 1], &v))
			return false;
		stk[*n - 2] = v;
		(*n)--;
	}
	return true;
}

/* The expression's result: a value, or an address to read one from. */
static bool eval(struct eval *e, const Dwarf_Op *ops, size_t nops,
		 uint64_t *out, bool *value)
{
	uint64_t stk[8];
	int n = 0;
	size_t i;

	*value = false;
	for (i = 0; i < nops; i++)
		if (!eval_op(e, &ops[i], stk, &n, value))
			return false;
	if (!n)
		return false;
	*out = stk[n - 1];
	return true;
}

/* reg's value in the caller; false: undefined there. */
static bool caller_reg(Dwarf_Frame *f, struct eval *e, int reg, uint64_t *v,
		       bool *ok)
{
	Dwarf_Op mem[3], *ops;
	size_t nops;
	bool value;

	*ok = true;
	if (dwarf_frame_register(f, reg, mem, &ops, &nops))
		return false;
	/* NULL ops: same value; ops_mem: undefined (libdw.h) */
	if (!nops)
		return ops ? false : reg_value(e, reg, v);
	if (!eval(e, ops, nops, v, &value)) {
		*ok = false;
		return false;
	}
	if (!value && !jt_uw_read(e->st, *v, v)) {
		e->short_read = true;
		*ok = false;
		return false;
	}
	return true;
}

static int step_with(Dwarf_CFI *cfi, uint64_t addr,
		     const struct jt_uw_stack *st, const struct jt_uw_regs *in,
		     struct jt_uw_regs *out)
{
	struct eval e = { st, in, 0, false, false };
	Dwarf_Frame *f = NULL;
	Dwarf_Op *ops;
	size_t nops;
	bool value, ok;
	int reg, ra, ret = -1;

	if (dwarf_cfi_addrframe(cfi, addr, &f))
		return -1;
	ra = dwarf_frame_info(f, NULL, NULL, NULL);
	if (ra < 0 || ra >= JT_UW_NREGS || dwarf_frame_cfa(f, &ops, &nops) ||
	    !nops || !eval(&e, ops, nops, &e.cfa, &value))
		goto out;
	e.have_cfa = true;
	memset(out, 0, sizeof(*out));
	for (reg = 0; reg < JT_UW_NREGS; reg++) {
		uint64_t v;

		if (reg == JT_UW_REG_SP)
			continue;
		if (caller_reg(f, &e, reg, &v, &ok)) {
			out->r[reg] = v;
			out->valid |= 1ULL << reg;
		} else if (!ok && reg == ra) {
			goto out;
		}
	}
	out->r[JT_UW_REG_SP] = e.cfa;
	out->valid |= 1ULL << JT_UW_REG_SP;
	if (!(out->valid & (1ULL << ra))) {
		ret = 0; /* the outermost frame: _start, thread start */
		goto out;
	}
	out->r[JT_UW_REG_PC] = out->r[ra];
	out->valid |= 1ULL << JT_UW_REG_PC;
	ret = 1;
out:
	free(f);
	return ret < 0 && e.short_read ? -2 : ret;
}

int jt_cfi_step(struct jt_cfi *c, uint64_t addr, const struct jt_uw_stack *st,
		const struct jt_uw_regs *in, struct jt_uw_regs *out)
{
	int r = -1;

	if (c->eh)
		r = step_with(c->eh, addr, st, in, out);
	if (r == -1 && c->dbg)
		r = step_with(c->dbg, addr, st, in, out);
	return r;
}

void jt_cfi_free(struct jt_cfi *c)
{
	if (!c)
		return;
	if (c->eh)
		dwarf_cfi_end(c->eh);
	if (c->dw)
		dwarf_end(c->dw);
	if (c->elf)
		elf_end(c->elf);
	free(c->image);
	free(c);
}
