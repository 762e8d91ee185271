// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include "lib/clock.h"
#include "lib/procfile.h"
#include "lib/reserve.h"
#include "model/model.h"
#include "record/jitfiles.h"
#include "record/snapshot.h"

#define CHUNK (512 * 1024)
#define PERFMAP_DIR "/tmp"
/*
 * A file appearing, never one growing: every write to any file in /tmp
 * (a log, our own output) woke the recorder, and a recording written to
 * /tmp woke it with its own writes, forever. A perf-map's lines are read
 * on every pass anyway, and a write to one the recorder has not opened
 * yet comes as a BPF write event (JT_EV_MAPWRITE), which opens it.
 */
#define WATCH_MASK (IN_CREATE | IN_MOVED_TO)

/*
 * The /tmp a process sees, as one number: its directory's device and
 * inode. Not the mount namespace: a container mounts its own /tmp after
 * it has one, before it runs the runtime. 0 when it cannot be read.
 */
static uint64_t tmp_of(const char *pid)
{
	char path[64];
	struct stat st;

	snprintf(path, sizeof(path), "/proc/%s/root" PERFMAP_DIR, pid);
	if (stat(path, &st))
		return 0;
	return jt_hash_u64(st.st_dev) ^ st.st_ino;
}

int jt_jitfiles_init(struct jt_jitfiles *j, struct jt_writer *w, bool all,
		     const struct jt_jit_budget *budget)
{
	memset(j, 0, sizeof(*j));
	j->w = w;
	j->all = all;
	j->budget = *budget;
	j->buf = malloc(CHUNK);
	if (!j->buf)
		return -ENOMEM;
	j->self_mntns = tmp_of("self");
	j->tmp_dir = JT_TMP_UNASKED;
	j->inotify_fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	j->tmp_wd = j->inotify_fd < 0 ?
			    -1 :
			    inotify_add_watch(j->inotify_fd, PERFMAP_DIR,
					      WATCH_MASK);
	if (j->tmp_wd < 0)
		fprintf(stderr,
			"jittrace: cannot watch %s (%s): perf-map "
			"files are read once per tick\n",
			PERFMAP_DIR, strerror(errno));
	return 0;
}

static bool proc_eq(const void *val, const void *key)
{
	return ((const struct jt_jitproc *)val)->pid == *(const pid_t *)key;
}

static struct jt_jitproc *proc(struct jt_jitfiles *j, pid_t pid)
{
	return jt_hash_find(&j->procs, jt_hash_u64(pid), proc_eq, &pid);
}

static bool traced(struct jt_jitfiles *j, pid_t pid)
{
	return j->all || proc(j, pid);
}

struct ns_key {
	uint64_t mntns;
	uint32_t nspid;
};

static uint64_t ns_hash(uint64_t mntns, uint32_t nspid)
{
	return jt_hash_u64(mntns * 0x9e3779b97f4a7c15ULL + nspid);
}

static bool ns_eq(const void *val, const void *key)
{
	const struct jt_jitproc *p = val;
	const struct ns_key *k = key;

	return p->mntns == k->mntns && p->nspid == k->nspid;
}

static bool tmp_eq(const void *val, const void *key)
{
	return ((const struct jt_tmpwatch *)val)->mntns ==
	       *(const uint64_t *)key;
}

/*
 * A container's /tmp is its own: watch it through the process's root,
 * once per mount namespace, so its perf-map is read while the process
 * (and the path) still exist.
 */
static void watch_tmp(struct jt_jitfiles *j, const struct jt_jitproc *p)
{
	struct jt_tmpwatch *w;
	char path[64];

	if (j->inotify_fd < 0 ||
	    jt_hash_find(&j->tmps, jt_hash_u64(p->mntns), tmp_eq, &p->mntns))
		return;
	w = calloc(1, sizeof(*w));
	if (!w || jt_hash_add(&j->tmps, jt_hash_u64(p->mntns), w)) {
		free(w);
		return;
	}
	snprintf(path, sizeof(path), "/proc/%d/root" PERFMAP_DIR, p->pid);
	w->mntns = p->mntns;
	w->dir = JT_TMP_UNASKED;
	w->wd = inotify_add_watch(j->inotify_fd, path, WATCH_MASK);
}

/*
 * perf-N.map in a /tmp that processes of several PID namespaces share
 * names N of which namespace? A host process's, for the name alone: one
 * in another namespace gets its perf-map on its own write events only, so
 * a host process's file is never taken for a container's.
 */
