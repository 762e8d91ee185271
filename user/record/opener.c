// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "lib/procfile.h"
#include "model/elfsyms.h"
#include "record/localfs.h"
#include "record/opener.h"

struct jt_opener_worker {
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t cond; /* CLOCK_MONOTONIC */
	struct jt_open_req req;
	struct jt_open_res res;
	bool has_req;
	bool done;
	bool abandoned; /* the loop gave up on it: it frees itself */
	bool quit;
	bool reading_roots; /* a file of root's on a local disk: reads it */
	const char *stall;  /* JT_TEST_OPEN_STALL, read once */
	const char *slow;   /* JT_TEST_READ_SLOW */
	size_t slow_len;
	unsigned int slow_secs;
};

/*
 * JT_TEST_OPEN_STALL=TEXT: an open of a path holding TEXT hangs, as one
 * on a dead FUSE mount would. Tests only; nothing else sets it.
 */
static void stall_for_test(const struct jt_open_req *r, const char *s,
			   size_t len, unsigned int secs)
{
	if (s && len && memmem(r->path, strlen(r->path), s, len))
		sleep(secs);
}

static int by_path(const struct jt_open_req *r)
{
	int fd = jt_proc_open_in_root(r->root_pid, r->path), err;

	if ((fd == -ENOENT || fd == -ESRCH) && r->root_pid && r->or_our_root)
		fd = jt_proc_open_in_root(0, r->path);
	if (fd >= 0 && (err = jt_proc_file_is(fd, r->dev, r->ino))) {
		close(fd);
		fd = err;
	}
	return fd;
}

/*
 * Reading a big library cold (a fresh machine's first CPython, while the
 * disk still writes out the packages just installed) passed 250 ms: a
 * slow disk, not a user's trap, when the file is root's on a local disk.
 * Such a read gets the longer bound, and overrunning even that cuts its
 * user off from nothing.
 */
static void reading(struct jt_opener_worker *w, int fd)
{
	struct stat st;
	bool roots = !fstat(fd, &st) && !st.st_uid && jt_localfs(fd, -1);

	pthread_mutex_lock(&w->lock);
	w->reading_roots = roots;
	pthread_mutex_unlock(&w->lock);
}

/*
 * What the loop needs to know of an opened file, asked here: it can
 * hang. ns_pid: the process in whose mount namespace it was opened.
 */
static void describe(struct jt_open_res *res, pid_t ns_pid)
{
	int err = fstat(res->fd, &res->st) ? -errno : 0;

	if (err) {
		close(res->fd);
		res->fd = err;
		return;
	}
	res->local = jt_localfs(res->fd, ns_pid);
}

/*
 * A directory: its identity, and whether its files can be opened with no
 * worker: on a local disk, which no user can make hang (open_beneath
 * keeps to its filesystem). Asked of the worker: the walk to it, and
 * stat and statfs on FUSE, can hang; so can adding a watch.
 */
static struct jt_open_res dir_of(const struct jt_open_req *r)
{
	struct jt_open_res res = {
		.fd = jt_proc_dir_in_root(r->root_pid, r->path),
		.wd = -1,
	};
	char self[32];

	if (res.fd < 0)
		return res;
	describe(&res, r->root_pid);
	if (res.fd < 0 || !r->watch)
		return res;
	snprintf(self, sizeof(self), "/proc/self/fd/%d", res.fd);
	res.wd = inotify_add_watch(r->inotify_fd, self, r->watch_mask);
	if (res.wd < 0)
		res.wd = -errno;
	return res;
}

static struct jt_open_res do_read(const struct jt_open_req *r)
{
	struct jt_open_res res = { .fd = -ENOMEM };

	res.buf = malloc(r->read_len ? r->read_len : 1);
	if (res.buf) {
		res.n = pread(r->read_fd, res.buf, r->read_len, r->read_off);
		res.fd = res.n < 0 || fstat(r->read_fd, &res.st) ? -errno : 0;
	}
	close(r->read_fd);
	return res;
}

