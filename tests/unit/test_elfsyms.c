// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * ELF symbols beyond .symtab: PLT entries named name@plt, at the
 * addresses binutils' objdump gives them (.plt, .plt.sec), in this
 * test's own executable, and libc's IRELATIVE slots by their IFUNC.
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

/* Whether libc exports an IFUNC named name at addr (nm -D, no version). */
static int libc_ifunc_at(const char *libc, uint64_t addr, const char *name)
{
	char cmd[4200], line[512], sym[256];
	unsigned long long a;
	int found = 0;
	char type;
	FILE *p;

	snprintf(cmd, sizeof(cmd), "nm -D --defined-only '%s'", libc);
	p = popen(cmd, "r");
	if (!p)
		return 0;
	while (fgets(line, sizeof(line), p))
		if (sscanf(line, "%llx %c %255[^@\n]", &a, &type, sym) == 3 &&
		    a == addr && type == 'i' && !strcmp(sym, name))
			found = 1;
	pclose(p);
	return found;
}

/*
 * libc calls its own IFUNCs (memcpy from qsort's msort) through PLT
 * slots relocated R_X86_64_IRELATIVE: no symbol, only the resolver's
 * address, which objdump prints as <*ABS*+0x9be70@plt>. They are named
 * after the IFUNC libc exports there: memcpy@plt.
 */
static void test_irelative_plt_entries_named(void **state)
{
	const char *libc = "/usr/lib/x86_64-linux-gnu/libc.so.6";
	struct jt_strtab strs = {};
	struct jt_elfcache c = { .strs = &strs };
	unsigned long long addr, target;
	char cmd[4200], line[512];
	const struct jt_elffile *f;
	int checked = 0;
	FILE *p;

	f = jt_elf_get(&c, jt_intern(&strs, libc, strlen(libc)));
	assert_non_null(f);
	assert_true(f->ok);
	snprintf(cmd, sizeof(cmd), "objdump -d -j .plt -j .plt.sec '%s'", libc);
	p = popen(cmd, "r");
	assert_non_null(p);
	while (fgets(line, sizeof(line), p)) {
		char name[256];
		uint64_t off;
		const char *got;
		int end = 0;

		/* Not PLT0, <*ABS*+0x9f550@plt-0x10>: the header. */
		if (sscanf(line, "%llx <*ABS*+0x%llx@plt>:%n", &addr, &target,
			   &end) != 2 ||
		    !end)
			continue;
		assert_int_equal(jt_elf_vaddr_off(f, addr, &off), 0);
		got = jt_elf_symbol(f, off);
		assert_non_null(got);
		assert_true(strlen(got) > 4 &&
			    !strcmp(got + strlen(got) - 4, "@plt"));
		snprintf(name, sizeof(name), "%.*s", (int)strlen(got) - 4, got);
		if (!libc_ifunc_at(libc, target, name))
			fail_msg("%s at %#llx: no IFUNC %s at %#llx", got, addr,
				 name, target);
		checked++;
	}
	pclose(p);
	assert_true(checked >= 1);
	jt_elfcache_free(&c);
	jt_strtab_free(&strs);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_plt_entries_named),
		cmocka_unit_test(test_irelative_plt_entries_named),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
