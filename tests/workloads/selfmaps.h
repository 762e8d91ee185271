/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Print this process's /proc/self/maps as "maps <pid> <line>" with no
 * allocation between reading and printing, so the map printed is the map
 * the process dies with.
 */
#ifndef SELFMAPS_H
#define SELFMAPS_H

#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static char selfmaps_buf[1 << 16];

static void print_selfmaps(void)
{
	int fd = open("/proc/self/maps", O_RDONLY), n = 0, r;
	char *line, *save;

	while (fd >= 0 && (r = read(fd, selfmaps_buf + n,
				    sizeof(selfmaps_buf) - 1 - n)) > 0)
		n += r;
	if (fd >= 0)
		close(fd);
	selfmaps_buf[n] = 0;
	for (line = strtok_r(selfmaps_buf, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save))
		printf("maps %d %s\n", getpid(), line);
	fflush(stdout);
}

#endif
