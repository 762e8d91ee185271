// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "record/arch.h"
#include "record/kfeatures.h"
#include "lib/cli_opts.h"
#include "record/probes.h"
#include <bpf/btf.h>
#include "jittrace.skel.h"
#include "jittrace_legacy.skel.h"
#include "exec_snap.skel.h"
#include "tier_probe.skel.h"

#define TRACEFS "/sys/kernel/tracing"
#define TRACEFS_MAGIC 0x74726163
#define BPF_FS_MAGIC 0xcafe4a11

const char *const jt_hook_names[JT_HOOK_MAX] = {
	[JT_HOOK_MMAP] = "mmap",     [JT_HOOK_MPROTECT] = "mprotect",
	[JT_HOOK_MUNMAP] = "munmap", [JT_HOOK_MREMAP] = "mremap",
	[JT_HOOK_BRK] = "brk",	     [JT_HOOK_FORK] = "fork",
	[JT_HOOK_EXEC] = "exec",     [JT_HOOK_EXIT] = "exit",
	[JT_HOOK_COW] = "cow",
};

/*
 * Per hook: the kernel functions its kernel tier probes (entry programs
 * jt_fe_FN / jt_kp_FN), those of them with a return program (jt_fx_FN /
 * jt_kr_FN), and its tracepoint-tier programs. Hooks with no kernel
 * function are tracepoints on every kernel.
 */
struct hook_progs {
	const char *kfn[3];
	const char *kret[3];
	const char *tp[5];
	unsigned int calls; /* its syscall exits jt_exit_call serves */
	/*
	 * A function of kfn the legacy object can do without, where the
	 * kernel refuses to probe it: 5.10 refuses perf_event_mmap, and
	 * mmap_region's return reads the VMA from the mm's tree itself,
	 * exactly, since the task holds mmap_lock there.
	 */
	const char *kopt;
	/*
	 * The entry programs of kfn the fentry tier leaves out, and the
	 * exit_only bit that tells their fexit programs to read the call's
	 * arguments themselves (enum jt_exit_only): a trampoline fewer per
	 * call each. kprobes keep them.
	 */
	const char *xo_entry[2];
	unsigned int xo;
	/*
	 * Left out too, entry and exit, where the mm's VMAs are a maple
	 * tree or the object is the legacy one (exits_alone); then xo_tree
	 * tells the call's exit to find its VMAs and build the event alone
	 * (mmap_region's walks the tree, which its task holds locked;
	 * do_mprotect_pkey's looks them up unlocked).
	 */
	const char *xo_maple;
	unsigned int xo_tree;
	/* auto takes its syscall tracepoint over kprobes (choose()) */
	bool tp_before_kprobe;
	/*
	 * Where exits_alone(), the function whose exit alone the fentry tier
	 * takes for the call, if it can be probed: then no program goes on
	 * kfn, and none of them is probed (jt_probes.xo_exits).
	 */
	const char *xo_exit;
};

/*
 * The syscall exits of maps.bpf.c's jt_exit_call, the one program for the
 * mapping calls a loop rarely makes, attached by hand to those a tier
 * takes (jt_probes.call_tps).
 */
enum { CALL_PKEY_MPROTECT, CALL_MREMAP, CALL_BRK, CALL_SHMAT, CALL_MAX };
static const char *const call_tps[CALL_MAX] = {
	[CALL_PKEY_MPROTECT] = "sys_exit_pkey_mprotect",
	[CALL_MREMAP] = "sys_exit_mremap",
	[CALL_BRK] = "sys_exit_brk",
	[CALL_SHMAT] = "sys_exit_shmat",
};

static const struct hook_progs hooks[JT_HOOK_MAX] = {
	[JT_HOOK_MMAP] = { { "mmap_region", "perf_event_mmap" },
			   { "mmap_region" },
			   { "jt_exit_mmap" },
			   0,
			   "perf_event_mmap",
			   { "mmap_region" },
			   JT_XO_MMAP,
			   "perf_event_mmap",
			   JT_XO_TREE_MMAP,
			   .tp_before_kprobe = true,
			   .xo_exit = "vm_mmap_pgoff" },
	[JT_HOOK_MPROTECT] = { { "do_mprotect_pkey", "mprotect_fixup" },
			       { "do_mprotect_pkey", "mprotect_fixup" },
			       { "jt_exit_mprotect" },
			       1u << CALL_PKEY_MPROTECT,
			       NULL,
			       { "mprotect_fixup", "do_mprotect_pkey" },
			       JT_XO_MPROTECT,
			       "mprotect_fixup",
			       JT_XO_TREE_MPROTECT,
			       .tp_before_kprobe = true },
	[JT_HOOK_MUNMAP] = { { "__vm_munmap" },
			     { "__vm_munmap" },
			     { "jt_exit_munmap" },
			     0,
			     NULL,
			     { "__vm_munmap" },
			     JT_XO_MUNMAP,
			     .tp_before_kprobe = true },
	[JT_HOOK_MREMAP] = { { "sys_mremap" },
			     { "sys_mremap" },
			     .calls = 1u << CALL_MREMAP,
			     .tp_before_kprobe = true },
	[JT_HOOK_BRK] = { { "sys_brk" },
			  { "sys_brk" },
			  .calls = 1u << CALL_BRK,
			  .tp_before_kprobe = true },
	[JT_HOOK_FORK] = { .tp = { "jt_fork" } },
	[JT_HOOK_EXEC] = { .tp = { "jt_exec" } },
	[JT_HOOK_EXIT] = { .tp = { "jt_exit", "jt_exit_group" } },
	[JT_HOOK_COW] = { { "do_wp_page", "do_fault" },
			  {},
			  JT_COW_TRACEPOINTS },
};

const char *const *jt_hook_kernel_fns(enum jt_hook h)
{
	return hooks[h].kfn;
}

const char *jt_hook_exit_fn(enum jt_hook h)
{
	return hooks[h].xo_exit;
}

const char *jt_tier_name(enum jt_tier t)
{
	return t == JT_TIER_FENTRY     ? "fentry" :
	       t == JT_TIER_KPROBE     ? "kprobe" :
	       t == JT_TIER_TRACEPOINT ? "tracepoint" :
					 "none";
}

const char *const jt_tier_wants[] = {
	[JT_WANT_AUTO] = "auto",
	[JT_WANT_KERNEL] = "kernel",
	[JT_WANT_FENTRY] = "fentry",
	[JT_WANT_KPROBE] = "kprobe",
	[JT_WANT_TRACEPOINT] = "tracepoint",
	NULL,
};

int jt_tier_want_parse(const char *s)
{
	return jt_word_index(jt_tier_wants, s);
}

static bool verbose_libbpf;
/* Probing a tier fails by design where the kernel refuses it: be quiet. */
static bool probing;

static int print_fn(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	if (probing && !verbose_libbpf)
		return 0;
	if (level == LIBBPF_DEBUG && !verbose_libbpf)
		return 0;
	/* Without -v, jittrace's own line says what failed, and how to see
	 * libbpf's log: a verifier dump helps nobody who did not ask. */
	if (!verbose_libbpf)
		return 0;
	return vfprintf(stderr, fmt, ap);
}

