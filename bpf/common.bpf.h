/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Maps and helpers shared by every jittrace BPF object. The .bpf.c files
 * are statically linked into one object (bpftool gen object), so the maps
 * are declared __weak here and the linker keeps a single copy.
 */
#ifndef JT_COMMON_BPF_H
#define JT_COMMON_BPF_H

#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_tracing.h>
#include "jt_abi.h"
#include "arch.bpf.h"

/*
 * The legacy object (-DJT_LEGACY), for kernels before 5.17: the same
 * programs and maps, reaching the same data without bpf_loop,
 * bpf_find_vma (5.17), bpf_task_pt_regs (5.15) or
 * bpf_get_current_task_btf (5.11). Loops are bounded, VMAs are found by
 * walking the mm's tree, the user registers are read where the kernel
 * keeps them. Its verifier never sees a helper those kernels lack.
 */
#ifdef JT_LEGACY
/* task_pt_regs(): the top of the kernel stack (x86-64 and arm64). */
#define JT_THREAD_SIZE 16384
/* Up to 6.0 the VMAs are in an rb-tree and a list, not a maple tree. */
struct mm_struct___legacy {
	struct rb_root mm_rb;
	struct vm_area_struct *mmap;
	atomic_t mm_users;
	struct rw_semaphore mmap_lock;
	u64 vmacache_seqnum;
} __attribute__((preserve_access_index));

struct vm_area_struct___legacy {
	struct rb_node vm_rb;
	struct vm_area_struct *vm_next;
} __attribute__((preserve_access_index));

static __always_inline struct task_struct *jt_current(void)
{
	return (struct task_struct *)bpf_get_current_task();
}

static __always_inline struct pt_regs *jt_task_regs(struct task_struct *t)
{
	return (struct pt_regs *)((long)BPF_CORE_READ(t, stack) +
				  JT_THREAD_SIZE) -
	       1;
}

/* Task t's syscall arguments, from the registers saved at entry. */
static __always_inline int jt_task_syscall_args(struct task_struct *t, __u64 *a)
{
	return jt_syscall_args(jt_task_regs(t), a);
}
#else
#define jt_current() bpf_get_current_task_btf()

static __always_inline struct pt_regs *jt_task_regs(struct task_struct *t)
{
	return (struct pt_regs *)bpf_task_pt_regs(t);
}

/*
 * bpf_task_pt_regs hands over a BTF pointer: plain loads, where one probe
 * read of the registers was a helper call per traced syscall.
 */
static __always_inline int jt_task_syscall_args(struct task_struct *t, __u64 *a)
{
	jt_syscall_args_btf(jt_task_regs(t), a);
	return 0;
}
#endif

#define JT_MAX_TRACED 65536
#define JT_PATH_DEPTH 64
#define JT_NAME_MASK 255
/* errno values: vmlinux.h has the kernel's types, not its macros */
#define ENOENT 2
#define EAGAIN 11
#define EBUSY 16

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 8 << 20);
} events SEC(".maps") __weak;

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, JT_MAX_TRACED);
	__type(key, __u32); /* tgid */
	__type(value, __u8);
} traced SEC(".maps") __weak;

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct jt_config);
} jt_cfg SEC(".maps") __weak;

/*
 * Events the ring refused, a slot per CPU (CPUs past the last share one,
 * so the add is atomic). Userspace sums them through a mapping of the
 * array: a map read on every drain pass was a syscall per wakeup.
 */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, JT_LOST_SLOTS);
	__uint(map_flags, BPF_F_MMAPABLE);
	__type(key, __u32);
	__type(value, __u64);
} lost SEC(".maps") __weak;

struct jt_path_walk {
	struct dentry *d;
	struct vfsmount *vfs;
	struct mount *mnt;
	/* The task's root: a chroot or container sees paths from there. */
	struct dentry *root_d;
	struct vfsmount *root_mnt;
	__u32 pos; /* start of the path written so far in scratch->path */
	__u32 flags;
};

/* Room to build a record that does not fit on the 512-byte BPF stack. */
struct jt_scratch {
	char path[2 * JT_PATH_MAX];
	struct jt_path_walk walk; /* the legacy object's path walk */
	__u64 span[16]; /* and its VMA lookup's reads (vma_find.bpf.h) */
	union {
		struct jt_map_event map;
		struct jt_exec_event exec;
		char raw[sizeof(struct jt_map_event) + JT_PATH_MAX];
	};
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct jt_scratch);
} scratch SEC(".maps") __weak;

