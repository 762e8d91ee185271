/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Other users' files, opened off the capture loop. A path walk can hang
 * (a FUSE daemon or a network mount that a user controls never answers),
 * and the loop must not: each open runs on a worker thread, and the loop
 * waits a bounded time for it. A worker that overruns is left to finish
 * alone and a fresh one takes its place; the user whose file hung gets no
 * more opens, so one user cannot stall the loop twice. A file that is not
 * on a local disk can hang its reads and stats as well: those go to the
 * worker too (jt_opener_pread), under the same bound.
 */
#ifndef JT_RECORD_OPENER_H
#define JT_RECORD_OPENER_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>
#include "jt_abi.h"
#include "unwind/cfi.h"

#define JT_OPEN_WAIT_MS 250
/* A read of root's file on a local disk: slow, never a trap (opener.c) */
#define JT_READ_WAIT_MS 5000
#define JT_OPEN_STUCK_MAX 8 /* workers left behind, at most */
#define JT_OPEN_UIDS_MAX 64 /* users whose opens hung */

struct jt_open_req {
	pid_t pid;
	uid_t uid;	  /* the process's: the one cut off if it hangs */
	pid_t root_pid;	  /* resolve path in this process's root; 0: ours */
	bool or_our_root; /* ours too, once root_pid's is gone */
	uint64_t start;	  /* map_files [start, end), when end is set */
	uint64_t end;
	uint64_t dev; /* the inode a path must still be, when set */
	uint64_t ino;
	bool build_id; /* read the file's build-id, then close it */
	bool cfi;      /* and its CFI sections */
	/*
	 * want_dir: path is a directory; answer it as an O_PATH descriptor,
	 * with its stat and whether it is on a local disk (open_beneath's
	 * dir). watch: add it to inotify_fd's watches, too (the answer's wd).
	 */
	bool want_dir;
	bool watch;
	int inotify_fd;
	uint32_t watch_mask;
	/*
	 * path's last component is in dir (a want_dir answer): opened there
	 * on the caller's thread, and by the worker only if that fails.
	 */
	bool in_dir;
	int dir;
	/* read: pread read_fd (the worker's to close) and fstat it. */
	bool read;
	int read_fd;
	uint64_t read_off;
	size_t read_len;
	char path[JT_PATH_MAX + 1];
};

struct jt_open_res {
	int fd; /* or -errno; -ETIMEDOUT: the open did not finish in time */
	/* An opened file or directory: fstat, and where it lives. */
	struct stat st;
	bool local; /* on a local disk: its reads and stats cannot hang */
	int wd;	    /* want_dir with watch: the watch, or -errno */
	void *buf;  /* read: the bytes (the caller's to free), n of them */
	ssize_t n;
	unsigned char id[20];
	size_t id_len;
	struct jt_cfi_copy *cfi; /* the caller's to free */
};

struct jt_opener_worker;

struct jt_opener {
	struct jt_opener_worker *w; /* the worker that answers now */
	uid_t cut[JT_OPEN_UIDS_MAX];
	unsigned int ncut;
	unsigned int stuck;
	uint64_t timed_out; /* opens and reads that did not finish in time */
	uint64_t refused;   /* not tried: their user's hung before */
	uint64_t direct;    /* opens in a local disk's directory, no worker */
	uint64_t worked;    /* opens the worker answered */
	uint64_t reads;	    /* reads it answered (jt_opener_pread) */
};

/*
 * Map_files when r->end is set, else the path in its root (and only if it
 * is still r->dev/r->ino); then a build-id, if asked. Always answers.
 * r->in_dir: the path's name in r->dir first, with no worker.
 */
struct jt_open_res jt_opener_open(struct jt_opener *o,
				  const struct jt_open_req *r);
/*
 * Up to len bytes of fd at off, read on the worker, and fd's stat after
 * the read: for a file not on a local disk (jt_open_res.local). uid is
 * the file's user, cut off if the read hangs. res.fd: 0 or -errno.
 */
struct jt_open_res jt_opener_pread(struct jt_opener *o, uid_t uid, int fd,
				   uint64_t off, size_t len);
void jt_opener_free(struct jt_opener *o);

#endif
