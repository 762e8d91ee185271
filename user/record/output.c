// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>
#include "record/output.h"

static int refuse(const char *path, const char *why)
{
	fprintf(stderr, "jittrace: %s: %s; refusing to write it\n", path, why);
	return -EINVAL;
}

static int check_target(const char *path)
{
	struct stat st;

	if (lstat(path, &st))
		return errno == ENOENT ? 0 : -errno;
	if (S_ISLNK(st.st_mode))
		return refuse(path, "is a symbolic link");
	if (!S_ISREG(st.st_mode))
		return refuse(path, "is not a regular file");
	return 0;
}

static int split(struct jt_output *o, const char *path)
{
	const char *slash = strrchr(path, '/');
	size_t n = slash ? (size_t)(slash - path) : 1;

	o->base = slash ? slash + 1 : path;
	if (!*o->base || !strcmp(o->base, ".") || !strcmp(o->base, ".."))
		return refuse(path, "names a directory");
	if (n >= sizeof(o->dir) || strlen(o->base) > 200)
		return refuse(path, "name too long");
	if (!slash)
		strcpy(o->dir, ".");
	else if (n == 0)
		strcpy(o->dir, "/");
	else
		snprintf(o->dir, sizeof(o->dir), "%.*s", (int)n, path);
	return 0;
}

/* Our own name: O_EXCL means a planted file or symlink is never reused. */
static int make_tmp(struct jt_output *o)
{
	int tries;

	for (tries = 0; tries < 100; tries++) {
		unsigned long long rnd = 0;

		if (getrandom(&rnd, sizeof(rnd), 0) != sizeof(rnd))
			rnd ^= (unsigned long long)getpid() << 20 ^ tries;
		snprintf(o->tmp, sizeof(o->tmp), ".%s.%012llx", o->base,
			 rnd & 0xffffffffffffULL);
		o->fd = openat(o->dirfd, o->tmp,
			       O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW |
				       O_CLOEXEC,
			       0600);
		if (o->fd >= 0 || errno != EEXIST)
			return o->fd >= 0 ? 0 : -errno;
	}
	return -EEXIST;
}

int jt_output_create(struct jt_output *o, const char *path)
{
	int err;

	memset(o, 0, sizeof(*o));
	o->path = path;
	o->dirfd = o->fd = -1;
	err = split(o, path);
	if (!err)
		err = check_target(path);
	if (err)
		return err;
	o->dirfd = open(o->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (o->dirfd < 0 || (err = make_tmp(o))) {
		err = o->dirfd < 0 ? -errno : err;
		fprintf(stderr, "jittrace: %s: %s\n", path, strerror(-err));
		jt_output_close(o);
		return err;
	}
	return 0;
}

int jt_output_give(struct jt_output *o, uid_t uid, gid_t gid)
{
	if (fchown(o->fd, uid, gid)) {
		fprintf(stderr, "jittrace: chown %s: %s\n", o->path,
			strerror(errno));
		return -errno;
	}
	return 0;
}

static int keep_old(struct jt_output *o)
{
	char old[256];
	struct stat st;

	/* Like perf.data.old: only a non-empty regular file is worth it. */
	if (fstatat(o->dirfd, o->base, &st, AT_SYMLINK_NOFOLLOW) ||
	    !S_ISREG(st.st_mode) || !st.st_size)
		return 0;
	snprintf(old, sizeof(old), "%s.old", o->base);
	if (renameat(o->dirfd, o->base, o->dirfd, old)) {
		fprintf(stderr, "jittrace: keeping %s as %s.old: %s\n", o->path,
			o->path, strerror(errno));
		return -errno;
	}
	return 0;
}

/* rename() replaces a name; it never follows one. */
int jt_output_publish(struct jt_output *o)
{
	int err = keep_old(o);

	if (err)
		return err;
	if (renameat(o->dirfd, o->tmp, o->dirfd, o->base)) {
		err = -errno;
		fprintf(stderr, "jittrace: %s: %s\n", o->path, strerror(-err));
		return err;
	}
	o->tmp[0] = 0;
	return 0;
}

void jt_output_discard(struct jt_output *o)
{
	if (o->tmp[0] && o->dirfd >= 0)
		unlinkat(o->dirfd, o->tmp, 0);
	o->tmp[0] = 0;
}

void jt_output_close(struct jt_output *o)
{
	if (o->dirfd >= 0)
		close(o->dirfd);
	o->dirfd = -1;
}
