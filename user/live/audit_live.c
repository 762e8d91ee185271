// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * jittrace audit -p PID: the same questions asked of a running process,
 * without a recording: /proc/PID/maps and smaps for its mappings and
 * private copies, its perf-map for JIT symbols, /proc/PID/pagemap for
 * whether one page is private or shared, and why.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "jittrace.h"
#include "lib/fmt.h"
#include "lib/json.h"
#include "lib/procfile.h"
#include "lib/reserve.h"
#include "model/datasym.h"
#include "model/elfsyms.h"
#include "model/jitdump.h"
#include "live/audit_live.h"

#define CHUNK 65536

#define PM_PRESENT (1ULL << 63)
#define PM_SWAPPED (1ULL << 62)
#define PM_FILE_OR_SHARED_ANON (1ULL << 61)
#define PM_EXCLUSIVE (1ULL << 56)

struct vma {
	uint64_t start;
	uint64_t end;
	uint64_t offset; /* in the file */
	char perms[8];
	char path[512];
	uint64_t anon_kb; /* smaps "Anonymous:": pages copied on write */
};

struct live {
	pid_t pid;
	bool json;
	struct jt_strtab strs;
	struct jt_elfcache elf; /* the files as mapped, by map_files */
	struct jt_json j;
	int n; /* findings printed */
	struct vma *v;
	size_t nv;
	size_t cap;
};

static int read_smaps(struct live *l)
{
	char path[64], line[1024];
	struct vma *cur = NULL;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/smaps", l->pid);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		unsigned long long s, e, kb, off;
		char perms[8];
		int pos = 0;

		if (sscanf(line, "%llx-%llx %7s %llx %*x:%*x %*u %n", &s, &e,
			   perms, &off, &pos) == 4 &&
		    pos) {
			if (jt_reserve(&l->v, &l->cap, l->nv + 1,
				       sizeof(*l->v)))
				break;
			cur = &l->v[l->nv++];
			memset(cur, 0, sizeof(*cur));
			cur->start = s;
			cur->end = e;
			cur->offset = off;
			snprintf(cur->perms, sizeof(cur->perms), "%s", perms);
			snprintf(cur->path, sizeof(cur->path), "%s",
				 line + pos);
			cur->path[strcspn(cur->path, "\n")] = 0;
		} else if (cur &&
			   sscanf(line, "Anonymous: %llu kB", &kb) == 1) {
			cur->anon_kb = kb;
		}
	}
	fclose(f);
	return l->nv ? 0 : -ESRCH;
}

static const struct vma *vma_of(const struct live *l, uint64_t addr)
{
	size_t i;

	for (i = 0; i < l->nv; i++)
		if (l->v[i].start <= addr && addr < l->v[i].end)
			return &l->v[i];
	return NULL;
}

/*
 * Prints the finding's line, or opens its JSON object up to "detail":
 * the caller adds the detail's fields to what this returns, then calls
 * finding_end.
 */
static struct jt_json *finding(struct live *l, const char *kind, uint64_t start,
			       uint64_t end, const char *text)
{
	l->n++;
	if (!l->json) {
		printf("%-22s pid %-7d %012" PRIx64 "-%012" PRIx64 "  %s\n",
		       kind, l->pid, start, end, jt_tx(text));
		return NULL;
	}
	jt_json_object(&l->j);
	jt_json_str_field(&l->j, "kind", kind);
	jt_json_i64_field(&l->j, "pid", l->pid);
	jt_json_hex_field(&l->j, "start", start);
	jt_json_hex_field(&l->j, "end", end);
	jt_json_name(&l->j, "detail");
	jt_json_object(&l->j);
	return &l->j;
}

static void finding_end(struct jt_json *j)
{
	if (!j)
		return;
	jt_json_end(j);
	jt_json_end(j);
}

/*
 * The file v maps, opened through map_files: the very file mapped, even
 * if the path now names another. NULL when it is no ELF file. Parsed once
 * per file (dev and inode), not per mapping: a library mapped 500 times
 * is one parse.
 */
