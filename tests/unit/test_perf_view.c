// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * perf's MMAP2 records made from BPF events: which calls give one, the
 * VMA, name and offset each carries, and the record as perf lays it out,
 * read back by the parser every view uses.
 */
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <cmocka.h>
#include "jt_abi.h"
#include "lib/perf_rec.h"
#include "model/perf_view.h"

#define VM_RW 0x3ULL
#define VM_RX 0x5ULL
#define VM_SHARED 0x8ULL

struct ev {
	struct jt_map_event e;
	char path[64];
};

static size_t map_ev(struct ev *b, uint16_t type, const char *file)
{
	memset(b, 0, sizeof(*b));
	b->e.h.type = type;
	b->e.h.pid = 40;
	b->e.h.tid = 41;
	b->e.h.time = 5000;
	b->e.h.cpu = 1;
	if (file) {
		b->e.path_len = strlen(file) + 1;
		memcpy(b->e.path, file, b->e.path_len);
		b->e.dev = (8ULL << 20) | 3;
		b->e.ino = 77;
	}
	return sizeof(b->e) + b->e.path_len;
}

static void set_vma(struct jt_vma *v, uint64_t start, uint64_t end,
		    uint64_t flags, uint64_t pgoff)
{
	*v = (struct jt_vma){ start, end, flags, pgoff };
}

static void check_name(const struct jt_perf_view *v, const char *name)
{
	assert_int_equal(v->m.filename_len, strlen(name));
	assert_memory_equal(v->m.filename, name, strlen(name));
}

/* An mmap's merged VMA; data memory only with data (perf -d). */
static void test_mmap_gives_its_merged_vma(void **state)
{
	struct jt_perf_view v[2];
	struct ev b;
	size_t len = map_ev(&b, JT_EV_MMAP, NULL);

	b.e.result = 0x11000;
	set_vma(&b.e.vma, 0x10000, 0x12000, VM_RX, 0x10);
	b.e.vma_last = b.e.vma;
	assert_int_equal(jt_perf_view(&b.e.h, len, false, v), 1);
	assert_int_equal(v[0].m.start, 0x10000);
	assert_int_equal(v[0].m.len, 0x2000);
	/* anonymous memory's pgoff is its first page, in bytes */
	assert_int_equal(v[0].m.pgoff, 0x10000);
	assert_int_equal(v[0].m.prot, PROT_READ | PROT_EXEC);
	assert_int_equal(v[0].m.flags, MAP_PRIVATE);
	assert_int_equal(v[0].m.pid, 40);
	assert_int_equal(v[0].m.tid, 41);
	assert_int_equal(v[0].misc, PERF_RECORD_MISC_USER);
	check_name(&v[0], "//anon");

	b.e.vma.flags = VM_RW | VM_SHARED;
	assert_int_equal(jt_perf_view(&b.e.h, len, false, v), 0);
	assert_int_equal(jt_perf_view(&b.e.h, len, true, v), 1);
	assert_int_equal(v[0].misc,
			 PERF_RECORD_MISC_USER | PERF_RECORD_MISC_MMAP_DATA);
	assert_int_equal(v[0].m.flags, MAP_SHARED);
	assert_int_equal(v[0].m.prot, PROT_READ | PROT_WRITE);

	/* a failed call, a busy lookup, the ELF loader's: none */
	b.e.result = -12;
	assert_int_equal(jt_perf_view(&b.e.h, len, true, v), 0);
	b.e.result = 0x11000;
	b.e.flags = JT_MF_VMA_BUSY;
	assert_int_equal(jt_perf_view(&b.e.h, len, true, v), 0);
	b.e.flags = JT_MF_EXEC_LOAD;
	assert_int_equal(jt_perf_view(&b.e.h, len, true, v), 0);
	/* calls perf_event_mmap() never sees */
	b.e.flags = 0;
	b.e.h.type = JT_EV_MUNMAP;
	assert_int_equal(jt_perf_view(&b.e.h, len, true, v), 0);
	b.e.h.type = JT_EV_BRK;
	assert_int_equal(jt_perf_view(&b.e.h, len, true, v), 0);
}

/* A file's mapping: its path, device, inode, and offset in bytes. */
static void test_file_mapping_and_mprotect_over_two_vmas(void **state)
{
	struct jt_perf_view v[2];
	struct ev b;
	size_t len = map_ev(&b, JT_EV_MPROTECT, "/usr/lib/libx.so");

	b.e.result = 0;
	set_vma(&b.e.vma, 0x20000, 0x23000, VM_RX, 2);
	set_vma(&b.e.vma_last, 0x23000, 0x25000, VM_RX, 5);
	assert_int_equal(jt_perf_view(&b.e.h, len, false, v), 2);
	check_name(&v[0], "/usr/lib/libx.so");
	assert_int_equal(v[0].m.pgoff, 0x2000);
	assert_int_equal(v[0].m.maj, 8);
	assert_int_equal(v[0].m.min, 3);
	assert_int_equal(v[0].m.ino, 77);
	/* the last VMA's offset follows on: the same file */
	check_name(&v[1], "/usr/lib/libx.so");
	assert_int_equal(v[1].m.start, 0x23000);
	assert_int_equal(v[1].m.pgoff, 0x5000);
	assert_int_equal(v[1].m.ino, 77);
	/* it does not: anonymous, with no device or inode */
	b.e.vma_last.pgoff = 0x23;
	assert_int_equal(jt_perf_view(&b.e.h, len, false, v), 2);
	check_name(&v[1], "//anon");
	assert_int_equal(v[1].m.ino, 0);
	assert_int_equal(v[1].m.maj, 0);
	/* only the executable one without -d */
	b.e.vma.flags = VM_RW;
	assert_int_equal(jt_perf_view(&b.e.h, len, false, v), 1);
	assert_int_equal(v[0].m.start, 0x23000);
	/* a path longer than the record holds: none */
	assert_int_equal(jt_perf_view(&b.e.h, len - 1, true, v), 0);
	assert_int_equal(jt_perf_view(&b.e.h, sizeof(b.e) - 1, true, v), 0);
}

