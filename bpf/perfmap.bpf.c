// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Time for perf-map lines: each write(2) a traced process makes to a file
 * named perf-*.map, with the file position it ended at. The recorder
 * copies the file itself; these say when each piece was written.
 */
#include "common.bpf.h"

static __always_inline struct file *fd_file(struct task_struct *t, __u64 fd)
{
	struct fdtable *fdt = BPF_CORE_READ(t, files, fdt);
	struct file **fds, *f = NULL;

	if (fd >= BPF_CORE_READ(fdt, max_fds))
		return NULL;
	fds = BPF_CORE_READ(fdt, fd);
	bpf_probe_read_kernel(&f, sizeof(f), &fds[fd]);
	return f;
}

/* "perf-" ... ".map": the name perf gives the file, whatever the pid. */
static __always_inline bool is_perfmap(struct file *f)
{
	struct qstr q = BPF_CORE_READ(f, f_path.dentry, d_name);
	char name[32] = {};
	__u32 len = q.len;

	if (len < 10 || len >= sizeof(name))
		return false;
	bpf_probe_read_kernel(name, sizeof(name) - 1, q.name);
	return name[0] == 'p' && name[1] == 'e' && name[2] == 'r' &&
	       name[3] == 'f' && name[4] == '-' &&
	       name[(len - 4) & 31] == '.' && name[(len - 3) & 31] == 'm' &&
	       name[(len - 2) & 31] == 'a' && name[(len - 1) & 31] == 'p';
}

static __always_inline int emit_write(struct file *f, __u64 end, long len)
{
	struct jt_write_event ev = {};

	if (!f || !is_perfmap(f))
		return 0;
	jt_fill_hdr(&ev.h, JT_EV_MAPWRITE, sizeof(ev));
	ev.end = end;
	ev.len = len;
	ev.ino = BPF_CORE_READ(f, f_inode, i_ino);
	jt_emit(&ev, sizeof(ev));
	return 0;
}

/*
 * At the call's exit, with the descriptor still in the saved registers:
 * one program, no per-thread slot from entry to exit.
 */
SEC("tracepoint/syscalls/sys_exit_write")
int jt_exit_write(struct trace_event_raw_sys_exit *ctx)
{
	struct task_struct *t = jt_current();
	struct file *f;
	__u64 a[6];

	if (ctx->ret <= 0 || !jt_is_traced(bpf_get_current_pid_tgid() >> 32))
		return 0;
	if (jt_task_syscall_args(t, a)) {
		jt_count_lost();
		return 0;
	}
	f = fd_file(t, a[0]);
	return emit_write(f, f ? BPF_CORE_READ(f, f_pos) : 0, ctx->ret);
}

/*
 * The fentry tier's, in its place: vfs_write's exit takes no task of the
 * machine to the slow syscall path. write(2) moves the file position
 * only after vfs_write returns: the end is where *pos got to.
 */
SEC("fexit/vfs_write")
int BPF_PROG(jt_fx_vfs_write, struct file *f, const char *buf, size_t count,
	     loff_t *pos, long ret)
{
	__u64 end = 0;

	if (ret <= 0 || !jt_is_traced(bpf_get_current_pid_tgid() >> 32))
		return 0;
	if (!pos || bpf_probe_read_kernel(&end, sizeof(end), pos))
		end = BPF_CORE_READ(f, f_pos);
	return emit_write(f, end, ret);
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