static bool by_name_ok(const struct jt_jitproc *p)
{
	return p->own_tmp || !p->nspid || p->nspid == (uint32_t)p->pid ||
	       p->writes;
}

/*
 * What an event says of the process it starts tracking. BPF reads the
 * euid from the task itself: a /proc read per fork and per exec was a
 * tenth of the agent's time under process churn.
 */
struct who {
	uint32_t nspid; /* 0: not said */
	bool euid_known;
	uid_t euid;
	pid_t parent;  /* a fork's: the child has its /tmp; 0: none */
	bool our_root; /* an exec's JT_EXEC_OUR_ROOT: our /tmp */
};

/*
 * The parent's /tmp, which a child has until it execs, or ours, which
 * BPF saw the exec keep: no stat. A stat per exec was a twentieth of the
 * agent's time under process churn.
 */
static uint64_t tmp_of_new(struct jt_jitfiles *j, pid_t pid,
			   const struct who *w)
{
	const struct jt_jitproc *q = w->parent ? proc(j, w->parent) : NULL;
	char num[16];

	if (w->our_root && j->self_mntns)
		return j->self_mntns;
	if (q && q->mntns)
		return q->mntns;
	snprintf(num, sizeof(num), "%d", pid);
	return tmp_of(num);
}

static void track(struct jt_jitfiles *j, pid_t pid, const struct who *w)
{
	struct jt_jitproc *p = proc(j, pid);
	uint32_t ns_pid = 0;
	struct ns_key k;

	if (!p) {
		p = calloc(1, sizeof(*p));
		if (!p || jt_hash_add(&j->procs, jt_hash_u64(pid), p)) {
			free(p);
			return;
		}
		p->pid = pid;
	} else if (p->mntns) {
		k = (struct ns_key){ p->mntns, p->nspid };
		jt_hash_del(&j->by_ns, ns_hash(k.mntns, k.nspid), ns_eq, &k);
	}
	if (w->euid_known) {
		p->euid = w->euid;
		p->euid_known = true;
	} else {
		p->euid_known = !jt_proc_status(pid, &p->euid, &ns_pid);
	}
	p->mntns = tmp_of_new(j, pid, w);
	p->nspid = ns_pid ?: w->nspid ?: (uint32_t)pid;
	p->own_tmp = p->mntns && j->self_mntns && p->mntns != j->self_mntns;
	if (p->own_tmp)
		watch_tmp(j, p);
	if (p->mntns && by_name_ok(p) &&
	    !jt_hash_add(&j->by_ns, ns_hash(p->mntns, p->nspid), p))
		return;
	p->mntns = 0; /* not findable by name: no memory */
}

void jt_jitfiles_track(struct jt_jitfiles *j, pid_t pid, uint32_t nspid)
{
	struct who w = { .nspid = nspid };

	track(j, pid, &w);
}

/* What the process made us drop, said once: at its exit or our end. */
static void proc_cut(struct jt_jitfiles *j, const struct jt_jitproc *p)
{
	struct jt_proccap_rec c = { jt_mono_ns(), p->pid };

	if (p->writes <= j->budget.process_writes)
		return;
	c.writes_cut = p->writes - j->budget.process_writes;
	c.writes_budget = j->budget.process_writes;
	jt_writer_add(j->w, JT_REC_PROCCAP, &c, sizeof(c), NULL, 0);
}

/* Forget the process: it is gone, and its pid may come back as another. */
static void untrack(struct jt_jitfiles *j, pid_t pid)
{
	struct jt_jitproc *p =
		jt_hash_del(&j->procs, jt_hash_u64(pid), proc_eq, &pid);
	struct ns_key k;

	if (!p)
		return;
	proc_cut(j, p);
	k = (struct ns_key){ p->mntns, p->nspid };
	if (p->mntns &&
	    jt_hash_find(&j->by_ns, ns_hash(k.mntns, k.nspid), ns_eq, &k) == p)
		jt_hash_del(&j->by_ns, ns_hash(k.mntns, k.nspid), ns_eq, &k);
	free(p);
}

static struct jt_jitfile *find(struct jt_jitfiles *j, pid_t pid, int kind)
{
	size_t i;

	for (i = j->n; i-- > 0;)
		if (j->f[i].pid == pid && j->f[i].kind == kind)
			return &j->f[i];
	return NULL;
}

