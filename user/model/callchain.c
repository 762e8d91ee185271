// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include "lib/treap.h"
#include "model/callchain.h"
#include "model/symbolize.h"
#include "unwind/cfi.h"
#include "unwind/trampoline.h"

/* One JIT function's CFI from its jitdump, valid while that code is. */
struct jitcfi {
	struct jt_tnode t; /* key: code start */
	uint64_t end;
	uint64_t loaded_ns;
	unsigned char *blob; /* .eh_frame then .eh_frame_hdr */
	uint32_t len;
	uint32_t hdr_len;
	int8_t state; /* 0: not parsed yet, 1: cfi, -1: unusable */
	struct jt_cfi *cfi;
	/* The agent's inlining entries: at pcs[i], names[first[i]..] */
	uint64_t *pcs;
	uint32_t *first;
	uint8_t *depth;
	const char **names;
	uint32_t npcs;
};

struct jitcfi_proc {
	uint32_t pid;
	struct jt_treap t;
};

/* The ELF object a process maps that holds CPython's template. */
struct python_proc {
	uint32_t pid;
	struct jt_elffile *f;
	size_t scanned; /* regions when last looked for it in vain */
};

static void free_jitcfi(struct jt_tnode *t)
{
	struct jitcfi *j = jt_tnode_entry(t, struct jitcfi, t);

	jt_cfi_free(j->cfi);
	free(j->blob);
	free(j->pcs);
	free(j->first);
	free(j->depth);
	free(j->names);
	free(j);
}

static const struct jt_treap_ops jitcfi_ops = { NULL, free_jitcfi };

static bool pid_eq(const void *val, const void *key)
{
	return *(const uint32_t *)val == *(const uint32_t *)key;
}

static struct jitcfi_proc *jitcfi_of(struct jt_chains *c, uint32_t pid,
				     bool make)
{
	struct jitcfi_proc *p =
		jt_hash_find(&c->jitcfi, jt_hash_u64(pid), pid_eq, &pid);

	if (p || !make)
		return p;
	p = calloc(1, sizeof(*p));
	if (!p || jt_hash_add(&c->jitcfi, jt_hash_u64(pid), p)) {
		free(p);
		return NULL;
	}
	p->pid = pid;
	p->t.ops = &jitcfi_ops;
	return p;
}

/* Code loaded over [start, end) ends the CFI of what was there. */
static void jitcfi_cut(struct jitcfi_proc *p, uint64_t start, uint64_t end)
{
	struct jt_tnode *t = jt_treap_le(&p->t, start);

	if (t && jt_tnode_entry(t, struct jitcfi, t)->end > start &&
	    t->key < start)
		jt_treap_remove(&p->t, t->key);
	jt_treap_drop(&p->t, jt_treap_take(&p->t, start, end));
}

/*
 * Entries of u64 pc, u32 depth, u32 pad, depth names: kept sorted by pc,
 * the names interned (frames outlive the code). Hostile bytes stop it.
 */
static void parse_inlines(struct jitcfi *n, const struct jt_jit_item *j,
			  struct jt_strtab *strs)
{
	const unsigned char *b = jt_jit_inlines(j), *end = b + j->inl_len;
	uint32_t cap = j->inl_count, d;
	size_t total = 0, names_cap = 16;

	n->pcs = calloc(cap, sizeof(*n->pcs));
	n->first = calloc(cap, sizeof(*n->first));
	n->depth = calloc(cap, sizeof(*n->depth));
	n->names = malloc(names_cap * sizeof(*n->names));
	if (!n->pcs || !n->first || !n->depth || !n->names)
		return;
	while (n->npcs < cap && end - b >= 16) {
		uint64_t pc;
		uint32_t depth;

		memcpy(&pc, b, 8);
		memcpy(&depth, b + 8, 4);
		b += 16;
		if (!depth || depth > 255 ||
		    (n->npcs && pc < n->pcs[n->npcs - 1]))
			return;
		n->first[n->npcs] = total;
		for (d = 0; d < depth; d++) {
			const unsigned char *z = memchr(b, 0, end - b);
			const char **nm;

			if (!z)
				return;
			if (total == names_cap) {
				names_cap *= 2;
				nm = realloc(n->names,
					     names_cap * sizeof(*n->names));
				if (!nm)
					return;
				n->names = nm;
			}
			n->names[total++] =
				jt_intern(strs, (const char *)b, z - b);
			b = z + 1;
		}
		n->pcs[n->npcs] = pc;
		n->depth[n->npcs++] = depth;
	}
}

void jt_chain_jit(struct jt_chains *c, const struct jt_jit_item *j,
		  struct jt_strtab *strs)
{
	struct jitcfi_proc *p;
	struct jitcfi *n;

