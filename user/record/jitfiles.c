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
/*
 * A file on a local disk is read when its watch says it changed: every
 * change of its size tells the watch. A write through a mapping tells it
 * nothing, but cannot grow the file, so a sweep (which reads past what
 * was read) would not see it either. A file with no watch is read each
 * sweep; one not on a local disk each slow sweep, by the opener's
 * worker, two thread switches a read.
 */
#define SWEEP_NS 100000000ULL
#define SLOW_SWEEPS 10
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
 * inode (tmp_ask, for another's). Not the mount namespace: a container
 * mounts its own /tmp after it has one, before it runs the runtime. 0
 * when it cannot be read.
 */
static uint64_t our_tmp(void)
{
	struct stat st;

	if (stat(PERFMAP_DIR, &st))
		return 0;
	return jt_hash_u64(st.st_dev) ^ st.st_ino;
}

int jt_jitfiles_init(struct jt_jitfiles *j, struct jt_writer *w, bool all,
		     const struct jt_jit_budget *budget)
{
	memset(j, 0, sizeof(*j));
	if (jt_filewatch_init(&j->mods))
		fprintf(stderr,
			"jittrace: cannot watch JIT files for changes (%s): "
			"each is read every %d ms\n",
			strerror(errno), (int)(SWEEP_NS / 1000000));
	j->w = w;
	j->all = all;
	j->budget = *budget;
	j->buf = malloc(CHUNK);
	if (!j->buf) {
		jt_filewatch_free(&j->mods);
		return -ENOMEM;
	}
	j->self_mntns = our_tmp();
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
	bool has_view; /* an exec's JT_EXEC_VIEW */
	struct jt_exec_view view;
};

/* A directory the worker answered: kept if on a local disk, else closed. */
static int keep_dir(const struct jt_open_res *res)
{
	if (res->fd >= 0 && res->local)
		return res->fd;
	if (res->fd >= 0)
		close(res->fd);
	return JT_TMP_WORKER;
}

static bool wd_eq(const void *val, const void *key)
{
	return ((const struct jt_tmpwatch *)val)->wd == *(const int *)key;
}

static struct jt_tmpwatch *tmp_find(struct jt_jitfiles *j, uint64_t key)
{
	return jt_hash_find(&j->tmps, jt_hash_u64(key), tmp_eq, &key);
}

/*
 * A /tmp met for the first time: kept with its watch, and whether it is
 * on a local disk (its descriptor is asked at its first perf-map: held,
 * it would keep a gone container's /tmp mounted). A container's /tmp is
 * its own: watched through the process's root, so its perf-map is read
 * while the process (and the path) still exist.
 */
static void tmp_keep(struct jt_jitfiles *j, uint64_t key,
		     const struct jt_open_res *res)
{
	struct jt_tmpwatch *w = NULL;

	if (key == j->self_mntns || tmp_find(j, key) ||
	    !(w = calloc(1, sizeof(*w))) ||
	    jt_hash_add(&j->tmps, jt_hash_u64(key), w)) {
		close(res->fd);
		free(w);
		return;
	}
	w->mntns = key;
	w->wd = res->wd >= 0 ? res->wd : -1;
	/*
	 * The directory the worker opened, kept: asked again at the first
	 * perf-map, through that map's process, a child gone by then (under
	 * churn, the first) lost its map.
	 */
	w->dir = keep_dir(res);
	/* Not findable by its watch: events on it name no process. */
	if (w->wd >= 0 && jt_hash_add(&j->wds, jt_hash_u64(w->wd), w))
		w->wd = -1;
}

static void tmp_free(struct jt_jitfiles *j, struct jt_tmpwatch *w)
{
	if (w->wd >= 0) {
		jt_hash_del(&j->wds, jt_hash_u64(w->wd), wd_eq, &w->wd);
		inotify_rm_watch(j->inotify_fd, w->wd);
	}
	if (w->dir >= 0)
		close(w->dir);
	free(w);
}

/* One more, or one fewer, tracked process sees the /tmp key. */
static void tmp_use(struct jt_jitfiles *j, uint64_t key, int delta)
{
	struct jt_tmpwatch *w = key ? tmp_find(j, key) : NULL;

	if (!w)
		return;
	if (delta > 0) {
		w->users++;
		return;
	}
	if (w->users && --w->users)
		return;
	jt_hash_del(&j->tmps, jt_hash_u64(key), tmp_eq, &key);
	tmp_free(j, w);
}

/*
 * The /tmp of a process we cannot place by its parent or its exec, asked
 * of the worker with what a new /tmp needs (its watch, its directory) in
 * the same answer: the walk into a container's root and the stat at its
 * end can reach a filesystem that never answers, and froze the loop so.
 */
static uint64_t tmp_ask(struct jt_jitfiles *j, pid_t pid, uid_t uid)
{
	struct jt_open_req r = { .pid = pid,
				 .uid = uid,
				 .root_pid = pid,
				 .want_dir = true,
				 .watch = j->inotify_fd >= 0,
				 .inotify_fd = j->inotify_fd,
				 .watch_mask = WATCH_MASK,
				 .path = PERFMAP_DIR };
	struct jt_open_res res = jt_opener_open(j->opener, &r);
	uint64_t key;

	if (res.fd < 0)
		return 0;
	key = jt_hash_u64(res.st.st_dev) ^ res.st.st_ino;
	tmp_keep(j, key, &res);
	return key;
}

static struct jt_view_tmp *view_slot(struct jt_jitfiles *j,
				     const struct jt_exec_view *v)
{
	uint64_t h = jt_hash_u64(v->mntns ^ (uint64_t)v->root_mnt << 32) ^
		     jt_hash_u64(v->mnt_event) ^ jt_hash_u64(v->root_ino);

	return &j->views[h % JT_VIEWS];
}

/*
 * The /tmp an earlier exec with the same view was answered, where it is
 * still held: the same mounts seen from the same root. A container's
 * every exec asked the worker, two thread switches and a walk into its
 * root: under churn its processes were gone before the answer came.
 */
static uint64_t view_tmp(struct jt_jitfiles *j, const struct jt_exec_view *v)
{
	struct jt_view_tmp *s = view_slot(j, v);

	if (!s->mntns || memcmp(&s->view, v, sizeof(*v)) ||
	    (s->mntns != j->self_mntns && !tmp_find(j, s->mntns)))
		return 0;
	j->views_reused++;
	return s->mntns;
}

/*
 * The parent's /tmp, which a child has until it execs, ours, which BPF
 * saw the exec keep, or one an exec with the same view had: no worker.
 * A stat per exec was a twentieth of the agent's time under process
 * churn.
 */
static uint64_t tmp_of_new(struct jt_jitfiles *j, const struct jt_jitproc *p,
			   const struct who *w)
{
	const struct jt_jitproc *q = w->parent ? proc(j, w->parent) : NULL;
	uint64_t key;

	if (w->our_root && j->self_mntns)
		return j->self_mntns;
	if (q && q->mntns)
		return q->mntns;
	if (w->has_view && (key = view_tmp(j, &w->view)))
		return key;
	key = tmp_ask(j, p->pid, p->euid_known ? p->euid : (uid_t)-1);
	if (key && w->has_view)
		*view_slot(j, &w->view) =
			(struct jt_view_tmp){ .view = w->view, .mntns = key };
	return key;
}

static void track(struct jt_jitfiles *j, pid_t pid, const struct who *w)
{
	struct jt_jitproc *p = proc(j, pid);
	uint32_t ns_pid = 0;
	uint64_t was = 0;
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
		was = p->mntns;
	}
	if (w->euid_known) {
		p->euid = w->euid;
		p->euid_known = true;
	} else {
		p->euid_known = !jt_proc_status(pid, &p->euid, &ns_pid);
	}
	p->mntns = tmp_of_new(j, p, w);
	p->nspid = ns_pid ?: w->nspid ?: (uint32_t)pid;
	p->own_tmp = p->mntns && j->self_mntns && p->mntns != j->self_mntns;
	/* Held before the old one goes: an exec in the same /tmp keeps it. */
	tmp_use(j, p->mntns, 1);
	tmp_use(j, was, -1);
	if (p->mntns && by_name_ok(p) &&
	    !jt_hash_add(&j->by_ns, ns_hash(p->mntns, p->nspid), p))
		return;
	tmp_use(j, p->mntns, -1);
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
	tmp_use(j, p->mntns, -1);
	free(p);
}