/*
 * A regular file owned by the user the process runs as (root's for a root
 * process only), the only one whose file we believe; checked on the open
 * descriptor, so nothing can be swapped in.
 *
 * The euid is the one now, not when tracked: a setuid(2) changes it with
 * no event. Reading /proc/PID/status formats a page; a stat of /proc/PID
 * is enough to accept a file owned by the tracked euid: the kernel gives
 * that directory the task's euid, or while the task is not dumpable (a
 * setuid(2) makes it so) its namespace's root, whose files are safe to
 * read for any of its processes. Anything else, refusals included, asks
 * status.
 */
static int vet(struct jt_jitfiles *j, pid_t pid, int fd)
{
	struct jt_jitproc *p = proc(j, pid);
	uint32_t nspid;
	uid_t euid;

	if (p && p->euid_known && !jt_proc_file_owned(fd, p->euid) &&
	    jt_proc_still_euid(pid, p->euid))
		return 0;
	if (jt_proc_status(pid, &euid, &nspid)) {
		if (!p || !p->euid_known)
			return -ESRCH;
		euid = p->euid;
	}
	return jt_proc_file_owned(fd, euid);
}

static void note(struct jt_jitfiles *j, pid_t pid, uint32_t id, int kind,
		 int found, int status, const char *path, uint64_t ino)
{
	struct jt_jitfile_rec r = { jt_mono_ns(), pid,	  id, kind,
				    found,	  status, ino };

	jt_writer_add(j->w, JT_REC_JITFILE, &r, sizeof(r), path,
		      strlen(path) + 1);
	if (status) {
		j->refused++;
		fprintf(stderr, "jittrace: not reading %s of pid %d: %s\n",
			path, pid, strerror(-status));
	}
}

/*
 * Accepted or refused, a file gets one entry: a refused one is recorded
 * and said once, however often its process touches it again (a perf-map
 * written a byte at a time would otherwise refuse itself per write). Its
 * inode lets the report count the writes that went to it.
 */
static void add(struct jt_jitfiles *j, pid_t pid, int kind, int found, int fd,
		int err, const char *path)
{
	struct stat st;
	uint64_t ino = fd >= 0 && !fstat(fd, &st) ? st.st_ino : 0;

	if (fd < 0)
		fd = -1;
	if (!err && fd >= 0)
		err = vet(j, pid, fd);
	if (jt_reserve(&j->f, &j->cap, j->n + 1, sizeof(*j->f))) {
		if (fd >= 0)
			close(fd);
		note(j, pid, 0, kind, found, -ENOMEM, path, ino);
		return;
	}
	if (err && fd >= 0) {
		close(fd);
		fd = -1;
	}
	j->f[j->n] = (struct jt_jitfile){ pid, ++j->next_id, kind,  fd,
					  0,   err,	     false, ino };
	note(j, pid, j->next_id, kind, found, err, path, ino);
	j->accepted += !err;
	j->n++;
}

/* jit-<pid>.dump, with the pid the runtime knows itself by. */
static bool is_jitdump_name(struct jt_jitfiles *j, const char *path, pid_t pid)
{
	const struct jt_jitproc *p = proc(j, pid);
	const char *base = strrchr(path, '/');
	char want[32];

	snprintf(want, sizeof(want), "jit-%u.dump",
		 p && p->nspid ? p->nspid : (uint32_t)pid);
	return base && !strcmp(base + 1, want);
}

/*
 * The root a process's paths are resolved in: its own where its /tmp is
 * not ours (a container), else ours, which outlives the process (a
 * runtime that writes its perf-map as it exits).
 */
static pid_t root_of(struct jt_jitfiles *j, pid_t pid)
{
	const struct jt_jitproc *p = proc(j, pid);

	return p && p->own_tmp ? pid : 0;
}

/* Whose file it would be: the user cut off if opening it hangs. */
uid_t jt_jitfiles_owner(struct jt_jitfiles *j, pid_t pid)
{
	const struct jt_jitproc *p = proc(j, pid);

	return p && p->euid_known ? p->euid : (uid_t)-1;
}

/*
 * The runtime maps its jitdump executable as a marker for perf. Open the
 * mapped file itself through map_files: no path lookup to race. Once
 * unmapped, by its path in the process's root, and only if it is still
 * the file the event named. The mapping is seen as it is made (mmap) or,
 * for a runtime that started before us, in the snapshot at attach.
 */
