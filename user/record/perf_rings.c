// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include "jittrace.h"
#include "lib/cli.h"
#include "lib/perf_rec.h"
#include "lib/reserve.h"
#include "record/arch.h"
#include "record/perf_rings.h"
#include "unwind/regs.h"

static const struct {
	const char *name;
	uint32_t type;
	uint64_t config;
} events[] = {
	{ "cycles", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES },
	{ "instructions", PERF_TYPE_HARDWARE, PERF_COUNT_HW_INSTRUCTIONS },
	{ "cache-misses", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CACHE_MISSES },
	{ "branch-misses", PERF_TYPE_HARDWARE, PERF_COUNT_HW_BRANCH_MISSES },
	{ "cpu-clock", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_CLOCK },
	{ "task-clock", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_TASK_CLOCK },
	{ "page-faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS },
	{ "faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS },
	{ "minor-faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS_MIN },
	{ "major-faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS_MAJ },
	{ "context-switches", PERF_TYPE_SOFTWARE,
	  PERF_COUNT_SW_CONTEXT_SWITCHES },
};

int jt_perf_event_attr(const char *name, struct perf_event_attr *attr)
{
	size_t i;

	for (i = 0; i < sizeof(events) / sizeof(events[0]); i++) {
		if (strcmp(events[i].name, name))
			continue;
		attr->type = events[i].type;
		attr->config = events[i].config;
		return 0;
	}
	return -ENOENT;
}

static int sys_perf_event_open(struct perf_event_attr *a, pid_t pid, int cpu)
{
	int fd = syscall(SYS_perf_event_open, a, pid, cpu, -1,
			 PERF_FLAG_FD_CLOEXEC);

	/* Before 6.0: no PERF_FORMAT_LOST; LOST records alone count. */
	if (fd < 0 && errno == EINVAL && a->read_format) {
		a->read_format = 0;
		fd = syscall(SYS_perf_event_open, a, pid, cpu, -1,
			     PERF_FLAG_FD_CLOEXEC);
	}
	return fd;
}

static void base_attr(struct perf_event_attr *a, const struct jt_perf_opts *o,
		      bool per_task, bool enable_on_exec)
{
	a->size = sizeof(*a);
	a->sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME |
			 PERF_SAMPLE_CPU | PERF_SAMPLE_PERIOD;
	if (o->data_addr)
		a->sample_type |= PERF_SAMPLE_ADDR;
	if (o->callchain)
		a->sample_type |= PERF_SAMPLE_CALLCHAIN;
	/* As perf --call-graph dwarf: the kernel's chain, user regs + stack. */
	if (o->callgraph == JT_CG_DWARF) {
		a->sample_type |=
			PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER;
		a->exclude_callchain_user = 1;
		a->sample_regs_user = JT_UW_PERF_MASK;
		a->sample_stack_user = o->stack_size;
	}
	if (o->period) {
		a->sample_period = o->period;
	} else {
		a->freq = 1;
		a->sample_freq = o->freq;
	}
	a->disabled = 1;
	a->enable_on_exec = enable_on_exec;
	a->inherit = per_task;
	/*
	 * No mmap or mmap2: perf's own MMAP2 records are made from the BPF
	 * events, which carry the same kernel VMAs (model/perf_view.c).
	 * Asked of the kernel, they cost every mmap and mprotect of a
	 * traced process a record built and filtered in perf_event_mmap(),
	 * executable or not: a third of the mmap loop's overhead.
	 */
	a->comm = 1;
	a->comm_exec = 1;
	a->task = 1;
	a->sample_id_all = 1;
	/* The clock bpf_ktime_get_ns() and jitdump use: times compare. */
	a->use_clockid = 1;
	a->clockid = CLOCK_MONOTONIC;
	/*
	 * The kernel writes a LOST record only when it next writes to that
	 * ring, which after the last event never happens: read its own
	 * per-event count instead (6.0+, PERF_FORMAT_LOST).
	 */
	a->read_format = PERF_FORMAT_LOST;
}

static int add_fd(struct jt_perf *p, int fd)
{
	if (jt_reserve(&p->fds, &p->fds_cap, p->nfds + 1, sizeof(*p->fds)))
		return -ENOMEM;
	p->fds[p->nfds++] = fd;
	return 0;
}

static int map_ring(struct jt_perf *p, int fd, int cpu)
{
	size_t size = (p->pages + 1) * sysconf(_SC_PAGESIZE);
	void *base;

	if (jt_reserve(&p->rings, &p->rings_cap, p->nrings + 1,
		       sizeof(*p->rings)))
		return -ENOMEM;
	base = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (base == MAP_FAILED)
		return -errno;
	p->rings[p->nrings++] = (struct jt_ring){ fd, base, size, cpu };
	return 0;
}

/* One event for (pid, cpu); the first per CPU owns the ring. */
static int open_one(struct jt_perf *p, pid_t pid, int cpu, int ring_fd)
{
	int fd = sys_perf_event_open(&p->attr, pid, cpu), err;

	if (fd < 0)
		return -errno;
	err = add_fd(p, fd);
	if (err)
		return err;
	if (ring_fd < 0)
		return map_ring(p, fd, cpu);
	if (ioctl(fd, PERF_EVENT_IOC_SET_OUTPUT, ring_fd))
		return -errno;
	return 0;
}

static int open_all(struct jt_perf *p, const pid_t *pids, int npids)
{
	int ncpu = sysconf(_SC_NPROCESSORS_ONLN), cpu, i, err;

	for (cpu = 0; cpu < ncpu; cpu++) {
		int ring_fd = -1;

		for (i = 0; i < (npids ? npids : 1); i++) {
			err = open_one(p, npids ? pids[i] : -1, cpu, ring_fd);
			/* A thread that exited since we listed it. */
			if (err == -ESRCH && npids > 1)
				continue;
			if (err)
				return err;
			if (ring_fd < 0)
				ring_fd = p->rings[p->nrings - 1].fd;
		}
	}
	return 0;
}

static bool no_pmu(int err)
{
	return err == -ENOENT || err == -ENODEV || err == -EOPNOTSUPP ||
	       err == -EINVAL;
}

int jt_perf_open(struct jt_perf *p, const struct jt_perf_opts *o,
		 const pid_t *pids, int npids, bool enable_on_exec)
{
	const char *ev = o->event ? o->event : "cycles";
	int err;

	memset(p, 0, sizeof(*p));
	p->pages = o->pages;
	p->tmp = malloc(65536);
	p->delta = malloc(65536);
	if (!p->tmp || !p->delta)
		return -ENOMEM;
	base_attr(&p->attr, o, npids > 0, enable_on_exec);
	jt_stackdelta_init(&p->deltas, p->attr.sample_type,
			   p->attr.sample_regs_user, JT_UW_PERF_SP);
	if (jt_perf_event_attr(ev, &p->attr)) {
		fprintf(stderr, "jittrace: unknown event '%s'\n", ev);
		return -EINVAL;
	}
	p->event = ev;
	err = open_all(p, pids, npids);
	if (err && no_pmu(err) && !strcmp(ev, "cycles")) {
		fprintf(stderr,
			"jittrace: no hardware PMU here (cycles: %s); "
			"sampling cpu-clock instead\n",
			strerror(-err));
		jt_perf_close(p);
		p->pages = o->pages;
		p->tmp = malloc(65536);
		p->delta = malloc(65536);
		if (!p->tmp || !p->delta)
			return -ENOMEM;
		base_attr(&p->attr, o, npids > 0, enable_on_exec);
		jt_stackdelta_init(&p->deltas, p->attr.sample_type,
				   p->attr.sample_regs_user, JT_UW_PERF_SP);
		jt_perf_event_attr("cpu-clock", &p->attr);
		p->event = "cpu-clock";
		err = open_all(p, pids, npids);
	}
	if (err && no_pmu(err))
		fprintf(stderr,
			"jittrace: event '%s' is not supported here: %s\n",
			p->event, strerror(-err));
	return err;
}

int jt_perf_tsc_meta(const struct jt_perf *p, char *buf, size_t len)
{
	const struct perf_event_mmap_page *pg;
	struct timespec ts;
	uint64_t tsc, perf_ns, q, r;

	if (!p->nrings)
		return 0;
	pg = p->rings[0].base;
	if (!pg->cap_user_time_zero || pg->time_shift >= 64)
		return 0;
	tsc = jt_user_counter();
	clock_gettime(CLOCK_MONOTONIC, &ts);
	q = tsc >> pg->time_shift;
	r = tsc & ((1ULL << pg->time_shift) - 1);
	perf_ns = pg->time_zero + q * pg->time_mult +
		  ((r * pg->time_mult) >> pg->time_shift);
	return snprintf(
		buf, len,
		"tsc.zero=%llu\ntsc.mult=%u\ntsc.shift=%u\n"
		"tsc.mono_offset=%lld\n",
		(unsigned long long)pg->time_zero, pg->time_mult,
		pg->time_shift,
		(long long)(ts.tv_sec * 1000000000LL + ts.tv_nsec - perf_ns));
}

int jt_perf_enable(struct jt_perf *p)
{
	int i;

	for (i = 0; i < p->nfds; i++)
		if (ioctl(p->fds[i], PERF_EVENT_IOC_ENABLE, 0))
			return -errno;
	return 0;
}

/*
 * A sample with a user stack: cut to what the kernel filled, then stored
 * as what changed since the thread's last sample when that is smaller.
 */
static void write_stack_sample(struct jt_perf *p, struct jt_writer *w,
			       const struct jt_perf_rec *pr, const void *rec,
			       size_t size)
{
	struct {
		struct jt_perf_rec pr;
		struct jt_delta_hdr dh;
	} hd = { *pr };
	size_t len, olen;

	if (rec != p->tmp)
		memcpy(p->tmp, rec, size);
	len = jt_perf_sample_trim(p->tmp, size, p->attr.sample_type,
				  p->attr.sample_regs_user);
	if (jt_stackdelta_encode(&p->deltas, p->tmp, len, p->delta, &olen,
				 &hd.dh)) {
		jt_writer_add(w, JT_REC_PERF_DELTA, &hd, sizeof(hd), p->delta,
			      olen);
		return;
	}
	jt_writer_add(w, JT_REC_PERF, pr, sizeof(*pr), p->tmp, len);
}

/* Writer errors are the writer's to count: the ring must keep moving. */
static void drain_ring(struct jt_perf *p, struct jt_ring *r,
		       struct jt_writer *w)
{
	struct perf_event_mmap_page *pg = r->base;
	unsigned char *data = (unsigned char *)r->base + pg->data_offset;
	uint64_t size = pg->data_size;
	uint64_t head = __atomic_load_n(&pg->data_head, __ATOMIC_ACQUIRE);
	uint64_t tail = pg->data_tail;
	struct jt_perf_rec pr = { .cpu = r->cpu };

	while (tail < head) {
		struct perf_event_header h;
		uint64_t off = tail % size, i;
		size_t len;
		const void *rec = data + off;

		for (i = 0; i < sizeof(h); i++)
			((unsigned char *)&h)[i] = data[(off + i) % size];
		if (h.size < sizeof(h))
			break; /* cannot happen; never spin on it */
		if (off + h.size > size) {
			for (i = 0; i < h.size; i++)
				p->tmp[i] = data[(off + i) % size];
			rec = p->tmp;
		}
		if (h.type == PERF_RECORD_LOST)
			p->lost_records += ((const uint64_t *)rec)[2];
		len = h.size;
		if (h.type == PERF_RECORD_SAMPLE &&
		    (p->attr.sample_type & PERF_SAMPLE_STACK_USER))
			write_stack_sample(p, w, &pr, rec, h.size);
		else
			jt_writer_add(w, JT_REC_PERF, &pr, sizeof(pr), rec,
				      len);
		if (h.type == PERF_RECORD_EXIT && len >= sizeof(h) + 16)
			jt_stackdelta_forget(&p->deltas,
					     ((const uint32_t *)rec)[4]);
		/* A record lost to the file: deltas must not lean on it. */
		if (w->err)
			jt_stackdelta_reset(&p->deltas);
		p->records++;
		tail += h.size;
	}
	__atomic_store_n(&pg->data_tail, tail, __ATOMIC_RELEASE);
}

void jt_perf_drain(struct jt_perf *p, struct jt_writer *w)
{
	int i;

	for (i = 0; i < p->nrings; i++)
		drain_ring(p, &p->rings[i], w);
}

/*
 * Inherited events count their losses on the parent (the fd we hold),
 * so the sum over our fds is every sample the rings refused.
 */
uint64_t jt_perf_lost(const struct jt_perf *p)
{
	uint64_t kernel = 0;
	struct {
		uint64_t value;
		uint64_t lost;
	} v;
	int i;

	if (!(p->attr.read_format & PERF_FORMAT_LOST))
		return p->lost_records;
	for (i = 0; i < p->nfds; i++)
		if (read(p->fds[i], &v, sizeof(v)) == sizeof(v))
			kernel += v.lost;
	return kernel > p->lost_records ? kernel : p->lost_records;
}

void jt_perf_close(struct jt_perf *p)
{
	int i;

	for (i = 0; i < p->nrings; i++)
		munmap(p->rings[i].base, p->rings[i].mmap_size);
	for (i = 0; i < p->nfds; i++)
		close(p->fds[i]);
	free(p->rings);
	free(p->fds);
	free(p->tmp);
	free(p->delta);
	jt_stackdelta_free(&p->deltas);
	memset(p, 0, sizeof(*p));
}
