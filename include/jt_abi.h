/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Event ABI between the BPF programs and userspace. Every record the BPF
 * side emits starts with struct jt_hdr; its size field covers the whole
 * record, because file-backed events carry a variable-length path.
 * These structs are also stored verbatim in jittrace.data, so a change
 * here needs a bump of JT_FILE_VERSION in user/lib/jt_file.h.
 */
#ifndef JT_ABI_H
#define JT_ABI_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

#define JT_PATH_MAX 1024 /* power of two: BPF masks offsets with it */
#define JT_COMM_LEN 16
/*
 * The page every requested length is rounded to, as the kernel rounds
 * it; one definition for BPF and userspace (x86-64: 4 KiB).
 */
#define JT_PAGE_SIZE 4096ULL
#define JT_PAGE_MASK (~(JT_PAGE_SIZE - 1))
#define JT_PAGE_ALIGN(x) (((x) + JT_PAGE_SIZE - 1) & JT_PAGE_MASK)

enum jt_event_type {
	JT_EV_MMAP = 1,
	JT_EV_MPROTECT = 2,
	JT_EV_MUNMAP = 3,
	JT_EV_MREMAP = 4,
	JT_EV_BRK = 5,
	JT_EV_FORK = 6,
	JT_EV_EXEC = 7,
	JT_EV_VMA = 8, /* one VMA of a snapshot (exec or attach) */
	JT_EV_EXIT = 9,
	JT_EV_MAPWRITE = 10, /* a write(2) to a perf-*.map file */
	JT_EV_COW = 11,	     /* a write fault that makes a page private */
	JT_EV_SHMAT = 12,    /* System V shm attached: maps without mmap(2) */
	JT_EV_SHMDT = 13,
	JT_EV_MAX,
};

/* Hooks whose probe tier is chosen at load time and kept in the header. */
enum jt_hook {
	JT_HOOK_MMAP,
	JT_HOOK_MPROTECT,
	JT_HOOK_MUNMAP,
	JT_HOOK_MREMAP,
	JT_HOOK_BRK,
	JT_HOOK_FORK,
	JT_HOOK_EXEC,
	JT_HOOK_EXIT,
	JT_HOOK_COW,
	JT_HOOK_MAX,
};

/* Slots of the BPF map that counts the events the ring refused. */
#define JT_LOST_SLOTS 256

/*
 * The BPF programs' settings, one entry of jt_cfg. trace_all 0: only
 * tgids in traced; 1: every process (-a). Set before load.
 */
struct jt_config {
	__u32 trace_all;
	__u32 self_pid; /* the recorder itself, never traced under -a */
	/*
	 * Bumped after every change BPF makes to traced (a traced fork, a
	 * traced exit): what the per-CPU scope caches were filled under.
	 * Userspace changes traced only before the programs are attached.
	 */
	__u64 gen;
	/*
	 * The recorder's mount namespace (inode) and root (mount id and
	 * directory inode): a process with all three finds /tmp where the
	 * recorder does (JT_EXEC_OUR_ROOT). 0: unknown, never matched.
	 */
	__u32 self_mntns;
	__u32 self_root_mnt;
	__u64 self_root_ino;
	/*
	 * Wake the recorder once this much waits in the ring: below the
	 * ring's size, or a small ring (--bpf-ring) never wakes it and
	 * fills between its ticks. 0: JT_WAKE_BYTES.
	 */
	__u32 wake_bytes;
	__u32 pad;
	/* Calls past their lookups while JT_TEST_STALL_LEN is set (tests). */
	__u64 test_looked;
};

/* The most the BPF ring holds before the recorder is woken (1 MiB). */
#define JT_WAKE_BYTES (1u << 20)

/*
 * A CPU's lane (lanes.bpf.h): where its syscall-exit programs put the
 * mapping calls that carry no path, jt_map_events in a mapped array of
 * slots records per CPU. BPF moves head, the recorder tail; each on its
 * own cache line. Both count records and never wrap.
 */
struct jt_lane_ends {
	__u64 head;    /* records written */
	__u64 writers; /* programs in flight on a shared lane (lanes.bpf.h) */
	__u64 pad0[6];
	__u64 tail; /* records read */
	__u64 pad1[7];
};

/* A lane's records: fewer than the least and the CPUs use the ring. */
#define JT_LANE_SLOTS_MIN 256
#define JT_LANE_SLOTS_MAX 8192