static const struct jt_elffile *mapped_elf(struct live *l, const struct vma *v)
{
	int fd = jt_proc_open_mapped(l->pid, v->start, v->end);
	struct jt_elffile *f = NULL;
	char key[64];
	const char *k;
	struct stat st;

	if (fd < 0)
		return NULL;
	if (!fstat(fd, &st)) {
		snprintf(key, sizeof(key), "file %llx:%llx",
			 (unsigned long long)st.st_dev,
			 (unsigned long long)st.st_ino);
		k = jt_intern(&l->strs, key, strlen(key));
		f = k ? jt_elf_get_fd(&l->elf, k, fd) : NULL;
	}
	close(fd);
	return f && f->ok ? f : NULL;
}

/* Whether each page of v is this process's own copy, from pagemap. */
static void private_pages(struct live *l, const struct vma *v, int fd,
			  void (*fn)(struct live *, const struct vma *,
				     uint64_t, uint64_t, void *),
			  void *ctx)
{
	uint64_t pm[512], addr = v->start;

	while (addr < v->end) {
		size_t want = (v->end - addr) / JT_PAGE_SIZE, i;
		ssize_t got;

		if (want > 512)
			want = 512;
		got = pread(fd, pm, want * 8, addr / JT_PAGE_SIZE * 8);
		if (got <= 0)
			return;
		for (i = 0; i < (size_t)got / 8; i++, addr += JT_PAGE_SIZE)
			/* Present and not the file's page, or swapped out. */
			if (((pm[i] & PM_PRESENT) &&
			     !(pm[i] & PM_FILE_OR_SHARED_ANON)) ||
			    (pm[i] & PM_SWAPPED))
				fn(l, v, addr, pm[i], ctx);
	}
}

struct page_list {
	const struct jt_elffile *elf;
	uint64_t n;
};

static void page_out(struct live *l, const struct vma *v, uint64_t addr,
		     uint64_t pm, void *ctx)
{
	/* A copy a fork relative still maps too is not this one's alone. */
	const char *sharing = pm & PM_EXCLUSIVE ? "private" : "shared-anon";
	struct page_list *pl = ctx;
	struct jt_datasym d[32];
	uint64_t off = v->offset + (addr - v->start);
	size_t n = pl->elf ? jt_datasym_file_page(pl->elf, off, d, 32) : 0;

	pl->n++;
	if (!l->json) {
		printf("%-22s   %012" PRIx64 "  +%-#8" PRIx64 " %-11s%s", "",
		       addr, off, sharing, n ? "  data:" : "");
		if (n)
			putchar(' ');
		jt_datasym_print(stdout, d, n < 32 ? n : 32);
		printf("\n");
		return;
	}
	jt_json_object(&l->j);
	jt_json_hex_field(&l->j, "addr", addr);
	jt_json_hex_field(&l->j, "file_offset", off);
	jt_json_str_field(&l->j, "sharing", sharing);
	jt_datasym_json(&l->j, d, n < 32 ? n : 32, n);
	jt_json_end(&l->j);
}

/*
 * File mappings with pages this process copied (smaps "Anonymous:"),
 * each page listed with the data objects that live on it.
 */
static void cow(struct live *l)
{
	struct jt_json *j;
	char text[640], path[64];
	size_t i;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/pagemap", l->pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	for (i = 0; i < l->nv; i++) {
		const struct vma *v = &l->v[i];
		struct page_list pl = { .elf = NULL };

		if (v->perms[3] != 'p' || v->path[0] != '/' || !v->anon_kb)
			continue;
		snprintf(text, sizeof(text), "%" PRIu64 " pages of %s private",
			 v->anon_kb / 4, v->path);
		j = finding(l, "cow", v->start, v->end, text);
		if (j) {
			jt_json_str_field(j, "backing", v->path);
			jt_json_name(j, "pages");
			jt_json_array(j);
		}
		pl.elf = mapped_elf(l, v);
		if (fd >= 0)
			private_pages(l, v, fd, page_out, &pl);
		if (j) {
			jt_json_end(j);
			jt_json_u64_field(j, "count", pl.n);
		}
		finding_end(j);
	}
	if (fd >= 0)
		close(fd);
}

/* Who the process is: its user, and its pid in its own namespace. */
struct whose {
	uid_t euid; /* -1: not known, and so no file is its */
	uint32_t nspid;
};

/*
 * The perf-map in the /tmp the process sees (a container's, or the host's
 * for an agent with a private /tmp), vetted as the recorder vets it.
 */
