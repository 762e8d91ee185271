// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <fcntl.h>
#include <gelf.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include "lib/reserve.h"

#define JT_DEBUG_DIR "/usr/lib/debug"
#include "model/elfsyms.h"
#include "model/inlines.h"
#include "unwind/cfi.h"

/* By start; at one address, versioned aliases (name@VER) first, so the
 * lookup, which takes the last start at or below, finds the plain name. */
static int cmp_sym(const void *a, const void *b)
{
	const struct jt_elfsym *x = a, *y = b;

	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return !strchr(x->name, '@') - !strchr(y->name, '@');
}

struct symvec {
	struct jt_elfsym *v;
	size_t n;
	size_t cap;
};

static int add_sym(struct symvec *sv, const GElf_Sym *sym, const char *name,
		   struct jt_strtab *strs)
{
	struct jt_elfsym *e;

	if (jt_reserve(&sv->v, &sv->cap, sv->n + 1, sizeof(*sv->v)))
		return -1;
	e = &sv->v[sv->n++];
	e->start = sym->st_value;
	e->end = sym->st_value + (sym->st_size ? sym->st_size : 1);
	e->name = jt_intern(strs, name, strlen(name));
	return e->name ? 0 : -1;
}

static void read_symtab(struct jt_elffile *f, Elf *e, Elf_Scn *scn,
			GElf_Shdr *sh, struct jt_strtab *strs)
{
	Elf_Data *data = elf_getdata(scn, NULL);
	size_t i, n = sh->sh_entsize ? sh->sh_size / sh->sh_entsize : 0;
	struct symvec fn = {}, obj = {};
	GElf_Sym sym;

	for (i = 0; data && i < n; i++) {
		int type;
		const char *name;

		if (!gelf_getsym(data, i, &sym) || !sym.st_value ||
		    sym.st_shndx == SHN_UNDEF)
			continue;
		type = GELF_ST_TYPE(sym.st_info);
		/* A sizeless object is a linker label (_DYNAMIC), no data. */
		if (type != STT_FUNC && type != STT_GNU_IFUNC &&
		    (type != STT_OBJECT || !sym.st_size))
			continue;
		name = elf_strptr(e, sh->sh_link, sym.st_name);
		if (name && *name &&
		    add_sym(type == STT_OBJECT ? &obj : &fn, &sym, name, strs))
			break;
	}
	f->syms = fn.v;
	f->nsyms = fn.n;
	f->objs = obj.v;
	f->nobjs = obj.n;
	if (f->nsyms)
		qsort(f->syms, f->nsyms, sizeof(*f->syms), cmp_sym);
	jt_elf_index_objects(f);
}

int jt_elf_index_objects(struct jt_elffile *f)
{
	size_t i;

	if (!f->nobjs)
		return 0;
	qsort(f->objs, f->nobjs, sizeof(*f->objs), cmp_sym);
	f->objs_reach = malloc(f->nobjs * sizeof(*f->objs_reach));
	if (!f->objs_reach) {
		f->nobjs = 0;
		return -1;
	}
	for (i = 0; i < f->nobjs; i++)
		f->objs_reach[i] = i && f->objs_reach[i - 1] > f->objs[i].end ?
					   f->objs_reach[i - 1] :
					   f->objs[i].end;
	return 0;
}

static size_t note_build_id(Elf_Scn *scn, unsigned char id[20])
{
	Elf_Data *d = elf_getdata(scn, NULL);
	size_t off = 0, name_off, desc_off;
	GElf_Nhdr nh;

	while (d && (off = gelf_getnote(d, off, &nh, &name_off, &desc_off))) {
		if (nh.n_type == NT_GNU_BUILD_ID && nh.n_descsz <= 20 &&
		    desc_off + nh.n_descsz <= d->d_size) {
			memcpy(id, (char *)d->d_buf + desc_off, nh.n_descsz);
			return nh.n_descsz;
		}
	}
	return 0;
}

size_t jt_elf_build_id(int fd, unsigned char id[20])
{
	Elf_Scn *scn = NULL;
	size_t len = 0;
	GElf_Shdr sh;
	Elf *e;

	elf_version(EV_CURRENT);
	e = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	while (e && !len && (scn = elf_nextscn(e, scn)))
		if (gelf_getshdr(scn, &sh) && sh.sh_type == SHT_NOTE)
			len = note_build_id(scn, id);
	elf_end(e);
	return len;
}

/*
 * f's detached debug file (/usr/lib/debug/.build-id/xx/yyyy.debug, as
 * perf and gdb look it up), open; -1 when there is none. Only a
 * root-owned file that no one else may write is read.
 */