/*
 * A file by its process and kind, each in a hash by its place in j->f:
 * a perf-map write event asked a walk over every live process's files.
 */
struct file_key {
	const struct jt_jitfile *f; /* j->f, which the values index */
	pid_t pid;
	int kind;
};

static uint64_t file_hash(pid_t pid, int kind)
{
	return jt_hash_u64((uint64_t)(uint32_t)pid << 8 | (uint32_t)kind);
}

static bool file_eq(const void *val, const void *key)
{
	const struct file_key *k = key;
	const struct jt_jitfile *f = &k->f[(uintptr_t)val - 1];

	return f->pid == k->pid && f->kind == k->kind;
}

static struct jt_jitfile *find(struct jt_jitfiles *j, pid_t pid, int kind)
{
	struct file_key k = { j->f, pid, kind };
	uintptr_t i = (uintptr_t)jt_hash_find(&j->files, file_hash(pid, kind),
					      file_eq, &k);

	return i ? &j->f[i - 1] : NULL;
}

/* Forget f: the last file takes its place, and its index is redone. */
static void file_drop(struct jt_jitfiles *j, struct jt_jitfile *f)
{
	struct jt_jitfile *last = &j->f[j->n - 1];
	struct file_key k = { j->f, f->pid, f->kind };

	jt_filewatch_del(&j->mods, f->wd);
	jt_hash_del(&j->files, file_hash(f->pid, f->kind), file_eq, &k);
	if (f != last) {
		k = (struct file_key){ j->f, last->pid, last->kind };
		jt_hash_del(&j->files, file_hash(last->pid, last->kind),
			    file_eq, &k);
		*f = *last;
		/* No allocation: the slot the deletes just freed takes it. */
		jt_hash_add(&j->files, file_hash(f->pid, f->kind),
			    (void *)(uintptr_t)(f - j->f + 1));
	}
	j->n--;
}

