// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/inotify.h>
#include <unistd.h>
#include "record/filewatch.h"

/* A watch and its pid in one value: wds start at 1, so never NULL. */
static void *wd_val(int wd, pid_t pid)
{
	return (void *)(uintptr_t)((uint64_t)(uint32_t)wd << 32 |
				   (uint32_t)pid);
}

static bool wd_eq(const void *val, const void *key)
{
	return (int)((uintptr_t)val >> 32) == *(const int *)key;
}

int jt_filewatch_init(struct jt_filewatch *w)
{
	memset(w, 0, sizeof(*w));
	w->fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	return w->fd < 0 ? -errno : 0;
}

int jt_filewatch_add(struct jt_filewatch *w, int fd, pid_t pid)
{
	char path[32];
	int wd;

	if (w->fd < 0)
		return -EBADF;
	/*
	 * Our own descriptor, by its magic link: the file already opened
	 * and vetted, no path another user could swap. IN_MASK_CREATE: a
	 * second file on one inode would share, and then lose, its watch.
	 */
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	wd = inotify_add_watch(w->fd, path, IN_MODIFY | IN_MASK_CREATE);
	if (wd < 0)
		return -errno;
	if (jt_hash_add(&w->wds, jt_hash_u64(wd), wd_val(wd, pid))) {
		inotify_rm_watch(w->fd, wd);
		return -ENOMEM;
	}
	return wd;
}

void jt_filewatch_del(struct jt_filewatch *w, int wd)
{
	if (w->fd < 0 || wd < 0 ||
	    !jt_hash_del(&w->wds, jt_hash_u64(wd), wd_eq, &wd))
		return;
	inotify_rm_watch(w->fd, wd);
}

bool jt_filewatch_drain(struct jt_filewatch *w,
			void (*changed)(void *ctx, pid_t pid),
			void (*wd_gone)(void *ctx, pid_t pid, int wd),
			void *ctx)
{
	char buf[4096] __attribute__((aligned(8)));
	bool complete = true;
	ssize_t n;

	while (w->fd >= 0 && (n = read(w->fd, buf, sizeof(buf))) > 0) {
		char *p = buf;

		while (p < buf + n) {
			struct inotify_event *e = (void *)p;
			uint64_t h = jt_hash_u64(e->wd);
			void *v;

			p += sizeof(*e) + e->len;
			if (e->mask & IN_Q_OVERFLOW) {
				complete = false;
			} else if (e->mask & IN_IGNORED) {
				/* Ours were deleted first: the kernel's. */
				v = jt_hash_del(&w->wds, h, wd_eq, &e->wd);
				if (v)
					wd_gone(ctx, (pid_t)(uintptr_t)v,
						e->wd);
			} else if ((v = jt_hash_find(&w->wds, h, wd_eq,
						     &e->wd))) {
				changed(ctx, (pid_t)(uintptr_t)v);
			}
		}
	}
	return complete;
}

void jt_filewatch_free(struct jt_filewatch *w)
{
	if (w->fd >= 0)
		close(w->fd);
	jt_hash_free(&w->wds);
	memset(w, 0, sizeof(*w));
	w->fd = -1;
}
