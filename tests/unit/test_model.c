// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The model fed BPF events as the recorder stores them. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>
#include <sys/mman.h>
#include "model/model.h"

#define P(n) (0x7f0000000000ULL + (n)*4096ULL)

static uint64_t clock_ns = 1000;

static void hdr(struct jt_hdr *h, uint16_t type, uint32_t size, uint32_t pid,
		uint32_t tid)
{
	h->type = type;
	h->size = size;
	h->pid = pid;
	h->tid = tid;
	h->time = clock_ns++;
}

static void mmap_ev(struct jt_model *m, uint32_t pid, uint32_t tid, int page,
		    int pages, uint32_t prot, uint32_t flags, const char *path)
{
	struct {
		struct jt_map_event ev;
		char path[64];
	} e = {};

	e.ev.args[1] = pages * 4096;
	e.ev.args[2] = prot;
	e.ev.args[3] = flags;
	e.ev.result = P(page);
	e.ev.vma = (struct jt_vma){ P(page), P(page + pages), 0, 0 };
	e.ev.vma_last = e.ev.vma;
	if (path) {
		e.ev.path_len = strlen(path) + 1;
		strcpy(e.path, path);
	}
	hdr(&e.ev.h, JT_EV_MMAP, sizeof(e.ev) + e.ev.path_len, pid, tid);
	jt_model_apply(m, &e.ev.h, e.ev.h.size);
}

static void simple(struct jt_model *m, uint16_t type, uint32_t pid, uint64_t a0,
		   uint64_t a1, uint64_t a2, int64_t result)
{
	struct jt_map_event ev = {};

	ev.args[0] = a0;
	ev.args[1] = a1;
	ev.args[2] = a2;
	ev.result = result;
	hdr(&ev.h, type, sizeof(ev), pid, pid);
	jt_model_apply(m, &ev.h, sizeof(ev));
}

static void fork_ev(struct jt_model *m, uint32_t parent, uint32_t child,
		    uint32_t flags)
{
	struct jt_fork_event ev = { .child_pid = child,
				    .child_tid = child,
				    .flags = flags };

	if (flags & JT_FORK_THREAD)
		ev.child_pid = parent;
	hdr(&ev.h, JT_EV_FORK, sizeof(ev), parent, parent);
	jt_model_apply(m, &ev.h, sizeof(ev));
}

static void exec_ev(struct jt_model *m, uint32_t pid, const char *comm)
{
	struct jt_exec_event ev = {};

	strncpy(ev.comm, comm, sizeof(ev.comm) - 1);
	hdr(&ev.h, JT_EV_EXEC, sizeof(ev), pid, pid);
	jt_model_apply(m, &ev.h, sizeof(ev));
}

static void vma_ev(struct jt_model *m, uint32_t pid, int page, int pages,
		   uint64_t vm_flags)
{
	struct jt_map_event ev = {};

	ev.vma = (struct jt_vma){ P(page), P(page + pages), vm_flags, 0 };
	hdr(&ev.h, JT_EV_VMA, sizeof(ev), pid, pid);
	jt_model_apply(m, &ev.h, sizeof(ev));
}

static void exit_ev(struct jt_model *m, uint32_t pid, uint32_t tid, int group)
{
	struct jt_exit_event ev = { .group_dead = group };

	hdr(&ev.h, JT_EV_EXIT, sizeof(ev), pid, tid);
	jt_model_apply(m, &ev.h, sizeof(ev));
}

