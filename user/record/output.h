/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The recording file on disk. jittrace runs as root in directories that
 * other users may write to, so the file is a private temporary until the
 * recording has started, and nothing is ever opened, truncated, chowned
 * or renamed through a name another user could have planted.
 */
#ifndef JT_OUTPUT_H
#define JT_OUTPUT_H

#include <sys/types.h>

struct jt_output {
	const char *path; /* as given */
	const char *base; /* its last component, inside dirfd */
	char tmp[256];	  /* our temporary's name, inside dirfd */
	char dir[4096];
	int dirfd;
	int fd;
};

/*
 * Refuses a target that is a symlink or not a regular file, then creates
 * the temporary (O_EXCL, mode 0600). Prints why on failure.
 */
int jt_output_create(struct jt_output *o, const char *path);
/* Hands the file to uid:gid through the descriptor, never by name. */
int jt_output_give(struct jt_output *o, uid_t uid, gid_t gid);
/* Keeps an existing non-empty target as PATH.old, renames ours over it. */
int jt_output_publish(struct jt_output *o);
/* A recording that never started: the target stays as it was. */
void jt_output_discard(struct jt_output *o);
void jt_output_close(struct jt_output *o);

#endif