void jt_libbpf_quiet(bool verbose)
{
	verbose_libbpf = verbose;
	libbpf_set_print(print_fn);
}

static int fs_is(const char *path, long magic)
{
	struct statfs st;

	return !statfs(path, &st) && st.f_type == magic;
}

int jt_ensure_tracefs(void)
{
	if (fs_is(TRACEFS, TRACEFS_MAGIC))
		return 0;
	if (mount("nodev", TRACEFS, "tracefs", 0, NULL))
		return -errno;
	return 0;
}

int jt_ensure_bpffs(void)
{
	if (fs_is("/sys/fs/bpf", BPF_FS_MAGIC))
		return 0;
	if (mount("bpf", "/sys/fs/bpf", "bpf", 0, NULL))
		return -errno;
	return 0;
}

static struct btf *vmlinux_btf;

struct btf *jt_vmlinux_btf(void)
{
	if (!vmlinux_btf)
		vmlinux_btf = btf__load_vmlinux_btf();
	return vmlinux_btf;
}

void jt_vmlinux_btf_release(void)
{
	btf__free(vmlinux_btf);
	vmlinux_btf = NULL;
}

/*
 * The kernel's BTF is parsed three times at start-up: here to choose
 * the tiers, and by libbpf for each of our two objects. A parse takes
 * 4 ms; faulting in its fresh 12 MB took 40 more on a host where a
 * fault costs 14 us. glibc gives such blocks back to the kernel when
 * freed, so each parse paid again; kept in the heap between parses,
 * one parse's pages serve the next. After loading, the thresholds go
 * to what glibc's own tuning reaches after one such block (twice 6 MB
 * for the trim), and the heap is trimmed.
 */
static void keep_freed_memory(bool keep)
{
	mallopt(M_MMAP_THRESHOLD, keep ? 64 << 20 : 6 << 20);
	mallopt(M_TRIM_THRESHOLD, keep ? 64 << 20 : 12 << 20);
	if (!keep)
		malloc_trim(0);
}

/*
 * 0 when an fentry program loads against fn here, else -errno. A
 * two-instruction program loaded by hand: a skeleton would parse the
 * kernel's BTF again for every function asked about, seconds under
 * emulation.
 */
static int jt_probe_kernel_fn(const char *fn)
{
	/* EPERM is the kernel's policy, not the function's: ask once. */
	static int refused;
	const struct bpf_insn ret0[] = {
		{ .code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_0 },
		{ .code = BPF_JMP | BPF_EXIT },
	};
	LIBBPF_OPTS(bpf_prog_load_opts, o,
		    .expected_attach_type = BPF_TRACE_FENTRY);
	struct btf *btf = jt_vmlinux_btf();
	int id, fd, link, err;

	if (refused)
		return refused;
	id = btf ? btf__find_by_name_kind(btf, fn, BTF_KIND_FUNC) : -ENOENT;
	if (id < 0)
		return -ENOENT;
	o.attach_btf_id = id;
	fd = bpf_prog_load(BPF_PROG_TYPE_TRACING, "jt_tier_probe",
			   "Dual BSD/GPL", ret0, 2, &o);
	if (fd < 0) {
		if (errno == EPERM)
			refused = -EPERM;
		return -errno;
	}
	/*
	 * A kernel can verify fentry programs and still not attach them:
	 * arm64 before 6.4 has no ftrace direct calls for the trampoline.
	 */
	link = bpf_link_create(fd, 0, BPF_TRACE_FENTRY, NULL);
	err = link < 0 ? -errno : 0;
	if (link >= 0)
		close(link);
	close(fd);
	return err;
}

/*
 * Kernel addresses of the hooks' functions, from one pass over
 * /proc/kallsyms. Static functions can share a name (6.1 has two
 * do_fault), and a kprobe by such a name is refused (EADDRNOTAVAIL).
 */
#define KSYM_MAX 4
/* The kernel's own ENOTSUPP, which no libc names. */
#define ENOTSUPP_KERNEL 524

struct ksym_addrs {
	const char *fn;
	int n;
	unsigned long long a[KSYM_MAX];
	/* fn.constprop.0, fn.isra.0: GCC's clone, where fn itself is gone */
	char clone[64];
};

/* The hooks' functions, and __do_fault (jt_kfn_target). */
static struct ksym_addrs ksyms[JT_HOOK_MAX * 3 + 1];
static bool ksyms_read;

static void read_kallsyms(void)
{
	char line[512], name[256];
	unsigned long long a;
	int h, i, n = 0;
	char type;
	FILE *f;

	ksyms_read = true;
	for (h = 0; h < JT_HOOK_MAX; h++)
		for (i = 0; i < 3 && hooks[h].kfn[i]; i++)
			ksyms[n++].fn = hooks[h].kfn[i];
	ksyms[n++].fn = "__do_fault";
	f = fopen("/proc/kallsyms", "re");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		/* Module symbols carry a [module] column: not ours. */
		if (sscanf(line, "%llx %c %255s", &a, &type, name) != 3 ||
		    strchr(line, '['))
			continue;
		for (i = 0; i < n; i++) {
			size_t len = strlen(ksyms[i].fn);

			if (!strncmp(name, ksyms[i].fn, len) &&
			    name[len] == '.' && !ksyms[i].clone[0] &&
			    strlen(name) < sizeof(ksyms[i].clone))
				strcpy(ksyms[i].clone, name);
			if (strcmp(name, ksyms[i].fn))
				continue;
			if (ksyms[i].n < KSYM_MAX)
				ksyms[i].a[ksyms[i].n] = a;
			ksyms[i].n++;
		}
	}
	fclose(f);
}

static const struct ksym_addrs *ksym(const char *fn)
{
	unsigned int i;

	if (!ksyms_read)
		read_kallsyms();
	for (i = 0; i < sizeof(ksyms) / sizeof(ksyms[0]) && ksyms[i].fn; i++)
		if (!strcmp(ksyms[i].fn, fn))
			return &ksyms[i];
	return NULL;
}

/* The hook that names fn, for a same-file sibling to disambiguate. */
static const char *sibling_of(const char *fn)
{
	int h, i;

	for (h = 0; h < JT_HOOK_MAX; h++)
		for (i = 0; i < 3 && hooks[h].kfn[i]; i++)
			if (!strcmp(hooks[h].kfn[i], fn))
				return i ? hooks[h].kfn[0] : hooks[h].kfn[1];
	return NULL;
}

/* A probe found no fn: kallsyms is read (once) for GCC's clones of it. */
static bool clones_wanted;

/*
 * The function to probe for a hook's fn on this kernel. 5.10 inlines
 * mm's do_fault into __handle_mm_fault, and its one do_fault symbol is
 * the IOMMU driver's, megabytes away from mm/memory.c (its BTF still
 * describes mm's). There the COW hook takes __do_fault, which every
 * fault that reads a file page passes through (do_cow_fault's among
 * them), with the same argument. Where GCC left only a clone of fn
 * (arm64's do_mprotect_pkey.constprop.0), the clone.
 */
#define SAME_FILE_BYTES (1ULL << 20)