/* The process's file opened first (the lower id) of its two, or NULL. */
static struct jt_jitfile *first_of(struct jt_jitfiles *j, pid_t pid)
{
	struct jt_jitfile *d = find(j, pid, JT_JIT_JITDUMP);
	struct jt_jitfile *m = find(j, pid, JT_JIT_PERFMAP);

	if (!d || !m)
		return d ? d : m;
	return d->id < m->id ? d : m;
}

/*
 * A regular file owned by the user the process runs as (root's for a root
 * process only), the only one whose file we believe; checked on the open
 * descriptor's stat, so nothing can be swapped in (taken where the open
 * was: on the worker, for a file whose stat could hang).
 *
 * The euid is the one now, not when tracked: a setuid(2) changes it with
 * no event. Reading /proc/PID/status formats a page; a stat of /proc/PID
 * is enough to accept a file owned by the tracked euid: the kernel gives
 * that directory the task's euid, or while the task is not dumpable (a
 * setuid(2) makes it so) its namespace's root, whose files are safe to
 * read for any of its processes. Anything else, refusals included, asks
 * status.
 */
static int vet(struct jt_jitfiles *j, pid_t pid, const struct stat *st)
{
	struct jt_jitproc *p = proc(j, pid);
	uint32_t nspid;
	uid_t euid;

	if (p && p->euid_known && !jt_proc_stat_owned(st, p->euid) &&
	    jt_proc_still_euid(pid, p->euid))
		return 0;
	if (jt_proc_status(pid, &euid, &nspid)) {
		if (!p || !p->euid_known)
			return -ESRCH;
		euid = p->euid;
	}
	return jt_proc_stat_owned(st, euid);
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
 * Its files are read on the next pass. A tracked process is listed once
 * a pass; one not tracked (a perf-map seen before its process) may be
 * listed twice, and its second read finds nothing.
 */
static void mark_written(struct jt_jitfiles *j, pid_t pid)
{
	struct jt_jitproc *p = proc(j, pid);

	if (p && p->written == j->passes + 1)
		return;
	if (jt_reserve(&j->dirty, &j->dirty_cap, j->ndirty + 1,
		       sizeof(*j->dirty))) {
		j->all_dirty = true;
		return;
	}
	if (p)
		p->written = j->passes + 1;
	j->dirty[j->ndirty++] = pid;
}

/*
 * A local file's changes come from its watch at each pass. One that
 * cannot have a watch is read at every sweep instead; said once.
 * (Shared with another file of its inode, -EEXIST, it is swept too.)
 */
static void watch(struct jt_jitfiles *j, struct jt_jitfile *f)
{
	int wd = jt_filewatch_add(&j->mods, f->fd, f->pid);

	f->wd = wd < 0 ? -1 : wd;
	if (wd >= 0 || wd == -EEXIST || j->mods.fd < 0 || j->unwatched_said)
		return;
	j->unwatched_said = true;
	fprintf(stderr,
		"jittrace: cannot watch the %s file of pid %d for changes "
		"(%s): files not watched are read every %d ms\n",
		f->kind == JT_JIT_JITDUMP ? "jitdump" : "perf-map", f->pid,
		strerror(-wd), (int)(SWEEP_NS / 1000000));
}

/*
 * Accepted or refused, a file gets one entry: a refused one is recorded
 * and said once, however often its process touches it again (a perf-map
 * written a byte at a time would otherwise refuse itself per write). Its
 * inode lets the report count the writes that went to it.
 */
static void add(struct jt_jitfiles *j, pid_t pid, int kind, int found,
		const struct jt_open_res *res, const char *path)
{
	int fd = res->fd >= 0 ? res->fd : -1;
	int err = fd < 0 ? res->fd : vet(j, pid, &res->st);
	uint64_t ino = fd >= 0 ? res->st.st_ino : 0;

	if (jt_reserve(&j->f, &j->cap, j->n + 1, sizeof(*j->f)) ||
	    jt_hash_add(&j->files, file_hash(pid, kind),
			(void *)(uintptr_t)(j->n + 1))) {
		if (fd >= 0)
			close(fd);
		note(j, pid, 0, kind, found, -ENOMEM, path, ino);
		return;
	}
	if (err && fd >= 0) {
		close(fd);
		fd = -1;
	}
	j->f[j->n] = (struct jt_jitfile){ .pid = pid,
					  .id = ++j->next_id,
					  .kind = kind,
					  .fd = fd,
					  .status = err,
					  .ino = ino,
					  .local = res->local,
					  .wd = -1 };
	note(j, pid, j->next_id, kind, found, err, path, ino);
	j->accepted += !err;
	if (fd >= 0 && res->local)
		watch(j, &j->f[j->n]);
	j->n++;
	/* What it holds already: no event will say so. */
	if (fd >= 0)
		mark_written(j, pid);
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
	struct jt_open_res res;
	struct jt_open_req r;

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
	res = jt_opener_open(j->opener, &r);
	add(j, pid, JT_JIT_JITDUMP, found, &res, path);
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
	w = p && p->mntns ? tmp_find(j, p->mntns) : NULL;
	return w ? &w->dir : NULL;
}

/* A descriptor of that /tmp on a local disk, or -1: the worker opens. */
static int tmp_dir(struct jt_jitfiles *j, const struct jt_jitproc *p,
		   const struct jt_open_req *file)
{
	int *dir = tmp_dir_slot(j, p, file->root_pid);
	struct jt_open_req r;
	struct jt_open_res res;

	if (!dir)
		return -1;
	if (*dir == JT_TMP_UNASKED) {
		r = (struct jt_open_req){ .pid = file->pid,
					  .uid = file->uid,
					  .root_pid = file->root_pid,
					  .want_dir = true,
					  .path = PERFMAP_DIR };
		res = jt_opener_open(j->opener, &r);
		/* A process gone meanwhile: the next one asks again. */
		if (res.fd >= 0 || res.fd == -ETIMEDOUT)
			*dir = keep_dir(&res);
	}
	return *dir >= 0 ? *dir : -1;
}

/* How perf-NSPID.map of pid is opened: in its /tmp's descriptor if local. */
static void perfmap_req(struct jt_jitfiles *j, struct jt_jitproc *p, pid_t pid,
			struct jt_open_req *r)
{
	uint32_t nspid = p && p->nspid ? p->nspid : (uint32_t)pid;

	*r = (struct jt_open_req){ .pid = pid,
				   .uid = jt_jitfiles_owner(j, pid),
				   .root_pid = root_of(j, pid) };
	snprintf(r->path, sizeof(r->path), PERFMAP_DIR "/perf-%u.map", nspid);
	r->dir = tmp_dir(j, p, r);
	r->in_dir = r->dir >= 0;
}

static void open_perfmap_now(struct jt_jitfiles *j, struct jt_jitproc *p,
			     pid_t pid, int found)
{
	struct jt_open_res res;
	struct jt_open_req r;
	char path[96];

	perfmap_path(p, pid, path, sizeof(path));
	perfmap_req(j, p, pid, &r);
	res = jt_opener_open(j->opener, &r);
	if (res.fd == -ENOENT)
		return;
	add(j, pid, JT_JIT_PERFMAP, found, &res, path);
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
 * A read that hung, or whose user's file hung before: the worker was left
 * with it, and the rest of the file is left too, said and counted (the
 * opener's timed_out and refused).
 */
static void file_hung(struct jt_jitfiles *j, struct jt_jitfile *f)
{
	fprintf(stderr,
		"jittrace: stopped reading the %s file of pid %d after %llu "
		"bytes: a read of it, or a file of its user's before, did not "
		"finish in %d ms\n",
		f->kind == JT_JIT_JITDUMP ? "jitdump" : "perf-map", f->pid,
		(unsigned long long)f->offset, JT_OPEN_WAIT_MS);
	close(f->fd);
	f->fd = -1;
}

/*
 * Up to len bytes of f at off, into j->buf: on the loop's thread from a
 * local disk; else on the opener's worker, whose bound a filesystem that
 * stops answering cannot pass. That read gives f->size as well.
 */
static ssize_t file_pread(struct jt_jitfiles *j, struct jt_jitfile *f,
			  size_t len, uint64_t off)
{
	struct jt_open_res res;

	if (f->local)
		return pread(f->fd, j->buf, len, off);
	res = jt_opener_pread(j->opener, jt_jitfiles_owner(j, f->pid), f->fd,
			      off, len);
	if (res.fd == -ETIMEDOUT)
		file_hung(j, f);
	if (res.fd < 0) {
		free(res.buf);
		return -1;
	}
	memcpy(j->buf, res.buf, res.n);
	free(res.buf);
	f->size = res.st.st_size;
	return res.n;
}

/* f's size now; from a disk that can hang, by a read of nothing. */
static bool file_size(struct jt_jitfiles *j, struct jt_jitfile *f,
		      uint64_t *size)
{
	struct stat st;

	if (!f->local) {
		if (file_pread(j, f, 0, 0) < 0)
			return false;
		*size = f->size;
		return true;
	}
	if (fstat(f->fd, &st))
		return false;
	*size = st.st_size;
	return true;
}

/*
 * A file past the cap is counted, not copied: a 2 GB sparse perf-map
 * would otherwise make a 2 GB recording. Recorded again at the end with
 * what the file grew to.
 */
static void cap_reached(struct jt_jitfiles *j, struct jt_jitfile *f,
			const char *why)
{
	struct jt_jitcap_rec c = { jt_mono_ns(), f->offset, 0, f->id };
	uint64_t size;

	if (f->fd >= 0 && file_size(j, f, &size) && size > f->offset)
		c.skipped = size - f->offset;
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
	/* Not local: as the read that found nothing saw it. */
	uint64_t size = f->size;

	if (f->kind != JT_JIT_PERFMAP || !f->offset || f->fd < 0 ||
	    (f->local && !file_size(j, f, &size)) || size >= f->offset)
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
			/* Only a byte past the cap makes the file too big. */
			if (file_pread(j, f, 1, f->offset) == 1)
				cap_reached(j, f, why);
			return;
		}
		if (want > room)
			want = room;
		n = file_pread(j, f, want, f->offset);
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
	struct jt_jitfile *f;

	/* A pid is the hash's value itself: no allocation per exit. */
	if (!recently_gone(j, pid))
		jt_hash_add(&j->gone[0], jt_hash_u64(pid),
			    (void *)(uintptr_t)pid);

	open_perfmap(j, pid, JT_FOUND_LIVE);
	/* Its files, each kind's at most one, the one opened first first. */
	while ((f = first_of(j, pid))) {
		if (f->fd >= 0) {
			read_file(j, f);
			if (f->capped)
				cap_reached(j, f, "");
			close(f->fd);
		}
		file_drop(j, f);
	}
	untrack(j, pid);
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
	struct jt_jitfile *f = find(j, w->h.pid, JT_JIT_PERFMAP);

	if (!f || f->fd < 0 || f->ino != w->ino)
		return;
	if (start < f->written_end && f->offset) {
		f->offset = 0;
		f->written_end = w->end;
	} else if (w->end > f->written_end) {
		f->written_end = w->end;
	}
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

/* The view after the euid (JT_EXEC_VIEW), copied out: not aligned. */
static bool exec_view(const struct jt_exec_event *ee, size_t len,
		      struct jt_exec_view *v)
{
	size_t at;

	if (len < sizeof(*ee) || !(ee->flags & JT_EXEC_EUID) ||
	    !(ee->flags & JT_EXEC_VIEW))
		return false;
	at = sizeof(*ee) + ee->path_len + sizeof(uint32_t);
	if (at > len || len - at < sizeof(*v))
		return false;
	memcpy(v, (const char *)ee + at, sizeof(*v));
	return true;
}

static void exec_track(struct jt_jitfiles *j, const struct jt_exec_event *ee,
		       size_t len)
{
	struct who w = { .nspid = len >= sizeof(*ee) ? ee->nspid : 0 };

	w.euid_known = jt_event_euid(&ee->h, len, &w.euid);
	w.our_root = len >= sizeof(*ee) && (ee->flags & JT_EXEC_OUR_ROOT);
	w.has_view = exec_view(ee, len, &w.view);
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
 * The inode perf-NSPID.map of pid names now: a stat beneath its /tmp on a
 * local disk, as a direct open is made; else an open by the worker.
 */
static bool perfmap_ino(struct jt_jitfiles *j, struct jt_jitproc *p, pid_t pid,
			uint64_t *ino)
{
	struct jt_open_res res;
	struct jt_open_req r;
	struct stat st;
	int err;

	perfmap_req(j, p, pid, &r);
	err = r.in_dir ? jt_proc_stat_beneath(r.dir, strrchr(r.path, '/') + 1,
					      &st) :
			 -EXDEV;
	if (!err)
		*ino = st.st_ino;
	if (!err || err == -ENOENT)
		return !err;
	/* Not beneath (a mount over the name, no openat2): as an open is. */
	res = jt_opener_open(j->opener, &r);
	if (res.fd < 0)
		return false;
	close(res.fd);
	*ino = res.st.st_ino;
	return true;
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
	uint64_t ino;

	if (f->fd < 0 || f->status || !perfmap_ino(j, p, pid, &ino) ||
	    ino == f->ino)
		return;
	read_file(j, f);
	if (f->capped)
		cap_reached(j, f, "");
	close(f->fd);
	/* Gone from the table: a map renamed each second costs no memory. */
	file_drop(j, f);
	open_perfmap_now(j, p, pid, JT_FOUND_LIVE);
}

/* pid's perf-map was made, or made again, in its /tmp. */
static void perfmap_made(struct jt_jitfiles *j, struct jt_jitproc *p, pid_t pid)
{
	struct jt_jitfile *f;

	if (!p && recently_gone(j, pid))
		return;
	f = !p || p->perfmap_found ? find(j, pid, JT_JIT_PERFMAP) : NULL;
	if (f)
		perfmap_replaced(j, p, f);
	else /* without p: a process we have not seen start */
		open_perfmap(j, pid, JT_FOUND_LIVE);
	/*
	 * A rename has no write event to have it read: read it on this
	 * pass, not at the sweep or the exit, so its lines are timed when
	 * they came.
	 */
	mark_written(j, pid);
}

/* perf-NSPID.map appeared in a /tmp we watch: whose is it? */
static void perfmap_named(struct jt_jitfiles *j, int wd, uint32_t nspid)
{
	struct ns_key k = { j->self_mntns, nspid };
	struct jt_tmpwatch *w;
	struct jt_jitproc *p;
	pid_t pid;

	if (wd != j->tmp_wd) {
		w = jt_hash_find(&j->wds, jt_hash_u64(wd), wd_eq, &wd);
		k.mntns = w ? w->mntns : 0;
	}
	p = k.mntns ? jt_hash_find(&j->by_ns, ns_hash(k.mntns, nspid), ns_eq,
				   &k) :
		      NULL;
	pid = p ? p->pid : wd == j->tmp_wd && j->all ? (pid_t)nspid : 0;
	if (pid)
		perfmap_made(j, p, pid);
}

/*
 * The /tmp watches' queue overflowed: a perf-map made or renamed into
 * place then was not told, and one with no write event would wait for
 * its process's exit. Look again for every tracked process's (in -a,
 * every process is tracked from its fork, exec or our attach).
 */
static void perfmaps_relook(struct jt_jitfiles *j)
{
	size_t i;

	jt_hash_for_each (&j->procs, i) {
		struct jt_jitproc *p = j->procs.e[i].val;

		perfmap_made(j, p, p->pid);
	}
}

static void drain_inotify(struct jt_jitfiles *j)
{
	char buf[4096] __attribute__((aligned(8)));
	bool lost = false;
	ssize_t n;

	while (j->inotify_fd >= 0 &&
	       (n = read(j->inotify_fd, buf, sizeof(buf))) > 0) {
		char *p = buf;

		while (p < buf + n) {
			struct inotify_event *e = (void *)p;
			uint32_t nspid = e->len ? perfmap_nspid(e->name) : 0;

			if (nspid)
				perfmap_named(j, e->wd, nspid);
			lost |= !!(e->mask & IN_Q_OVERFLOW);
			p += sizeof(*e) + e->len;
		}
	}
	if (lost) {
		j->tmp_overflows++;
		perfmaps_relook(j);
	}
}

static void file_changed(void *ctx, pid_t pid)
{
	mark_written(ctx, pid);
}

/* The kernel dropped a watch (an unmount): the sweeps read the file. */
static void watch_gone(void *ctx, pid_t pid, int wd)
{
	struct jt_jitfiles *j = ctx;
	struct jt_jitfile *d = find(j, pid, JT_JIT_JITDUMP);
	struct jt_jitfile *m = find(j, pid, JT_JIT_PERFMAP);

	if (d && d->wd == wd)
		d->wd = -1;
	if (m && m->wd == wd)
		m->wd = -1;
}

/* The files of the processes written since the last pass, older first. */
static void read_written(struct jt_jitfiles *j)
{
	size_t i;

	for (i = 0; i < j->ndirty; i++) {
		struct jt_jitfile *f = first_of(j, j->dirty[i]);

		if (!f)
			continue;
		read_file(j, f);
		f = find(j, f->pid,
			 f->kind == JT_JIT_JITDUMP ? JT_JIT_PERFMAP :
						     JT_JIT_JITDUMP);
		if (f)
			read_file(j, f);
	}
	j->ndirty = 0;
}

/* A file no event named: a stat, and a read only if its size moved. */
static void sweep_file(struct jt_jitfiles *j, struct jt_jitfile *f)
{
	uint64_t size;

	if (f->fd < 0 || f->capped)
		return;
	if (f->local && file_size(j, f, &size) && size == f->offset)
		return;
	read_file(j, f);
}

/*
 * A pass reads the files written since the last one, as their write
 * events and watches say: reading every file on every pass was most of
 * the recorder's time under churn, and a read and a stat of each every
 * tick 11% of a core with 3,000 perf-maps open. Sweeps read the files
 * nothing watches (SWEEP_NS), and all of them once the watches' queue
 * overflowed.
 */
void jt_jitfiles_poll(struct jt_jitfiles *j)
{
	uint64_t now = jt_mono_ns();
	bool sweep = now - j->swept_ns >= SWEEP_NS;
	bool slow = sweep && !(j->sweeps % SLOW_SWEEPS);
	bool all;
	size_t i;

	drain_inotify(j);
	/* A change the full queue dropped may be in any file. */
	if (!jt_filewatch_drain(&j->mods, file_changed, watch_gone, j)) {
		j->all_dirty = true;
		j->overflows++;
	}
	all = j->all_dirty;
	j->all_dirty = false;
	if (j->inotify_fd < 0)
		jt_hash_for_each (&j->procs, i) {
			const struct jt_jitproc *p = j->procs.e[i].val;

			open_perfmap(j, p->pid, JT_FOUND_LIVE);
		}
	j->passes++;
	read_written(j);
	for (i = 0; (sweep || all) && i < j->n; i++) {
		struct jt_jitfile *f = &j->f[i];

		if (all || (f->wd < 0 && (f->local || slow)))
			sweep_file(j, f);
	}
	if (sweep) {
		j->swept_ns = now;
		j->sweeps++;
	}
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
	if (j->overflows)
		fprintf(stderr,
			"jittrace: the JIT files' change watches overflowed "
			"%llu times; each time every file was read\n",
			(unsigned long long)j->overflows);
	if (j->tmp_overflows)
		fprintf(stderr,
			"jittrace: the /tmp watches overflowed %llu times; "
			"each time every process's perf-map was looked for "
			"again\n",
			(unsigned long long)j->tmp_overflows);
	for (i = 0; i < j->n; i++) {
		if (j->f[i].capped)
			cap_reached(j, &j->f[i], "");
		if (j->f[i].fd >= 0)
			close(j->f[i].fd);
	}
	if (j->tmp_dir >= 0)
		close(j->tmp_dir);
	jt_hash_for_each (&j->tmps, i)
		tmp_free(j, j->tmps.e[i].val);
	jt_hash_free(&j->tmps);
	jt_hash_free(&j->wds);
	jt_hash_free(&j->files);
	jt_filewatch_free(&j->mods);
	free(j->dirty);
	if (j->inotify_fd >= 0)
		close(j->inotify_fd);
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
