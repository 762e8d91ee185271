// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "jt_abi.h"
#include "record/snapshot.h"

#define VM_IO 0x4000
#define VM_PFNMAP 0x400
/* The kernel's dev_t encoding (MKDEV), which BPF reports from s_dev. */
#define KDEV(maj, min) (((uint64_t)(maj) << 20) | (min))

static void fill_hdr(struct jt_hdr *h, uint16_t type, size_t size, pid_t pid,
		     uint64_t now)
{
	h->type = type;
	h->size = size;
	h->cpu = 0;
	h->pid = pid;
	h->tid = pid;
	h->time = now;
}

static int emit_attach_exec(pid_t pid, uint64_t now, jt_emit_fn emit, void *ctx)
{
	struct {
		struct jt_exec_event ev;
		char path[JT_PATH_MAX];
	} e = {};
	char proc[64];
	ssize_t n;
	FILE *f;

	snprintf(proc, sizeof(proc), "/proc/%d/comm", pid);
	f = fopen(proc, "re");
	if (!f)
		return -errno;
	if (fgets(e.ev.comm, sizeof(e.ev.comm), f))
		e.ev.comm[strcspn(e.ev.comm, "\n")] = 0;
	fclose(f);
	snprintf(proc, sizeof(proc), "/proc/%d/exe", pid);
	n = readlink(proc, e.path, sizeof(e.path) - 1);
	e.ev.path_len = n > 0 ? n + 1 : 0;
	e.ev.flags = JT_EXEC_ATTACH;
	e.ev.nspid = jt_proc_nspid(pid);
	fill_hdr(&e.ev.h, JT_EV_EXEC, sizeof(e.ev) + e.ev.path_len, pid, now);
	return emit(ctx, &e, e.ev.h.size);
}

/* One /proc/PID/maps line into a VMA event; 0 on success. */
static int parse_line(char *line, struct jt_map_event *ev, char *path)
{
	unsigned long long start, end, off, ino;
	unsigned int maj, min;
	char perms[8];
	int pos = 0;

	if (sscanf(line, "%llx-%llx %7s %llx %x:%x %llu %n", &start, &end,
		   perms, &off, &maj, &min, &ino, &pos) < 7)
		return -EINVAL;
	line[strcspn(line, "\n")] = 0;
	ev->vma = (struct jt_vma){ start, end, 0, off / JT_PAGE_SIZE };
	ev->vma.flags |= perms[0] == 'r' ? 1 : 0;
	ev->vma.flags |= perms[1] == 'w' ? 2 : 0;
	ev->vma.flags |= perms[2] == 'x' ? 4 : 0;
	ev->vma.flags |= perms[3] == 's' ? 8 : 0;
	ev->vma_last = ev->vma;
	ev->flags = JT_MF_SNAP_PROC;
	if (ino && line[pos] == '/') {
		ev->dev = KDEV(maj, min);
		ev->ino = ino;
		ev->path_len = snprintf(path, JT_PATH_MAX, "%s", line + pos);
		ev->path_len = ev->path_len >= JT_PATH_MAX ? JT_PATH_MAX :
							     ev->path_len + 1;
		return 0;
	}
	/* The names /proc gives special mappings; the model keys on args. */
	if (!strcmp(line + pos, "[heap]")) {
		ev->args[0] = start;
		ev->args[1] = end;
	} else if (!strcmp(line + pos, "[stack]")) {
		ev->args[2] = start;
	} else if (!strcmp(line + pos, "[vdso]")) {
		ev->args[3] = start;
	} else if (!strncmp(line + pos, "[vvar", 5)) {
		ev->vma.flags |= VM_IO | VM_PFNMAP;
	}
	return 0;
}

static int emit_vmas(FILE *f, char *line, size_t len, pid_t pid, uint64_t now,
		     uint32_t flags, jt_emit_fn emit, void *ctx)
{
	struct {
		struct jt_map_event ev;
		char path[JT_PATH_MAX];
	} e;
	int err = 0;

	do {
		memset(&e.ev, 0, sizeof(e.ev));
		if (parse_line(line, &e.ev, e.path))
			continue;
		e.ev.flags |= flags;
		fill_hdr(&e.ev.h, JT_EV_VMA, sizeof(e.ev) + e.ev.path_len, pid,
			 now);
		err = emit(ctx, &e, e.ev.h.size);
	} while (!err && fgets(line, len, f));
	return err;
}

int jt_snapshot_pid(pid_t pid, uint64_t now, jt_emit_fn emit, void *ctx)
{
	char proc[64], line[JT_PATH_MAX + 128];
	int err;
	FILE *f;

	snprintf(proc, sizeof(proc), "/proc/%d/maps", pid);
	f = fopen(proc, "re");
	if (!f)
		return -errno;
	/* Kernel threads have no mappings: nothing to say about them. */
	if (!fgets(line, sizeof(line), f)) {
		fclose(f);
		return -ENOENT;
	}
	err = emit_attach_exec(pid, now, emit, ctx);
	if (!err)
		err = emit_vmas(f, line, sizeof(line), pid, now, 0, emit, ctx);
	fclose(f);
	return err;
}

int jt_snapshot_vmas(pid_t pid, uint64_t now, jt_emit_fn emit, void *ctx)
{
	char proc[64], line[JT_PATH_MAX + 128];
	int err = -ENOENT;
	FILE *f;

	snprintf(proc, sizeof(proc), "/proc/%d/maps", pid);
	f = fopen(proc, "re");
	if (!f)
		return -errno;
	if (fgets(line, sizeof(line), f))
		err = emit_vmas(f, line, sizeof(line), pid, now,
				JT_MF_VMA_REREAD, emit, ctx);
	fclose(f);
	return err;
}

int jt_snapshot_all(uint64_t now, jt_emit_fn emit, void *ctx)
{
	DIR *d = opendir("/proc");
	struct dirent *de;
	int n = 0;

	if (!d)
		return -errno;
	while ((de = readdir(d))) {
		pid_t pid;

		if (!isdigit((unsigned char)de->d_name[0]))
			continue;
		pid = atoi(de->d_name);
		if (!jt_snapshot_pid(pid, now, emit, ctx))
			n++;
	}
	closedir(d);
	return n;
}