static void open_jitdump(struct jt_jitfiles *j, const struct jt_map_event *ev,
			 const char *path, uint64_t start, uint64_t end,
			 int found)
{
	pid_t pid = ev->h.pid;
	struct jt_open_req r;
	int fd;

	if (!is_jitdump_name(j, path, pid) || find(j, pid, JT_JIT_JITDUMP))
		return;
	r = (struct jt_open_req){
		.pid = pid,
		.uid = jt_jitfiles_owner(j, pid),
		.root_pid = root_of(j, pid),
		.start = start,
		.end = end,
		.dev = ev->dev,
		.ino = ev->ino,
	};
	snprintf(r.path, sizeof(r.path), "%s", path);
	fd = jt_opener_open(j->opener, &r).fd;
	add(j, pid, JT_JIT_JITDUMP, found, fd, fd < 0 ? fd : 0, path);
}

static const char *event_path(const struct jt_map_event *ev,
			      char buf[JT_PATH_MAX + 1])
{
	if (!ev->path_len)
		return NULL;
	snprintf(buf, JT_PATH_MAX + 1, "%.*s",
		 (int)strnlen(ev->path, ev->path_len), ev->path);
	return buf;
}

static void marker_mmap(struct jt_jitfiles *j, const struct jt_map_event *ev)
{
	char buf[JT_PATH_MAX + 1];
	const char *path = event_path(ev, buf);

	if (!path || ev->result < 0 || !(ev->args[2] & PROT_EXEC))
		return;
	open_jitdump(j, ev, path, ev->result,
		     ev->result + JT_PAGE_ALIGN(ev->args[1]), JT_FOUND_LIVE);
}

/* VM_EXEC, as the kernel's VMA flags and the /proc snapshot both say. */
static void marker_vma(struct jt_jitfiles *j, const struct jt_map_event *ev)
{
	char buf[JT_PATH_MAX + 1];
	const char *path;

	/* Every VMA of every snapshot passes here: test the flag first. */
	if (!(ev->vma.flags & 4) || !(path = event_path(ev, buf)))
		return;
	open_jitdump(j, ev, path, ev->vma.start, ev->vma.end, JT_FOUND_ATTACH);
}

/*
 * perf-<pid>.map, with the pid the process has in its own namespace, in
 * the /tmp it sees: a container's is reached through its root.
 */
static void perfmap_path(const struct jt_jitproc *p, pid_t pid, char *path,
			 size_t len)
{
	uint32_t nspid = p && p->nspid ? p->nspid : (uint32_t)pid;

	if (p && p->own_tmp)
		snprintf(path, len, "/proc/%d/root" PERFMAP_DIR "/perf-%u.map",
			 pid, nspid);
	else
		snprintf(path, len, PERFMAP_DIR "/perf-%u.map", nspid);
}

/*
 * The slot of the /tmp that root (0: ours) sees: asked of the worker the
 * first time, while a process that sees it is there to be asked of.
 */
static int *tmp_dir_slot(struct jt_jitfiles *j, const struct jt_jitproc *p,
			 pid_t root)
{
	struct jt_tmpwatch *w;

	if (!root)
		return &j->tmp_dir;
	w = p && p->mntns ? jt_hash_find(&j->tmps, jt_hash_u64(p->mntns),
					 tmp_eq, &p->mntns) :
			    NULL;
	return w ? &w->dir : NULL;
}

/* A descriptor of that /tmp on a local disk, or -1: the worker opens. */
static int tmp_dir(struct jt_jitfiles *j, const struct jt_jitproc *p,
		   const struct jt_open_req *file)
{
	int *dir = tmp_dir_slot(j, p, file->root_pid);
	struct jt_open_req r;
	int fd;

	if (!dir)
		return -1;
	if (*dir == JT_TMP_UNASKED) {
		r = (struct jt_open_req){ .pid = file->pid,
					  .uid = file->uid,
					  .root_pid = file->root_pid,
					  .want_dir = true,
					  .path = PERFMAP_DIR };
		fd = jt_opener_open(j->opener, &r).fd;
		/* A process gone meanwhile: the next one asks again. */
		if (fd >= 0 || fd == -EXDEV || fd == -ETIMEDOUT)
			*dir = fd >= 0 ? fd : JT_TMP_WORKER;
	}
	return *dir >= 0 ? *dir : -1;
}