static FILE *open_perfmap(pid_t pid, const struct whose *w)
{
	char path[48];
	int fd, err;

	snprintf(path, sizeof(path), "/tmp/perf-%u.map", w->nspid);
	fd = jt_proc_open_in_root(pid, path);
	if (fd == -ENOENT)
		return NULL;
	err = fd < 0 ? fd : jt_proc_file_owned(fd, w->euid);
	if (err) {
		fprintf(stderr, "jittrace: not reading %s of pid %d: %s\n",
			path, pid, strerror(-err));
		if (fd >= 0)
			close(fd);
		return NULL;
	}
	return fdopen(fd, "r");
}

struct pm_entry {
	uint64_t start;
	uint64_t size;
	char name[256];
	bool jitdump; /* timed by its writer: reuse is no finding */
};

struct entries {
	struct pm_entry *e;
	size_t n;
	size_t cap;
};

static void collect(void *ctx, const struct jt_jit_event *ev)
{
	struct entries *es = ctx;
	struct pm_entry *p;

	if (ev->op == JT_JIT_MOVE) {
		size_t i;

		for (i = 0; i < es->n; i++)
			if (es->e[i].jitdump && es->e[i].start == ev->old_addr)
				es->e[i].start = ev->addr;
		return;
	}
	if (ev->op != JT_JIT_LOAD ||
	    jt_reserve(&es->e, &es->cap, es->n + 1, sizeof(*es->e)))
		return;
	p = &es->e[es->n++];
	p->start = ev->addr;
	p->size = ev->size;
	p->jitdump = true;
	snprintf(p->name, sizeof(p->name), "%.*s", (int)ev->name_len, ev->name);
}

/*
 * The jitdump the process announced with its marker mapping: opened
 * through map_files, so it is the file that is mapped, and vetted.
 */
static void read_jitdump(struct live *l, const struct whose *w,
			 struct entries *es)
{
	char want[32], *buf;
	struct jt_jitdump d;
	size_t i, wl;
	ssize_t n;
	int fd;

	wl = snprintf(want, sizeof(want), "/jit-%u.dump", w->nspid);
	for (i = 0; i < l->nv; i++) {
		size_t len = strlen(l->v[i].path);

		if (len >= wl && !strcmp(l->v[i].path + len - wl, want))
			break;
	}
	if (i == l->nv)
		return;
	fd = jt_proc_open_mapped(l->pid, l->v[i].start, l->v[i].end);
	if (fd < 0)
		return;
	/* Requests run at once on the agent's threads: a buffer each. */
	buf = jt_proc_file_owned(fd, w->euid) ? NULL : malloc(CHUNK);
	if (buf) {
		jt_jitdump_init(&d);
		while ((n = read(fd, buf, CHUNK)) > 0 &&
		       !jt_jitdump_feed(&d, buf, n, collect, es))
			;
		jt_jitdump_free(&d);
		free(buf);
	}
	close(fd);
}

/* JIT entries (jitdump, then perf-map) over older ones; code nowhere. */
static void perfmap(struct live *l)
{
	struct whose w = { (uid_t)-1, (uint32_t)l->pid };
	struct entries es = {};
	uint32_t nspid = 0;
	FILE *f;
	struct pm_entry *e;
	size_t n, i, k;
	char line[512], text[640];
	struct jt_json *j;

	/* One read of /proc/PID/status, as the recorder judges files. */
	if (!jt_proc_status(l->pid, &w.euid, &nspid) && nspid)
		w.nspid = nspid;
	f = open_perfmap(l->pid, &w);
	read_jitdump(l, &w, &es);
	while (f && fgets(line, sizeof(line), f)) {
		struct pm_entry p = {};

		if (sscanf(line, "%" SCNx64 " %" SCNx64 " %255[^\n]", &p.start,
			   &p.size, p.name) != 3 ||
		    jt_reserve(&es.e, &es.cap, es.n + 1, sizeof(*es.e)))
			continue;
		es.e[es.n++] = p;
	}
	if (f)
		fclose(f);
	e = es.e;
	n = es.n;
	for (i = 0; i < n; i++) {
		const struct vma *v = vma_of(l, e[i].start);

		for (k = 0; k < i && !e[i].jitdump; k++) {
			if (e[k].jitdump ||
			    e[k].start >= e[i].start + e[i].size ||
			    e[i].start >= e[k].start + e[k].size)
				continue;
			snprintf(text, sizeof(text), "%s written over %s",
				 e[i].name, e[k].name);
			j = finding(l, "perfmap-reuse", e[i].start,
				    e[i].start + e[i].size, text);
			if (j) {
				jt_json_str_field(j, "old", e[k].name);
				jt_json_str_field(j, "new", e[i].name);
			}
			finding_end(j);
		}
		if (!v || v->perms[2] != 'x') {
			snprintf(text, sizeof(text), "%s is %s", e[i].name,
				 v ? "in memory that is not executable" :
				     "where nothing is mapped");
			j = finding(l, "jit-orphan", e[i].start,
				    e[i].start + e[i].size, text);
			if (j) {
				jt_json_str_field(j, "name", e[i].name);
				jt_json_bool_field(j, "mapped", v);
			}
			finding_end(j);
		}
	}
	free(e);
}