static __always_inline struct jt_scratch *jt_scratch(void)
{
	__u32 zero = 0;

	return bpf_map_lookup_elem(&scratch, &zero);
}

/* The last answer of jt_is_traced on this CPU. */
struct jt_scope {
	__u32 tgid;
	__u32 traced;
	__u64 gen;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct jt_scope);
} scope_cache SEC(".maps") __weak;

/*
 * Every traced call and every write fault on the machine asks this: a
 * hash lookup each time was a tenth of the cost of a traced mmap. The
 * same task asks again and again, so the answer is kept per CPU, for as
 * long as traced has not changed.
 */
static __always_inline bool jt_is_traced(__u32 tgid)
{
	__u32 zero = 0;
	struct jt_config *cfg = bpf_map_lookup_elem(&jt_cfg, &zero);
	struct jt_scope *c;
	__u64 gen;
	bool t;

	if (!cfg)
		return false;
	if (cfg->trace_all)
		return tgid != cfg->self_pid;
	/* Read before the lookup: a later change invalidates what we keep. */
	gen = *(volatile __u64 *)&cfg->gen;
	c = bpf_map_lookup_elem(&scope_cache, &zero);
	if (c && c->tgid == tgid && c->gen == gen)
		return c->traced;
	t = bpf_map_lookup_elem(&traced, &tgid) != NULL;
	if (c) {
		c->tgid = tgid;
		c->traced = t;
		c->gen = gen;
	}
	return t;
}

/* traced changed: every CPU's cached answer is stale. */
static __always_inline void jt_scope_changed(void)
{
	__u32 zero = 0;
	struct jt_config *cfg = bpf_map_lookup_elem(&jt_cfg, &zero);

	if (cfg)
		__sync_fetch_and_add(&cfg->gen, 1);
}

/* id: bpf_get_current_pid_tgid(), where the caller has it already. */
static __always_inline void jt_fill_hdr_at(struct jt_hdr *h, __u16 type,
					   __u32 size, __u64 id, __u64 time)
{
	h->type = type;
	h->size = size;
	h->cpu = bpf_get_smp_processor_id();
	h->pid = id >> 32;
	h->tid = (__u32)id;
	h->time = time;
}

static __always_inline void jt_fill_hdr_id(struct jt_hdr *h, __u16 type,
					   __u32 size, __u64 id)
{
	jt_fill_hdr_at(h, type, size, id, bpf_ktime_get_ns());
}

static __always_inline void jt_fill_hdr(struct jt_hdr *h, __u16 type,
					__u32 size)
{
	jt_fill_hdr_id(h, type, size, bpf_get_current_pid_tgid());
}

static __always_inline void jt_count_lost(void)
{
	__u32 slot = bpf_get_smp_processor_id() & (JT_LOST_SLOTS - 1);
	__u64 *n = bpf_map_lookup_elem(&lost, &slot);

	if (n)
		__sync_fetch_and_add(n, 1);
}

/*
 * Waking the recorder for every event costs a context switch per mmap
 * call; it polls on a timer anyway, so wake it only once the ring is
 * filling up (jt_config.wake_bytes).
 */
static __always_inline __u64 jt_wake_flags(void)
{
	__u32 zero = 0;
	struct jt_config *cfg = bpf_map_lookup_elem(&jt_cfg, &zero);
	__u64 wake = cfg && cfg->wake_bytes ? cfg->wake_bytes : JT_WAKE_BYTES;

	return bpf_ringbuf_query(&events, BPF_RB_AVAIL_DATA) >= wake ?
		       BPF_RB_FORCE_WAKEUP :
		       BPF_RB_NO_WAKEUP;
}

/*
 * 0, or the ring refused the record (and it is counted lost). now: wake
 * the recorder at once, for what it must act on while it still can.
 */
static __always_inline long jt_emit_wake(void *rec, __u32 size, bool now)
{
	long err =
		bpf_ringbuf_output(&events, rec, size & 0xffff,
				   now ? BPF_RB_FORCE_WAKEUP : jt_wake_flags());

	if (err)
		jt_count_lost();
	return err;
}

static __always_inline long jt_emit(void *rec, __u32 size)
{
	return jt_emit_wake(rec, size, false);
}