static void open_perfmap_now(struct jt_jitfiles *j, struct jt_jitproc *p,
			     pid_t pid, int found)
{
	uint32_t nspid = p && p->nspid ? p->nspid : (uint32_t)pid;
	struct jt_open_req r;
	char path[96];
	int fd;

	perfmap_path(p, pid, path, sizeof(path));
	r = (struct jt_open_req){ .pid = pid,
				  .uid = jt_jitfiles_owner(j, pid),
				  .root_pid = root_of(j, pid) };
	snprintf(r.path, sizeof(r.path), PERFMAP_DIR "/perf-%u.map", nspid);
	r.dir = tmp_dir(j, p, &r);
	r.in_dir = r.dir >= 0;
	fd = jt_opener_open(j->opener, &r).fd;
	if (fd == -ENOENT)
		return;
	add(j, pid, JT_JIT_PERFMAP, found, fd, fd < 0 ? fd : 0, path);
	if (p)
		p->perfmap_found = true;
}

static void open_perfmap(struct jt_jitfiles *j, pid_t pid, int found)
{
	struct jt_jitproc *p = proc(j, pid);

	/* Once per write event: the 1 KB request only when it opens. */
	if (p && (p->perfmap_found || !by_name_ok(p)))
		return;
	if (find(j, pid, JT_JIT_PERFMAP)) {
		if (p)
			p->perfmap_found = true;
		return;
	}
	open_perfmap_now(j, p, pid, found);
}

/*
 * A file past the cap is counted, not copied: a 2 GB sparse perf-map
 * would otherwise make a 2 GB recording. Recorded again at the end with
 * what the file grew to.
 */
static void cap_reached(struct jt_jitfiles *j, struct jt_jitfile *f,
			const char *why)
{
	struct stat st;
	struct jt_jitcap_rec c = { jt_mono_ns(), f->offset, 0, f->id };

	if (!fstat(f->fd, &st) && (uint64_t)st.st_size > f->offset)
		c.skipped = st.st_size - f->offset;
	jt_writer_add(j->w, JT_REC_JITCAP, &c, sizeof(c), NULL, 0);
	if (f->capped)
		return;
	f->capped = true;
	j->capped++;
	fprintf(stderr,
		"jittrace: %s file of pid %d: copied its first %llu bytes "
		"(%s), the rest is counted\n",
		f->kind == JT_JIT_JITDUMP ? "jitdump" : "perf-map", f->pid,
		(unsigned long long)f->offset, why);
}

/* What may still be copied of f: its own cap, and its process's. */
static uint64_t copy_room(struct jt_jitfiles *j, const struct jt_jitfile *f,
			  const char **why)
{
	const struct jt_jitproc *p = proc(j, f->pid);
	uint64_t file = j->budget.file_bytes > f->offset ?
				j->budget.file_bytes - f->offset :
				0;
	uint64_t process = !p ? UINT64_MAX :
			   j->budget.process_bytes > p->copied ?
				j->budget.process_bytes - p->copied :
				0;

	*why = file <= process ? "--max-jit-bytes" : "--max-process-jit-bytes";
	return file < process ? file : process;
}

/*
 * A perf-map shorter than what we read of it was written over: read it
 * again from its start. Asked only when a read finds nothing, since a
 * file with bytes past our offset is no shorter than it.
 */
static bool truncated(struct jt_jitfiles *j, struct jt_jitfile *f)
{
	struct stat st;

	if (f->kind != JT_JIT_PERFMAP || !f->offset || fstat(f->fd, &st) ||
	    (uint64_t)st.st_size >= f->offset)
		return false;
	f->offset = 0;
	return true;
}

static void read_file(struct jt_jitfiles *j, struct jt_jitfile *f)
{
	struct jt_jit_rec r = { .file_id = f->id };
	struct jt_jitproc *p;
	const char *why;
	uint64_t room;
	ssize_t n;

	while (f->fd >= 0 && !f->capped) {
		size_t want = CHUNK;

		room = copy_room(j, f, &why);
		if (!room) {
			char b;

			/* Only a byte past the cap makes the file too big. */
			if (pread(f->fd, &b, 1, f->offset) == 1)
				cap_reached(j, f, why);
			return;
		}
		if (want > room)
			want = room;
		n = pread(f->fd, j->buf, want, f->offset);
		if (n < 0 || (!n && !truncated(j, f)))
			return;
		if (!n)
			continue;
		r.time = jt_mono_ns();
		r.offset = f->offset;
		jt_writer_add(j->w, JT_REC_JIT, &r, sizeof(r), j->buf, n);
		f->offset += n;
		j->bytes += n;
		if ((p = proc(j, f->pid)))
			p->copied += n;
		/* Short: the end for now; the next write or sweep reads on. */
		if ((size_t)n < want)
			return;
	}
}

