// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Copy-on-write, kernel tier: the fault handler's own branches. do_wp_page
 * runs for a write to a present, write-protected page; do_fault with
 * FAULT_FLAG_WRITE on a private file mapping is the first-touch copy
 * (do_cow_fault, inlined into it on 6.1 and later). Both already hold the
 * VMA, so no lookup and no mmap_lock games, and faults the kernel takes
 * on the user's behalf (copy_to_user, GUP) count too.
 */
#include "common.bpf.h"
#include "ktier.bpf.h"

#define PF_PROT 0x1
#define PF_WRITE 0x2
#define PF_USER 0x4
#define VM_SHARED 0x8

/* enum fault_flag from 5.13; before, #defines with these values. */
#define FLAG(name, old)                                                        \
	(bpf_core_enum_value_exists(enum fault_flag, name) ?                   \
		 bpf_core_enum_value(enum fault_flag, name) :                  \
		 (old))

/* Before 5.13 vm_fault's flags were a plain unsigned int. */
struct vm_fault___legacy {
	unsigned int flags;
} __attribute__((preserve_access_index));

static __always_inline __u64 vmf_flags(struct vm_fault *vmf)
{
	struct vm_fault___legacy *old = (void *)vmf;

	if (bpf_core_field_exists(old->flags))
		return BPF_CORE_READ(old, flags);
	return BPF_CORE_READ(vmf, flags);
}

static __always_inline int emit_cow(struct vm_fault *vmf, __u64 fflags,
				    bool present)
{
	struct vm_area_struct *vma = BPF_CORE_READ(vmf, vma);
	struct jt_cow_event ev = {};
	struct file *f;

	f = jt_read_vma(&ev.vma, vma);
	if (ev.vma.flags & VM_SHARED)
		return 0; /* shared mappings are written in place */
	if (!f && !present)
		return 0; /* born private: no copy */
	ev.kind = f ? (present ? JT_COW_FILE_WP : JT_COW_FILE_FIRST) :
		      JT_COW_ANON_WP;
	ev.page = BPF_CORE_READ(vmf, address) & JT_PAGE_MASK;
	ev.error_code = PF_WRITE | (present ? PF_PROT : 0);
	if (fflags & FLAG(FAULT_FLAG_USER, 0x40))
		ev.error_code |= PF_USER;
	if (f)
		jt_read_file_id(f, &ev.dev, &ev.ino);
	/*
	 * The user instruction the task entered the kernel from: the write
	 * itself, or the syscall whose copy_to_user faulted for it. In
	 * execve no instruction of the new image wrote: the loader did.
	 */
	if (in_execve())
		ev.flags = JT_MF_EXEC_LOAD;
	else
		ev.ip = JT_REGS_IP(jt_task_regs(jt_current()));
	jt_fill_hdr(&ev.h, JT_EV_COW, sizeof(ev));
	jt_emit(&ev, sizeof(ev));
	return 0;
}

static __always_inline int on_do_wp_page(const struct kargs *k)
{
	struct vm_fault *vmf = (struct vm_fault *)k->a[0];

	if (!jt_is_traced(bpf_get_current_pid_tgid() >> 32))
		return 0;
	return emit_cow(vmf, vmf_flags(vmf), true);
}

static __always_inline int on_do_fault(const struct kargs *k)
{
	struct vm_fault *vmf = (struct vm_fault *)k->a[0];
	__u64 fflags = vmf_flags(vmf);

	if (!(fflags & FLAG(FAULT_FLAG_WRITE, 0x01)))
		return 0;
	if (!jt_is_traced(bpf_get_current_pid_tgid() >> 32))
		return 0;
	return emit_cow(vmf, fflags, false);
}

/* Both take the fault alone, on every kernel: vm_fault carries the rest. */
JT_KENTRY_ARGS(do_wp_page, 1, 1)
JT_KENTRY_ARGS(do_fault, 1, 1)

char LICENSE[] SEC("license") = "Dual BSD/GPL";
