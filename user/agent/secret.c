// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "agent/secret.h"

static char *first_line(int fd, char *err, size_t errsz, const char *path)
{
	char *buf = calloc(1, JT_SECRET_MAX + 1);
	ssize_t n;
	size_t len;

	if (!buf)
		return NULL;
	n = read(fd, buf, JT_SECRET_MAX);
	if (n < 0) {
		snprintf(err, errsz, "%s: %s", path, strerror(errno));
		free(buf);
		return NULL;
	}
	len = strcspn(buf, "\n");
	while (len && (buf[len - 1] == ' ' || buf[len - 1] == '\t' ||
		       buf[len - 1] == '\r'))
		len--;
	buf[len] = 0;
	if (!len) {
		snprintf(err, errsz, "%s is empty", path);
		free(buf);
		return NULL;
	}
	return buf;
}

char *jt_secret_read(const char *path, char *err, size_t errsz)
{
	struct stat st;
	char *s = NULL;
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);

	if (fd < 0) {
		snprintf(err, errsz, "%s: %s", path, strerror(errno));
		return NULL;
	}
	if (fstat(fd, &st) || !S_ISREG(st.st_mode))
		snprintf(err, errsz, "%s is not a regular file", path);
	else if (st.st_mode & (S_IWGRP | S_IWOTH))
		snprintf(err, errsz,
			 "%s may be written by other users: chmod go-w it",
			 path);
	else
		s = first_line(fd, err, errsz, path);
	close(fd);
	return s;
}

int jt_url_has_userinfo(const char *url)
{
	const char *host = strstr(url, "://");
	size_t n;

	host = host ? host + 3 : url;
	n = strcspn(host, "/?#");
	return memchr(host, '@', n) != NULL;
}
