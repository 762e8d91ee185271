// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "export/jitdir.h"
#include "lib/io.h"

static bool ours(const char *name)
{
	size_t n = strlen(name);

	return !strncmp(name, "jitted-", 7) && n > 10 &&
	       !strcmp(name + n - 3, ".so");
}

static bool trusted(int dirfd)
{
	struct stat st;

	return !fstat(dirfd, &st) && S_ISDIR(st.st_mode) &&
	       st.st_uid == geteuid() && !(st.st_mode & (S_IWGRP | S_IWOTH));
}

/* Empty an earlier export's directory, or say it is not one: -EEXIST. */
static int clear(int dirfd)
{
	DIR *d = jt_opendir_dup(dirfd);
	struct dirent *e;
	struct stat st;
	int err = 0;

	if (!d)
		return -errno;
	while (!err && (e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		if (!ours(e->d_name) ||
		    fstatat(dirfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) ||
		    !S_ISREG(st.st_mode) || st.st_uid != geteuid())
			err = -EEXIST;
		else if (unlinkat(dirfd, e->d_name, 0))
			err = -errno;
	}
	closedir(d);
	return err;
}

static int replace_old(const char *dir)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	int err;

	if (fd < 0)
		return errno == ENOENT ? 0 : -EEXIST;
	err = trusted(fd) ? clear(fd) : -EEXIST;
	close(fd);
	if (!err && rmdir(dir))
		err = -errno;
	return err;
}

int jt_jitdir_make(const char *out, char abs[PATH_MAX])
{
	char self[32], *dir;
	ssize_t n;
	int fd, err;

	if (asprintf(&dir, "%s.jit", out) < 0)
		return -ENOMEM;
	err = replace_old(dir);
	if (!err && mkdir(dir, 0700))
		err = -errno;
	fd = err ? -1 :
		   open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	free(dir);
	if (err)
		return err;
	if (fd < 0)
		return -errno;
	/* Absolute, as the kernel reached it: perf finds the files from
	 * wherever it runs. */
	snprintf(self, sizeof(self), "/proc/self/fd/%d", fd);
	n = readlink(self, abs, PATH_MAX - 1);
	if (n <= 0 || !trusted(fd)) {
		close(fd);
		return n <= 0 ? -errno : -EEXIST;
	}
	abs[n] = 0;
	return fd;
}

void jt_jitdir_remove(int dirfd, const char *abs)
{
	if (dirfd < 0)
		return;
	clear(dirfd);
	rmdir(abs);
}
