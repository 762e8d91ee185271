// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "record/detach.h"

#define FDS_MAX 4096
/* Longer than any detach takes; a parent stopped in a debugger waits. */
#define KEEP_MS 60000

struct linux_dirent64 {
	unsigned long long d_ino;
	long long d_off;
	unsigned short d_reclen;
	unsigned char d_type;
	char d_name[];
};

static bool kept(int fd, const int *fds, size_t n, int also)
{
	size_t i;

	if (fd == also)
		return true;
	for (i = 0; i < n; i++)
		if (fds[i] == fd)
			return true;
	return false;
}

/*
 * Every open fd but the kept ones, closed; the standard three point at
 * /dev/null, so no pipe of the caller's waits for the keeper. Raw
 * getdents: after a fork of a threaded process, nothing that may lock.
 */
static void close_others(const int *fds, size_t n, int pidfd)
{
	int open_fds[FDS_MAX], nopen = 0, dir, null, i;
	char buf[4096];
	long len, off;

	null = open("/dev/null", O_RDWR | O_CLOEXEC);
	for (i = 0; i < 3; i++)
		if (null >= 0)
			dup2(null, i);
	dir = open("/proc/self/fd", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dir < 0)
		return;
	while ((len = syscall(SYS_getdents64, dir, buf, sizeof(buf))) > 0)
		for (off = 0; off < len && nopen < FDS_MAX;) {
			struct linux_dirent64 *d = (void *)(buf + off);
			int fd = 0;
			const char *p;

			off += d->d_reclen;
			for (p = d->d_name; *p >= '0' && *p <= '9'; p++)
				fd = fd * 10 + (*p - '0');
			if (p != d->d_name && !*p)
				open_fds[nopen++] = fd;
		}
	for (i = 0; i < nopen; i++)
		if (open_fds[i] > 2 && open_fds[i] != dir &&
		    !kept(open_fds[i], fds, n, pidfd))
			close(open_fds[i]);
	close(dir);
}

void jt_detach_after_exit(const int *fds, size_t n)
{
	int pidfd = syscall(SYS_pidfd_open, getpid(), 0);
	struct pollfd parent = { pidfd, POLLIN, 0 };
	pid_t c;

	if (pidfd < 0 || !n)
		goto out;
	c = fork();
	if (c != 0)
		goto out; /* the recorder, or no keeper: it detaches itself */
	/* The keeper: out of the terminal's reach, holding only the links. */
	setsid();
	signal(SIGINT, SIG_IGN);
	signal(SIGHUP, SIG_IGN);
	close_others(fds, n, pidfd);
	poll(&parent, 1, KEEP_MS);
	_exit(0);
out:
	if (pidfd >= 0)
		close(pidfd);
}