const char *jt_kfn_target(const char *fn)
{
	/* sys_mremap, sys_brk: the wrappers' names are per architecture. */
	static const char *const sys[][2] = {
		{ "sys_mremap", JT_SYSCALL_PREFIX "sys_mremap" },
		{ "sys_brk", JT_SYSCALL_PREFIX "sys_brk" },
	};
	static const char *do_fault;
	const struct ksym_addrs *k, *mm;
	unsigned long long d;
	int i;

	for (i = 0; i < (int)(sizeof(sys) / sizeof(sys[0])); i++)
		if (!strcmp(fn, sys[i][0]))
			return sys[i][1];
	k = clones_wanted ? ksym(fn) : NULL;
	if (k && !k->n && k->clone[0])
		return k->clone;
	if (strcmp(fn, "do_fault"))
		return fn;
	if (do_fault)
		return do_fault;
	do_fault = "do_fault";
	k = ksym("do_fault");
	mm = ksym("__do_fault");
	if (!k || !mm || mm->n != 1)
		return do_fault;
	for (i = 0; i < k->n && i < KSYM_MAX; i++) {
		d = k->a[i] > mm->a[0] ? k->a[i] - mm->a[0] :
					 mm->a[0] - k->a[i];
		if (d < SAME_FILE_BYTES)
			return do_fault;
	}
	do_fault = "__do_fault";
	return do_fault;
}

/*
 * Address to put fn's kprobe at, 0 to go by name. Of several functions
 * of that name, the one nearest a sibling of the same hook, which lives
 * in the same source file (do_fault next to do_wp_page in mm/memory.c).
 */
static unsigned long long kprobe_addr(const char *fn)
{
	const struct ksym_addrs *k = ksym(fn), *sk;
	const char *s = sibling_of(fn);
	unsigned long long best = 0, d, bestd = ~0ULL, sib;
	int i;

	if (!k || k->n <= 1 || !s || !(sk = ksym(s)) || sk->n != 1)
		return 0;
	sib = sk->a[0];
	for (i = 0; i < k->n && i < KSYM_MAX; i++) {
		d = k->a[i] > sib ? k->a[i] - sib : sib - k->a[i];
		if (d < bestd)
			bestd = d, best = k->a[i];
	}
	return best;
}

static struct bpf_link *attach_kprobe(struct bpf_program *prog, const char *fn,
				      bool ret)
{
	LIBBPF_OPTS(bpf_kprobe_opts, o, .retprobe = ret);
	unsigned long long addr = kprobe_addr(fn);

	if (!addr)
		return bpf_program__attach_kprobe_opts(prog, fn, &o);
	o.offset = addr; /* no name: the kernel takes it as the address */
	return bpf_program__attach_kprobe_opts(prog, NULL, &o);
}

/* 0 when a kprobe attaches to fn here, else -errno. */
static int jt_probe_kprobe_fn(const char *fn)
{
	/* Loaded once, attached once per function asked about. */
	static struct tier_probe_bpf *t;
	struct bpf_link *l;

	/* No kprobe PMU and no kprobe_events: a kernel without kprobes. */
	if (access("/sys/bus/event_source/devices/kprobe/type", F_OK) &&
	    access(TRACEFS "/kprobe_events", F_OK))
		return -EOPNOTSUPP;
	probing = true;
	if (!t) {
		t = tier_probe_bpf__open_and_load();
		if (!t) {
			probing = false;
			return -errno;
		}
	}
	l = attach_kprobe(t->progs.jt_tier_kprobe, fn, false);
	probing = false;
	if (!l)
		return -errno;
	bpf_link__destroy(l);
	return 0;
}

/*
 * Whether the kernel's BTF has name of kind, in *known (-1: not asked
 * yet): the questions asked after the BTF is freed before libbpf loads
 * (load_objects) are answered from what was asked before.
 */
static bool btf_has(int *known, const char *name, int kind)
{
	struct btf *btf;

	if (*known < 0 && (btf = jt_vmlinux_btf()))
		*known = btf__find_by_name_kind(btf, name, kind) >= 0;
	return *known > 0;
}

bool jt_kernel_has_vma_iter(void)
{
	static int known = -1;

	/* Tests take the anchor walk on kernels that need not. */
	if (getenv("JT_EXEC_ANCHORS"))
		return false;
	return btf_has(&known, "bpf_iter_task_vma_new", BTF_KIND_FUNC);
}

bool jt_test_vma_busy(void)
{
	return getenv("JT_TEST_VMA_BUSY") != NULL;
}

/* JT_TEST_STALL_LEN=N: a mapping call of N bytes stalls in BPF. */
static uint64_t test_stall_len(void)
{
	const char *s = getenv("JT_TEST_STALL_LEN");

	return s ? strtoull(s, NULL, 0) : 0;
}

/*
 * Whether 5.10's verifier lets a fentry program load an argument of type
 * id: an integer, an enum, or a pointer to a struct or to void. It types
 * every other pointer as one it cannot check, and refuses the load.
 */
static const struct btf_type *unqualified(const struct btf *btf, __u32 id)
{
	const struct btf_type *t = btf__type_by_id(btf, id);

	while (t && (btf_is_mod(t) || btf_is_typedef(t)))
		t = btf__type_by_id(btf, t->type);
	return t;
}

static bool ctx_loadable(const struct btf *btf, __u32 id)
{
	const struct btf_type *t = unqualified(btf, id);

	if (!t)
		return false;
	if (!btf_is_ptr(t))
		return btf_is_int(t) || btf_is_any_enum(t);
	if (!t->type)
		return true;
	t = unqualified(btf, t->type);
	return t && btf_is_composite(t);
}

/*
 * Kernel function fn's shape (jt_abi.h, JT_KSHAPE_*): its arity, and the
 * arguments the legacy fentry programs probe-read. 0 where BTF lacks it.
 */
static __u32 kernel_fn_shape(const char *fn)
{
	struct btf *btf = jt_vmlinux_btf();
	const struct btf_param *arg;
	const struct btf_type *t;
	__u32 shape;
	int id, i;

	id = btf ? btf__find_by_name_kind(btf, fn, BTF_KIND_FUNC) : -1;
	if (id < 0)
		return 0;
	t = btf__type_by_id(btf, btf__type_by_id(btf, id)->type);
	if (!t || !btf_is_func_proto(t))
		return 0;
	shape = btf_vlen(t);
	arg = btf_params(t);
	for (i = 0; i < btf_vlen(t) && i < 6; i++)
		if (!ctx_loadable(btf, arg[i].type))
			shape |= 1u << (8 + i);
	return shape;
}

/* Maple trees hold the VMAs since 6.1; mm_rb before. */
static bool vmas_in_maple_tree(void)
{
	static int known = -1;

	return btf_has(&known, "maple_type", BTF_KIND_ENUM);
}

/*
 * Where the fentry tier's exits build their events alone, with no
 * program on perf_event_mmap or mprotect_fixup (JT_XO_TREE_*): a maple
 * tree, or the legacy object's rb-tree, which its walks read as the
 * tracepoint tier's do. On 5.10 that was 3 programs a loop of
 * mmap+mprotect+munmap where the entry programs made 7.
 */
static bool exits_alone(void)
{
	return vmas_in_maple_tree() || jt_kfeatures_legacy();
}