static bool gone_eq(const void *val, const void *key)
{
	return (pid_t)(uintptr_t)val == *(const pid_t *)key;
}

/*
 * Under churn, a perf-map's creation can reach us after its process's
 * exit, which read the file out: opened again then, it was never closed
 * (no exit would come) and its lines were recorded twice. The inotify
 * read follows the ring's in each pass, so an exit is kept for this
 * pass and the next.
 */
static bool recently_gone(const struct jt_jitfiles *j, pid_t pid)
{
	uint64_t h = jt_hash_u64(pid);

	return jt_hash_find(&j->gone[0], h, gone_eq, &pid) ||
	       jt_hash_find(&j->gone[1], h, gone_eq, &pid);
}

static void gone_rotate(struct jt_jitfiles *j)
{
	jt_hash_free(&j->gone[1]);
	j->gone[1] = j->gone[0];
	j->gone[0] = (struct jt_hash){ 0 };
}

/*
 * Once the process has gone, what the file holds is all there will be:
 * read it out, then forget the process and its files.
 */
static void process_gone(struct jt_jitfiles *j, pid_t pid)
{
	size_t i, n = 0;

	/* A pid is the hash's value itself: no allocation per exit. */
	if (!recently_gone(j, pid))
		jt_hash_add(&j->gone[0], jt_hash_u64(pid),
			    (void *)(uintptr_t)pid);

	open_perfmap(j, pid, JT_FOUND_LIVE);
	for (i = 0; i < j->n; i++) {
		struct jt_jitfile *f = &j->f[i];

		if (f->pid != pid) {
			j->f[n++] = *f;
			continue;
		}
		if (f->fd < 0)
			continue;
		read_file(j, f);
		if (f->capped)
			cap_reached(j, f, "");
		close(f->fd);
	}
	j->n = n;
	untrack(j, pid);
}

/* Its files are read on the next pass, not only on the next sweep. */
static void mark_written(struct jt_jitfiles *j, pid_t pid)
{
	struct jt_jitproc *p = proc(j, pid);

	if (p)
		p->written = j->passes;
}

/*
 * Appends start where the previous write ended; a write that starts
 * before that rewrites the perf-map in place (jcmd Compiler.perfmap
 * truncates it and writes it again): read it again from its start. The
 * reader takes a piece at offset 0 as a new version of the file. (What
 * we have read says nothing: reads run ahead of the write events.)
 */
static void rewritten(struct jt_jitfiles *j, const struct jt_write_event *w)
{
	uint64_t start = w->end >= w->len ? w->end - w->len : 0;
	size_t i;

	for (i = 0; i < j->n; i++) {
		struct jt_jitfile *f = &j->f[i];

		if (f->pid != (pid_t)w->h.pid || f->kind != JT_JIT_PERFMAP ||
		    f->fd < 0 || f->ino != w->ino)
			continue;
		if (start < f->written_end && f->offset) {
			f->offset = 0;
			f->written_end = w->end;
		} else if (w->end > f->written_end) {
			f->written_end = w->end;
		}
	}
}

/* Written since the pass before this one began, as far as events say. */
static bool written(struct jt_jitfiles *j, const struct jt_jitfile *f)
{
	const struct jt_jitproc *p = proc(j, f->pid);

	return p && p->written + 1 >= j->passes;
}

bool jt_jitfiles_admit(struct jt_jitfiles *j, const struct jt_hdr *h,
		       size_t len)
{
	struct jt_jitproc *p;

	if (len < sizeof(*h) || h->type != JT_EV_MAPWRITE)
		return true;
	p = proc(j, h->pid);
	if (!p && j->all) {
		jt_jitfiles_track(j, h->pid, 0);
		p = proc(j, h->pid);
	}
	if (!p || ++p->writes <= j->budget.process_writes)
		return true;
	if (p->writes == j->budget.process_writes + 1)
		fprintf(stderr,
			"jittrace: pid %d: past %llu perf-map write events "
			"(--max-process-writes): the rest are counted, not "
			"recorded\n",
			h->pid, (unsigned long long)j->budget.process_writes);
	j->writes_cut++;
	return false;
}

