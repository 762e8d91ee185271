// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include "lib/procfile.h"
#include "model/elfsyms.h"
#include "record/buildids.h"

#define VM_EXEC 0x4

static bool id_eq(const void *val, const void *key)
{
	const struct jt_file_id *a = val, *b = key;

	return a->dev == b->dev && a->ino == b->ino;
}

/* False the first time a file comes; then true. */
static bool seen(struct jt_buildids *b, uint64_t dev, uint64_t ino)
{
	struct jt_file_id k = { dev, ino }, *n;
	uint64_t h = jt_hash_u64(dev ^ jt_hash_u64(ino));

	if (jt_hash_find(&b->seen, h, id_eq, &k))
		return true;
	n = malloc(sizeof(*n));
	if (!n || jt_hash_add(&b->seen, h, n)) {
		free(n);
		return true; /* no memory: no build-id, not a crash */
	}
	*n = k;
	return false;
}

/*
 * The mapped file itself where we can: no path lookup to race. Else the
 * path, in the process's root while it has one, and only if it is still
 * the file the event named. Off the capture loop: a path can hang.
 */
static struct jt_open_res
read_id(struct jt_buildids *b, const struct jt_map_event *ev, const char *path)
{
	uid_t uid = b->owner ? b->owner(b->owner_ctx, ev->h.pid) : (uid_t)-1;
	struct jt_open_req r = {
		.pid = ev->h.pid,
		.uid = uid,
		.root_pid = ev->h.pid,
		.or_our_root = true,
		.start = ev->vma.start,
		.end = ev->vma.end,
		.dev = ev->dev,
		.ino = ev->ino,
		.build_id = true,
		.cfi = b->cfi,
	};
	uint32_t nspid;

	if (uid == (uid_t)-1)
		jt_proc_status(ev->h.pid, &r.uid, &nspid);
	snprintf(r.path, sizeof(r.path), "%s", path);
	return jt_opener_open(b->opener, &r);
}

void jt_buildids_event(struct jt_buildids *b, const struct jt_hdr *h,
		       size_t len)
{
	const struct jt_map_event *ev = (const void *)h;
	struct jt_buildid_rec r = {};
	char path[JT_PATH_MAX + 1];
	struct jt_open_res res;

	if (len < sizeof(*ev) || h->size != len || !ev->path_len ||
	    ev->path_len > len - sizeof(*ev))
		return;
	if (h->type == JT_EV_MMAP ?
		    (ev->result < 0 || !(ev->args[2] & PROT_EXEC)) :
		    (h->type != JT_EV_VMA || !(ev->vma.flags & VM_EXEC)))
		return;
	if (seen(b, ev->dev, ev->ino))
		return;
	snprintf(path, sizeof(path), "%.*s",
		 (int)strnlen(ev->path, ev->path_len), ev->path);
	res = read_id(b, ev, path);
	if (res.fd < 0)
		return;
	r.dev = ev->dev;
	r.ino = ev->ino;
	r.len = res.id_len;
	memcpy(r.id, res.id, sizeof(r.id));
	jt_writer_add(b->w, JT_REC_BUILDID, &r, sizeof(r), path,
		      strlen(path) + 1);
	if (res.cfi)
		jt_buildids_write_cfi(b->w, res.id, res.id_len, res.cfi);
	jt_cfi_copy_free(res.cfi);
}

void jt_buildids_write_cfi(struct jt_writer *w, const unsigned char *id,
			   size_t id_len, const struct jt_cfi_copy *c)
{
	struct jt_cfi_rec r = { .build_id_len = id_len };
	int k;

	memcpy(r.build_id, id, id_len < 20 ? id_len : 20);
	for (k = 0; k < JT_CFI_NKINDS; k++) {
		const struct jt_cfi_sect *s = &c->s[k];

		if (s->len > JT_CFI_SECTION_MAX)
			continue;
		r.kind = k;
		r.addr = s->addr;
		r.total = s->len;
		for (r.offset = 0; r.offset < s->len; r.offset += JT_CFI_PIECE)
			jt_writer_add(w, JT_REC_CFI, &r, sizeof(r),
				      (const char *)s->data + r.offset,
				      s->len - r.offset < JT_CFI_PIECE ?
					      s->len - r.offset :
					      JT_CFI_PIECE);
	}
}

void jt_buildids_free(struct jt_buildids *b)
{
	size_t i;

	jt_hash_for_each (&b->seen, i)
		free(b->seen.e[i].val);
	jt_hash_free(&b->seen);
}