/* The exec snapshot: vdso, heap and stack named as perf names them. */
static void test_exec_snapshot_names(void **state)
{
	struct jt_perf_view v[2];
	struct ev b;
	size_t len = map_ev(&b, JT_EV_VMA, NULL);
	const uint64_t start_brk = 0x60000, brk = 0x62000;

	b.e.args[0] = start_brk;
	b.e.args[1] = brk;
	b.e.args[2] = 0x7fff0100; /* start_stack */
	b.e.args[3] = 0x70000;	  /* vdso */
	set_vma(&b.e.vma, 0x70000, 0x72000, VM_RX, 0);
	b.e.vma_last = b.e.vma;
	assert_int_equal(jt_perf_view(&b.e.h, len, false, v), 1);
	check_name(&v[0], "[vdso]");
	set_vma(&b.e.vma, start_brk, brk, VM_RW, start_brk >> 12);
	assert_int_equal(jt_perf_view(&b.e.h, len, false, v), 0);
	assert_int_equal(jt_perf_view(&b.e.h, len, true, v), 1);
	check_name(&v[0], "[heap]");
	/* the VMA just below an empty heap is not it */
	b.e.args[1] = start_brk;
	set_vma(&b.e.vma, 0x5f000, start_brk, VM_RW, 0x5f);
	assert_int_equal(jt_perf_view(&b.e.h, len, true, v), 1);
	check_name(&v[0], "//anon");
	set_vma(&b.e.vma, 0x7ffe0000, 0x7fff1000, VM_RW, 0x7ffe0);
	assert_int_equal(jt_perf_view(&b.e.h, len, true, v), 1);
	check_name(&v[0], "[stack]");
	/* an attach's /proc snapshot and a busy lookup's read: not perf's */
	b.e.flags = JT_MF_SNAP_PROC;
	assert_int_equal(jt_perf_view(&b.e.h, len, true, v), 0);
	b.e.flags = JT_MF_VMA_REREAD;
	assert_int_equal(jt_perf_view(&b.e.h, len, true, v), 0);
}

/* Made, then read back by the views' parser, for two sample types. */
static void test_record_reads_back(void **state)
{
	const uint64_t types[] = {
		PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME |
			PERF_SAMPLE_CPU | PERF_SAMPLE_PERIOD,
		PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_TID | PERF_SAMPLE_TIME |
			PERF_SAMPLE_ID | PERF_SAMPLE_STREAM_ID |
			PERF_SAMPLE_CPU | PERF_SAMPLE_ADDR,
	};
	struct jt_sample_id id = { 40, 41, 123456789, 3 }, got;
	struct jt_perf_view v[2];
	unsigned char buf[512];
	struct jt_mmap2 m;
	struct ev b;
	size_t len = map_ev(&b, JT_EV_MMAP, "/tmp/seven"), n;
	unsigned int i;

	b.e.result = 0x30000;
	set_vma(&b.e.vma, 0x30000, 0x31000, VM_RX, 1);
	b.e.vma_last = b.e.vma;
	assert_int_equal(jt_perf_view(&b.e.h, len, false, v), 1);
	for (i = 0; i < 2; i++) {
		n = jt_perf_mmap2_make(buf, sizeof(buf), &v[0].m, v[0].misc,
				       &id, types[i]);
		/* header, 64 bytes, "/tmp/seven" padded to 16, the ids */
		assert_int_equal(
			n, 8 + 64 + 16 +
				   8 * __builtin_popcountll(
					       types[i] & ~(PERF_SAMPLE_IP |
							    PERF_SAMPLE_PERIOD |
							    PERF_SAMPLE_ADDR)));
		assert_int_equal(n % 8, 0);
		assert_int_equal(jt_perf_mmap2(buf, n, &m), 0);
		assert_int_equal(m.start, 0x30000);
		assert_int_equal(m.len, 0x1000);
		assert_int_equal(m.pgoff, 0x1000);
		assert_int_equal(m.ino, 77);
		assert_int_equal(m.prot, PROT_READ | PROT_EXEC);
		assert_int_equal(m.filename_len, strlen("/tmp/seven"));
		assert_string_equal(m.filename, "/tmp/seven");
		assert_int_equal(jt_perf_sample_id(buf, n, types[i], &got), 0);
		assert_int_equal(got.pid, 40);
		assert_int_equal(got.tid, 41);
		assert_int_equal(got.time, 123456789);
		assert_int_equal(got.cpu, 3);
		assert_int_equal(jt_perf_time(buf, n, types[i]), 123456789);
		/* no room: nothing written */
		assert_int_equal(jt_perf_mmap2_make(buf, n - 1, &v[0].m,
						    v[0].misc, &id, types[i]),
				 0);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_mmap_gives_its_merged_vma),
		cmocka_unit_test(test_file_mapping_and_mprotect_over_two_vmas),
		cmocka_unit_test(test_exec_snapshot_names),
		cmocka_unit_test(test_record_reads_back),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