struct jt_hdr {
	__u16 type;
	__u16 size; /* whole record, header included */
	__u32 cpu;
	__u32 pid; /* tgid */
	__u32 tid;
	__u64 time; /* CLOCK_MONOTONIC ns */
};

struct jt_vma {
	__u64 start;
	__u64 end;
	__u64 flags; /* kernel vm_flags */
	__u64 pgoff;
};

/*
 * Kernel-tier hooks whose fexit program reads the call's arguments too,
 * so the fentry tier loads no entry program for them (rodata exit_only,
 * set by the loader; kprobes need their entry).
 */
enum jt_exit_only {
	JT_XO_MMAP = 1 << 0,	 /* no fentry on mmap_region */
	JT_XO_MPROTECT = 1 << 1, /* none on mprotect_fixup, do_mprotect_pkey */
	JT_XO_MUNMAP = 1 << 2,	 /* no fentry on __vm_munmap */
	/*
	 * VMAs in a maple tree, or the legacy object's rb-tree: no program
	 * on perf_event_mmap, nor on mprotect_fixup; the call's exit finds
	 * its VMAs and builds the event alone, with no per-task slot.
	 */
	JT_XO_TREE_MMAP = 1 << 3,
	JT_XO_TREE_MPROTECT = 1 << 4,
};

/*
 * The kernel tier's functions, by the name of their programs (jt_fe_FN).
 * Before 5.17 a fentry program has no bpf_get_func_arg or
 * bpf_get_func_ret: it loads its arguments from the context, as many as
 * the running kernel's prototype has, and the return value from the slot
 * after them. The loader reads each function's shape from the kernel's
 * BTF into rodata jt_kshape[JT_KFN_FN].
 */
#define JT_KFNS(X)                                                             \
	X(mmap_region)                                                         \
	X(perf_event_mmap)                                                     \
	X(do_mprotect_pkey)                                                    \
	X(mprotect_fixup)                                                      \
	X(__vm_munmap)                                                         \
	X(sys_mremap)                                                          \
	X(sys_brk)                                                             \
	X(do_wp_page)                                                          \
	X(do_fault)

#define JT_KFN_ENUM(fn) JT_KFN_##fn,
enum jt_kfn { JT_KFNS(JT_KFN_ENUM) JT_KFN_MAX };

/*
 * A shape: the arity in the low byte; above it, the arguments 5.10's
 * verifier will not let a program load (a pointer to anything but a
 * struct or void), which are probe-read from the context instead.
 */
#define JT_KSHAPE_ARGC(s) ((s)&0xff)
#define JT_KSHAPE_READ(s) ((s) >> 8)

enum jt_map_flags {
	JT_MF_PATH_TRUNC = 1 << 0, /* path hit JT_PATH_MAX or depth limit */
	JT_MF_VMA_BUSY = 1 << 1,   /* bpf_find_vma refused (EBUSY) */
	JT_MF_SNAP_PROC = 1 << 2,  /* VMA snapshot read from /proc (attach) */
	/*
	 * Kernel tier, inside execve: the ELF loader's own mapping. The exec
	 * snapshot that follows holds it too, so the model only counts it.
	 */
	JT_MF_EXEC_LOAD = 1 << 3,
	/*
	 * A VMA event the recorder read from /proc after a lookup was busy:
	 * what the kernel held then, to observe; it makes no region.
	 */
	JT_MF_VMA_REREAD = 1 << 4,
};

/*
 * mmap family, and snapshot VMAs. args[] holds the syscall arguments as
 * requested:
 *   MMAP      addr, len, prot, flags, fd, pgoff (in pages)
 *   MPROTECT  addr, len, prot, pkey
 *   MUNMAP    addr, len
 *   MREMAP    old_addr, old_len, new_len, flags, new_addr
 *   BRK       requested brk; args[1] = mm->start_brk
 *   SHMAT     shmid, shmaddr, shmflg; vma is the segment
 *   SHMDT     shmaddr
 *   VMA       mm->start_brk, mm->brk, mm->start_stack, vdso base;
 *             vma holds the snapshot entry
 * vma is the kernel VMA holding the first byte of the result after the
 * call, vma_last the one holding its last byte (they differ when the
 * result spans VMAs the kernel could not merge).
 */
struct jt_map_event {
	struct jt_hdr h;
	__u64 args[6];
	__s64 result;
	struct jt_vma vma;
	struct jt_vma vma_last;
	__u64 dev;
	__u64 ino;
	__u32 flags;	/* enum jt_map_flags */
	__u32 path_len; /* bytes of path[] including the NUL; 0: no file */
	char path[];
};