static void fork_track(struct jt_jitfiles *j, const struct jt_fork_event *fk,
		       size_t len)
{
	struct who w = { .nspid = fk->child_nspid, .parent = fk->h.pid };

	w.euid_known = jt_event_euid(&fk->h, len, &w.euid);
	track(j, fk->child_pid, &w);
}

static void exec_track(struct jt_jitfiles *j, const struct jt_exec_event *ee,
		       size_t len)
{
	struct who w = { .nspid = len >= sizeof(*ee) ? ee->nspid : 0 };

	w.euid_known = jt_event_euid(&ee->h, len, &w.euid);
	w.our_root = len >= sizeof(*ee) && (ee->flags & JT_EXEC_OUR_ROOT);
	track(j, ee->h.pid, &w);
}

void jt_jitfiles_event(struct jt_jitfiles *j, const struct jt_hdr *h,
		       size_t len)
{
	const struct jt_fork_event *fk = (const void *)h;
	const struct jt_exit_event *ex = (const void *)h;
	const struct jt_exec_event *ee = (const void *)h;

	if (len < sizeof(*h) || h->size != len)
		return;
	switch (h->type) {
	case JT_EV_MMAP:
		if (len >= sizeof(struct jt_map_event))
			marker_mmap(j, (const void *)h);
		break;
	case JT_EV_VMA:
		if (len >= sizeof(struct jt_map_event) && traced(j, h->pid))
			marker_vma(j, (const void *)h);
		break;
	case JT_EV_FORK:
		if (len >= offsetof(struct jt_fork_event, child_euid) &&
		    !(fk->flags & JT_FORK_THREAD))
			fork_track(j, fk, len);
		break;
	case JT_EV_EXEC:
		exec_track(j, ee, len);
		/* A perf-map made before we attached is read now, in -p and
		 * -a alike, not only once it grows or its process exits. */
		if (len >= sizeof(*ee) && (ee->flags & JT_EXEC_ATTACH))
			open_perfmap(j, h->pid, JT_FOUND_ATTACH);
		break;
	case JT_EV_EXIT:
		if (len >= sizeof(*ex) && ex->group_dead && traced(j, h->pid))
			process_gone(j, h->pid);
		break;
	case JT_EV_MAPWRITE:
		/* Its creation may have come before we knew the process. */
		if (traced(j, h->pid)) {
			open_perfmap(j, h->pid, JT_FOUND_LIVE);
			mark_written(j, h->pid);
			if (len >= sizeof(struct jt_write_event))
				rewritten(j, (const void *)h);
		}
		break;
	}
}

/*
 * NSPID of a name "perf-NSPID.map", or 0. By hand: an sscanf per file
 * made in /tmp was 1% of the agent under process churn.
 */
static uint32_t perfmap_nspid(const char *name)
{
	unsigned long n;
	char *end;

	if (strncmp(name, "perf-", 5) || name[5] < '1' || name[5] > '9')
		return 0;
	n = strtoul(name + 5, &end, 10);
	return n <= UINT32_MAX && !strcmp(end, ".map") ? n : 0;
}

/*
 * perf-NSPID.map made again where we have one open: a runtime that writes
 * its whole map anew and renames it into place. The name holds another
 * file now, which no write event of the old one will lead us to. Read
 * the old one out and open the new one, a file of its own: its lines are
 * timed by the writes that made it. A stat, not an open, tells the two
 * apart: under process churn, most such events are for the file we
 * opened a moment ago.
 */
static void perfmap_replaced(struct jt_jitfiles *j, struct jt_jitproc *p,
			     struct jt_jitfile *f)
{
	pid_t pid = f->pid;
	char path[96];
	struct stat st;

	if (f->fd < 0 || f->status)
		return;
	perfmap_path(p, pid, path, sizeof(path));
	if (fstatat(AT_FDCWD, path, &st, AT_SYMLINK_NOFOLLOW) ||
	    st.st_ino == f->ino)
		return;
	read_file(j, f);
	if (f->capped)
		cap_reached(j, f, "");
	close(f->fd);
	/* Gone from the table: a map renamed each second costs no memory. */
	memmove(f, f + 1, (j->f + --j->n - f) * sizeof(*f));
	open_perfmap_now(j, p, pid, JT_FOUND_LIVE);
}