static struct jt_open_res do_open(struct jt_opener_worker *w,
				  const struct jt_open_req *r)
{
	struct jt_open_res res = { .fd = -ENOENT };
	pid_t ns_pid = r->pid; /* whose mount namespace fd was opened in */

	stall_for_test(r, w->stall, w->stall ? strlen(w->stall) : 0, 3600);
	if (r->want_dir)
		return dir_of(r);
	if (r->read)
		return do_read(r);
	if (r->end)
		res.fd = jt_proc_open_mapped(r->pid, r->start, r->end);
	if (res.fd < 0 && r->path[0]) {
		res.fd = by_path(r);
		ns_pid = r->root_pid;
	}
	if (res.fd >= 0 && !r->build_id)
		describe(&res, ns_pid);
	if (res.fd >= 0 && r->build_id) {
		reading(w, res.fd);
		/* JT_TEST_READ_SLOW=TEXT:SECS: a read that lasts SECS */
		stall_for_test(r, w->slow, w->slow_len, w->slow_secs);
		res.id_len = jt_elf_build_id(res.fd, res.id);
		if (r->cfi && res.id_len)
			res.cfi = jt_cfi_copy_fd(res.fd);
		close(res.fd);
		res.fd = 0;
	}
	return res;
}

static void *work(void *arg)
{
	struct jt_opener_worker *w = arg;
	struct jt_open_req r;
	struct jt_open_res res;
	bool mine;

	pthread_mutex_lock(&w->lock);
	while (!w->quit) {
		if (!w->has_req) {
			pthread_cond_wait(&w->cond, &w->lock);
			continue;
		}
		r = w->req;
		w->reading_roots = false;
		pthread_mutex_unlock(&w->lock);
		res = do_open(w, &r);
		pthread_mutex_lock(&w->lock);
		w->has_req = false;
		if (w->abandoned) {
			if (res.fd >= 0 && !r.build_id && !r.read)
				close(res.fd);
			free(res.buf);
			jt_cfi_copy_free(res.cfi);
			break;
		}
		w->res = res;
		w->done = true;
		pthread_cond_broadcast(&w->cond);
	}
	mine = w->abandoned;
	pthread_mutex_unlock(&w->lock);
	if (mine) {
		pthread_mutex_destroy(&w->lock);
		pthread_cond_destroy(&w->cond);
		free(w);
	}
	return NULL;
}

static struct jt_opener_worker *worker_new(void)
{
	struct jt_opener_worker *w = calloc(1, sizeof(*w));
	pthread_condattr_t ca;

	if (!w)
		return NULL;
	/* getenv scans the environment: per open, it was 1% of the agent. */
	w->stall = getenv("JT_TEST_OPEN_STALL");
	w->slow = getenv("JT_TEST_READ_SLOW");
	if (w->slow && strchr(w->slow, ':')) {
		w->slow_len = strchr(w->slow, ':') - w->slow;
		w->slow_secs = atoi(strchr(w->slow, ':') + 1);
	}
	pthread_mutex_init(&w->lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&w->cond, &ca);
	pthread_condattr_destroy(&ca);
	if (pthread_create(&w->thread, NULL, work, w)) {
		pthread_mutex_destroy(&w->lock);
		pthread_cond_destroy(&w->cond);
		free(w);
		return NULL;
	}
	return w;
}

static bool cut_off(const struct jt_opener *o, uid_t uid)
{
	unsigned int i;

	if (o->stuck >= JT_OPEN_STUCK_MAX)
		return true;
	for (i = 0; i < o->ncut; i++)
		if (o->cut[i] == uid)
			return true;
	return false;
}

static struct timespec after_ms(const struct timespec *t0, long ms)
{
	struct timespec t = *t0;

	t.tv_nsec += ms * 1000000L;
	t.tv_sec += t.tv_nsec / 1000000000L;
	t.tv_nsec %= 1000000000L;
	return t;
}

/* Wait for w's answer until the bound; false when it did not come. */
static bool answered(struct jt_opener_worker *w)
{
	struct timespec t0, until;
	bool longer = false;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	until = after_ms(&t0, JT_OPEN_WAIT_MS);
	while (!w->done) {
		if (pthread_cond_timedwait(&w->cond, &w->lock, &until) !=
			    ETIMEDOUT ||
		    w->done)
			continue;
		if (longer || !w->reading_roots)
			return false;
		longer = true;
		until = after_ms(&t0, JT_READ_WAIT_MS);
	}
	return true;
}