	if (j->op == JT_JIT_UNLOAD && (p = jitcfi_of(c, j->pid, false))) {
		struct jt_tnode *t = jt_treap_le(&p->t, j->addr);

		if (t && t->key == j->addr)
			jt_treap_remove(&p->t, t->key);
		return;
	}
	if (j->op != JT_JIT_LOAD || j->source != JT_SRC_JITDUMP)
		return;
	p = jitcfi_of(c, j->pid, j->unwind_len || j->inl_len);
	if (!p)
		return;
	jitcfi_cut(p, j->addr, j->addr + j->size);
	if ((!j->unwind_len && !j->inl_len) || !(n = calloc(1, sizeof(*n))))
		return;
	if (j->inl_len)
		parse_inlines(n, j, strs);
	n->blob = malloc(j->unwind_len ? j->unwind_len : 1);
	if (!n->blob) {
		free(n);
		return;
	}
	if (!j->unwind_len)
		n->state = -1; /* inlining entries only: no CFI */
	memcpy(n->blob, jt_jit_unwind(j), j->unwind_len);
	n->t.key = j->addr;
	n->end = j->addr + j->size;
	n->loaded_ns = j->time;
	n->len = j->unwind_len;
	n->hdr_len = j->unwind_hdr_len;
	jt_treap_insert(&p->t, &n->t);
}

/* perf's genelf puts .eh_frame right after the code, 8-byte aligned. */
static struct jt_cfi *jitcfi_parse(struct jitcfi *n)
{
	struct jt_cfi_sect s[JT_CFI_NKINDS] = {};
	uint64_t eh = n->t.key + ((n->end - n->t.key + 7) & ~7ULL);
	uint32_t table = n->len - n->hdr_len;

	if (n->state)
		return n->cfi;
	s[JT_CFI_EH_FRAME] = (struct jt_cfi_sect){ n->blob, table, eh };
	if (n->hdr_len)
		s[JT_CFI_EH_FRAME_HDR] =
			(struct jt_cfi_sect){ n->blob + table, n->hdr_len,
					      eh + table };
	n->cfi = jt_cfi_new(s);
	n->state = n->cfi ? 1 : -1;
	return n->cfi;
}

/* What the jitdump said along with function j, when it said anything. */
static struct jitcfi *jit_extra(struct jt_chains *c, uint32_t pid,
				const struct jt_jitsym *j)
{
	struct jitcfi_proc *p = jitcfi_of(c, pid, false);
	struct jt_tnode *t = p ? jt_treap_le(&p->t, j->start) : NULL;
	struct jitcfi *n;

	if (!t || t->key != j->start)
		return NULL;
	n = jt_tnode_entry(t, struct jitcfi, t);
	if (n->loaded_ns != j->loaded_ns || n->end != j->end)
		return NULL;
	return n;
}

/* The CFI of the jitdump function j, when it came with some. */
static struct jt_cfi *jit_cfi(struct jt_chains *c, uint32_t pid,
			      const struct jt_jitsym *j)
{
	struct jitcfi *n = jit_extra(c, pid, j);

	return n ? jitcfi_parse(n) : NULL;
}

int jt_chain_inlined(struct jt_chains *c, struct jt_model *m, uint32_t pid,
		     uint64_t ip, bool call, const char **out, int max)
{
	struct jt_proc *p = jt_model_find(m, pid);
	const struct jt_jitsym *j;
	struct jitcfi *n;
	uint32_t lo = 0, hi, i, k;

	jt_model_jit_warm(m, p, call ? ip - 1 : ip);
	j = p ? jt_jittab_find(&p->jitdump, call ? ip - 1 : ip) : NULL;
	n = j ? jit_extra(c, pid, j) : NULL;
	if (!n || !n->npcs)
		return 0;
	/* A return address has its own PcDesc; elsewhere, the next one. */
	hi = n->npcs;
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (n->pcs[mid] < ip)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == n->npcs || n->pcs[lo] >= j->end)
		return 0;
	for (k = 0, i = n->first[lo]; k < n->depth[lo] && (int)k < max; k++)
		out[k] = n->names[i + k];
	return k;
}

static struct jt_cfi *elf_cfi_load(const char *path)
{
	struct jt_cfi_sect s[JT_CFI_NKINDS];
	struct jt_cfi *cfi = NULL;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	Elf *e;

	if (fd < 0)
		return NULL;
	e = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (e && jt_cfi_elf_sections(e, s) > 0)
		cfi = jt_cfi_new(s);
	elf_end(e);
	close(fd);
	return cfi;
}

