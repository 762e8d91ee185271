// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Opening a file in a directory without the opener's worker: only a
 * regular file that lies in that directory on its filesystem, never
 * through a symlink, out of the directory or onto another mount.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>
#include "lib/procfile.h"

static char top[] = "/tmp/jt_test_procfile_XXXXXX";
static char dir[sizeof(top) + 8];

static void put(const char *name, const char *text)
{
	char p[128];
	FILE *f;

	snprintf(p, sizeof(p), "%s/%s", dir, name);
	f = fopen(p, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static int setup(void **state)
{
	char p[128];

	if (!mkdtemp(top))
		return -1;
	snprintf(dir, sizeof(dir), "%s/tmp", top);
	if (mkdir(dir, 0755))
		return -1;
	put("perf-1.map", "1000 10 f\n");
	snprintf(p, sizeof(p), "%s/secret", top);
	close(open(p, O_CREAT | O_WRONLY, 0600));
	snprintf(p, sizeof(p), "%s/link.map", dir);
	if (symlink("perf-1.map", p))
		return -1;
	snprintf(p, sizeof(p), "%s/fifo.map", dir);
	return mkfifo(p, 0644);
}

static int teardown(void **state)
{
	char cmd[sizeof(top) + 16];

	snprintf(cmd, sizeof(cmd), "rm -rf %s", top);
	return system(cmd);
}

static int open_dir(void)
{
	int d = jt_proc_dir_in_root(0, dir);

	assert_true(d >= 0);
	return d;
}

static void test_a_regular_file_opens_for_reading(void **state)
{
	int d = open_dir(), fd = jt_proc_open_beneath(d, "perf-1.map");
	char buf[16] = { 0 };

	assert_true(fd >= 0);
	assert_int_equal(read(fd, buf, sizeof(buf) - 1), 10);
	assert_string_equal(buf, "1000 10 f\n");
	close(fd);
	close(d);
}

static void test_no_symlink_no_fifo_no_way_out(void **state)
{
	int d = open_dir();

	assert_int_equal(jt_proc_open_beneath(d, "link.map"), -ELOOP);
	/* Opened as a path only: a FIFO never waits for its writer. */
	assert_int_equal(jt_proc_open_beneath(d, "fifo.map"), -EINVAL);
	assert_int_equal(jt_proc_open_beneath(d, "../secret"), -EXDEV);
	assert_int_equal(jt_proc_open_beneath(d, "/etc/hostname"), -EXDEV);
	assert_int_equal(jt_proc_open_beneath(d, "none.map"), -ENOENT);
	close(d);
}

/*
 * A stat beneath the directory tells a renamed perf-map from the one
 * open (perfmap_replaced) under the same rules as the open, FIFO or not.
 */
static void test_a_stat_beneath_keeps_to_the_directory(void **state)
{
	int d = open_dir(), fd = jt_proc_open_beneath(d, "perf-1.map");
	struct stat st, open_st;

	assert_true(fd >= 0);
	assert_int_equal(fstat(fd, &open_st), 0);
	assert_int_equal(jt_proc_stat_beneath(d, "perf-1.map", &st), 0);
	assert_int_equal(st.st_ino, open_st.st_ino);
	assert_int_equal(jt_proc_stat_owned(&st, getuid()), 0);
	assert_int_equal(jt_proc_stat_owned(&st, getuid() + 1), -EPERM);
	assert_int_equal(jt_proc_stat_beneath(d, "fifo.map", &st), 0);
	assert_true(S_ISFIFO(st.st_mode));
	assert_int_equal(jt_proc_stat_owned(&st, getuid()), -EINVAL);
	/* The link itself, never its target: not a file to read. */
	assert_int_equal(jt_proc_stat_beneath(d, "link.map", &st), 0);
	assert_true(S_ISLNK(st.st_mode));
	assert_int_equal(jt_proc_stat_owned(&st, getuid()), -EINVAL);
	assert_int_equal(jt_proc_stat_beneath(d, "../secret", &st), -EXDEV);
	assert_int_equal(jt_proc_stat_beneath(d, "none.map", &st), -ENOENT);
	close(fd);
	close(d);
}

static void test_a_directory_must_be_one(void **state)
{
	char p[128];

	snprintf(p, sizeof(p), "%s/perf-1.map", dir);
	assert_int_equal(jt_proc_dir_in_root(0, p), -ENOTDIR);
	snprintf(p, sizeof(p), "%s/link.map", dir);
	assert_int_equal(jt_proc_dir_in_root(0, p), -ENOTDIR);
}

/*
 * A file mounted over the name (from a FUSE daemon, say) is on another
 * filesystem: refused, left to the worker. In a mount namespace of the
 * test's own, so nothing outlives it.
 */
static void test_a_mount_over_the_name_is_not_crossed(void **state)
{
	char over[128], src[128];
	struct stat st;
	int d, fd;

	if (unshare(CLONE_NEWNS) ||
	    mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL)) {
		fprintf(stderr, "SKIP: no mount namespace here (%s)\n",
			strerror(errno));
		skip();
	}
	snprintf(over, sizeof(over), "%s/mounted.map", dir);
	snprintf(src, sizeof(src), "%s/secret", top);
	close(open(over, O_CREAT | O_WRONLY, 0644));
	assert_int_equal(mount(src, over, NULL, MS_BIND, NULL), 0);
	d = open_dir();
	assert_int_equal(jt_proc_open_beneath(d, "mounted.map"), -EXDEV);
	assert_int_equal(jt_proc_stat_beneath(d, "mounted.map", &st), -EXDEV);
	/* The same path through the root, as the worker walks it, opens. */
	fd = jt_proc_open_in_root(0, over);
	assert_true(fd >= 0);
	close(fd);
	close(d);
	umount(over);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_a_regular_file_opens_for_reading),
		cmocka_unit_test(test_no_symlink_no_fifo_no_way_out),
		cmocka_unit_test(test_a_stat_beneath_keeps_to_the_directory),
		cmocka_unit_test(test_a_directory_must_be_one),
		cmocka_unit_test(test_a_mount_over_the_name_is_not_crossed),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