static void test_fork_then_exec(void **state)
{
	struct jt_model m;
	struct jt_proc *parent, *child;

	jt_model_init(&m);
	exec_ev(&m, 10, "parent");
	vma_ev(&m, 10, 0, 2, 0x75);
	mmap_ev(&m, 10, 10, 5, 1, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, NULL);
	fork_ev(&m, 10, 11, 0);
	child = jt_model_find(&m, 11);
	assert_non_null(child);
	assert_string_equal(child->comm, "parent");
	assert_int_equal(jt_aspace_count(child->as), 2);
	/* The child's map is a copy: its munmap leaves the parent alone. */
	simple(&m, JT_EV_MUNMAP, 11, P(5), 4096, 0, 0);
	assert_int_equal(jt_aspace_count(child->as), 1);
	parent = jt_model_find(&m, 10);
	assert_int_equal(jt_aspace_count(parent->as), 2);
	exec_ev(&m, 11, "child");
	vma_ev(&m, 11, 40, 3, 0x71);
	assert_int_equal(jt_aspace_count(child->as), 1);
	assert_int_equal(jt_aspace_nth(child->as, 0)->start, P(40));
	assert_string_equal(child->comm, "child");
	assert_int_equal(jt_aspace_count(parent->as), 2);
	jt_model_free(&m);
}

static void test_threads_share(void **state)
{
	struct jt_model m;
	const struct jt_region *r;

	jt_model_init(&m);
	exec_ev(&m, 20, "mt");
	fork_ev(&m, 20, 21, JT_FORK_THREAD | JT_FORK_VM);
	fork_ev(&m, 20, 22, JT_FORK_THREAD | JT_FORK_VM);
	assert_int_equal(m.nprocs, 1);
	mmap_ev(&m, 20, 21, 1, 1, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, NULL);
	mmap_ev(&m, 20, 22, 2, 1, PROT_READ | PROT_EXEC,
		MAP_PRIVATE | MAP_ANONYMOUS, NULL);
	r = jt_model_lookup(&m, 20, P(2));
	assert_non_null(r);
	assert_int_equal(r->prot, PROT_READ | PROT_EXEC);
	assert_int_equal(jt_aspace_count(jt_model_find(&m, 20)->as), 2);
	/* A thread's exit is not the process's. */
	exit_ev(&m, 20, 21, 0);
	assert_int_equal(jt_model_find(&m, 20)->dead_ns, 0);
	exit_ev(&m, 20, 20, 1);
	assert_true(jt_model_find(&m, 20)->dead_ns > 0);
	/* The map at death stays for the views. */
	assert_non_null(jt_model_lookup(&m, 20, P(2)));
	jt_model_free(&m);
}

static void test_vfork_shares_until_exec(void **state)
{
	struct jt_model m;

	jt_model_init(&m);
	exec_ev(&m, 30, "sh");
	mmap_ev(&m, 30, 30, 1, 1, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, NULL);
	fork_ev(&m, 30, 31, JT_FORK_VM);
	assert_ptr_equal(jt_model_find(&m, 31)->as, jt_model_find(&m, 30)->as);
	exec_ev(&m, 31, "true");
	assert_ptr_not_equal(jt_model_find(&m, 31)->as,
			     jt_model_find(&m, 30)->as);
	assert_int_equal(jt_aspace_count(jt_model_find(&m, 30)->as), 1);
	jt_model_free(&m);
}

static void test_file_mapping_and_kinds(void **state)
{
	struct jt_model m;
	const struct jt_region *r;

	jt_model_init(&m);
	mmap_ev(&m, 40, 40, 1, 2, PROT_READ, MAP_PRIVATE, "/lib/libx.so");
	mmap_ev(&m, 40, 40, 3, 1, PROT_READ | PROT_WRITE,
		MAP_SHARED | MAP_ANONYMOUS, "/dev/zero");
	r = jt_model_lookup(&m, 40, P(2));
	assert_int_equal(r->kind, JT_RK_FILE);
	assert_string_equal(r->path, "/lib/libx.so");
	r = jt_model_lookup(&m, 40, P(3));
	assert_int_equal(r->kind, JT_RK_SHARED_ANON);
	assert_null(r->path);
	jt_model_free(&m);
}

static void test_failed_calls_change_nothing(void **state)
{
	struct jt_model m;

	jt_model_init(&m);
	mmap_ev(&m, 50, 50, 1, 2, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, NULL);
	simple(&m, JT_EV_MUNMAP, 50, P(1), 4096, 0, -22);
	simple(&m, JT_EV_MPROTECT, 50, P(1), 4096, PROT_NONE, -12);
	assert_int_equal(jt_aspace_count(jt_model_find(&m, 50)->as), 1);
	assert_int_equal(jt_aspace_nth(jt_model_find(&m, 50)->as, 0)->prot,
			 PROT_READ);
	jt_model_free(&m);
}