enum jt_fork_flags {
	JT_FORK_THREAD = 1 << 0, /* CLONE_THREAD: same tgid */
	JT_FORK_VM = 1 << 1,	 /* CLONE_VM: child shares the parent's mm */
	JT_FORK_EUID = 1 << 2,	 /* child_euid is set (version 5 on) */
};

struct jt_fork_event {
	struct jt_hdr h; /* pid/tid are the parent's */
	__u32 child_pid;
	__u32 child_tid;
	__u32 flags;
	__u32 child_nspid; /* the child in its own PID namespace */
	/* Appended in version 5: readers take the 40 bytes before it. */
	__u32 child_euid; /* as the initial user namespace sees it */
	__u32 pad;
};

enum jt_exec_flags {
	/* Not an execve: the state of a process found running at attach. */
	JT_EXEC_ATTACH = 1 << 0,
	/*
	 * A u32 euid follows path[path_len] (version 5 on): the process's
	 * identity once the exec committed it (a setuid binary's).
	 */
	JT_EXEC_EUID = 1 << 1,
	/*
	 * The process sees the recorder's mount namespace and root, so its
	 * /tmp is the recorder's: it needs no stat through /proc/PID/root.
	 * Says nothing of the recording once it is read back.
	 */
	JT_EXEC_OUR_ROOT = 1 << 2,
	/*
	 * A struct jt_exec_view follows the euid: how the process resolves
	 * paths once the exec committed. Two with the same view see the same
	 * mounts from the same root, so the same /tmp.
	 */
	JT_EXEC_VIEW = 1 << 3,
};

/* Not aligned where it follows the path: copy it out. */
struct jt_exec_view {
	__u32 mntns;	 /* the mount namespace's inode */
	__u32 root_mnt;	 /* the root's mount id */
	__u64 mnt_event; /* the namespace's last mount or unmount */
	__u64 root_ino;	 /* the root directory's inode */
};

/* Followed by the JT_EV_VMA records of the new mm, with the same time. */
struct jt_exec_event {
	struct jt_hdr h;
	char comm[JT_COMM_LEN];
	__u32 old_tid; /* exec from a non-leader thread changes the tid */
	__u32 flags;   /* enum jt_exec_flags */
	__u32 nspid;   /* the process in its own PID namespace; 0: unknown */
	__u32 path_len;
	char path[];
};

struct jt_exit_event {
	struct jt_hdr h;
	__u32 group_dead;
	__s32 exit_code;
};

/*
 * perf-map files carry no time; the write that put a line there does.
 * end is the file position after the write: a line ending at or before
 * it (and after the previous write's end) was written at h.time.
 */
struct jt_write_event {
	struct jt_hdr h;
	__u64 end;
	__u64 len;
	__u64 ino;
};

enum jt_cow_kind {
	JT_COW_FILE_FIRST = 1, /* first touch of a private file page: write */
	JT_COW_FILE_WP = 2, /* a private file page mapped read-only, written */
	JT_COW_ANON_WP = 3, /* private anon page write-protected (fork, zero) */
	JT_COW_RAW = 4,	    /* the VMA could not be read: the model decides */
};

/* A page that stops being shared with its file or its fork partner. */
struct jt_cow_event {
	struct jt_hdr h;
	__u64 page;
	__u64 error_code;
	struct jt_vma vma; /* empty for JT_COW_RAW */
	__u64 dev;
	__u64 ino;
	__u32 kind;
	__u32 flags; /* JT_MF_EXEC_LOAD: the ELF loader's write, in execve */
	/*
	 * The user instruction that wrote (file version 4 on): what a
	 * data-sharing question needs to know next is who wrote the page.
	 */
	__u64 ip;
};

/*
 * The vma_lookups map's slots: how a COW fault's VMA was found, and a
 * mapping call's (at its exit, or at the exit of its process).
 */
enum jt_vma_lookup {
	JT_LOOKUP_WALK,		 /* a fault: a walk of the mm's VMA tree */
	JT_LOOKUP_FIND_VMA,	 /* a fault: bpf_find_vma */
	JT_LOOKUP_CALL_WALK,	 /* a call: a walk no writer overlapped */
	JT_LOOKUP_CALL_FIND_VMA, /* a call: bpf_find_vma */
	JT_LOOKUP_MAX,
};

#endif /* JT_ABI_H */
