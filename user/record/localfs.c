// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <linux/nsfs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/vfs.h>
#include <unistd.h>
#include "record/localfs.h"

#define OVERLAYFS_MAGIC 0x794C7630L
/* The initial user namespace's inode: fixed (PROC_USER_INIT_INO). */
#define USER_NS_INIT_INO 0xEFFFFFFDUL
#define LAYER_MAX 4096

/*
 * Filesystems no user can mount or make hang: the disk-backed ones a
 * system's libraries live on. FUSE, which may claim any owner, is not.
 */
static bool local_kind(long type)
{
	static const long kinds[] = { 0xEF53,	  0x58465342, 0x9123683E,
				      0xF2F52010, 0x73717368, 0xE0F5E1E2,
				      0x01021994 };
	size_t i;

	for (i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++)
		if (type == kinds[i])
			return true;
	return false;
}

static void proc_path(char *buf, size_t len, pid_t pid, const char *name)
{
	if (pid)
		snprintf(buf, len, "/proc/%d/%s", pid, name);
	else
		snprintf(buf, len, "/proc/self/%s", name);
}

/*
 * pid's mount namespace belongs to the initial user namespace: every
 * mount in it but FUSE's (fusermount) was made by root. A user's own
 * namespace's mounts never propagate into it. *ns: its inode.
 */
static bool ns_is_roots(pid_t pid, uint64_t *ns_ino)
{
	struct stat st;
	char path[64];
	int fd, ns;
	bool roots;

	proc_path(path, sizeof(path), pid, "ns/mnt");
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	ns = fstat(fd, &st) ? -1 : ioctl(fd, NS_GET_USERNS);
	*ns_ino = st.st_ino;
	close(fd);
	if (ns < 0)
		return false;
	roots = !fstat(ns, &st) && st.st_ino == USER_NS_INIT_INO;
	close(ns);
	return roots;
}

/*
 * The last overlayfs mounts judged, by namespace, mount id and device:
 * every file the worker opens in a container asks of the same one, and
 * its mountinfo is read and its layers stat'ed once. Workers share it:
 * one the loop gave up on may still run.
 */
#define VERDICTS 16

static struct verdict {
	uint64_t ns, mnt, dev;
	bool local;
} verdicts[VERDICTS];
static unsigned int verdicts_next;
static pthread_mutex_t verdicts_lock = PTHREAD_MUTEX_INITIALIZER;

static int verdict_find(const struct verdict *k)
{
	int i, found = -1;

	pthread_mutex_lock(&verdicts_lock);
	for (i = 0; i < VERDICTS && found < 0; i++)
		if (verdicts[i].ns == k->ns && verdicts[i].mnt == k->mnt &&
		    verdicts[i].dev == k->dev && k->ns)
			found = verdicts[i].local;
	pthread_mutex_unlock(&verdicts_lock);
	return found;
}

static void verdict_keep(const struct verdict *v)
{
	pthread_mutex_lock(&verdicts_lock);
	verdicts[verdicts_next++ % VERDICTS] = *v;
	pthread_mutex_unlock(&verdicts_lock);
}

/* The super options of mount id mnt in pid's mountinfo, into buf. */
static int mount_opts(pid_t pid, uint64_t mnt, char *buf, size_t len)
{
	char path[64], *line = NULL, *sep, *fs, *opts;
	size_t cap = 0;
	int err = -1;
	FILE *f;

	proc_path(path, sizeof(path), pid, "mountinfo");
	f = fopen(path, "re");
	if (!f)
		return -1;
	while (err && getline(&line, &cap, f) > 0) {
		if (strtoull(line, NULL, 10) != mnt)
			continue;
		/* ... optional fields - FSTYPE SOURCE SUPEROPTS */
		sep = strstr(line, " - ");
		if (!sep || strncmp(sep + 3, "overlay ", 8))
			break;
		fs = sep + 11;
		opts = strchr(fs, ' ');
		if (!opts || strlen(opts + 1) >= len)
			break;
		snprintf(buf, len, "%s", opts + 1);
		buf[strcspn(buf, "\n")] = 0;
		err = 0;
	}
	free(line);
	fclose(f);
	return err;
}