static void test_malformed_events_counted(void **state)
{
	struct jt_model m;
	struct jt_map_event ev = {};

	jt_model_init(&m);
	hdr(&ev.h, JT_EV_MMAP, sizeof(ev), 60, 60);
	jt_model_apply(&m, &ev.h, sizeof(ev) - 1); /* size disagrees */
	ev.path_len = 1000; /* path past the record's end */
	jt_model_apply(&m, &ev.h, sizeof(ev));
	ev.h.type = 200; /* unknown type */
	ev.path_len = 0;
	jt_model_apply(&m, &ev.h, sizeof(ev));
	assert_int_equal(m.stats.malformed, 3);
	assert_int_equal(m.nprocs, 0);
	jt_model_free(&m);
}

static void busy_mmap(struct jt_model *m, uint32_t pid, uint32_t tid, int page)
{
	struct jt_map_event ev = {};

	ev.args[1] = 4096;
	ev.args[2] = PROT_READ;
	ev.args[3] = MAP_PRIVATE | MAP_ANONYMOUS;
	ev.result = P(page);
	ev.flags = JT_MF_VMA_BUSY; /* BPF saw no VMA: all zero */
	hdr(&ev.h, JT_EV_MMAP, sizeof(ev), pid, tid);
	jt_model_apply(m, &ev.h, sizeof(ev));
}

/* mmap_lock contended: the VMA comes from the same thread's MMAP2. */
static void test_busy_vma_recovered_from_perf(void **state)
{
	struct jt_model m;
	const struct jt_region *r;

	jt_model_init(&m);
	exec_ev(&m, 80, "busy");
	mmap_ev(&m, 80, 80, 10, 1, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS,
		NULL);
	/* Thread 81's mmap merged with page 10; thread 82 mapped elsewhere. */
	jt_model_perf_vma(&m, 80, 81, P(9), P(11));
	jt_model_perf_vma(&m, 80, 82, P(20), P(21));
	busy_mmap(&m, 80, 81, 9);
	r = jt_model_lookup(&m, 80, P(9));
	assert_int_equal(jt_aspace_kvma(jt_model_find(&m, 80)->as, r).start,
			 P(9));
	assert_int_equal(jt_aspace_kvma(jt_model_find(&m, 80)->as, r).end,
			 P(11));
	assert_int_equal(jt_aspace_kvma(jt_model_find(&m, 80)->as,
					jt_model_lookup(&m, 80, P(10)))
				 .start,
			 P(9));
	/* No MMAP2 of thread 83 covers page 30: the VMA stays unknown. */
	busy_mmap(&m, 80, 83, 30);
	assert_int_equal(jt_aspace_kvma(jt_model_find(&m, 80)->as,
					jt_model_lookup(&m, 80, P(30)))
				 .end,
			 0);
	assert_int_equal(m.stats.vma_busy, 2);
	assert_int_equal(m.stats.vma_from_perf, 1);
	jt_model_free(&m);
}

/*
 * A lookup that stayed busy is read again from /proc: the VMA it gives is
 * observed over the regions in it, and makes no region of its own.
 */