static int pagemap_entry(pid_t pid, uint64_t addr, uint64_t *entry)
{
	char path[64];
	int fd, ok;

	snprintf(path, sizeof(path), "/proc/%d/pagemap", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	ok = pread(fd, entry, 8, (addr / 4096) * 8) == 8;
	close(fd);
	return ok ? 0 : -EIO;
}

/* Private or shared, and why, from the page's pagemap bits. */
static const char *classify(const struct vma *v, uint64_t pm, const char **why)
{
	bool file = v->path[0] == '/' && strncmp(v->path, "/SYSV", 5) &&
		    strncmp(v->path, "/dev/zero", 9);

	if (v->perms[3] == 's') {
		*why = file ? "a MAP_SHARED mapping of the file" :
			      "shared anonymous memory or System V shm";
		return file ? "shared-file" : "shared-anon";
	}
	if (!(pm & PM_PRESENT)) {
		*why = file ? "not present: a read maps the file's page" :
			      "not present: the first write makes it private";
		return file ? "shared-file" : "private";
	}
	if (pm & PM_FILE_OR_SHARED_ANON) {
		*why = "the file's page, not written by this process";
		return "shared-file";
	}
	if (pm & PM_EXCLUSIVE) {
		*why = file ? "copied on write: this process's own copy" :
			      "anonymous, mapped by this process only";
		return "private";
	}
	*why = "anonymous page shared with a fork relative until written";
	return "shared-anon";
}

static void addr_answer(struct live *l, uint64_t addr)
{
	const struct vma *v = vma_of(l, addr);
	const char *why, *cls;
	struct jt_json *j;
	char text[256];
	uint64_t pm = 0;

	if (!v) {
		cls = "unmapped";
		why = "nothing is mapped there";
	} else if (pagemap_entry(l->pid, addr, &pm)) {
		cls = "unknown";
		why = "pagemap unreadable";
	} else {
		cls = classify(v, pm, &why);
	}
	snprintf(text, sizeof(text), "%s: %s", cls, why);
	j = finding(l, "addr", addr, addr + 1, text);
	if (j) {
		jt_json_str_field(j, "sharing", cls);
		jt_json_str_field(j, "why", why);
	}
	finding_end(j);
}

static void live_free(struct live *l)
{
	jt_elfcache_free(&l->elf);
	jt_strtab_free(&l->strs);
	free(l->v);
}

int jt_audit_live_into(pid_t pid, struct jt_json *j)
{
	struct live l = { .pid = pid, .json = true };
	int err = read_smaps(&l);

	l.elf.strs = &l.strs;
	if (!err) {
		l.j = *j;
		cow(&l);
		perfmap(&l);
		*j = l.j;
	}
	live_free(&l);
	return err;
}

int jt_audit_live(pid_t pid, const uint64_t *addrs, int naddrs, bool json)
{
	struct live l = { .pid = pid, .json = json };
	int err = read_smaps(&l), i;

	l.elf.strs = &l.strs;
	if (err) {
		fprintf(stderr, "jittrace: cannot read process %d: %s\n", pid,
			strerror(-err));
		return 1;
	}
	jt_json_init(&l.j, stdout);
	if (json)
		jt_json_array(&l.j);
	cow(&l);
	perfmap(&l);
	for (i = 0; i < naddrs; i++)
		addr_answer(&l, addrs[i]);
	if (json)
		jt_json_end(&l.j);
	else if (!l.n)
		printf("no findings\n");
	live_free(&l);
	return 0;
}