static bool xo_maple_skips(const struct hook_progs *hp, const char *fn)
{
	return hp->xo_maple && !strcmp(fn, hp->xo_maple) && exits_alone();
}

/*
 * Probe every function of hook h with try(); note the first refusal.
 * exits: the fentry tier, whose exit-only path attaches nothing to the
 * xo_maple function where exits_alone(), nor to any of kfn where the
 * xo_exit function takes the call: those are not probed, as they need
 * not attach (5.10 refuses perf_event_mmap), and each is a trampoline
 * made and torn down fewer at start-up.
 */
static bool tier_works(struct jt_probes *p, int h, const char *how,
		       int (*try)(const char *), bool exits)
{
	size_t n = strlen(p->why[h]);
	int i;

	p->kskip[h] = 0;
	if (exits && hooks[h].xo_exit && exits_alone() &&
	    !try(hooks[h].xo_exit)) {
		p->xo_exits |= 1u << h;
		return true;
	}
	for (i = 0; i < 3 && hooks[h].kfn[i]; i++) {
		const char *fn = hooks[h].kfn[i];
		bool opt = hooks[h].kopt && !strcmp(fn, hooks[h].kopt) &&
			   jt_kfeatures_legacy();
		int err;

		if (exits && hooks[h].xo && xo_maple_skips(&hooks[h], fn))
			continue;
		err = try(jt_kfn_target(fn));

		if (err == -ENOENT && !clones_wanted) {
			clones_wanted = true;
			err = try(jt_kfn_target(fn));
		}

		if (!err)
			continue;
		n += snprintf(
			p->why[h] + n, sizeof(p->why[h]) - n, "%s%s/%s: %s%s",
			n ? "; " : "", how, jt_kfn_target(fn),
			err == -EOPNOTSUPP	? "no kprobes in this kernel" :
			err == -ENOTSUPP_KERNEL ? "the kernel cannot attach "
						  "BPF trampolines here" :
						  strerror(-err),
			opt ? ", done without" : "");
		if (!opt)
			return false;
		p->kskip[h] |= 1 << i;
	}
	return true;
}

/*
 * The fentry programs read their arguments with bpf_get_func_arg; the
 * legacy object's load them from the context instead (jt_kshape).
 */
static bool fentry_args(struct jt_probes *p, int h)
{
	size_t n = strlen(p->why[h]);

	if (jt_kfeatures_legacy() ||
	    !(jt_kfeatures_missing() & (1u << JT_KF_FUNC_ARG)))
		return true;
	snprintf(p->why[h] + n, sizeof(p->why[h]) - n,
		 "%sfentry: needs bpf_get_func_arg (5.17)", n ? "; " : "");
	return false;
}

/* The tracepoint tier, where this architecture has its tracepoints. */
static enum jt_tier tracepoints(struct jt_probes *p, int h)
{
	size_t n = strlen(p->why[h]);

	if (hooks[h].tp[0] || hooks[h].calls)
		return JT_TIER_TRACEPOINT;
	snprintf(p->why[h] + n, sizeof(p->why[h]) - n,
		 "%sno tracepoint for it on this architecture (the page fault "
		 "tracepoints are x86's): --tier auto or kprobe takes the "
		 "kernel tier",
		 n ? "; " : "");
	return JT_TIER_NONE;
}

/*
 * A mapping call's kprobes cost more than its syscall tracepoint: an
 * entry and a return probe on each of its functions, run for every
 * process on the machine. On 6.1 under tests/vm/bench.sh (instructions
 * a loop of mmap+mprotect+munmap) the kprobe tier added 8,366 to the
 * loop, the tracepoint tier 3,001 and perf -d 3,349; the same loop in a
 * process nobody traced ran 1.21 times as long under kprobes, 1.05 under
 * the tracepoints. What kprobes add is a read under mmap_lock, which the
 * fentry tier of 6.1+ gave up for less cost as well. So auto passes them
 * over. On 5.10's legacy object too (kprobes +9,011, the tracepoints
 * +5,476, perf -d +2,539; an untraced loop 1.640 times as long against
 * 1.148), where the unlocked walk answers busy where a sibling may be
 * writing the tree (vma_find.bpf.h), as bpf_find_vma's try-lock does.
 * COW keeps kprobes: the page fault tracepoints run on every fault of
 * the machine.
 */
static bool kprobes_passed_over(struct jt_probes *p, int h, enum jt_tier_want w)
{
	if (w != JT_WANT_AUTO || !hooks[h].tp_before_kprobe)
		return false;
	p->kprobes_passed |= 1u << h;
	return true;
}

static enum jt_tier choose(struct jt_probes *p, int h, enum jt_tier_want w)
{
	if (!hooks[h].kfn[0] || w == JT_WANT_TRACEPOINT)
		return tracepoints(p, h);
	if (w != JT_WANT_KPROBE && fentry_args(p, h) &&
	    tier_works(p, h, "fentry", jt_probe_kernel_fn, true))
		return JT_TIER_FENTRY;
	if (w != JT_WANT_FENTRY &&
	    tier_works(p, h, "kprobe", jt_probe_kprobe_fn, false))
		return kprobes_passed_over(p, h, w) ? JT_TIER_TRACEPOINT :
						      JT_TIER_KPROBE;
	return w == JT_WANT_AUTO ? tracepoints(p, h) : JT_TIER_NONE;
}

int jt_choose_tiers(struct jt_probes *p, enum jt_tier_want want, bool cow)
{
	int h, err = 0;

	p->kprobes_passed = 0;
	p->xo_exits = 0;
	for (h = 0; h < JT_HOOK_MAX; h++) {
		p->why[h][0] = 0;
		if (h == JT_HOOK_COW && !cow) {
			p->tier[h] = JT_TIER_NONE;
			continue;
		}
		p->tier[h] = choose(p, h, want);
		if (p->tier[h] == JT_TIER_NONE)
			err = -EPERM;
	}
	return err;
}

static struct bpf_program *prog_named(struct bpf_object *obj, const char *fmt,
				      const char *fn)
{
	struct bpf_program *prog;
	char name[64];

	snprintf(name, sizeof(name), fmt, fn);
	prog = bpf_object__find_program_by_name(obj, name);
	if (!prog)
		fprintf(stderr, "jittrace: internal: no program %s\n", name);
	return prog;
}

/*
 * A tracepoint ("syscalls/sys_exit_mmap") this kernel does not have:
 * arm64 6.1 has no pkey_mprotect (no protection keys), so no
 * sys_exit_pkey_mprotect.
 */
static bool tracepoint_absent(const char *tp)
{
	char path[256];
	struct stat st;

	/*
	 * stat, not access: access checks the real uid, and an agent
	 * running as its own user with CAP_DAC_READ_SEARCH would find
	 * every event missing in tracefs's 0700 directory.
	 */
	snprintf(path, sizeof(path), TRACEFS "/events/%s", tp);
	/*
	 * Unmounted, tracefs is an empty directory where every event looks
	 * missing: keep the program, and let its attach fail out loud.
	 */
	return stat(path, &st) != 0 && errno == ENOENT &&
	       fs_is(TRACEFS, TRACEFS_MAGIC);
}