static void test_busy_vma_read_again(void **state)
{
	struct jt_model m;
	struct jt_map_event ev = {};
	const struct jt_aspace *as;

	jt_model_init(&m);
	exec_ev(&m, 90, "busy");
	busy_mmap(&m, 90, 91, 9);
	mmap_ev(&m, 90, 90, 10, 1, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS,
		NULL);
	as = jt_model_find(&m, 90)->as;
	assert_int_equal(jt_aspace_count(as), 2);
	assert_int_equal(jt_aspace_kvma(as, jt_model_lookup(&m, 90, P(9))).end,
			 0);
	/* /proc says pages 9-10 are one VMA, and 11 nothing. */
	ev.vma = (struct jt_vma){ P(9), P(11), 1 /* VM_READ */, 0 };
	ev.flags = JT_MF_VMA_REREAD;
	hdr(&ev.h, JT_EV_VMA, sizeof(ev), 90, 90);
	jt_model_apply(&m, &ev.h, sizeof(ev));
	assert_int_equal(jt_aspace_count(as), 2);
	assert_int_equal(
		jt_aspace_kvma(as, jt_model_lookup(&m, 90, P(9))).start, P(9));
	assert_int_equal(jt_aspace_kvma(as, jt_model_lookup(&m, 90, P(10))).end,
			 P(11));
	assert_int_equal(jt_model_lookup(&m, 90, P(9))->origin, JT_EV_MMAP);
	jt_model_free(&m);
}

static void exec_load(struct jt_model *m, uint32_t pid, uint16_t type, int page,
		      int pages)
{
	struct jt_map_event ev = {};

	ev.args[0] = P(page);
	ev.args[1] = pages * 4096;
	ev.args[2] = PROT_READ;
	ev.args[3] = MAP_PRIVATE | MAP_FIXED;
	ev.result = type == JT_EV_MMAP ? (int64_t)P(page) : 0;
	ev.flags = JT_MF_EXEC_LOAD;
	hdr(&ev.h, type, sizeof(ev), pid, pid);
	jt_model_apply(m, &ev.h, sizeof(ev));
}

static void exec_cow(struct jt_model *m, uint32_t pid, int page)
{
	struct jt_cow_event ev = { .page = P(page),
				   .kind = JT_COW_ANON_WP,
				   .flags = JT_MF_EXEC_LOAD };

	hdr(&ev.h, JT_EV_COW, sizeof(ev), pid, pid);
	jt_model_apply(m, &ev.h, sizeof(ev));
}

/*
 * The kernel tier sees the ELF loader map and unmap in the new mm before
 * the EXEC that replaces the old one: neither may touch the old image.
 */
static void test_execve_mappings_leave_the_old_image(void **state)
{
	struct jt_model m;
	struct jt_proc *p;

	jt_model_init(&m);
	exec_ev(&m, 90, "old");
	vma_ev(&m, 90, 0, 4, 0x73);
	exec_load(&m, 90, JT_EV_MMAP, 2, 8);
	exec_load(&m, 90, JT_EV_MUNMAP, 0, 4);
	exec_cow(&m, 90, 1);
	p = jt_model_find(&m, 90);
	assert_int_equal(jt_aspace_count(p->as), 1);
	assert_int_equal(jt_aspace_nth(p->as, 0)->start, P(0));
	assert_int_equal(jt_aspace_nth(p->as, 0)->end, P(4));
	assert_int_equal(m.stats.exec_loads, 2);
	assert_null(jt_aspace_cowpage(p->as, P(1)));
	exec_ev(&m, 90, "new");
	vma_ev(&m, 90, 2, 8, 0x71);
	assert_int_equal(jt_aspace_count(p->as), 1);
	assert_int_equal(jt_aspace_nth(p->as, 0)->start, P(2));
	jt_model_free(&m);
}

/* A VMA of the exec snapshot: it carries the EXEC's time. */
static void snap_ev(struct jt_model *m, uint32_t pid, int page, int pages,
		    uint64_t vm_flags)
{
	clock_ns--;
	vma_ev(m, pid, page, pages, vm_flags);
}

static void exec_zeroed(struct jt_model *m, uint32_t pid, int page)
{
	struct jt_cow_event ev = { .page = P(page),
				   .kind = JT_COW_FILE_FIRST,
				   .flags = JT_MF_EXEC_LOAD };

	hdr(&ev.h, JT_EV_COW, sizeof(ev), pid, pid);
	jt_model_apply(m, &ev.h, sizeof(ev));
}

/*
 * The ELF loader zeroes the partial .bss page of the new image (padzero)
 * before the EXEC event: the page is the new image's, private from its
 * first instruction, and never the old image's. One no region takes is
 * counted when the process exits.
 */