/* mountinfo's \ooo escapes, in place. */
static void unescape_octal(char *s)
{
	char *d = s;

	for (; *s; s++) {
		if (s[0] == '\\' && s[1] >= '0' && s[1] <= '3' && s[2] >= '0' &&
		    s[2] <= '7' && s[3] >= '0' && s[3] <= '7') {
			*d++ = (s[1] - '0') << 6 | (s[2] - '0') << 3 |
			       (s[3] - '0');
			s += 3;
		} else {
			*d++ = *s;
		}
	}
	*d = 0;
}

/*
 * lowerdir's list: layers split at ':', a "\:" in a name its colon
 * (overlayfs's own escape); "::" sets data-only layers apart.
 */
static int each_lower(char *v, bool (*each)(const char *, void *), void *arg)
{
	char name[LAYER_MAX];
	size_t n = 0;
	int count = 0;

	for (;; v++) {
		if (*v == '\\' && v[1]) {
			v++;
		} else if (!*v || *v == ':') {
			name[n] = 0;
			if (n && !each(name, arg))
				return -1;
			count += n > 0;
			n = 0;
			if (!*v)
				return count;
			continue;
		}
		if (n + 1 >= sizeof(name))
			return -1;
		name[n++] = *v;
	}
}

int jt_localfs_layers(const char *opts, bool (*each)(const char *, void *),
		      void *arg)
{
	char *copy = strdup(opts), *tok, *save, *v;
	int count = 0, n;

	if (!copy)
		return -1;
	for (tok = strtok_r(copy, ",", &save); tok && count >= 0;
	     tok = strtok_r(NULL, ",", &save)) {
		v = strchr(tok, '=');
		if (!v)
			continue;
		*v++ = 0;
		unescape_octal(v);
		if (!strcmp(tok, "lowerdir")) {
			n = each_lower(v, each, arg);
			count = n < 0 ? -1 : count + n;
		} else if (!strcmp(tok, "lowerdir+") ||
			   !strcmp(tok, "upperdir") ||
			   !strcmp(tok, "workdir") ||
			   !strcmp(tok, "datadir+")) {
			count = each(v, arg) ? count + 1 : -1;
		}
	}
	free(copy);
	return count;
}

static bool layer_local(const char *path, void *arg)
{
	struct statfs sf;

	(void)arg;
	return !statfs(path, &sf) && local_kind((long)sf.f_type);
}

/*
 * An overlayfs is as safe as its layers, where root made it. Its layers
 * are named as root named them, looked up here in our namespace: a
 * rootful container's runtime mounts them from the host's.
 */
static bool overlay_local(int fd, pid_t pid)
{
	struct verdict v = { 0 };
	struct statx stx;
	char opts[16384];
	int known;

	if (!ns_is_roots(pid, &v.ns) ||
	    statx(fd, "", AT_EMPTY_PATH, STATX_MNT_ID, &stx) ||
	    !(stx.stx_mask & STATX_MNT_ID))
		return false;
	v.mnt = stx.stx_mnt_id;
	v.dev = makedev(stx.stx_dev_major, stx.stx_dev_minor);
	known = verdict_find(&v);
	if (known >= 0)
		return known;
	v.local = !mount_opts(pid, v.mnt, opts, sizeof(opts)) &&
		  jt_localfs_layers(opts, layer_local, NULL) > 0;
	verdict_keep(&v);
	return v.local;
}

bool jt_localfs(int fd, pid_t ns_pid)
{
	struct statfs sf;

	if (fstatfs(fd, &sf))
		return false;
	if (local_kind((long)sf.f_type))
		return true;
	return (long)sf.f_type == OVERLAYFS_MAGIC && ns_pid >= 0 &&
	       overlay_local(fd, ns_pid);
}