static bool tracepoint_missing(struct bpf_program *prog)
{
	const char *sec = bpf_program__section_name(prog);

	return !strncmp(sec, "tracepoint/", 11) && tracepoint_absent(sec + 11);
}

static bool call_tp_missing(int call)
{
	char tp[64];

	snprintf(tp, sizeof(tp), "syscalls/%s", call_tps[call]);
	return tracepoint_absent(tp);
}

/* jt_exit_call where some tier takes one of its exits this kernel has. */
static void select_calls(struct jt_probes *p)
{
	struct bpf_program *prog = p->skel->progs.jt_exit_call;
	int i;

	for (i = 0; i < CALL_MAX; i++)
		if (p->call_tps & 1u << i && call_tp_missing(i))
			p->call_tps &= ~(1u << i);
	bpf_program__set_autoload(prog, p->call_tps);
	bpf_program__set_autoattach(prog, false);
}

static int attach_calls(struct jt_probes *p)
{
	struct bpf_program *prog = p->skel->progs.jt_exit_call;
	struct bpf_link *l;
	int i, err;

	for (i = 0; i < CALL_MAX; i++) {
		if (!(p->call_tps & 1u << i))
			continue;
		if (p->nlinks >= JT_MAX_LINKS)
			return -E2BIG;
		l = bpf_program__attach_tracepoint(prog, "syscalls",
						   call_tps[i]);
		if (!l) {
			err = -errno;
			fprintf(stderr,
				"jittrace: tracepoint syscalls/%s: %s\n",
				call_tps[i], strerror(-err));
			return err;
		}
		p->links[p->nlinks++] = l;
	}
	return 0;
}

static void set_autoload(struct bpf_object *obj, const char *fmt,
			 const char *fn, bool on)
{
	struct bpf_program *prog = prog_named(obj, fmt, fn);

	if (prog)
		bpf_program__set_autoload(prog,
					  on && !tracepoint_missing(prog));
	/* kprobes go by address where a name is ambiguous: attach_kprobes */
	if (prog && !strncmp(fmt, "jt_k", 4))
		bpf_program__set_autoattach(prog, false);
}

static int attach_one(struct jt_probes *p, const char *fmt, const char *fn,
		      bool ret)
{
	struct bpf_program *prog = prog_named(p->skel->obj, fmt, fn);
	struct bpf_link *l;

	if (!prog || p->nlinks >= JT_MAX_LINKS)
		return -ENOENT;
	l = attach_kprobe(prog, jt_kfn_target(fn), ret);
	if (!l) {
		int err = -errno;

		fprintf(stderr, "jittrace: kprobe %s: %s\n", fn,
			strerror(-err));
		return err;
	}
	p->links[p->nlinks++] = l;
	return 0;
}

static int attach_kprobes(struct jt_probes *p)
{
	int h, i, err = 0;

	for (h = 0; h < JT_HOOK_MAX && !err; h++) {
		if (p->tier[h] != JT_TIER_KPROBE)
			continue;
		for (i = 0; i < 3 && hooks[h].kfn[i] && !err; i++)
			if (!(p->kskip[h] & 1 << i))
				err = attach_one(p, "jt_kp_%s", hooks[h].kfn[i],
						 false);
		for (i = 0; i < 3 && hooks[h].kret[i] && !err; i++)
			err = attach_one(p, "jt_kr_%s", hooks[h].kret[i], true);
	}
	return err;
}

/*
 * The syscall tracepoints left on the fentry tier (write(2) for perf-map
 * lines' times, shmat and shmdt) take every task of the machine to the
 * slow syscall path. Where mmap takes fentry, these kernel functions'
 * exits do the same work, if all three can be probed.
 */
static const char *const fexit_syscall_fns[] = { "vfs_write", "do_shmat",
						 "ksys_shmdt" };
/* Their tracepoints' programs; shmat's exit is jt_exit_call's. */
static const char *const syscall_tps[] = { "jt_exit_write", "jt_exit_shmdt" };

static void select_syscall_exits(struct jt_probes *p)
{
	struct bpf_object *obj = p->skel->obj;
	size_t i;

	p->fexit_syscalls =
		!p->legacy && p->tier[JT_HOOK_MMAP] == JT_TIER_FENTRY;
	for (i = 0; i < 3 && p->fexit_syscalls; i++)
		if (jt_probe_kernel_fn(fexit_syscall_fns[i]))
			p->fexit_syscalls = false;
	for (i = 0; i < 3; i++)
		set_autoload(obj, "jt_fx_%s", fexit_syscall_fns[i],
			     p->fexit_syscalls);
	for (i = 0; i < 2; i++)
		set_autoload(obj, "%s", syscall_tps[i], !p->fexit_syscalls);
	if (!p->fexit_syscalls)
		p->call_tps |= 1u << CALL_SHMAT;
}

/* On the fentry tier, a hook with an exit-only path takes it. */
static bool exit_only_tier(const struct jt_probes *p, int h)
{
	return p->tier[h] == JT_TIER_FENTRY && hooks[h].xo;
}

bool jt_probes_use_fn(const struct jt_probes *p, enum jt_hook h, const char *fn)
{
	if (p->tier[h] == JT_TIER_FENTRY && p->xo_exits & (1u << h))
		return !strcmp(fn, hooks[h].xo_exit);
	return !(exit_only_tier(p, h) && xo_maple_skips(&hooks[h], fn));
}

/* An entry program the exit-only path does without. */
static bool xo_entry_skips(const struct jt_probes *p, int h, const char *fn)
{
	const struct hook_progs *hp = &hooks[h];

	if (!exit_only_tier(p, h))
		return false;
	return (hp->xo_entry[0] && !strcmp(fn, hp->xo_entry[0])) ||
	       (hp->xo_entry[1] && !strcmp(fn, hp->xo_entry[1])) ||
	       !jt_probes_use_fn(p, h, fn);
}

/*
 * On a maple tree the fentry tier's mmap event is vm_mmap_pgoff's exit,
 * looked up once mmap_lock is free, where that function can be probed:
 * else mmap_region's, walking the tree its task holds locked.
 */
static void select_mmap_exit(struct jt_probes *p)
{
	struct bpf_object *obj = p->skel->obj;
	bool pgoff = (p->skel->rodata->exit_only & JT_XO_TREE_MMAP) &&
		     (p->xo_exits & (1u << JT_HOOK_MMAP));

	set_autoload(obj, "jt_fx_%s", "vm_mmap_pgoff", pgoff);
	if (pgoff)
		set_autoload(obj, "jt_fx_%s", "mmap_region", false);
}

/* Each kernel function's shape, as the program attached to it sees it. */
static bool on_fentry(const struct jt_probes *p, const char *fn)
{
	int h, i;

	for (h = 0; h < JT_HOOK_MAX; h++)
		for (i = 0; i < 3 && hooks[h].kfn[i]; i++)
			if (p->tier[h] == JT_TIER_FENTRY &&
			    !strcmp(hooks[h].kfn[i], fn))
				return true;
	return false;
}

/*
 * mprotect_fixup's shape serves every tier; the others only the legacy
 * object's fentry programs. Only those: do_fault's target is found in
 * kallsyms, 150 ms of start-up.
 */