int jt_elf_debug_fd(const struct jt_elffile *f)
{
	char path[128];
	struct stat st;
	size_t i, n;
	int fd;

	if (f->build_id_len < 2)
		return -1;
	n = snprintf(path, sizeof(path), "%s/.build-id/%02x/", JT_DEBUG_DIR,
		     f->build_id[0]);
	for (i = 1; i < f->build_id_len; i++)
		n += snprintf(path + n, sizeof(path) - n, "%02x",
			      f->build_id[i]);
	snprintf(path + n, sizeof(path) - n, ".debug");
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return -1;
	if (fstat(fd, &st) || st.st_uid || (st.st_mode & 022) ||
	    !S_ISREG(st.st_mode)) {
		close(fd);
		return -1;
	}
	return fd;
}

/* A stripped file's full symbol table, from its debug file: static
 * functions such as __libc_start_call_main. */
static bool debug_symbols(struct jt_elffile *f, struct jt_strtab *strs)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;
	bool done = false;
	Elf *e;
	int fd = jt_elf_debug_fd(f);

	if (fd < 0)
		return false;
	e = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	while (e && !done && (scn = elf_nextscn(e, scn)))
		if (gelf_getshdr(scn, &sh) && sh.sh_type == SHT_SYMTAB) {
			read_symtab(f, e, scn, &sh, strs);
			done = f->nsyms > 0;
		}
	elf_end(e);
	close(fd);
	return done;
}

static Elf_Scn *section_named(Elf *e, const char *want, GElf_Shdr *sh)
{
	Elf_Scn *scn = NULL;
	size_t shstrndx;
	const char *name;

	if (elf_getshdrstrndx(e, &shstrndx))
		return NULL;
	while ((scn = elf_nextscn(e, scn)))
		if (gelf_getshdr(scn, sh) &&
		    (name = elf_strptr(e, shstrndx, sh->sh_name)) &&
		    !strcmp(name, want))
			return scn;
	return NULL;
}

/* A name's rank for an address many symbols share: memcpy before __GI_memcpy.
 */
static int rank(const char *name)
{
	return (strchr(name, '@') ? 2000 : 0) + (name[0] == '_' ? 1000 : 0) +
	       (int)strlen(name);
}

/*
 * The name of the IFUNC whose resolver is at addr, from the symbols
 * read so far (sorted): libc calls its own memcpy through a PLT slot
 * relocated R_X86_64_IRELATIVE, which names no symbol, only the
 * resolver's address. objdump calls it *ABS*+0x9be70@plt.
 */