static void test_execve_zeroed_pages_go_to_the_new_image(void **state)
{
	const struct jt_cowpage *cp;
	struct jt_model m;
	struct jt_proc *p;

	jt_model_init(&m);
	exec_zeroed(&m, 92, 5); /* the first exec: met here first */
	exec_ev(&m, 92, "first");
	snap_ev(&m, 92, 4, 4, 0x73);
	p = jt_model_find(&m, 92);
	cp = jt_aspace_cowpage(p->as, P(5));
	assert_non_null(cp);
	assert_true(cp->exec_load);
	exec_zeroed(&m, 92, 6);
	exec_zeroed(&m, 92, 40);
	assert_null(jt_aspace_cowpage(p->as, P(6)));
	exec_ev(&m, 92, "second");
	snap_ev(&m, 92, 4, 4, 0x73);
	assert_null(jt_aspace_cowpage(p->as, P(5)));
	cp = jt_aspace_cowpage(p->as, P(6));
	assert_non_null(cp);
	assert_true(cp->exec_load);
	assert_int_equal(cp->kind, JT_COW_FILE_FIRST);
	/* A later VMA of another time is no snapshot: it takes nothing. */
	vma_ev(&m, 92, 40, 1, 0x73);
	assert_null(jt_aspace_cowpage(p->as, P(40)));
	assert_int_equal(m.stats.exec_cow_lost, 0);
	exit_ev(&m, 92, 92, 1);
	assert_int_equal(m.stats.exec_cow_lost, 1);
	jt_model_free(&m);
}

/* An exec that takes none of them, then another: the first's are lost. */
static void test_execve_zeroed_pages_are_bounded(void **state)
{
	struct jt_model m;
	int i;

	jt_model_init(&m);
	for (i = 0; i < 20; i++)
		exec_zeroed(&m, 93, 100 + i);
	assert_int_equal(m.stats.exec_cow_lost, 4);
	exec_ev(&m, 93, "new");
	snap_ev(&m, 93, 0, 4, 0x73);
	exec_zeroed(&m, 93, 1);
	exec_ev(&m, 93, "newer");
	assert_int_equal(m.stats.exec_cow_lost, 20);
	snap_ev(&m, 93, 0, 4, 0x73);
	assert_non_null(jt_aspace_cowpage(jt_model_find(&m, 93)->as, P(1)));
	jt_model_free(&m);
}

static void test_pid_reuse_keeps_old_process(void **state)
{
	struct jt_model m;

	jt_model_init(&m);
	exec_ev(&m, 70, "first");
	exit_ev(&m, 70, 70, 1);
	mmap_ev(&m, 70, 70, 1, 1, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, NULL);
	assert_int_equal(m.nprocs, 2);
	assert_string_equal(jt_model_nth(&m, 0)->comm, "first");
	assert_int_equal(jt_aspace_count(jt_model_nth(&m, 1)->as), 1);
	jt_model_free(&m);
}

static void user_cow(struct jt_model *m, uint32_t pid, uint32_t tid, int page,
		     uint16_t kind)
{
	struct jt_cow_event ev = { .page = P(page), .kind = kind };

	hdr(&ev.h, JT_EV_COW, sizeof(ev), pid, tid);
	jt_model_apply(m, &ev.h, sizeof(ev));
}

/*
 * A child's write to a page its parent wrote before the fork is its own
 * copy of a shared page. A fault the model cannot place is counted, by
 * why: no region holds the page, or no process is known.
 */