static void set_kshapes(struct jt_probes *p)
{
#define JT_KFN_NAME(fn) #fn,
	static const char *const fns[JT_KFN_MAX] = { JT_KFNS(JT_KFN_NAME) };
	int i;

	for (i = 0; i < JT_KFN_MAX; i++)
		if (i == JT_KFN_mprotect_fixup ||
		    (p->legacy && on_fentry(p, fns[i])))
			p->skel->rodata_kshape->jt_kshape[i] =
				kernel_fn_shape(jt_kfn_target(fns[i]));
}

/* Load each hook's programs of its chosen tier and no others. */
static void select_programs(struct jt_probes *p)
{
	struct bpf_object *obj = p->skel->obj;
	int h, i;

	for (h = 0; h < JT_HOOK_MAX; h++) {
		const struct hook_progs *hp = &hooks[h];
		enum jt_tier t = p->tier[h];
		bool xo = exit_only_tier(p, h);

		if (xo)
			p->skel->rodata->exit_only |= hp->xo;
		if (xo && hp->xo_maple && exits_alone())
			p->skel->rodata->exit_only |= hp->xo_tree;
		for (i = 0; i < 5 && hp->tp[i]; i++)
			set_autoload(obj, "%s", hp->tp[i],
				     t == JT_TIER_TRACEPOINT);
		if (t == JT_TIER_TRACEPOINT)
			p->call_tps |= hp->calls;
		for (i = 0; i < 3 && hp->kfn[i]; i++) {
			bool skip = p->kskip[h] & 1 << i ||
				    xo_entry_skips(p, h, hp->kfn[i]);
			/* Only fentry takes its target here (kallsyms' word) */
			const char *to = t == JT_TIER_FENTRY ?
						 jt_kfn_target(hp->kfn[i]) :
						 hp->kfn[i];
			struct bpf_program *fe;

			set_autoload(obj, "jt_fe_%s", hp->kfn[i],
				     t == JT_TIER_FENTRY && !skip);
			fe = to != hp->kfn[i] ?
				     prog_named(obj, "jt_fe_%s", hp->kfn[i]) :
				     NULL;
			if (fe)
				bpf_program__set_attach_target(fe, 0, to);
			set_autoload(obj, "jt_kp_%s", hp->kfn[i],
				     t == JT_TIER_KPROBE && !skip);
		}
		for (i = 0; i < 3 && hp->kret[i]; i++) {
			const char *to = t == JT_TIER_FENTRY ?
						 jt_kfn_target(hp->kret[i]) :
						 hp->kret[i];
			bool skip = !jt_probes_use_fn(p, h, hp->kret[i]);
			struct bpf_program *fx;

			set_autoload(obj, "jt_fx_%s", hp->kret[i],
				     t == JT_TIER_FENTRY && !skip);
			fx = to != hp->kret[i] ?
				     prog_named(obj, "jt_fx_%s", hp->kret[i]) :
				     NULL;
			if (fx)
				bpf_program__set_attach_target(fx, 0, to);
			set_autoload(obj, "jt_kr_%s", hp->kret[i],
				     t == JT_TIER_KPROBE);
		}
	}
	select_mmap_exit(p);
	select_syscall_exits(p);
	select_calls(p);
	/* exec_snap.bpf.c's jt_exec_snap takes over where it can load. */
	if (jt_kernel_has_vma_iter())
		bpf_program__set_autoload(p->skel->progs.jt_exec, false);
	if (jt_test_vma_busy())
		p->skel->rodata->jt_test_vma_busy = 1;
	p->skel->rodata->jt_test_stall_len = test_stall_len();
	set_kshapes(p);
	/*
	 * arm64 6.1 has no pkey_mprotect, so GCC clones do_mprotect_pkey
	 * for its one caller, mprotect, with the constant pkey (-1) gone.
	 */
	if (strcmp(jt_kfn_target("do_mprotect_pkey"), "do_mprotect_pkey"))
		p->skel->rodata->mprotect_no_pkey = 1;
}

/* A hook whose tracepoint this kernel lacks would record nothing. */
static int check_tracepoints(const struct jt_probes *p)
{
	struct bpf_program *prog;
	int h;

	for (h = 0; h < JT_HOOK_MAX; h++) {
		unsigned int lost = hooks[h].calls & ~p->call_tps;

		if (p->tier[h] != JT_TIER_TRACEPOINT)
			continue;
		if (!hooks[h].tp[0] && lost) {
			fprintf(stderr,
				"jittrace: the %s hook needs the tracepoint "
				"syscalls/%s, and this kernel has none "
				"(" TRACEFS "/events)\n",
				jt_hook_names[h],
				call_tps[__builtin_ctz(lost)]);
			return -ENOENT;
		}
		if (!hooks[h].tp[0])
			continue;
		prog = prog_named(p->skel->obj, "%s", hooks[h].tp[0]);
		if (!prog || bpf_program__autoload(prog) ||
		    strncmp(bpf_program__section_name(prog), "tracepoint/", 11))
			continue;
		fprintf(stderr,
			"jittrace: the %s hook needs the tracepoint %s, and "
			"this kernel has none (" TRACEFS "/events)\n",
			jt_hook_names[h], bpf_program__section_name(prog) + 11);
		return -ENOENT;
	}
	return 0;
}

void jt_probes_describe(const struct jt_probes *p, char *buf, size_t len)
{
	size_t n = 0;
	int h;

	buf[0] = 0;
	for (h = 0; h < JT_HOOK_MAX && n < len; h++)
		n += snprintf(buf + n, len - n, "%s%s=%s", h ? " " : "",
			      jt_hook_names[h], jt_tier_name(p->tier[h]));
	if (n < len)
		snprintf(buf + n, len - n,
			 " write+shm=%s exec-snapshot=%s programs=%s",
			 p->fexit_syscalls ? "fexit" : "tracepoint",
			 jt_probes_snapshot(p),
			 p->legacy ? "legacy" : "current");
}

const char *jt_probes_snapshot(const struct jt_probes *p)
{
	return p->snap ? "iterator" : p->legacy ? "list" : "anchors";
}

/*
 * Kernels before 5.17 get the legacy object: the same maps and programs
 * by name (the Makefile builds both from bpf/), so the one skeleton
 * opens either; only the ELF it opens differs.
 */
static struct jittrace_bpf *open_object(struct jt_probes *p)
{
	struct jittrace_bpf *s;
	int err;

	p->legacy = jt_kfeatures_legacy();
	if (!p->legacy)
		return jittrace_bpf__open();
	s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	err = jittrace_bpf__create_skeleton(s);
	if (!err) {
		s->skeleton->data =
			jittrace_legacy_bpf__elf_bytes(&s->skeleton->data_sz);
		err = bpf_object__open_skeleton(s->skeleton, NULL);
	}
	if (err) {
		jittrace_bpf__destroy(s);
		errno = -err;
		return NULL;
	}
	return s;
}

/*
 * The in-kernel exec snapshot lives in its own object: share the main
 * object's maps with it, and let it replace jt_exec.
 */