static const char *ifunc_name(const struct jt_elfsym *syms, size_t n,
			      uint64_t addr)
{
	size_t lo = 0, hi = n;
	const char *best = NULL;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (syms[mid].start < addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (; lo < n && syms[lo].start == addr; lo++)
		if (!best || rank(syms[lo].name) < rank(best))
			best = syms[lo].name;
	return best;
}

/*
 * The GOT slot a PLT entry jumps through, jmp *disp32(%rip), after an
 * endbr64 and a bnd prefix where IBT put them; 0 for any other shape.
 */
static uint64_t plt_got(const unsigned char *p, size_t len, uint64_t vaddr)
{
	static const unsigned char endbr64[] = { 0xf3, 0x0f, 0x1e, 0xfa };
	size_t i = 0;
	int32_t disp;

	if (len >= 4 && !memcmp(p, endbr64, 4))
		i = 4;
	if (i < len && p[i] == 0xf2)
		i++;
	if (i + 6 > len || p[i] != 0xff || p[i + 1] != 0x25)
		return 0;
	memcpy(&disp, p + i + 2, 4);
	return vaddr + i + 6 + (int64_t)disp;
}

struct plt_rel {
	uint64_t got; /* r_offset: the GOT slot it relocates */
	size_t i;     /* its index in .rela.plt */
};

static int cmp_rel(const void *a, const void *b)
{
	const struct plt_rel *x = a, *y = b;

	return x->got < y->got ? -1 : x->got > y->got;
}

/* The name a .rela.plt entry gives its PLT slot, or NULL. */
static const char *plt_target(Elf *e, Elf_Data *rd, Elf_Data *dd, size_t strndx,
			      const struct symvec *sv, size_t nsyms, size_t i)
{
	GElf_Rela r;
	GElf_Sym ds;

	if (!gelf_getrela(rd, i, &r))
		return NULL;
	/* The symbols read before; the PLT's come after. */
	if (GELF_R_TYPE(r.r_info) == R_X86_64_IRELATIVE)
		return ifunc_name(sv->v, nsyms, r.r_addend);
	if (GELF_R_TYPE(r.r_info) != R_X86_64_JUMP_SLOT ||
	    !gelf_getsym(dd, GELF_R_SYM(r.r_info), &ds))
		return NULL;
	return elf_strptr(e, strndx, ds.st_name);
}

/*
 * PLT entries as perf and objdump name them, name@plt: each 16-byte
 * entry of .plt.sec (IBT), else of .plt after its header, jumps through
 * a GOT slot, and the .rela.plt entry relocating that slot names it.
 * Entries are not in .rela.plt's order: libc's IRELATIVE slots (its own
 * IFUNCs) are not.
 */
static void add_plt(struct jt_elffile *f, Elf *e, struct jt_strtab *strs)
{
	GElf_Shdr rsh, psh, dsh;
	Elf_Scn *rel = section_named(e, ".rela.plt", &rsh), *plt, *dyn;
	Elf_Data *rd, *dd, *pd;
	struct symvec sv = { f->syms, f->nsyms, f->nsyms };
	struct plt_rel *rels;
	size_t i, n, first, nsyms = f->nsyms;

	if (!rel || rsh.sh_type != SHT_RELA || !rsh.sh_entsize ||
	    !(dyn = elf_getscn(e, rsh.sh_link)) || !gelf_getshdr(dyn, &dsh) ||
	    !(rd = elf_getdata(rel, NULL)) || !(dd = elf_getdata(dyn, NULL)))
		return;
	if ((plt = section_named(e, ".plt.sec", &psh)))
		first = 0;
	else if ((plt = section_named(e, ".plt", &psh)))
		first = 16;
	else
		return;
	pd = elf_getdata(plt, NULL);
	n = rsh.sh_size / rsh.sh_entsize;
	if (!pd || !pd->d_buf || !n || !(rels = calloc(n, sizeof(*rels))))
		return;
	for (i = 0; i < n; i++) {
		GElf_Rela r;

		rels[i] = (struct plt_rel){
			gelf_getrela(rd, i, &r) ? r.r_offset : 0, i
		};
	}
	qsort(rels, n, sizeof(*rels), cmp_rel);
	for (i = first; i + 16 <= pd->d_size && i + 16 <= psh.sh_size;
	     i += 16) {
		struct plt_rel key = { plt_got((unsigned char *)pd->d_buf + i,
					       16, psh.sh_addr + i) },
			       *hit;
		GElf_Sym s = { .st_value = psh.sh_addr + i, .st_size = 16 };
		const char *sym;
		char name[256];

		hit = key.got ? bsearch(&key, rels, n, sizeof(*rels), cmp_rel) :
				NULL;
		sym = hit ? plt_target(e, rd, dd, dsh.sh_link, &sv, nsyms,
				       hit->i) :
			    NULL;
		if (!sym || !*sym)
			continue;
		snprintf(name, sizeof(name), "%s@plt", sym);
		if (add_sym(&sv, &s, name, strs))
			break;
	}
	free(rels);
	f->syms = sv.v;
	f->nsyms = sv.n;
	if (f->nsyms)
		qsort(f->syms, f->nsyms, sizeof(*f->syms), cmp_sym);
}

/* .symtab when the file has one (not stripped), else .dynsym. */
static void read_symbols(struct jt_elffile *f, Elf *e, struct jt_strtab *strs)
{
	Elf_Scn *scn = NULL, *dyn = NULL, *tab = NULL;
	GElf_Shdr sh, dsh, tsh;

	while ((scn = elf_nextscn(e, scn))) {
		if (!gelf_getshdr(scn, &sh))
			continue;
		if (sh.sh_type == SHT_SYMTAB) {
			tab = scn;
			tsh = sh;
		} else if (sh.sh_type == SHT_DYNSYM) {
			dyn = scn;
			dsh = sh;
		} else if (sh.sh_type == SHT_NOTE && !f->build_id_len) {
			f->build_id_len = note_build_id(scn, f->build_id);
		}
	}
	if (tab)
		read_symtab(f, e, tab, &tsh, strs);
	else if (!debug_symbols(f, strs) && dyn)
		read_symtab(f, e, dyn, &dsh, strs);
	add_plt(f, e, strs);
}

static void read_segments(struct jt_elffile *f, Elf *e)
{
	size_t n, i;
	GElf_Phdr ph;

	if (elf_getphdrnum(e, &n) ||
	    !(f->segs = calloc(n ? n : 1, sizeof(*f->segs))))
		return;
	for (i = 0; i < n; i++)
		if (gelf_getphdr(e, i, &ph) && ph.p_type == PT_LOAD)
			f->segs[f->nsegs++] =
				(struct jt_elfseg){ ph.p_offset, ph.p_filesz,
						    ph.p_vaddr, ph.p_flags };
}

static void load_fd(struct jt_elffile *f, struct jt_strtab *strs, int fd)
{
	Elf *e = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	GElf_Ehdr eh;

	if (e && elf_kind(e) == ELF_K_ELF) {
		if (gelf_getehdr(e, &eh))
			f->entry = eh.e_entry;
		read_segments(f, e);
		read_symbols(f, e, strs);
		f->ok = 1;
	}
	elf_end(e);
}

static void load(struct jt_elffile *f, struct jt_strtab *strs)
{
	int fd = open(f->path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return;
	load_fd(f, strs, fd);
	close(fd);
}

/* Paths are interned: the same file has the same pointer. */
static bool same_path(const void *val, const void *key)
{
	return ((const struct jt_elffile *)val)->path == key;
}

/* A new entry for path, or NULL without memory; *had: it was there. */
static struct jt_elffile *entry(struct jt_elfcache *c, const char *path,
				bool *had)
{
	uint64_t h = jt_hash_u64((uintptr_t)path);
	struct jt_elffile *f = jt_hash_find(&c->by_path, h, same_path, path);

	*had = f != NULL;
	if (f)
		return f;
	if (jt_reserve(&c->files, &c->cap, c->n + 1, sizeof(*c->files)))
		return NULL;
	f = calloc(1, sizeof(*f));
	if (!f || jt_hash_add(&c->by_path, h, f)) {
		free(f);
		return NULL;
	}
	c->files[c->n++] = f;
	f->path = path;
	elf_version(EV_CURRENT);
	return f;
}

struct jt_elffile *jt_elf_get(struct jt_elfcache *c, const char *path)
{
	bool had;
	struct jt_elffile *f = entry(c, path, &had);

	if (f && !had)
		load(f, c->strs);
	return f;
}

struct jt_elffile *jt_elf_get_fd(struct jt_elfcache *c, const char *key, int fd)
{
	bool had;
	struct jt_elffile *f = entry(c, key, &had);

	if (f && !had)
		load_fd(f, c->strs, fd);
	return f;
}

int jt_elf_off_vaddr(const struct jt_elffile *f, uint64_t off, uint64_t *vaddr)
{
	size_t i;

	for (i = 0; i < f->nsegs; i++) {
		const struct jt_elfseg *s = &f->segs[i];

		if (off >= s->offset && off < s->offset + s->filesz) {
			*vaddr = off - s->offset + s->vaddr;
			return 0;
		}
	}
	return -1;
}

int jt_elf_vaddr_off(const struct jt_elffile *f, uint64_t vaddr, uint64_t *off)
{
	size_t i;

	for (i = 0; i < f->nsegs; i++) {
		const struct jt_elfseg *s = &f->segs[i];

		if (vaddr >= s->vaddr && vaddr < s->vaddr + s->filesz) {
			*off = vaddr - s->vaddr + s->offset;
			return 0;
		}
	}
	return -1;
}

const char *jt_elf_symbol(const struct jt_elffile *f, uint64_t off)
{
	uint64_t addr = 0;
	size_t i, lo = 0, hi;

	if (jt_elf_off_vaddr(f, off, &addr))
		return NULL;
	hi = f->nsyms;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (f->syms[mid].start <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	/* Symbols may nest (aliases): the nearest start below that holds it. */
	for (i = lo; i-- > 0 && lo - i <= 4;)
		if (addr < f->syms[i].end)
			return f->syms[i].name;
	return NULL;
}

#define PAGE_DOWN(x) ((x) & ~4095ULL)
#define PAGE_UP(x) (((x) + 4095) & ~4095ULL)

int jt_elf_page_vaddr(const struct jt_elffile *f, uint64_t off, uint64_t *vaddr)
{
	const struct jt_elfseg *best = NULL;
	size_t i;

	for (i = 0; i < f->nsegs; i++) {
		const struct jt_elfseg *s = &f->segs[i];

		if (off < PAGE_DOWN(s->offset) ||
		    off >= PAGE_UP(s->offset + s->filesz))
			continue;
		if (!best || ((s->flags & PF_W) && !(best->flags & PF_W)))
			best = s;
	}
	if (!best)
		return -1;
	*vaddr = off - best->offset + best->vaddr;
	return 0;
}

size_t jt_elf_objects(const struct jt_elffile *f, uint64_t start, uint64_t end,
		      const struct jt_elfsym **first)
{
	size_t lo = 0, hi = f->nobjs, n = 0;

	/* The reach only grows: the first object whose reach passes start. */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (f->objs_reach[mid] > start)
			hi = mid;
		else
			lo = mid + 1;
	}
	while (lo + n < f->nobjs && f->objs[lo + n].start < end)
		n++;
	*first = f->objs + lo;
	return n;
}

void jt_elfcache_free(struct jt_elfcache *c)
{
	size_t i;

	for (i = 0; i < c->n; i++) {
		free(c->files[i]->objs);
		free(c->files[i]->objs_reach);
		free(c->files[i]->syms);
		free(c->files[i]->segs);
		jt_cfi_free(c->files[i]->cfi);
		jt_inlines_close(c->files[i]);
		free(c->files[i]->tramp);
		free(c->files[i]);
	}
	free(c->files);
	jt_hash_free(&c->by_path);
	c->files = NULL;
	c->n = 0;
}