static struct jt_cfi *elf_cfi(struct jt_syms *y, struct jt_elffile *f)
{
	if (!f->cfi_state) {
		f->cfi = jt_stream_cfi(y->s, f->build_id, f->build_id_len);
		if (!f->cfi)
			f->cfi = elf_cfi_load(f->path);
		f->cfi_state = f->cfi ? 1 : -1;
	}
	return f->cfi;
}

/*
 * The template's bounds: _Py_trampoline_func_start and _end are labels
 * in assembly (no type, no size), so they are not among f's functions.
 */
static bool tramp_bounds(Elf *e, uint64_t *start, uint64_t *end)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;
	GElf_Sym sym;

	*start = *end = 0;
	while ((scn = elf_nextscn(e, scn)) && !(*start && *end)) {
		Elf_Data *d = elf_getdata(scn, NULL);
		size_t i, n;

		if (!gelf_getshdr(scn, &sh) || !d || !sh.sh_entsize ||
		    (sh.sh_type != SHT_SYMTAB && sh.sh_type != SHT_DYNSYM))
			continue;
		n = sh.sh_size / sh.sh_entsize;
		for (i = 0; i < n && gelf_getsym(d, i, &sym); i++) {
			const char *name =
				elf_strptr(e, sh.sh_link, sym.st_name);

			if (!name || sym.st_shndx == SHN_UNDEF)
				continue;
			if (!strcmp(name, "_Py_trampoline_func_start"))
				*start = sym.st_value;
			else if (!strcmp(name, "_Py_trampoline_func_end"))
				*end = sym.st_value;
		}
	}
	return *start && *end > *start && *end - *start <= JT_TRAMP_MAX;
}

/* CPython's template, decoded from the bytes between its two labels. */
static struct jt_tramp *tramp_load(struct jt_elffile *f)
{
	unsigned char code[JT_TRAMP_MAX];
	struct jt_tramp *t = NULL;
	uint64_t a, b, off;
	int fd = open(f->path, O_RDONLY | O_CLOEXEC);
	Elf *e;

	if (fd < 0)
		return NULL;
	e = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (e && tramp_bounds(e, &a, &b) && !jt_elf_vaddr_off(f, a, &off) &&
	    pread(fd, code, b - a, off) == (ssize_t)(b - a) &&
	    (t = malloc(sizeof(*t))) && jt_tramp_decode(code, b - a, t)) {
		free(t);
		t = NULL;
	}
	elf_end(e);
	close(fd);
	return t;
}

static struct jt_tramp *elf_tramp(struct jt_elffile *f)
{
	if (!f->tramp_state) {
		f->tramp = tramp_load(f);
		f->tramp_state = f->tramp ? 1 : -1;
	}
	return f->tramp;
}

/* The template of the CPython that process p runs, if it runs one. */
static struct jt_tramp *python_of(struct jt_syms *y, struct jt_proc *p)
{
	struct jt_chains *c = &y->chains;
	struct python_proc *pp =
		jt_hash_find(&c->python, jt_hash_u64(p->pid), pid_eq, &p->pid);
	const struct jt_region *g;
	size_t n = jt_aspace_count(p->as);

	if (pp && (pp->f || pp->scanned == n))
		return pp->f ? pp->f->tramp : NULL;
	if (!pp) {
		pp = calloc(1, sizeof(*pp));
		if (!pp || jt_hash_add(&c->python, jt_hash_u64(p->pid), pp)) {
			free(pp);
			return NULL;
		}
		pp->pid = p->pid;
	}
	pp->scanned = n;
	for (g = jt_aspace_first(p->as); g; g = jt_aspace_next(p->as, g)) {
		struct jt_elffile *f;
		const char *path;

		if (g->kind != JT_RK_FILE || !(g->prot & PROT_EXEC) ||
		    !g->path || !strstr(g->path, "python"))
			continue;
		f = jt_syms_elf(y, g, &path);
		if (f && elf_tramp(f)) {
			pp->f = f;
			return f->tramp;
		}
	}
	return NULL;
}

struct uw_ctx {
	struct jt_syms *y;
	struct jt_proc *p;
	struct jt_model *m;
};

/* JIT code: its own CFI, a trampoline's rule, else its frame pointer. */
static void jit_rule(struct uw_ctx *c, const struct jt_jitsym *j, bool dump,
		     uint64_t pc, struct jt_uw_src *src)
{
	struct jt_tramp *t;
	int off;

	if (dump && (src->cfi = jit_cfi(&c->y->chains, c->p->pid, j))) {
		src->how = JT_UW_CFI;
		return;
	}
	if (!strncmp(j->name, "py::", 4) && (t = python_of(c->y, c->p))) {
		off = jt_tramp_cfa(t, pc - j->start);
		src->how = off < 0 ? JT_UW_NORULE : JT_UW_RULE;
		src->rule.cfa_off = off;
		return;
	}
	src->how = JT_UW_FP;
}