static int load_exec_snap(struct jt_probes *p)
{
	struct jittrace_bpf *m = p->skel;
	struct exec_snap_bpf *s;
	int err;

	if (!jt_kernel_has_vma_iter())
		return 0;
	s = exec_snap_bpf__open();
	if (!s)
		return -errno;
	err = bpf_map__reuse_fd(s->maps.events, bpf_map__fd(m->maps.events));
	err = err   ?:
		      bpf_map__reuse_fd(s->maps.traced,
					bpf_map__fd(m->maps.traced));
	err = err   ?:
		      bpf_map__reuse_fd(s->maps.jt_cfg,
					bpf_map__fd(m->maps.jt_cfg));
	err = err ?: bpf_map__reuse_fd(s->maps.lost, bpf_map__fd(m->maps.lost));
	err = err   ?:
		      bpf_map__reuse_fd(s->maps.scratch,
					bpf_map__fd(m->maps.scratch));
	err = err ?: exec_snap_bpf__load(s);
	if (err) {
		exec_snap_bpf__destroy(s);
		return err;
	}
	p->snap = s;
	return 0;
}

static int report_refused(struct jt_probes *p, enum jt_tier_want want)
{
	static const char *const asked[] = {
		[JT_WANT_AUTO] = "any tier",
		[JT_WANT_KERNEL] = "the kernel tier",
		[JT_WANT_FENTRY] = "fentry",
		[JT_WANT_KPROBE] = "kprobes",
		[JT_WANT_TRACEPOINT] = "tracepoints",
	};
	int h;

	for (h = 0; h < JT_HOOK_MAX; h++)
		if (p->tier[h] == JT_TIER_NONE && p->why[h][0])
			fprintf(stderr,
				"jittrace: --tier: hook %s cannot use %s "
				"here: %s\n",
				jt_hook_names[h], asked[want], p->why[h]);
	return -EPERM;
}

static size_t lost_bytes(void)
{
	size_t page = sysconf(_SC_PAGESIZE);

	return (JT_LOST_SLOTS * sizeof(__u64) + page - 1) & ~(page - 1);
}

/* The lost counts, read on every drain pass without a syscall. */
static int map_lost(struct jt_probes *p)
{
	void *m = mmap(NULL, lost_bytes(), PROT_READ, MAP_SHARED,
		       bpf_map__fd(p->skel->maps.lost), 0);
	int err = -errno;

	if (m == MAP_FAILED) {
		fprintf(stderr,
			"jittrace: cannot map the BPF lost counts: %s\n",
			strerror(-err));
		return err;
	}
	p->lost = m;
	return 0;
}

/*
 * JT_TEST_LANE_TAKEN=1: every shared lane looks as if a writer were in
 * flight on it, which otherwise takes a preemption part way through a
 * record; each kernel-tier exit then gives its record to the ring.
 */
static void test_lanes_taken(struct jt_lanes *l)
{
	uint32_t cpu;

	for (cpu = 0;
	     l->kernel_tier && getenv("JT_TEST_LANE_TAKEN") && cpu < l->ncpus;
	     cpu++)
		__atomic_store_n(&l->ends[cpu].writers, 1, __ATOMIC_RELAXED);
}

static int map_lanes(struct jt_probes *p)
{
	uint32_t kslots = p->skel->rodata->jt_klane_slots;
	int err = jt_lanes_map(&p->lanes, bpf_map__fd(p->skel->maps.lane_recs),
			       bpf_map__fd(p->skel->maps.lane_ends),
			       p->skel->rodata->jt_lane_slots | kslots,
			       libbpf_num_possible_cpus());

	if (err)
		fprintf(stderr, "jittrace: cannot map the BPF lanes: %s\n",
			strerror(-err));
	p->lanes.kernel_tier = !err && kslots;
	test_lanes_taken(&p->lanes);
	return err;
}

/*
 * Our mount namespace and root, for BPF to mark the processes that find
 * /tmp where we do. Left 0, never matched, where statx gives no mount id.
 */
static void self_root(struct jt_config *cfg)
{
	struct statx sx;
	struct stat st;

	if (stat("/proc/self/ns/mnt", &st) ||
	    statx(AT_FDCWD, "/", 0, STATX_INO | STATX_MNT_ID, &sx) ||
	    !(sx.stx_mask & STATX_MNT_ID))
		return;
	cfg->self_mntns = st.st_ino;
	cfg->self_root_mnt = sx.stx_mnt_id;
	cfg->self_root_ino = sx.stx_ino;
}

/*
 * A quarter of the ring, at most JT_WAKE_BYTES: the recorder is woken
 * with three quarters still free, whatever --bpf-ring chose.
 */
static uint32_t ring_wake_bytes(uint32_t ring_bytes)
{
	return ring_bytes / 4 < JT_WAKE_BYTES ? ring_bytes / 4 : JT_WAKE_BYTES;
}

/* Whether a mapping call's syscall-exit program (maps.bpf.c) runs. */
static bool tracepoint_maps(const struct jt_probes *p)
{
	int h;

	for (h = JT_HOOK_MMAP; h <= JT_HOOK_BRK; h++)
		if (p->tier[h] == JT_TIER_TRACEPOINT)
			return true;
	return false;
}

/*
 * Whether a kernel-tier exit builds a mapping call's event alone
 * (kmaps.bpf.c): it can be preempted, so lanes it writes are shared.
 */
static bool kernel_tier_lanes(const struct jt_probes *p)
{
	return exit_only_tier(p, JT_HOOK_MMAP) ||
	       exit_only_tier(p, JT_HOOK_MPROTECT) ||
	       exit_only_tier(p, JT_HOOK_MUNMAP);
}

/*
 * A lane per CPU that could run a program (lanes.bpf.h), where mapping
 * calls' tracepoint programs or kernel-tier exits run: shm's alone are
 * too rare to need one. On the kernel tier the ring's reservation made
 * its exits dearer than the tracepoint tier's (tests/vm/bench.sh: the
 * mmap loop 65 instructions above it). The legacy object's tracepoint
 * programs write lanes too: on 5.10 the same build's mmap loop took
 * +6,182 instructions without them, +5,851 with them.
 */
static int size_lanes(struct jt_probes *p, uint32_t ring_bytes)
{
	int ncpus = libbpf_num_possible_cpus();
	bool shared = kernel_tier_lanes(p);
	uint32_t slots;
	int err;

	if (ncpus <= 0 || (!tracepoint_maps(p) && !shared))
		return 0;
	slots = jt_lanes_slots(ring_bytes, ncpus);
	if (!slots)
		return 0;
	err = bpf_map__set_max_entries(p->skel->maps.lane_recs, ncpus * slots);
	if (!err)
		err = bpf_map__set_max_entries(p->skel->maps.lane_ends, ncpus);
	if (err)
		return err;
	/* Where kernel-tier exits write lanes, they alone do. */
	if (shared)
		p->skel->rodata->jt_klane_slots = slots;
	else
		p->skel->rodata->jt_lane_slots = slots;
	return 0;
}

