// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Copy-on-write, tracepoint tier: user write faults of traced processes
 * that make a page private. Page faults are frequent, so the scope test
 * and the write bit come before any other work.
 */
#include "common.bpf.h"
#include "vma_find.bpf.h"

#define PF_PROT 0x1 /* the page was present: a protection fault */
#define PF_WRITE 0x2
#define VM_SHARED 0x8

static __always_inline __u32 classify(struct vma_ctx *c, __u64 ec)
{
	if (c->vma.flags & VM_SHARED)
		return 0; /* shared mappings are written in place */
	if (c->file)
		return ec & PF_PROT ? JT_COW_FILE_WP : JT_COW_FILE_FIRST;
	/* A first write to private anon memory makes a page born private. */
	return ec & PF_PROT ? JT_COW_ANON_WP : 0;
}

static __always_inline long jt_fault_vma(__u64 addr, struct vma_ctx *c)
{
#ifndef JT_LEGACY
	long err = jt_maple_find_vma(addr, c);

	if (err != -EAGAIN) {
		jt_count_lookup(JT_LOOKUP_WALK);
		return err;
	}
	jt_count_lookup(JT_LOOKUP_FIND_VMA);
#else
	/* the rb-tree descent */
	jt_count_lookup(JT_LOOKUP_WALK);
#endif
	return jt_find_vma_once(addr, c);
}

static __always_inline int emit_fault(__u64 address, __u64 ec, __u64 ip,
				      __u32 flags)
{
	struct jt_cow_event ev = {};
	struct vma_ctx c = {};

	ev.page = address & ~4095ULL;
	ev.error_code = ec;
	ev.ip = ip;
	ev.flags = flags;
	/*
	 * The maple tree first (maple.bpf.h), then bpf_find_vma once:
	 * interrupts are off here, so an irq_work still pending from the
	 * last lookup cannot finish while we spin. A lookup that fails goes
	 * out raw and the model classifies it.
	 */
	if (jt_fault_vma(ev.page, &c)) {
		ev.kind = JT_COW_RAW;
	} else {
		ev.kind = classify(&c, ec);
		if (!ev.kind)
			return 0;
		ev.vma = c.vma;
		if (c.file)
			jt_read_file_id(c.file, &ev.dev, &ev.ino);
	}
	jt_fill_hdr(&ev.h, JT_EV_COW, sizeof(ev));
	jt_emit(&ev, sizeof(ev));
	return 0;
}

#ifdef JT_HAVE_FAULT_TRACEPOINTS
/*
 * A raw tracepoint: no trace record is built for each fault, and it
 * detaches without a synchronous RCU wait.
 */
SEC("tp_btf/page_fault_user")
int BPF_PROG(jt_fault, unsigned long address, struct pt_regs *regs,
	     unsigned long error_code)
{
	if (!(error_code & PF_WRITE) ||
	    !jt_is_traced(bpf_get_current_pid_tgid() >> 32))
		return 0;
	return emit_fault(address, error_code, JT_REGS_IP(regs), 0);
}

/*
 * The kernel writing user memory for the task: copy_to_user in a
 * syscall, and in execve the ELF loader zeroing the partial .bss page
 * of the new image and of its interpreter (padzero), which no user
 * instruction ever writes.
 */
SEC("tp_btf/page_fault_kernel")
int BPF_PROG(jt_kfault, unsigned long address, struct pt_regs *regs,
	     unsigned long error_code)
{
	struct pt_regs *user;

	if (!(error_code & PF_WRITE) || (long)address < 0 ||
	    !jt_is_traced(bpf_get_current_pid_tgid() >> 32))
		return 0;
	if (in_execve())
		return emit_fault(address, error_code, 0, JT_MF_EXEC_LOAD);
	user = jt_task_regs(jt_current());
	return emit_fault(address, error_code, JT_REGS_IP(user), 0);
}

#endif /* JT_HAVE_FAULT_TRACEPOINTS: x86 */

char LICENSE[] SEC("license") = "Dual BSD/GPL";