static void test_fork_shared_pages_and_cow_faults_not_placed(void **state)
{
	const struct jt_cowpage *cp;
	struct jt_model m;

	jt_model_init(&m);
	exec_ev(&m, 60, "cowdata");
	mmap_ev(&m, 60, 60, 0, 4, PROT_READ | PROT_WRITE, MAP_PRIVATE,
		"/lib/libjtdata.so");
	user_cow(&m, 60, 60, 1, JT_COW_FILE_FIRST);
	fork_ev(&m, 60, 61, 0);
	cp = jt_aspace_cowpage(jt_model_find(&m, 61)->as, P(1));
	assert_non_null(cp);
	assert_int_equal(cp->tid, 60);
	user_cow(&m, 61, 61, 1, JT_COW_FILE_WP);
	cp = jt_aspace_cowpage(jt_model_find(&m, 61)->as, P(1));
	assert_int_equal(cp->tid, 61);
	assert_int_equal(cp->fork_shared, 1);
	cp = jt_aspace_cowpage(jt_model_find(&m, 60)->as, P(1));
	assert_int_equal(cp->tid, 60);
	assert_int_equal(cp->fork_shared, 0);
	assert_int_equal(m.stats.cow_unmapped + m.stats.cow_no_proc, 0);
	user_cow(&m, 61, 61, 9, JT_COW_ANON_WP);
	user_cow(&m, 62, 62, 1, JT_COW_FILE_WP);
	user_cow(&m, 62, 62, 2, JT_COW_FILE_WP);
	assert_int_equal(m.stats.cow_unmapped, 1);
	assert_int_equal(m.stats.cow_no_proc, 2);
	jt_model_free(&m);
}

/*
 * A version 4 FORK has no euid: still valid, and says no euid. An EXEC's
 * euid trails its path, unaligned; a record cut short of it says none.
 */
static void test_fork_and_exec_euid(void **state)
{
	struct jt_fork_event f = { .child_pid = 9,
				   .flags = JT_FORK_EUID,
				   .child_euid = 65534 };
	struct {
		struct jt_exec_event e;
		char tail[8];
	} x = {};
	uint32_t euid = 7, v = 4242;
	size_t old = offsetof(struct jt_fork_event, child_euid);

	hdr(&f.h, JT_EV_FORK, sizeof(f), 1, 1);
	assert_true(jt_event_euid(&f.h, sizeof(f), &euid));
	assert_int_equal(euid, 65534);
	f.h.size = old;
	assert_true(jt_event_valid(&f.h, old));
	assert_false(jt_event_euid(&f.h, old, &euid));
	f.flags = 0;
	assert_false(jt_event_euid(&f.h, sizeof(f), &euid));

	x.e.path_len = 3;
	x.e.flags = JT_EXEC_EUID;
	memcpy(x.e.path, "/a", 3);
	memcpy(x.e.path + 3, &v, sizeof(v));
	hdr(&x.e.h, JT_EV_EXEC, sizeof(x.e) + 3 + sizeof(v), 1, 1);
	assert_true(jt_event_valid(&x.e.h, x.e.h.size));
	assert_true(jt_event_euid(&x.e.h, x.e.h.size, &euid));
	assert_int_equal(euid, 4242);
	assert_false(jt_event_euid(&x.e.h, x.e.h.size - 1, &euid));
	x.e.flags = 0;
	assert_false(jt_event_euid(&x.e.h, x.e.h.size, &euid));
	x.e.flags = JT_EXEC_EUID;
	x.e.path_len = 0xfffffff0;
	assert_false(jt_event_euid(&x.e.h, x.e.h.size, &euid));
	assert_int_equal(euid, 4242);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fork_then_exec),
		cmocka_unit_test(test_threads_share),
		cmocka_unit_test(test_vfork_shares_until_exec),
		cmocka_unit_test(test_file_mapping_and_kinds),
		cmocka_unit_test(test_failed_calls_change_nothing),
		cmocka_unit_test(test_malformed_events_counted),
		cmocka_unit_test(test_pid_reuse_keeps_old_process),
		cmocka_unit_test(test_busy_vma_recovered_from_perf),
		cmocka_unit_test(test_busy_vma_read_again),
		cmocka_unit_test(test_execve_mappings_leave_the_old_image),
		cmocka_unit_test(test_execve_zeroed_pages_go_to_the_new_image),
		cmocka_unit_test(test_execve_zeroed_pages_are_bounded),
		cmocka_unit_test(
			test_fork_shared_pages_and_cow_faults_not_placed),
		cmocka_unit_test(test_fork_and_exec_euid),
	};

	return cmocka_run_group_tests_name("model", tests, NULL, NULL);
}