/* One path component per call; bpf_loop keeps the verifier's work flat. */
static long jt_path_step(__u64 i, void *data)
{
	struct jt_path_walk *w = data;
	struct jt_scratch *s = jt_scratch();
	/* Locals, so CO-RE relocates only the kernel structs' fields. */
	struct dentry *d = w->d, *parent, *root;
	struct vfsmount *vfs = w->vfs;
	struct mount *mnt = w->mnt;
	__u32 len, pos = w->pos;
	struct qstr q;

	if (!s)
		return 1;
	if (d == w->root_d && vfs == w->root_mnt)
		return 1;
	parent = BPF_CORE_READ(d, d_parent);
	root = BPF_CORE_READ(vfs, mnt_root);
	if (d == root) {
		struct mount *up = BPF_CORE_READ(mnt, mnt_parent);

		if (up == mnt)
			return 1;
		w->d = BPF_CORE_READ(mnt, mnt_mountpoint);
		w->mnt = up;
		w->vfs = &up->mnt;
		return 0;
	}
	if (d == parent)
		return 1;
	q = BPF_CORE_READ(d, d_name);
	len = q.len & JT_NAME_MASK;
	if (len + 1 >= pos) {
		w->flags |= JT_MF_PATH_TRUNC;
		return 1;
	}
	pos -= len;
	/*
	 * 6.12's verifier drops len's upper bound through the compare above
	 * (len + 1 is linked to len); bound it again where the helper needs
	 * it, past the compiler.
	 */
	barrier_var(len);
	len &= JT_NAME_MASK;
	bpf_probe_read_kernel(&s->path[pos & (JT_PATH_MAX - 1)], len, q.name);
	pos--;
	s->path[pos & (JT_PATH_MAX - 1)] = '/';
	w->pos = pos;
	w->d = parent;
	return 0;
}

#ifdef JT_LEGACY
/*
 * jt_path_step on the walk in the scratch (bpf/legacy.bpf.c): a global
 * function, verified once and not at each of its 64 calls. Without
 * bpf_loop, the verifier walks every pass of a loop, and the path walk
 * alone took jt_exit_mmap past its million instructions on 5.10.
 */
int jt_path_step_global(__u32 i);
#endif

/*
 * Write the path of file f right-aligned into s->path, crossing mount
 * points, and copy it to dst. Tracepoint programs may not call
 * bpf_d_path, hence the dentry walk. Returns the bytes written to dst
 * including the NUL.
 */
static __always_inline __u32 jt_file_path(struct jt_scratch *s, struct file *f,
					  char *dst, __u32 *flags)
{
	struct jt_path_walk w = { .pos = JT_PATH_MAX - 1 };
	struct task_struct *t = jt_current();
	__u32 pos;
	long n;

	w.root_d = BPF_CORE_READ(t, fs, root.dentry);
	w.root_mnt = BPF_CORE_READ(t, fs, root.mnt);
	w.d = BPF_CORE_READ(f, f_path.dentry);
	w.vfs = BPF_CORE_READ(f, f_path.mnt);
	w.mnt = container_of(w.vfs, struct mount, mnt);
	s->path[JT_PATH_MAX - 1] = 0;
#ifdef JT_LEGACY
	s->walk = w;
	for (n = 0; n < JT_PATH_DEPTH; n++)
		if (jt_path_step_global(n)) {
			n++;
			break;
		}
	w = s->walk;
#else
	n = bpf_loop(JT_PATH_DEPTH, jt_path_step, &w, 0);
#endif
	if (n >= JT_PATH_DEPTH)
		w.flags |= JT_MF_PATH_TRUNC;
	*flags |= w.flags;
	pos = w.pos;
	if (pos == JT_PATH_MAX - 1) {
		pos--;
		s->path[pos & (JT_PATH_MAX - 1)] = '/';
	}
	bpf_probe_read_kernel(dst, (JT_PATH_MAX - pos) & (JT_PATH_MAX - 1),
			      &s->path[pos & (JT_PATH_MAX - 1)]);
	return JT_PATH_MAX - pos;
}

static __always_inline void jt_fill_vma(struct jt_vma *out,
					struct vm_area_struct *vma)
{
	out->start = BPF_CORE_READ(vma, vm_start);
	out->end = BPF_CORE_READ(vma, vm_end);
	out->flags = BPF_CORE_READ(vma, vm_flags);
	out->pgoff = BPF_CORE_READ(vma, vm_pgoff);
}

#define JT_MAX(a, b) ((a) > (b) ? (a) : (b))
#define JT_MIN(a, b) ((a) < (b) ? (a) : (b))
/* Spans past these (the fields 168 and 72 bytes in on 6.1) read by field */
#define JT_VMA_SPAN 192
#define JT_INODE_SPAN 96