/* perf-NSPID.map appeared in a /tmp we watch: whose is it? */
static void perfmap_named(struct jt_jitfiles *j, int wd, uint32_t nspid)
{
	struct ns_key k = { j->self_mntns, nspid };
	struct jt_jitfile *f;
	struct jt_jitproc *p;
	pid_t pid;
	size_t i;

	if (wd != j->tmp_wd) {
		k.mntns = 0;
		jt_hash_for_each (&j->tmps, i) {
			const struct jt_tmpwatch *w = j->tmps.e[i].val;

			if (w->wd == wd)
				k.mntns = w->mntns;
		}
	}
	p = k.mntns ? jt_hash_find(&j->by_ns, ns_hash(k.mntns, nspid), ns_eq,
				   &k) :
		      NULL;
	pid = p ? p->pid : wd == j->tmp_wd && j->all ? (pid_t)nspid : 0;
	if (!p && pid && recently_gone(j, pid))
		return;
	f = pid && (!p || p->perfmap_found) ? find(j, pid, JT_JIT_PERFMAP) :
					      NULL;
	if (f)
		perfmap_replaced(j, p, f);
	else if (pid) /* without p: a process we have not seen start */
		open_perfmap(j, pid, JT_FOUND_LIVE);
	/*
	 * A rename has no write event to have it read: read it on this
	 * pass, not at the sweep or the exit, so its lines are timed when
	 * they came.
	 */
	if (pid)
		mark_written(j, pid);
}

static void drain_inotify(struct jt_jitfiles *j)
{
	char buf[4096] __attribute__((aligned(8)));
	ssize_t n;

	while (j->inotify_fd >= 0 &&
	       (n = read(j->inotify_fd, buf, sizeof(buf))) > 0) {
		char *p = buf;

		while (p < buf + n) {
			struct inotify_event *e = (void *)p;
			uint32_t nspid = e->len ? perfmap_nspid(e->name) : 0;

			if (nspid)
				perfmap_named(j, e->wd, nspid);
			p += sizeof(*e) + e->len;
		}
	}
}

/*
 * A pass reads the files written since the last one (their write(2)s
 * came as events); every file is read once per sweep, for writes no
 * event saw (a jitdump written through a mapping, pwrite). Reading every
 * file on every pass was most of the recorder's time under churn.
 */
#define SWEEP_NS 100000000ULL

void jt_jitfiles_poll(struct jt_jitfiles *j)
{
	uint64_t now = jt_mono_ns();
	bool sweep = now - j->swept_ns >= SWEEP_NS;
	size_t i;

	drain_inotify(j);
	if (j->inotify_fd < 0)
		jt_hash_for_each (&j->procs, i) {
			const struct jt_jitproc *p = j->procs.e[i].val;

			open_perfmap(j, p->pid, JT_FOUND_LIVE);
		}
	j->passes++;
	for (i = 0; i < j->n; i++)
		if (sweep || written(j, &j->f[i]))
			read_file(j, &j->f[i]);
	if (sweep)
		j->swept_ns = now;
	gone_rotate(j);
}

size_t jt_jitfiles_accepted(const struct jt_jitfiles *j)
{
	return j->accepted;
}

void jt_jitfiles_close(struct jt_jitfiles *j)
{
	size_t i;

	jt_jitfiles_poll(j);
	for (i = 0; i < j->n; i++) {
		if (j->f[i].capped)
			cap_reached(j, &j->f[i], "");
		if (j->f[i].fd >= 0)
			close(j->f[i].fd);
	}
	if (j->inotify_fd >= 0)
		close(j->inotify_fd);
	if (j->tmp_dir >= 0)
		close(j->tmp_dir);
	jt_hash_for_each (&j->tmps, i) {
		struct jt_tmpwatch *w = j->tmps.e[i].val;

		if (w->dir >= 0)
			close(w->dir);
		free(w);
	}
	jt_hash_free(&j->tmps);
	jt_hash_free(&j->by_ns);
	free(j->f);
	jt_hash_for_each (&j->procs, i) {
		proc_cut(j, j->procs.e[i].val);
		free(j->procs.e[i].val);
	}
	jt_hash_free(&j->procs);
	jt_hash_free(&j->gone[0]);
	jt_hash_free(&j->gone[1]);
	free(j->buf);
	memset(j, 0, sizeof(*j));
}
