// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * ELF symbols beyond .symtab: PLT entries named name@plt, at the
 * addresses binutils' objdump gives them (.plt, .plt.sec), in this
 * test's own executable.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>
#include "lib/strtab.h"
#include "model/elfsyms.h"

static void test_plt_entries_named(void **state)
{
	struct jt_strtab strs = {};
	struct jt_elfcache c = { .strs = &strs };
	char exe[4096], cmd[4200], line[512], want[256];
	const struct jt_elffile *f;
	unsigned long long addr;
	int checked = 0;
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	FILE *p;

	assert_true(n > 0);
	exe[n] = 0;
	f = jt_elf_get(&c, jt_intern(&strs, exe, n));
	assert_non_null(f);
	assert_true(f->ok);
	/* .plt.got's entries (functions also taken by address) are left. */
	snprintf(cmd, sizeof(cmd), "objdump -d -j .plt -j .plt.sec '%s'", exe);
	p = popen(cmd, "r");
	assert_non_null(p);
	/* "0000000000001030 <free@plt>:" */
	while (fgets(line, sizeof(line), p)) {
		uint64_t off;
		const char *got;

		/* PLT0 shows as <first@plt-0x10>: the header, no function. */
		if (sscanf(line, "%llx <%255[^>]>:", &addr, want) != 2 ||
		    strlen(want) < 4 || strcmp(want + strlen(want) - 4, "@plt"))
			continue;
		assert_int_equal(jt_elf_vaddr_off(f, addr, &off), 0);
		got = jt_elf_symbol(f, off);
		assert_non_null(got);
		assert_string_equal(got, want);
		checked++;
	}
	pclose(p);
	/* cmocka's and libc's functions: a PIE calls them through its PLT. */
	assert_true(checked >= 3);
	jt_elfcache_free(&c);
	jt_strtab_free(&strs);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_plt_entries_named),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