/* The worker hangs: left to end alone; its user gets no more opens. */
static void abandon(struct jt_opener *o, uid_t uid)
{
	struct jt_opener_worker *w = o->w;
	bool slow_disk = w->reading_roots; /* w may be freed once unlocked */

	w->abandoned = true;
	pthread_mutex_unlock(&w->lock);
	pthread_detach(w->thread);
	o->w = NULL;
	o->stuck++;
	o->timed_out++;
	if (!slow_disk && o->ncut < JT_OPEN_UIDS_MAX)
		o->cut[o->ncut++] = uid;
}

/*
 * Where the caller's thread can open the file: the two thread switches
 * of a worker's open were a quarter of the agent's CPU under process
 * churn, a perf-map per process (2.14% of a core, 1.57% without).
 */
static struct jt_open_res beneath(const struct jt_open_req *r)
{
	const char *name = strrchr(r->path, '/');
	struct jt_open_res res = {
		.fd = jt_proc_open_beneath(r->dir, name ? name + 1 : r->path),
		.local = true,
	};

	if (res.fd < 0)
		return res;
	if (fstat(res.fd, &res.st) ||
	    ((r->dev || r->ino) && jt_proc_file_is(res.fd, r->dev, r->ino))) {
		close(res.fd);
		res.fd = -ESTALE;
	}
	return res;
}

/*
 * r, answered by the worker within the bound (counted in *answers), or
 * -ETIMEDOUT.
 */
static struct jt_open_res ask(struct jt_opener *o, const struct jt_open_req *r,
			      uint64_t *answers)
{
	struct jt_open_res res = { .fd = -EAGAIN };
	struct jt_opener_worker *w;

	if (!o->w && !(o->w = worker_new())) {
		if (r->read)
			close(r->read_fd);
		return res;
	}
	w = o->w;
	pthread_mutex_lock(&w->lock);
	w->req = *r;
	w->has_req = true;
	w->done = false;
	pthread_cond_broadcast(&w->cond);
	if (!answered(w)) {
		abandon(o, r->uid);
		res.fd = -ETIMEDOUT;
		return res;
	}
	res = w->res;
	pthread_mutex_unlock(&w->lock);
	(*answers)++;
	return res;
}

/* Nothing more for a user whose file hung. */
static bool refused(struct jt_opener *o, uid_t uid)
{
	if (!cut_off(o, uid))
		return false;
	o->refused++;
	return true;
}

struct jt_open_res jt_opener_open(struct jt_opener *o,
				  const struct jt_open_req *r)
{
	struct jt_open_res res = { .fd = -ETIMEDOUT };

	if (refused(o, r->uid))
		return res;
	if (r->in_dir && (res = beneath(r)).fd >= 0) {
		o->direct++;
		return res;
	}
	return ask(o, r, &o->worked);
}

struct jt_open_res jt_opener_pread(struct jt_opener *o, uid_t uid, int fd,
				   uint64_t off, size_t len)
{
	struct jt_open_req r = {
		.uid = uid, .read = true, .read_off = off, .read_len = len
	};
	struct jt_open_res res = { .fd = -ETIMEDOUT };

	if (refused(o, uid))
		return res;
	/* The worker's own: a read it finishes alone closes no fd of ours. */
	r.read_fd = fcntl(fd, F_DUPFD_CLOEXEC, 0);
	if (r.read_fd < 0) {
		res.fd = -errno;
		return res;
	}
	return ask(o, &r, &o->reads);
}

void jt_opener_free(struct jt_opener *o)
{
	struct jt_opener_worker *w = o->w;

	if (!w)
		return;
	pthread_mutex_lock(&w->lock);
	w->quit = true;
	pthread_cond_broadcast(&w->cond);
	pthread_mutex_unlock(&w->lock);
	pthread_join(w->thread, NULL);
	pthread_mutex_destroy(&w->lock);
	pthread_cond_destroy(&w->cond);
	free(w);
	o->w = NULL;
}