/* Choose the tiers, and load both objects with what each tier needs. */
static int load_objects(struct jt_probes *p, enum jt_tier_want want, bool cow,
			uint32_t ring_bytes)
{
	int err;

	if (jt_choose_tiers(p, want, cow))
		return report_refused(p, want);
	p->skel = open_object(p);
	if (!p->skel)
		return -errno;
	select_programs(p);
	err = check_tracepoints(p);
	if (!err)
		err = bpf_map__set_max_entries(p->skel->maps.events,
					       ring_bytes);
	if (!err)
		err = size_lanes(p, ring_bytes);
	if (err)
		return err;
	/*
	 * Parsed, it is 6-7 MB: a quarter of the agent's quiet memory.
	 * Freed before libbpf parses its own, it lends that parse its pages.
	 */
	jt_kernel_has_vma_iter();
	jt_vmlinux_btf_release();
	err = jittrace_bpf__load(p->skel);
	return err ?: load_exec_snap(p);
}

int jt_probes_load(struct jt_probes *p, enum jt_tier_want want, bool trace_all,
		   bool cow, uint32_t ring_bytes, jt_event_fn fn, void *ctx)
{
	struct jt_config cfg = { .trace_all = trace_all, .self_pid = getpid() };
	__u32 zero = 0;
	int err;

	memset(p, 0, sizeof(*p));
	if (access("/sys/kernel/btf/vmlinux", R_OK)) {
		fprintf(stderr, "jittrace: this kernel has no BTF "
				"(/sys/kernel/btf/vmlinux); jittrace needs a "
				"kernel built with CONFIG_DEBUG_INFO_BTF\n");
		return -ENOTSUP;
	}
	/* Before select_programs asks tracefs which tracepoints exist. */
	err = jt_ensure_tracefs();
	if (err)
		fprintf(stderr,
			"jittrace: cannot mount tracefs on " TRACEFS ": %s\n",
			strerror(-err));
	keep_freed_memory(true);
	err = load_objects(p, want, cow, ring_bytes);
	keep_freed_memory(false);
	if (err)
		return err;
	self_root(&cfg);
	cfg.wake_bytes = ring_wake_bytes(ring_bytes);
	err = bpf_map_update_elem(bpf_map__fd(p->skel->maps.jt_cfg), &zero,
				  &cfg, BPF_ANY);
	if (err)
		return -errno;
	err = map_lost(p);
	if (!err)
		err = map_lanes(p);
	if (err)
		return err;
	p->rb = ring_buffer__new(bpf_map__fd(p->skel->maps.events), fn, ctx,
				 NULL);
	return p->rb ? 0 : -errno;
}

int jt_probes_trace(struct jt_probes *p, pid_t pid)
{
	__u32 key = pid;
	__u8 one = 1;

	if (bpf_map_update_elem(bpf_map__fd(p->skel->maps.traced), &key, &one,
				BPF_ANY))
		return -errno;
	return 0;
}

int jt_probes_attach(struct jt_probes *p)
{
	int err = jittrace_bpf__attach(p->skel);

	if (!err)
		err = attach_calls(p);
	if (!err)
		err = attach_kprobes(p);
	if (!err && p->snap)
		err = exec_snap_bpf__attach(p->snap);
	return err;
}

uint64_t jt_probes_lost(struct jt_probes *p)
{
	uint64_t sum = 0;
	int i;

	for (i = 0; p->lost && i < JT_LOST_SLOTS; i++)
		sum += p->lost[i];
	return sum;
}

int jt_probes_vma_lookups(struct jt_probes *p, uint64_t *out)
{
	int ncpu = libbpf_num_possible_cpus(), fd, i, c;
	uint64_t *v;

	if (ncpu < 0)
		return ncpu;
	v = calloc(ncpu, sizeof(*v));
	if (!v)
		return -ENOMEM;
	fd = bpf_map__fd(p->skel->maps.vma_lookups);
	for (i = 0; i < JT_LOOKUP_MAX; i++) {
		out[i] = 0;
		if (bpf_map_lookup_elem(fd, &i, v))
			continue;
		for (c = 0; c < ncpu; c++)
			out[i] += v[c];
	}
	free(v);
	return 0;
}

static void *destroy_link(void *l)
{
	bpf_link__destroy(l);
	return NULL;
}

/*
 * Each detach waits for an RCU grace period, 60-75 ms here: one after
 * another, twenty of them made every recording end 1.3 s late. Side by
 * side they wait about once.
 */
static void destroy_links(struct bpf_link **links, size_t n)
{
	pthread_t t[JT_MAX_LINKS * 2];
	bool started[JT_MAX_LINKS * 2] = {};
	size_t i;

	for (i = 0; i < n && i < JT_MAX_LINKS * 2; i++)
		started[i] =
			links[i] &&
			!pthread_create(&t[i], NULL, destroy_link, links[i]);
	for (i = 0; i < n; i++) {
		if (i < JT_MAX_LINKS * 2 && started[i])
			pthread_join(t[i], NULL);
		else
			bpf_link__destroy(links[i]);
		links[i] = NULL;
	}
}

/* The skeleton's own links, taken out of it so it has none to detach. */
static size_t skel_links(struct bpf_object_skeleton *s, struct bpf_link **out,
			 size_t max)
{
	size_t n = 0;
	int i;

	for (i = 0; s && i < s->prog_cnt && n < max; i++) {
		struct bpf_link **l = s->progs[i].link;

		if (l && *l) {
			out[n++] = *l;
			*l = NULL;
		}
	}
	return n;
}

size_t jt_probes_prog_fds(const struct jt_probes *p, int *fds, size_t max)
{
	struct bpf_object *objs[] = { p->skel ? p->skel->obj : NULL,
				      p->snap ? p->snap->obj : NULL };
	struct bpf_program *prog;
	size_t n = 0, i;

	for (i = 0; i < 2; i++) {
		if (!objs[i])
			continue;
		bpf_object__for_each_program (prog, objs[i])
			if (n < max && bpf_program__fd(prog) >= 0)
				fds[n++] = bpf_program__fd(prog);
	}
	return n;
}

size_t jt_probes_link_fds(const struct jt_probes *p, int *fds, size_t max)
{
	const struct bpf_object_skeleton *s[] = {
		p->skel ? p->skel->skeleton : NULL,
		p->snap ? p->snap->skeleton : NULL,
	};
	size_t n = 0, i;
	int k;

	for (i = 0; i < (size_t)p->nlinks && n < max; i++)
		fds[n++] = bpf_link__fd(p->links[i]);
	for (i = 0; i < 2; i++)
		for (k = 0; s[i] && k < s[i]->prog_cnt && n < max; k++)
			if (s[i]->progs[k].link && *s[i]->progs[k].link)
				fds[n++] = bpf_link__fd(*s[i]->progs[k].link);
	return n;
}

void jt_probes_close(struct jt_probes *p)
{
	struct bpf_link *links[JT_MAX_LINKS * 2];
	size_t n = 0;

	ring_buffer__free(p->rb);
	while (p->nlinks && n < JT_MAX_LINKS)
		links[n++] = p->links[--p->nlinks];
	if (p->skel)
		n += skel_links(p->skel->skeleton, links + n,
				JT_MAX_LINKS * 2 - n);
	destroy_links(links, n);
	exec_snap_bpf__destroy(p->snap);
	if (p->lost)
		munmap((void *)p->lost, lost_bytes());
	jt_lanes_unmap(&p->lanes);
	jittrace_bpf__destroy(p->skel);
	memset(p, 0, sizeof(*p));
}
