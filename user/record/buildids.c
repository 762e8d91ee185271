// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include "lib/reserve.h"
#include "model/elfsyms.h"
#include "record/buildids.h"

#define VM_EXEC 0x4

static bool seen(struct jt_buildids *b, uint64_t dev, uint64_t ino)
{
	size_t i;

	for (i = 0; i < b->n; i++)
		if (b->seen[i].dev == dev && b->seen[i].ino == ino)
			return true;
	return false;
}

/* Open the mapped file itself where we can: no path lookup to race. */
static int open_mapped(const struct jt_map_event *ev, const char *path)
{
	char mf[96];
	int fd;

	snprintf(mf, sizeof(mf), "/proc/%u/map_files/%llx-%llx", ev->h.pid,
		 (unsigned long long)ev->vma.start,
		 (unsigned long long)ev->vma.end);
	fd = open(mf, O_RDONLY | O_CLOEXEC);
	return fd >= 0 ? fd : open(path, O_RDONLY | O_CLOEXEC);
}

void jt_buildids_event(struct jt_buildids *b, const struct jt_hdr *h,
		       size_t len)
{
	const struct jt_map_event *ev = (const void *)h;
	struct jt_buildid_rec r = {};
	char path[JT_PATH_MAX + 1];
	int fd;

	if (len < sizeof(*ev) || h->size != len || !ev->path_len ||
	    ev->path_len > len - sizeof(*ev))
		return;
	if (h->type == JT_EV_MMAP ?
		    (ev->result < 0 || !(ev->args[2] & PROT_EXEC)) :
		    (h->type != JT_EV_VMA || !(ev->vma.flags & VM_EXEC)))
		return;
	if (seen(b, ev->dev, ev->ino))
		return;
	if (jt_reserve(&b->seen, &b->cap, b->n + 1, sizeof(*b->seen)))
		return;
	b->seen[b->n].dev = ev->dev;
	b->seen[b->n++].ino = ev->ino;
	snprintf(path, sizeof(path), "%.*s",
		 (int)strnlen(ev->path, ev->path_len), ev->path);
	fd = open_mapped(ev, path);
	if (fd < 0)
		return;
	r.dev = ev->dev;
	r.ino = ev->ino;
	r.len = jt_elf_build_id(fd, r.id);
	close(fd);
	jt_writer_add(b->w, JT_REC_BUILDID, &r, sizeof(r), path,
		      strlen(path) + 1);
}

void jt_buildids_free(struct jt_buildids *b)
{
	free(b->seen);
	b->seen = NULL;
	b->n = 0;
}
