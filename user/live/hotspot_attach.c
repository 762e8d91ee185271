// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "lib/procfile.h"
#include "live/hotspot_attach.h"

bool jt_hotspot_is_jvm(pid_t pid)
{
	char path[64], line[512];
	bool jvm = false;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/maps", pid);
	f = fopen(path, "re");
	while (f && !jvm && fgets(line, sizeof(line), f))
		jvm = strstr(line, "/libjvm.so") != NULL;
	if (f)
		fclose(f);
	return jvm;
}

/* The JVM's effective uid and gid: HotSpot accepts only a peer with both. */
static int ids(pid_t pid, uid_t *uid, gid_t *gid)
{
	char path[64], line[256];
	unsigned a, b;
	int got = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", pid);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "Uid: %u %u", &a, &b) == 2)
			*uid = b, got |= 1;
		else if (sscanf(line, "Gid: %u %u", &a, &b) == 2)
			*gid = b, got |= 2;
	}
	fclose(f);
	return got == 3 ? 0 : -EINVAL;
}

static void nap(int ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

/* Ask for the socket when it is not there yet; wait for it. */
static int open_socket(pid_t pid, uint32_t nspid, char *sock, size_t len)
{
	char trigger[128];
	struct stat st;
	int ms = 0, step = 10, fd;

	snprintf(sock, len, "/proc/%d/root/tmp/.java_pid%u", pid, nspid);
	if (!stat(sock, &st) && S_ISSOCK(st.st_mode))
		return 0;
	snprintf(trigger, sizeof(trigger), "/proc/%d/cwd/.attach_pid%u", pid,
		 nspid);
	fd = open(trigger, O_CREAT | O_WRONLY | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0) {
		snprintf(trigger, sizeof(trigger),
			 "/proc/%d/root/tmp/.attach_pid%u", pid, nspid);
		fd = open(trigger, O_CREAT | O_WRONLY | O_NOFOLLOW | O_CLOEXEC,
			  0600);
	}
	if (fd < 0)
		return -errno;
	close(fd);
	kill(pid, SIGQUIT);
	while (ms < JT_ATTACH_WAIT_MS &&
	       (stat(sock, &st) || !S_ISSOCK(st.st_mode))) {
		nap(step);
		ms += step;
		step = step < 200 ? step * 2 : 200;
	}
	unlink(trigger);
	return ms < JT_ATTACH_WAIT_MS ? 0 : -ETIMEDOUT;
}

/* "1\0load\0PATH\0true\0OPTIONS\0"; the answer: "0\n" then the agent's. */
static int talk(const char *sock, const char *path, const char *options,
		char *out, size_t len)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	size_t n = 0;
	ssize_t r;
	int fd;

	if (strlen(sock) >= sizeof(a.sun_path))
		return -ENAMETOOLONG;
	strcpy(a.sun_path, sock);
	struct timeval tv = { JT_ATTACH_WAIT_MS / 1000, 0 };

	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	/* A JVM that never answers must not hold the recorder. */
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	if (connect(fd, (struct sockaddr *)&a, sizeof(a))) {
		r = -errno;
		close(fd);
		return r;
	}
	const char *args[] = { "1", "load", path, "true",
			       options ? options : "" };
	for (size_t i = 0; i < sizeof(args) / sizeof(args[0]); i++)
		if (write(fd, args[i], strlen(args[i]) + 1) < 0) {
			r = -errno;
			close(fd);
			return r;
		}
	while (n + 1 < len && (r = read(fd, out + n, len - 1 - n)) > 0)
		n += r;
	out[n] = 0;
	close(fd);
	return 0;
}

/* The answer's two numbers: the command's status, the agent's return. */
static int parse_answer(const char *ans, char *why, size_t len)
{
	const char *nl = strchr(ans, '\n');
	int cmd = atoi(ans), rc;

	if (cmd) {
		snprintf(why, len, "the JVM refused the load: %.*s", 120, ans);
		return -EPERM;
	}
	if (!nl)
		return 0;
	/* JDK 9+: "return code: N"; JDK 8: "N". */
	if (sscanf(nl + 1, "return code: %d", &rc) != 1 &&
	    sscanf(nl + 1, "%d", &rc) != 1)
		return 0;
	if (rc) {
		snprintf(why, len,
			 "the agent refused to start (it returned %d)", rc);
		return -EINVAL;
	}
	return 0;
}

/* In the child: become the JVM's user, ask, and say how it went. */
static int as_jvm_user(pid_t pid, uint32_t nspid, uid_t uid, gid_t gid,
		       const char *path, const char *options, char *why,
		       size_t len)
{
	char sock[128], ans[512];
	int err;

	if (setgroups(0, NULL) || setresgid(gid, gid, gid) ||
	    setresuid(uid, uid, uid)) {
		snprintf(why, len, "cannot become uid %u: %s", uid,
			 strerror(errno));
		return -EPERM;
	}
	err = open_socket(pid, nspid, sock, sizeof(sock));
	if (err == -ETIMEDOUT) {
		snprintf(why, len,
			 "no attach socket after %d ms (started with "
			 "-XX:+DisableAttachMechanism, or no HotSpot?)",
			 JT_ATTACH_WAIT_MS);
		return err;
	}
	if (err || (err = talk(sock, path, options, ans, sizeof(ans)))) {
		snprintf(why, len, "%s: %s", sock, strerror(-err));
		return err;
	}
	return parse_answer(ans, why, len);
}

int jt_hotspot_load(pid_t pid, const char *path, const char *options, char *why,
		    size_t len)
{
	uint32_t nspid = jt_proc_nspid(pid);
	int fds[2], status, err;
	uid_t uid = 0;
	gid_t gid = 0;
	pid_t c;
	ssize_t n;

	why[0] = 0;
	if (!jt_hotspot_is_jvm(pid)) {
		snprintf(why, len, "not a HotSpot JVM (no libjvm.so mapped)");
		return -ENOEXEC;
	}
	if ((err = ids(pid, &uid, &gid))) {
		snprintf(why, len, "/proc/%d/status: %s", pid, strerror(-err));
		return err;
	}
	if (pipe2(fds, O_CLOEXEC))
		return -errno;
	c = fork();
	if (c < 0) {
		close(fds[0]);
		close(fds[1]);
		return -errno;
	}
	if (!c) {
		char msg[256];
		int e = as_jvm_user(pid, nspid ? nspid : (uint32_t)pid, uid,
				    gid, path, options, msg, sizeof(msg));

		if (e && write(fds[1], msg, strlen(msg)) < 0)
			e = -EIO;
		_exit(e ? -e & 0xff : 0);
	}
	close(fds[1]);
	n = read(fds[0], why, len - 1);
	why[n > 0 ? n : 0] = 0;
	close(fds[0]);
	if (waitpid(c, &status, 0) < 0)
		return -errno;
	if (!WIFEXITED(status))
		return -EINTR;
	return -WEXITSTATUS(status);
}
