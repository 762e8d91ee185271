// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * libFuzzer harness: any byte string as a recording, shown by the views
 * a user runs on it (script, maps, report, audit; text, JSON and folded)
 * and exported (pprof, perf.data).
 */
#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include "jittrace.h"

static void view(int (*cmd)(int, char **), const char *path, const char *a)
{
	char *argv[] = { "view", "-i", (char *)path, (char *)a, NULL };

	optind = 0;
	cmd(a ? 4 : 3, argv);
}

/*
 * A directory of its own, reused: thousands of exports a second stay out
 * of /tmp itself, which the recorder watches. Someone else's is not used.
 */
static const char *export_path(void)
{
	static char tmp[] = "/tmp/jt-fuzz-XXXXXX", path[64];
	const char *dir = "/tmp/jt-fuzz";
	struct stat st;

	if (path[0])
		return path;
	mkdir(dir, 0700);
	if (lstat(dir, &st) || !S_ISDIR(st.st_mode) || st.st_uid != geteuid())
		dir = mkdtemp(tmp) ? tmp : "/tmp";
	snprintf(path, sizeof(path), "%s/export", dir);
	return path;
}

static void export(const char *path, const char *fmt)
{
	char *argv[] = { "export",    "-i", (char *)path,	   "--format",
			 (char *)fmt, "-o", (char *)export_path(), "-g",
			 NULL };

	optind = 0;
	cmd_export(8, argv);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static int fd = -1;
	char path[64];

	/* Run with -close_fd_mask=3: the views' output is not the point. */
	if (fd < 0)
		fd = memfd_create("recording", 0);
	if (ftruncate(fd, 0) || pwrite(fd, data, size, 0) != (ssize_t)size)
		return 0;
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	view(cmd_script, path, NULL);
	view(cmd_script, path, "--json");
	view(cmd_maps, path, NULL);
	view(cmd_maps, path, "--json");
	view(cmd_report, path, NULL);
	view(cmd_report, path, "--json");
	view(cmd_script, path, "--folded");
	view(cmd_audit, path, NULL);
	view(cmd_audit, path, "--json");
	export(path, "pprof");
	export(path, "perf");
	return 0;
}
