// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Which watched files changed (record/filewatch.c): by write, pwrite,
 * truncate or another descriptor of the file, told once per drain by
 * the pid it was added for; never for a file nothing changed, or after
 * its watch is deleted. A second file of one inode is refused, a watch
 * the kernel drops is said, and a queue that overflowed says so.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>
#include "record/filewatch.h"

#define NFILES 4

static char dir[] = "/tmp/jt_test_filewatch_XXXXXX";

struct told {
	int n;
	pid_t pid[64];
	int gone_n;
	pid_t gone_pid;
	int gone_wd;
};

static void changed(void *ctx, pid_t pid)
{
	struct told *t = ctx;

	assert_true(t->n < 64);
	t->pid[t->n++] = pid;
}

static void gone(void *ctx, pid_t pid, int wd)
{
	struct told *t = ctx;

	t->gone_n++;
	t->gone_pid = pid;
	t->gone_wd = wd;
}

static struct told drain(struct jt_filewatch *w, bool complete)
{
	struct told t = { 0 };

	assert_int_equal(jt_filewatch_drain(w, changed, gone, &t), complete);
	return t;
}

static void path_of(int i, char *p, size_t len)
{
	snprintf(p, len, "%s/f%d", dir, i);
}

/* NFILES files, open for writing, each watched as pid 100 + i. */
static void open_watched(struct jt_filewatch *w, int *fd, int *wd)
{
	char p[128];
	int i;

	assert_int_equal(jt_filewatch_init(w), 0);
	for (i = 0; i < NFILES; i++) {
		path_of(i, p, sizeof(p));
		fd[i] = open(p, O_RDWR | O_CREAT | O_TRUNC, 0600);
		assert_true(fd[i] >= 0);
		wd[i] = jt_filewatch_add(w, fd[i], 100 + i);
		assert_true(wd[i] > 0);
	}
}

static void close_all(struct jt_filewatch *w, int *fd)
{
	char p[128];
	int i;

	for (i = 0; i < NFILES; i++) {
		close(fd[i]);
		path_of(i, p, sizeof(p));
		unlink(p);
	}
	jt_filewatch_free(w);
}

static void each_change_is_told_once_by_pid(void **state)
{
	struct jt_filewatch w;
	int fd[NFILES], wd[NFILES], other, i;
	struct told t;
	char p[128];

	open_watched(&w, fd, wd);
	t = drain(&w, true);
	assert_int_equal(t.n, 0);

	/* Many writes to one file between drains: one change. */
	for (i = 0; i < 10; i++)
		assert_int_equal(write(fd[0], "1000 10 a\n", 10), 10);
	assert_int_equal(pwrite(fd[2], "x", 1, 100), 1);
	t = drain(&w, true);
	assert_int_equal(t.n, 2);
	assert_int_equal(t.pid[0], 100);
	assert_int_equal(t.pid[1], 102);
	assert_int_equal(drain(&w, true).n, 0);

	/* A truncation, and a write through a descriptor of its own. */
	assert_int_equal(ftruncate(fd[1], 0), 0);
	t = drain(&w, true);
	assert_int_equal(t.n, 1);
	assert_int_equal(t.pid[0], 101);
	path_of(3, p, sizeof(p));
	other = open(p, O_WRONLY | O_APPEND);
	assert_true(other >= 0);
	assert_int_equal(write(other, "y", 1), 1);
	close(other);
	t = drain(&w, true);
	assert_int_equal(t.n, 1);
	assert_int_equal(t.pid[0], 103);

	/* Deleted: its writes are not told, nor is the watch said gone. */
	jt_filewatch_del(&w, wd[0]);
	assert_int_equal(write(fd[0], "z", 1), 1);
	t = drain(&w, true);
	assert_int_equal(t.n, 0);
	assert_int_equal(t.gone_n, 0);
	close_all(&w, fd);
}

static void a_second_file_of_one_inode_is_refused(void **state)
{
	struct jt_filewatch w;
	int fd[NFILES], wd[NFILES], again;
	char p[128];

	open_watched(&w, fd, wd);
	path_of(1, p, sizeof(p));
	again = open(p, O_RDONLY);
	assert_true(again >= 0);
	assert_int_equal(jt_filewatch_add(&w, again, 999), -EEXIST);
	/* The first keeps its watch and its pid. */
	assert_int_equal(write(fd[1], "a", 1), 1);
	assert_int_equal(drain(&w, true).pid[0], 101);
	close(again);
	close_all(&w, fd);
}

static void a_watch_the_kernel_drops_is_said(void **state)
{
	struct jt_filewatch w;
	int fd[NFILES], wd[NFILES];
	struct told t;
	char p[128];

	open_watched(&w, fd, wd);
	/* The inode goes once its last name and descriptor do. */
	path_of(2, p, sizeof(p));
	unlink(p);
	close(fd[2]);
	fd[2] = open("/dev/null", O_RDONLY);
	t = drain(&w, true);
	assert_int_equal(t.gone_n, 1);
	assert_int_equal(t.gone_pid, 102);
	assert_int_equal(t.gone_wd, wd[2]);
	/* Its watch is forgotten: deleting it again does nothing. */
	jt_filewatch_del(&w, wd[2]);
	assert_int_equal(drain(&w, true).gone_n, 0);
	close_all(&w, fd);
}

/*
 * The queue's bound is the sysctl's when the instance is made: set low
 * for that moment only (root), then put back.
 */
static void an_overflow_says_any_file_may_have_changed(void **state)
{
	const char *knob = "/proc/sys/fs/inotify/max_queued_events";
	struct jt_filewatch w;
	int fd[NFILES], wd[NFILES], i;
	char was[32] = { 0 };
	FILE *f = fopen(knob, "r+");

	if (!f || !fgets(was, sizeof(was), f) || geteuid()) {
		if (f)
			fclose(f);
		print_message("SKIP: needs root to lower %s\n", knob);
		skip();
	}
	rewind(f);
	fputs("2\n", f);
	fflush(f);
	open_watched(&w, fd, wd);
	rewind(f);
	fputs(was, f);
	fclose(f);
	for (i = 0; i < NFILES; i++)
		assert_int_equal(write(fd[i], "a", 1), 1);
	drain(&w, false);
	/* Read, the queue takes changes again. */
	assert_int_equal(write(fd[0], "b", 1), 1);
	assert_int_equal(drain(&w, true).pid[0], 100);
	close_all(&w, fd);
}

static int setup(void **state)
{
	return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
	return rmdir(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(each_change_is_told_once_by_pid),
		cmocka_unit_test(a_second_file_of_one_inode_is_refused),
		cmocka_unit_test(a_watch_the_kernel_drops_is_said),
		cmocka_unit_test(an_overflow_says_any_file_may_have_changed),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
