// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <linux/openat2.h>
#include "lib/procfile.h"
#include "live/hotspot_attach.h"
#include "live/jvmti.h"

/* Loading code into another process: only a file root alone controls. */
static int trusted(const char *path)
{
	struct stat st;
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	if (fstat(fd, &st)) {
		close(fd);
		return -errno;
	}
	close(fd);
	if (!S_ISREG(st.st_mode) || st.st_uid || (st.st_mode & 022))
		return -EPERM;
	return 0;
}

int jt_jvmti_agent(char *path, size_t len)
{
	static const char *const rel[] = { "lib/jittrace", "../lib/jittrace" };
	char exe[4096], *dir;
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	int err = -ENOENT;
	size_t i;

	if (n <= 0)
		return -errno;
	exe[n] = 0;
	dir = dirname(exe);
	for (i = 0; i < sizeof(rel) / sizeof(rel[0]); i++) {
		snprintf(path, len, "%s/%s/%s", dir, rel[i], JT_JVMTI_SO);
		if (!access(path, F_OK) && !(err = trusted(path)))
			return 0;
		if (err != -ENOENT)
			break;
	}
	if (err == -EPERM)
		fprintf(stderr,
			"jittrace: %s: --jvmti loads it into other processes: "
			"it must be a regular file owned by root that no one "
			"else may write\n",
			path);
	else
		fprintf(stderr, "jittrace: --jvmti: no %s beside %s (%s)\n",
			JT_JVMTI_SO, exe, strerror(-err));
	return err;
}

int jt_jvmti_env(const char *path)
{
	const char *old = getenv("JAVA_TOOL_OPTIONS");
	char *v;
	int r;

	r = asprintf(&v, "%s%s-agentpath:%s", old ? old : "",
		     old && *old ? " " : "", path);
	if (r < 0)
		return -ENOMEM;
	r = setenv("JAVA_TOOL_OPTIONS", v, 1) ? -errno : 0;
	free(v);
	return r;
}

struct job {
	char path[4096];
	pid_t pid;
};

/*
 * The JVM opens the agent by the path it is given, in its own root: a
 * container that does not see our file as the same file is told so.
 */
static int same_in_root(pid_t pid, const char *path, char *why, size_t len)
{
	struct stat ours, theirs;
	int fd = jt_proc_open_in_root(pid, path);

	if (fd < 0 || stat(path, &ours) || fstat(fd, &theirs) ||
	    ours.st_dev != theirs.st_dev || ours.st_ino != theirs.st_ino) {
		snprintf(why, len,
			 "its root does not hold %.160s (a container with an "
			 "image "
			 "of its own)",
			 path);
		if (fd >= 0)
			close(fd);
		return -ENOENT;
	}
	close(fd);
	return 0;
}

/* The JVM's /tmp, as it sees it, to write in: no link followed. */
static int tmp_of(pid_t pid)
{
	struct open_how how = {
		.flags = O_PATH | O_DIRECTORY | O_CLOEXEC,
		.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_SYMLINKS |
			   RESOLVE_NO_MAGICLINKS,
	};
	char root[64];
	int dir, fd;

	snprintf(root, sizeof(root), "/proc/%d/root", pid);
	dir = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (dir < 0)
		return -errno;
	fd = syscall(SYS_openat2, dir, "tmp", &how, sizeof(how));
	if (fd < 0)
		fd = -errno;
	close(dir);
	return fd;
}

/*
 * A container with a root of its own gets a copy of the agent in its
 * /tmp: new (O_EXCL), root's, 0644, so its user can neither have planted
 * it nor change it; unlinked once the JVM has it mapped.
 */
static int copy_into(pid_t pid, const char *path, char *name, size_t nlen,
		     int *tmp)
{
	char buf[65536];
	int in, out, err = 0;
	ssize_t n;

	snprintf(name, nlen, ".jittrace-jvmti-%d.so", (int)getpid());
	if ((*tmp = tmp_of(pid)) < 0)
		return *tmp;
	out = openat(*tmp, name,
		     O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
		     0644);
	if (out < 0)
		return -errno;
	in = open(path, O_RDONLY | O_CLOEXEC);
	while (in >= 0 && (n = read(in, buf, sizeof(buf))) > 0)
		if (write(out, buf, n) != n) {
			err = -EIO;
			break;
		}
	if (in < 0 || n < 0)
		err = -errno;
	if (!err && fchmod(out, 0644))
		err = -errno;
	if (in >= 0)
		close(in);
	close(out);
	if (err)
		unlinkat(*tmp, name, 0);
	return err;
}

static void *attach_one(void *arg)
{
	struct job *j = arg;
	char why[256] = "", name[64], inside[96];
	const char *path = j->path;
	int tmp = -1, err = same_in_root(j->pid, j->path, why, sizeof(why));

	if (err) {
		err = copy_into(j->pid, j->path, name, sizeof(name), &tmp);
		if (err)
			snprintf(why, sizeof(why),
				 "its root does not hold the agent, and a copy "
				 "in its /tmp could not be made: %s",
				 strerror(-err));
		snprintf(inside, sizeof(inside), "/tmp/%s", name);
		path = inside;
	}
	if (!err)
		err = jt_hotspot_load(j->pid, path, NULL, why, sizeof(why));
	if (tmp >= 0) {
		unlinkat(tmp, name, 0);
		close(tmp);
	}

	if (err)
		fprintf(stderr,
			"jittrace: --jvmti: JVM %d not attached, recorded "
			"without it: %s\n",
			j->pid, why[0] ? why : strerror(-err));
	else
		fprintf(stderr, "jittrace: --jvmti: agent loaded into JVM %d\n",
			j->pid);
	free(j);
	return NULL;
}

/* Attaches under way: each ends within its own bounded waits. */
static struct {
	pthread_t *t;
	size_t n;
	size_t cap;
} pending;

static void start_one(const char *path, pid_t pid)
{
	struct job *j = calloc(1, sizeof(*j));
	pthread_t *t;

	if (!j)
		return;
	snprintf(j->path, sizeof(j->path), "%s", path);
	j->pid = pid;
	if (pending.n == pending.cap) {
		size_t cap = pending.cap ? pending.cap * 2 : 8;

		t = realloc(pending.t, cap * sizeof(*t));
		if (!t) {
			free(j);
			return;
		}
		pending.t = t;
		pending.cap = cap;
	}
	if (pthread_create(&pending.t[pending.n], NULL, attach_one, j)) {
		free(j);
		return;
	}
	pending.n++;
}

void jt_jvmti_wait(void)
{
	size_t i;

	for (i = 0; i < pending.n; i++)
		pthread_join(pending.t[i], NULL);
	free(pending.t);
	memset(&pending, 0, sizeof(pending));
}

void jt_jvmti_attach(const char *path, const pid_t *pids, int n)
{
	struct dirent *e;
	DIR *d;
	int i;

	for (i = 0; i < n; i++)
		start_one(path, pids[i]);
	if (n || !(d = opendir("/proc")))
		return;
	while ((e = readdir(d))) {
		pid_t pid = atoi(e->d_name);

		if (pid > 0 && pid != getpid() && jt_hotspot_is_jvm(pid))
			start_one(path, pid);
	}
	closedir(d);
}
