// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>
#include "lib/procfile.h"

#define READ_FLAGS (O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY)

/*
 * An O_PATH descriptor opens nothing: no FIFO waits for a writer, no
 * device driver runs. Only a regular file is then opened for reading,
 * through our own descriptor, so it is the same inode.
 */
static int reopen(int pfd)
{
	struct stat st, now;
	char self[32];
	int fd;

	if (fstat(pfd, &st)) {
		fd = -errno;
		goto out;
	}
	if (!S_ISREG(st.st_mode)) {
		fd = S_ISLNK(st.st_mode) ? -ELOOP : -EINVAL;
		goto out;
	}
	snprintf(self, sizeof(self), "/proc/self/fd/%d", pfd);
	fd = open(self, READ_FLAGS);
	if (fd < 0) {
		fd = -errno;
		goto out;
	}
	if (fstat(fd, &now) || now.st_dev != st.st_dev ||
	    now.st_ino != st.st_ino) {
		close(fd);
		fd = -ESTALE;
	}
out:
	close(pfd);
	return fd;
}

int jt_proc_open_mapped(pid_t pid, uint64_t start, uint64_t end)
{
	char mf[96];
	int pfd;

	snprintf(mf, sizeof(mf), "/proc/%d/map_files/%llx-%llx", pid,
		 (unsigned long long)start, (unsigned long long)end);
	pfd = open(mf, O_PATH | O_CLOEXEC);
	return pfd < 0 ? -errno : reopen(pfd);
}

/*
 * Kernels before 5.6 have no openat2: walk one component at a time and
 * refuse any symlink or "..", where openat2 would keep them in the root.
 * Safe, if stricter.
 */
static int walk(int root, const char *path)
{
	char comp[256];
	int dfd = dup(root), next;
	const char *p = path, *e;

	if (dfd < 0)
		return -errno;
	for (;;) {
		while (*p == '/')
			p++;
		e = strchrnul(p, '/');
		if (e == p || (size_t)(e - p) >= sizeof(comp))
			break;
		memcpy(comp, p, e - p);
		comp[e - p] = 0;
		if (!strcmp(comp, "..")) {
			close(dfd);
			return -EXDEV;
		}
		next = openat(dfd, comp, O_PATH | O_NOFOLLOW | O_CLOEXEC);
		close(dfd);
		if (next < 0)
			return -errno;
		dfd = next;
		p = e;
		if (!*p)
			return dfd;
	}
	close(dfd);
	return -EINVAL;
}

static int open_under(int root, const char *path)
{
	struct open_how how = {
		.flags = O_PATH | O_NOFOLLOW | O_CLOEXEC,
		.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS,
	};
	long fd = syscall(SYS_openat2, root, path, &how, sizeof(how));

	if (fd >= 0)
		return fd;
	if (errno == ENOSYS)
		return walk(root, path);
	return -errno;
}

/* path in pid's root (0: ours), as an O_PATH descriptor, or -errno. */
static int path_in_root(pid_t pid, const char *path)
{
	char root[32] = "/";
	int rfd, pfd;

	if (pid)
		snprintf(root, sizeof(root), "/proc/%d/root", pid);
	rfd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (rfd < 0)
		return -errno;
	pfd = open_under(rfd, path);
	close(rfd);
	return pfd;
}

int jt_proc_open_in_root(pid_t pid, const char *path)
{
	int pfd = path_in_root(pid, path);

	return pfd < 0 ? pfd : reopen(pfd);
}

int jt_proc_dir_in_root(pid_t pid, const char *path)
{
	int dfd = path_in_root(pid, path);
	struct stat st;

	if (dfd >= 0 && (fstat(dfd, &st) || !S_ISDIR(st.st_mode))) {
		close(dfd);
		dfd = -ENOTDIR;
	}
	return dfd;
}

/* name in dir, kept to dir's filesystem: an O_PATH descriptor or -errno. */
static int path_beneath(int dir, const char *name)
{
	struct open_how how = {
		.flags = O_PATH | O_NOFOLLOW | O_CLOEXEC,
		.resolve = RESOLVE_BENEATH | RESOLVE_NO_XDEV |
			   RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS,
	};
	long fd = syscall(SYS_openat2, dir, name, &how, sizeof(how));

	return fd < 0 ? -errno : fd;
}

int jt_proc_open_beneath(int dir, const char *name)
{
	int pfd = path_beneath(dir, name);

	return pfd < 0 ? pfd : reopen(pfd);
}

int jt_proc_stat_beneath(int dir, const char *name, struct stat *st)
{
	int pfd = path_beneath(dir, name), err;

	if (pfd < 0)
		return pfd;
	err = fstat(pfd, st) ? -errno : 0;
	close(pfd);
	return err;
}

int jt_proc_stat_owned(const struct stat *st, uid_t euid)
{
	if (!S_ISREG(st->st_mode))
		return -EINVAL;
	return st->st_uid == euid ? 0 : -EPERM;
}

int jt_proc_file_owned(int fd, uid_t euid)
{
	struct stat st;

	return fstat(fd, &st) ? -errno : jt_proc_stat_owned(&st, euid);
}

int jt_proc_file_is(int fd, uint64_t kdev, uint64_t ino)
{
	dev_t dev = makedev(kdev >> 20, kdev & 0xfffff);
	struct stat st;

	if (fstat(fd, &st))
		return -errno;
	if ((ino && st.st_ino != ino) || (kdev && st.st_dev != dev))
		return -ESTALE;
	return 0;
}

/* "NSpid:\t12 1": one pid per nested namespace, the innermost last. */
static uint32_t last_number(const char *p)
{
	unsigned long last = 0, v;
	char *end;

	for (;;) {
		v = strtoul(p, &end, 10);
		if (end == p)
			return last;
		last = v;
		p = end;
	}
}

/* "REAL EUID ...": strtoul, not sscanf, read for every new process. */
static bool uid_pair(const char *s, unsigned int *r, unsigned int *e)
{
	char *end;

	*r = strtoul(s, &end, 10);
	if (end == s)
		return false;
	s = end;
	*e = strtoul(s, &end, 10);
	return end != s;
}

/*
 * One read of /proc/PID/status for both: generating it is most of what a
 * new process costs the recorder, once per line read through stdio.
 */
int jt_proc_status(pid_t pid, uid_t *euid, uint32_t *nspid)
{
	char path[64], buf[4096], *l;
	unsigned int r, e;
	bool have_uid = false;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/status", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -ENOENT;
	buf[n] = 0;
	*nspid = 0;
	for (l = buf; l; l = strchr(l, '\n'), l = l ? l + 1 : NULL) {
		if (!strncmp(l, "Uid:", 4) && uid_pair(l + 4, &r, &e)) {
			*euid = e;
			have_uid = true;
		} else if (!strncmp(l, "NSpid:", 6)) {
			*nspid = last_number(l + 6);
		}
	}
	return have_uid ? 0 : -ENOENT;
}

bool jt_proc_still_euid(pid_t pid, uid_t euid)
{
	char path[32];
	struct stat st;

	snprintf(path, sizeof(path), "/proc/%d", pid);
	return !stat(path, &st) && st.st_uid == euid;
}

uint32_t jt_proc_nspid(pid_t pid)
{
	uint32_t nspid = 0;
	uid_t euid;

	jt_proc_status(pid, &euid, &nspid);
	return nspid;
}
