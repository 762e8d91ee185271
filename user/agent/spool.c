// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "agent/agent.h"
#include "agent/spool.h"
#include "lib/io.h"

struct spooled {
	char name[128];
	uint64_t bytes;
};

struct jt_spool {
	struct jt_agent *a;
	int dirfd;
	uint64_t max_bytes;
	struct spooled *files; /* oldest first: names sort by start time */
	size_t n;
	size_t cap;
	uint64_t bytes;
	unsigned int seq;
};

static const char prefix[] = "jittrace-";
static const char suffix[] = ".pb.gz";

static bool ours(const char *name)
{
	size_t n = strlen(name), sn = strlen(suffix);

	return !strncmp(name, prefix, strlen(prefix)) && n > sn &&
	       !strcmp(name + n - sn, suffix);
}

static int cmp_name(const void *x, const void *y)
{
	return strcmp(((const struct spooled *)x)->name,
		      ((const struct spooled *)y)->name);
}

static int keep(struct jt_spool *s, const char *name, uint64_t bytes)
{
	if (s->n == s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 64;
		void *f = realloc(s->files, cap * sizeof(*s->files));

		if (!f)
			return -ENOMEM;
		s->files = f;
		s->cap = cap;
	}
	snprintf(s->files[s->n].name, sizeof(s->files[0].name), "%s", name);
	s->files[s->n++].bytes = bytes;
	s->bytes += bytes;
	return 0;
}

/*
 * A restart finds the files of the last run: they count against the
 * limit, and a temporary file a killed agent left is removed.
 */
static void scan(struct jt_spool *s)
{
	DIR *d = jt_opendir_dup(s->dirfd);
	struct dirent *e;
	struct stat st;

	if (!d)
		return;
	while ((e = readdir(d))) {
		if (!strncmp(e->d_name, ".jittrace-", 10)) {
			unlinkat(s->dirfd, e->d_name, 0);
			continue;
		}
		if (!ours(e->d_name) || strlen(e->d_name) >= 128 ||
		    fstatat(s->dirfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) ||
		    !S_ISREG(st.st_mode))
			continue;
		keep(s, e->d_name, st.st_size);
	}
	closedir(d);
	qsort(s->files, s->n, sizeof(*s->files), cmp_name);
}

/*
 * Ours alone: another user who may write in it could plant names, or
 * swap files under the agent, which runs as root.
 */
static bool trusted(int dirfd, const char *dir)
{
	struct stat st;

	if (fstat(dirfd, &st))
		return false;
	if (st.st_uid != geteuid()) {
		fprintf(stderr,
			"jittrace: agent: --spool %s belongs to uid %u, not "
			"to us\n",
			dir, (unsigned int)st.st_uid);
		return false;
	}
	if (st.st_mode & (S_IWGRP | S_IWOTH)) {
		fprintf(stderr,
			"jittrace: agent: --spool %s may be written by other "
			"users: chmod go-w it\n",
			dir);
		return false;
	}
	return true;
}

struct jt_spool *jt_spool_open(struct jt_agent *a, const char *dir,
			       uint64_t max_bytes)
{
	struct jt_spool *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	s->a = a;
	s->max_bytes = max_bytes;
	mkdir(dir, 0700);
	s->dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (s->dirfd < 0 || !trusted(s->dirfd, dir)) {
		if (s->dirfd < 0)
			fprintf(stderr, "jittrace: agent: --spool %s: %s\n",
				dir, strerror(errno));
		else
			close(s->dirfd);
		free(s);
		return NULL;
	}
	scan(s);
	return s;
}

/*
 * Oldest first, until the files fit in max_bytes; the newest `keep_last`
 * always stay.
 */
static void rotate(struct jt_spool *s, uint64_t max_bytes, size_t keep_last)
{
	size_t drop = 0;

	while (s->bytes > max_bytes && s->n - drop > keep_last) {
		if (!unlinkat(s->dirfd, s->files[drop].name, 0) ||
		    errno == ENOENT) {
			pthread_mutex_lock(&s->a->lock);
			s->a->met.spool_deleted++;
			pthread_mutex_unlock(&s->a->lock);
		}
		s->bytes -= s->files[drop].bytes;
		drop++;
	}
	memmove(s->files, s->files + drop, (s->n - drop) * sizeof(*s->files));
	s->n -= drop;
}

static int put(struct jt_spool *s, const char *name, const void *buf,
	       size_t len)
{
	char tmp[160];
	int fd, err;

	snprintf(tmp, sizeof(tmp), ".%s.tmp", name);
	fd = openat(s->dirfd, tmp,
		    O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	err = jt_write_all(fd, buf, len);
	if (!err && fsync(fd))
		err = -errno;
	if (close(fd) && !err)
		err = -errno;
	if (!err && renameat(s->dirfd, tmp, s->dirfd, name))
		err = -errno;
	if (err)
		unlinkat(s->dirfd, tmp, 0);
	return err;
}

void jt_spool_write(struct jt_spool *s, int64_t start, const void *buf,
		    size_t len)
{
	char name[128];
	int err;

	/* Two windows in one second (a restart) keep apart by a suffix. */
	snprintf(name, sizeof(name), "%s%s-%lld%s", prefix, s->a->host,
		 (long long)start, suffix);
	if (s->n && !strcmp(s->files[s->n - 1].name, name))
		snprintf(name, sizeof(name), "%s%s-%lld.%u%s", prefix,
			 s->a->host, (long long)start, ++s->seq, suffix);
	err = put(s, name, buf, len);
	/* The disk is full: our own oldest windows make room for this one. */
	while ((err == -ENOSPC || err == -EDQUOT) && s->n) {
		size_t had = s->n;

		rotate(s, 0, had - 1);
		if (s->n == had)
			break;
		err = put(s, name, buf, len);
	}
	if (!err)
		err = keep(s, name, len);
	pthread_mutex_lock(&s->a->lock);
	if (err)
		s->a->met.spool_errors++;
	else
		s->a->met.spool_written++;
	pthread_mutex_unlock(&s->a->lock);
	if (err == -ENOMEM || !err)
		rotate(s, s->max_bytes, 1);
	if (err)
		fprintf(stderr, "jittrace: agent: spooling %s: %s\n", name,
			strerror(-err));
	pthread_mutex_lock(&s->a->lock);
	s->a->met.spool_bytes = s->bytes;
	pthread_mutex_unlock(&s->a->lock);
}

void jt_spool_close(struct jt_spool *s)
{
	if (!s)
		return;
	close(s->dirfd);
	free(s->files);
	free(s);
}