/*
 * A VMA's bounds, flags, offset and file, in one probe read of the span
 * that holds them: the kernel tier's handlers get numbers, not BTF
 * pointers, and a read per field was five helper calls per event (the
 * private file page row of tests/vm/bench.sh), into buf (JT_VMA_SPAN
 * bytes). Where the span would not fit, field by field.
 */
static __always_inline struct file *
jt_read_vma_buf(struct jt_vma *out, struct vm_area_struct *vma, __u64 *buf)
{
	__u32 o_start = bpf_core_field_offset(vma->vm_start);
	__u32 o_end = bpf_core_field_offset(vma->vm_end);
	__u32 o_flags = bpf_core_field_offset(vma->vm_flags);
	__u32 o_pgoff = bpf_core_field_offset(vma->vm_pgoff);
	__u32 o_file = bpf_core_field_offset(vma->vm_file);
	__u32 span =
		JT_MAX(JT_MAX(JT_MAX(o_start, o_end), JT_MAX(o_flags, o_pgoff)),
		       o_file) +
		8;

	if (span > JT_VMA_SPAN || bpf_probe_read_kernel(buf, span, vma)) {
		jt_fill_vma(out, vma);
		return BPF_CORE_READ(vma, vm_file);
	}
	out->start = *(__u64 *)((char *)buf + o_start);
	out->end = *(__u64 *)((char *)buf + o_end);
	out->flags = *(__u64 *)((char *)buf + o_flags);
	out->pgoff = *(__u64 *)((char *)buf + o_pgoff);
	return *(struct file **)((char *)buf + o_file);
}

/* The same through a buffer on the stack. */
static __always_inline struct file *jt_read_vma(struct jt_vma *out,
						struct vm_area_struct *vma)
{
	__u64 buf[JT_VMA_SPAN / 8];

	return jt_read_vma_buf(out, vma, buf);
}

/* A file's device and inode: its inode's fields in one probe read. */
static __always_inline void jt_read_file_id(struct file *f, __u64 *dev,
					    __u64 *ino)
{
	struct inode *in = BPF_CORE_READ(f, f_inode);
	__u32 o_sb = bpf_core_field_offset(in->i_sb);
	__u32 o_ino = bpf_core_field_offset(in->i_ino);
	__u32 span = JT_MAX(o_sb, o_ino) + 8;
	__u64 buf[JT_INODE_SPAN / 8];
	struct super_block *sb;

	if (span > sizeof(buf) || bpf_probe_read_kernel(buf, span, in)) {
		*dev = BPF_CORE_READ(in, i_sb, s_dev);
		*ino = BPF_CORE_READ(in, i_ino);
		return;
	}
	sb = *(struct super_block **)((char *)buf + o_sb);
	*ino = *(__u64 *)((char *)buf + o_ino);
	*dev = BPF_CORE_READ(sb, s_dev);
}

/* Fill the file identity and path of a map event from vma->vm_file. */
static __always_inline __u32 jt_fill_file(struct jt_scratch *s,
					  struct jt_map_event *ev,
					  struct file *f)
{
	if (!f)
		return 0;
	jt_read_file_id(f, &ev->dev, &ev->ino);
	return jt_file_path(s, f, ev->path, &ev->flags);
}

struct vma_ctx {
	struct jt_vma vma;
	struct file *file;
};

/*
 * A task's pid as its own PID namespace numbers it: what a containerised
 * runtime puts in its perf-map's name.
 */
static __always_inline __u32 jt_task_nspid(struct task_struct *t)
{
	struct pid *p = BPF_CORE_READ(t, thread_pid);
	unsigned int level = BPF_CORE_READ(p, level);
	struct upid u = {};

	/* Nesting is at most 32 deep (MAX_PID_NS_LEVEL). */
	bpf_probe_read_kernel(&u, sizeof(u), &p->numbers[level & 31]);
	return u.nr;
}

/*
 * Inside execve, between the point of no return and the EXEC event: the
 * ELF loader's own work on the new mm, which the exec snapshot holds.
 */
static __always_inline bool in_execve(void)
{
	struct task_struct *t = jt_current();

	if (!bpf_core_field_exists(t->in_execve))
		return false;
#ifdef JT_LEGACY
	return BPF_CORE_READ_BITFIELD_PROBED(t, in_execve);
#else
	/* The task is a BTF pointer here: a plain load, no probe read. */
	return BPF_CORE_READ_BITFIELD(t, in_execve);
#endif
}

#endif /* JT_COMMON_BPF_H */