static void file_rule(struct uw_ctx *c, const struct jt_region *g,
		      uint64_t look, struct jt_uw_src *src)
{
	const char *path;
	struct jt_elffile *f = jt_syms_elf(c->y, g, &path);
	uint64_t vaddr;

	src->how = JT_UW_FP;
	if (!f || !elf_cfi(c->y, f) ||
	    jt_elf_off_vaddr(f, g->pgoff + (look - g->start), &vaddr))
		return;
	src->how = JT_UW_CFI;
	src->cfi = f->cfi;
	src->bias = look - vaddr;
	src->entry = f->entry ? f->entry + src->bias : 0;
}

static void find(void *ctx, uint64_t pc, bool leaf, struct jt_uw_src *src)
{
	struct uw_ctx *c = ctx;
	uint64_t look = leaf ? pc : pc - 1;
	const struct jt_region *g = jt_aspace_find(c->p->as, look);
	const struct jt_jitsym *j;

	src->how = JT_UW_NONE;
	if (!g || !(g->prot & PROT_EXEC))
		return;
	jt_model_jit_warm(c->m, c->p, look);
	if ((j = jt_jittab_find(&c->p->jitdump, look))) {
		jit_rule(c, j, true, pc, src);
	} else if ((j = jt_jittab_find(&c->p->perfmap, look))) {
		jit_rule(c, j, false, pc, src);
	} else if (g->kind == JT_RK_FILE) {
		file_rule(c, g, look, src);
	} else if (g->kind == JT_RK_VDSO &&
		   (src->cfi = jt_syms_vdso_cfi(c->y))) {
		/* The vdso is linked at 0: its mapping's start is the bias. */
		src->how = JT_UW_CFI;
		src->bias = g->start;
	} else {
		src->how = JT_UW_FP;
	}
}

static bool sample_regs(const struct jt_sample_user *u, struct jt_uw_regs *r)
{
	int i, d;

	memset(r, 0, sizeof(*r));
	if (u->abi != PERF_SAMPLE_REGS_ABI_64)
		return false;
	for (i = 0; i < 64; i++) {
		if (!(u->mask & (1ULL << i)) || (d = jt_uw_dwarf_reg(i)) < 0)
			continue;
		r->r[d] = u->regs[i];
		r->valid |= 1ULL << d;
	}
	return true;
}

int jt_chain_unwind(struct jt_syms *y, struct jt_model *m,
		    const struct jt_sample *smp, struct jt_uw_frame *out,
		    int max, enum jt_uw_end *end)
{
	struct jt_sample_user u;
	struct jt_uw_regs regs;
	struct jt_uw_stack st;
	struct uw_ctx c = { y, jt_model_find(m, smp->pid), m };

	*end = y->s->foreign_arch ? JT_UW_END_ARCH : JT_UW_END_NOREGS;
	if (y->s->foreign_arch ||
	    !(y->s->sample_type & PERF_SAMPLE_REGS_USER) ||
	    jt_perf_sample_user(smp, y->s->sample_type, y->s->regs_user, &u) ||
	    !sample_regs(&u, &regs))
		return 0;
	st = (struct jt_uw_stack){ regs.r[JT_UW_REG_SP], u.stack, u.stack_len };
	if (!c.p || !c.p->as) {
		out[0] = (struct jt_uw_frame){ regs.r[JT_UW_REG_PC],
					       JT_UW_NONE };
		*end = JT_UW_END_BADRA;
		return 1;
	}
	return jt_unwind(&regs, &st, find, &c, out, max, end);
}

void jt_chain_exited(struct jt_chains *c, uint32_t pid)
{
	struct jitcfi_proc *p =
		jt_hash_del(&c->jitcfi, jt_hash_u64(pid), pid_eq, &pid);

	if (p) {
		jt_treap_clear(&p->t);
		free(p);
	}
	free(jt_hash_del(&c->python, jt_hash_u64(pid), pid_eq, &pid));
}

void jt_chains_free(struct jt_chains *c)
{
	size_t i;

	jt_hash_for_each (&c->jitcfi, i) {
		struct jitcfi_proc *p = c->jitcfi.e[i].val;

		jt_treap_clear(&p->t);
		free(p);
	}
	jt_hash_free(&c->jitcfi);
	jt_hash_for_each (&c->python, i)
		free(c->python.e[i].val);
	jt_hash_free(&c->python);
	memset(c, 0, sizeof(*c));
}
