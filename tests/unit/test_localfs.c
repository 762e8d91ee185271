// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * An overlayfs's layers from its super options as mountinfo shows them
 * (record/localfs.c): every layer option, each lowerdir entry, octal
 * escapes and overlayfs's own "\:" undone, data-only layers' "::" taken,
 * and a layer that fails the check failing the whole.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>
#include "record/localfs.h"

struct seen {
	int n;
	char path[8][256];
	const char *refuse; /* a layer each() says false to */
};

static bool take(const char *path, void *arg)
{
	struct seen *s = arg;

	assert_true(s->n < 8);
	strcpy(s->path[s->n++], path);
	return !s->refuse || strcmp(path, s->refuse);
}

static void classic_mount(void **state)
{
	struct seen s = { 0 };

	(void)state;
	assert_int_equal(jt_localfs_layers("rw,lowerdir=/l1:/l2,upperdir=/u,"
					   "workdir=/w,redirect_dir=nofollow,"
					   "uuid=null",
					   take, &s),
			 4);
	assert_int_equal(s.n, 4);
	assert_string_equal(s.path[0], "/l1");
	assert_string_equal(s.path[1], "/l2");
	assert_string_equal(s.path[2], "/u");
	assert_string_equal(s.path[3], "/w");
}

/* seq_escape's \ooo for ", \t\n\\", and a colon the mounter escaped. */
static void escapes(void **state)
{
	struct seen s = { 0 };

	(void)state;
	assert_int_equal(
		jt_localfs_layers("rw,lowerdir=/a\\054b:/c\\040d\\134:e,"
				  "upperdir=/u\\011v",
				  take, &s),
		3);
	assert_string_equal(s.path[0], "/a,b");
	assert_string_equal(s.path[1], "/c d:e");
	assert_string_equal(s.path[2], "/u\tv");
}

/* The new mount API's options, one layer each, and data-only layers. */
static void layer_by_layer(void **state)
{
	struct seen s = { 0 };

	(void)state;
	assert_int_equal(jt_localfs_layers("rw,lowerdir+=/l1,lowerdir+=/l2,"
					   "datadir+=/d,upperdir=/u,workdir=/w",
					   take, &s),
			 5);
	assert_string_equal(s.path[2], "/d");
	s.n = 0;
	assert_int_equal(
		jt_localfs_layers("ro,lowerdir=/l1::/d1::/d2", take, &s), 3);
	assert_string_equal(s.path[0], "/l1");
	assert_string_equal(s.path[1], "/d1");
	assert_string_equal(s.path[2], "/d2");
}

static void one_bad_layer_fails_all(void **state)
{
	struct seen s = { .refuse = "/fuse" };

	(void)state;
	assert_int_equal(
		jt_localfs_layers("rw,lowerdir=/l1:/fuse:/l3,upperdir=/u", take,
				  &s),
		-1);
	s.n = 0;
	assert_int_equal(
		jt_localfs_layers("rw,lowerdir=/l1,upperdir=/fuse", take, &s),
		-1);
	/* No layer named: nothing to trust. */
	assert_int_equal(jt_localfs_layers("rw,xino=off", take, &s), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(classic_mount),
		cmocka_unit_test(escapes),
		cmocka_unit_test(layer_by_layer),
		cmocka_unit_test(one_bad_layer_fails_all),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
